"""The abort's interrupt payload: what every API client of a server reads when a run stops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.types import Command

from langchain_promptstrat import PromptStrategyMiddleware, pre_model_hook
from langchain_promptstrat.adapters.langgraph import make_inbox_node
from langchain_promptstrat.inbox.delivery import pick_up
from langchain_promptstrat.inbox.directory import DirectoryInbox, post_to_inbox, request_abort
from langchain_promptstrat.strategies.inbox import Inbox
from langchain_promptstrat.testing import ScriptedChatModel, make_sized_tool

THREAD = "deploy-7"
CONFIG: Any = {"configurable": {"thread_id": THREAD}, "recursion_limit": 50}


def middleware_agent(root: Path, include_paths: bool) -> Any:
    strategies: list[Any] = ["shorten_tools", Inbox(root=root, include_paths=include_paths)]
    return create_agent(
        ScriptedChatModel.long_run(2),
        [make_sized_tool()],
        middleware=[PromptStrategyMiddleware(strategies)],
        checkpointer=InMemorySaver(),
    )


def hook_agent(root: Path, include_paths: bool) -> Any:
    hook = pre_model_hook(["shorten_tools", Inbox(root=root, include_paths=include_paths)])
    return create_react_agent(
        ScriptedChatModel.long_run(2),
        [make_sized_tool()],
        pre_model_hook=hook,
        checkpointer=InMemorySaver(),
    )


def node_graph(root: Path, include_paths: bool) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("inbox", make_inbox_node(root=root, include_paths=include_paths))
    graph.add_node("model", lambda state: {"messages": [AIMessage("answer")]})
    graph.add_edge(START, "inbox")
    graph.add_edge("inbox", "model")
    graph.add_edge("model", END)
    return graph.compile(checkpointer=InMemorySaver())


FRONT_ENDS = {"middleware": middleware_agent, "hook": hook_agent, "node": node_graph}


def interrupted_payload(
    front_end: str, root: Path, *, include_paths: bool = False
) -> dict[str, Any]:
    post_to_inbox(thread_id=THREAD, root=root, content="use the staging database", name="0-staging")
    post_to_inbox(thread_id=THREAD, root=root, content="and be quick", name="1-quick")
    request_abort(thread_id=THREAD, root=root, reason="wait for review")
    out = FRONT_ENDS[front_end](root, include_paths).invoke(
        {"messages": [HumanMessage("task")]}, CONFIG
    )
    (interrupt,) = out["__interrupt__"]
    payload: dict[str, Any] = interrupt.value
    return payload


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_the_payload_names_the_thread_the_reason_and_the_notices_and_no_server_path(
    front_end: str, tmp_path: Path
) -> None:
    """A server hands the interrupt to every API client: it says which thread stopped, why, and what
    was taken, by name only."""
    payload = interrupted_payload(front_end, tmp_path)
    assert payload == {
        "type": "inbox_abort",
        "thread_id": THREAD,
        "reason": "wait for review",
        "abort": "abort",
        "notices": ["0-staging", "1-quick"],
    }
    assert str(tmp_path) not in repr(payload)


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_include_paths_adds_where_the_abort_lies_and_the_inbox(
    front_end: str, tmp_path: Path
) -> None:
    """A local operator who asks for them gets the consumed abort's path and the inbox's place, once
    each."""
    payload = interrupted_payload(front_end, tmp_path, include_paths=True)
    assert payload["path"] == str(tmp_path / f"{THREAD}.inbox_removed" / "abort")
    assert payload["inbox"] == str(tmp_path / f"{THREAD}.inbox")
    assert payload["notices"] == ["0-staging", "1-quick"] and payload["reason"] == "wait for review"


def test_an_empty_abort_has_a_reason_without_a_path(tmp_path: Path) -> None:
    """A blank abort falls back to a sentence; that sentence reaches clients, so it names no server
    path."""
    request_abort(thread_id=THREAD, root=tmp_path)
    out = node_graph(tmp_path, False).invoke({"messages": [HumanMessage("task")]}, CONFIG)
    payload = out["__interrupt__"][0].value
    assert (
        payload["reason"] == "abort requested through the inbox (an empty abort file)"
        and payload["notices"] == []
    )


def test_a_second_abort_is_named_as_the_history_holds_it(tmp_path: Path) -> None:
    """After an earlier abort the history keeps both; the payload names the new one as GET
    /threads/{id}/inbox lists it."""
    app = node_graph(tmp_path, False)
    request_abort(thread_id=THREAD, root=tmp_path, reason="first")
    app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
    request_abort(thread_id=THREAD, root=tmp_path, reason="second")
    payload = app.invoke(Command(resume=True), CONFIG)["__interrupt__"][0].value
    assert (
        payload["reason"] == "second"
        and payload["abort"] != "abort"
        and payload["abort"].startswith("abort")
    )
    assert (tmp_path / f"{THREAD}.inbox_removed" / payload["abort"]).read_text().strip() == "second"


def test_a_delivered_notice_in_the_stored_conversation_names_no_server_path(tmp_path: Path) -> None:
    """The notice's mark is stored in the thread state, which every API client reads: its file's
    name, never a path."""
    post_to_inbox(thread_id="t1", root=tmp_path, content="use the staging database")
    (notice,) = pick_up(DirectoryInbox.for_thread("t1", tmp_path)).delivered
    assert str(tmp_path) not in json.dumps(notice.additional_kwargs)
    assert notice.additional_kwargs["promptstrat"]["file"].endswith(".txt")
