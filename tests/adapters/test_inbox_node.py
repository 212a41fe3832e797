"""Specification of the LangGraph inbox node: notices as state updates, abort as an interrupt,
resume."""

from __future__ import annotations

import asyncio
import os

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

from langchain_promptstrat.adapters.langgraph import make_inbox_node
from langchain_promptstrat.errors import InboxAborted
from langchain_promptstrat.inbox.delivery import wait_settled
from langchain_promptstrat.inbox.directory import post_to_inbox, request_abort
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV
from langchain_promptstrat.messages import mark_of

THREAD = "run.1"


@pytest.fixture
def root(tmp_path):
    """The inbox root: one <thread>.inbox per thread."""
    return tmp_path


@pytest.fixture
def model_inputs():
    """What the stand-in model node saw on each call, as lists of message contents."""
    return []


def build(root, model_inputs, *, checkpointer=True, **node_options):
    """Return START -> inbox -> model -> END compiled with an InMemorySaver (or none)."""

    def model(state):
        model_inputs.append([m.content for m in state["messages"]])
        return {"messages": [AIMessage(f"answer {len(model_inputs)}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("inbox", make_inbox_node(root=root, **node_options))
    graph.add_node("model", model)
    graph.add_edge(START, "inbox")
    graph.add_edge("inbox", "model")
    graph.add_edge("model", END)
    return graph.compile(checkpointer=InMemorySaver() if checkpointer else None)


def contents(messages):
    return [m.content for m in messages]


CONFIG = {"configurable": {"thread_id": THREAD}}


class TestDelivery:
    def test_posted_notice_reaches_the_model_and_persists_in_the_checkpoint(
        self, root, model_inputs
    ):
        """A notice posted for the thread is a state update: the model sees it and get_state keeps
        it."""
        app = build(root, model_inputs)
        post_to_inbox(thread_id=THREAD, root=root, content="look at the logs")
        out = app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        assert contents(out["messages"]) == ["task", "look at the logs", "answer 1"]
        stored = app.get_state(CONFIG).values["messages"]
        assert mark_of(stored[1])["kind"] == "inbox_delivery"
        app.invoke({"messages": [HumanMessage("again")]}, CONFIG)
        assert model_inputs[1].count("look at the logs") == 1

    def test_no_root_means_no_update(self, model_inputs, monkeypatch, tmp_path):
        """Without a root or save file the node returns nothing and the graph runs on, reading no
        inbox in the working directory."""
        monkeypatch.delenv(INBOX_ROOT_ENV, raising=False)
        monkeypatch.chdir(tmp_path)
        decoy = post_to_inbox(
            thread_id=THREAD, root=tmp_path, content="must stay"
        )  # where a root defaulting to '.' would look
        out = build(None, model_inputs).invoke({"messages": [HumanMessage("task")]}, CONFIG)
        assert contents(out["messages"]) == ["task", "answer 1"] and decoy.exists()

    def test_root_from_the_environment_binds_a_run_to_its_threads_inbox_whatever_its_save_file(
        self, tmp_path, model_inputs, monkeypatch
    ):
        """The root defaults to PROMPTSTRAT_INBOX_ROOT, and then configurable.save_file (which a
        request may set) does not move the run to another inbox; without a root it names the
        inbox."""
        monkeypatch.setenv(INBOX_ROOT_ENV, str(tmp_path / "env-root"))
        app = build(None, model_inputs)
        post_to_inbox(thread_id=THREAD, content="from env root")
        post_to_inbox(tmp_path / "x" / "agent.chat", "from save file")
        out = app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        assert contents(out["messages"])[1] == "from env root"
        config = {
            "configurable": {"thread_id": "other", "save_file": str(tmp_path / "x" / "agent.chat")}
        }
        assert contents(app.invoke({"messages": [HumanMessage("t")]}, config)["messages"])[1:] == [
            "answer 2"
        ]
        monkeypatch.delenv(INBOX_ROOT_ENV)
        config["configurable"]["thread_id"] = "third"
        assert (
            contents(app.invoke({"messages": [HumanMessage("t")]}, config)["messages"])[1]
            == "from save file"
        )

    def test_persist_false_returns_llm_input_messages(self, root):
        """persist=False leaves the state alone and hands the model the messages plus the
        notices."""
        post_to_inbox(thread_id=THREAD, root=root, content="ephemeral")
        node = make_inbox_node(root=root, persist=False)
        update = node({"messages": [HumanMessage("task")]}, CONFIG)
        assert list(update) == ["llm_input_messages"] and contents(
            update["llm_input_messages"]
        ) == ["task", "ephemeral"]


class TestAbortInterruptAndResume:
    def test_abort_interrupts_then_resume_continues_without_loss_or_repeat(
        self, root, model_inputs
    ):
        """Abort -> __interrupt__ with the reason; resume delivers the earlier notices once and runs
        the model."""
        app = build(root, model_inputs)
        post_to_inbox(thread_id=THREAD, root=root, content="before", name="0-before")
        request_abort(thread_id=THREAD, root=root, reason="wrong direction")
        post_to_inbox(thread_id=THREAD, root=root, content="after", name="b-after")

        out = app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        (interrupt,) = out["__interrupt__"]
        payload = interrupt.value
        assert payload == {
            "type": "inbox_abort",
            "thread_id": THREAD,
            "reason": "wrong direction",
            "abort": "abort",
            "notices": ["0-before"],
        }
        assert model_inputs == [] and contents(app.get_state(CONFIG).values["messages"]) == ["task"]

        post_to_inbox(thread_id=THREAD, root=root, content="while paused", name="c-paused")
        out = app.invoke(Command(resume=True), CONFIG)
        assert "__interrupt__" not in out
        assert contents(out["messages"]) == ["task", "before", "after", "while paused", "answer 1"]
        # acknowledged once the stored checkpoint holds them, without waiting for another pickup
        assert wait_settled()
        assert sorted(set(os.listdir(root / "run.1.inbox_removed")) - {".claims"}) == [
            "0-before",
            "abort",
            "b-after",
            "c-paused",
        ]

        out = app.invoke({"messages": [HumanMessage("next")]}, CONFIG)
        assert contents(out["messages"]).count("before") == 1 and "__interrupt__" not in out
        assert sorted(os.listdir(root / "run.1.inbox_removed")) == [
            "0-before",
            "abort",
            "b-after",
            "c-paused",
        ]

    def test_a_string_resume_value_becomes_a_user_message(self, root, model_inputs):
        """Command(resume="...") with text appends it, marked inbox_resume, after the earlier
        notices."""
        app = build(root, model_inputs)
        request_abort(thread_id=THREAD, root=root)
        out = app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        assert "empty abort file" in out["__interrupt__"][0].value["reason"]
        out = app.invoke(Command(resume="try the other API"), CONFIG)
        assert contents(out["messages"]) == ["task", "try the other API", "answer 1"]
        assert mark_of(out["messages"][1])["kind"] == "inbox_resume"

    def test_an_abort_posted_while_paused_interrupts_again(self, root, model_inputs):
        """After a resume the node picks up again, so a new abort interrupts once more."""
        app = build(root, model_inputs)
        request_abort(thread_id=THREAD, root=root, reason="first")
        app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        request_abort(thread_id=THREAD, root=root, reason="second")
        out = app.invoke(Command(resume=True), CONFIG)
        assert out["__interrupt__"][0].value["reason"] == "second" and model_inputs == []
        out = app.invoke(Command(resume=True), CONFIG)
        assert contents(out["messages"]) == ["task", "answer 1"]

    def test_new_input_instead_of_resume_abandons_the_interrupted_step_but_not_its_notices(
        self, root, model_inputs
    ):
        """Invoking with new input drops the paused step; its notices, never acknowledged, are
        delivered to the new one."""
        app = build(root, model_inputs)
        post_to_inbox(thread_id=THREAD, root=root, content="before", name="a")
        request_abort(thread_id=THREAD, root=root, reason="stop")
        payload = app.invoke({"messages": [HumanMessage("task")]}, CONFIG)["__interrupt__"][0].value
        out = app.invoke({"messages": [HumanMessage("new input")]}, CONFIG)
        assert contents(out["messages"]) == ["task", "new input", "before", "answer 1"]
        assert payload["notices"] == ["a"] and mark_of(out["messages"][2])["file"] == "a"
        app.invoke({"messages": [HumanMessage("later")]}, CONFIG)
        assert (root / "run.1.inbox_removed" / "a").read_text() == "before"

    def test_without_a_checkpointer_abort_raises_inbox_aborted(self, root, model_inputs):
        """No checkpointer, nothing to resume: invoke raises InboxAborted carrying the earlier
        notices."""
        app = build(root, model_inputs, checkpointer=False)
        post_to_inbox(thread_id=THREAD, root=root, content="kept", name="a")
        request_abort(thread_id=THREAD, root=root, reason="halt")
        with pytest.raises(InboxAborted) as caught:
            app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        assert caught.value.reason == "halt" and contents(caught.value.delivered) == ["kept"]
        assert model_inputs == []

    def test_async_cycle_matches_the_sync_one(self, root, model_inputs):
        """ainvoke interrupts and resumes the same way."""
        app = build(root, model_inputs)
        post_to_inbox(thread_id=THREAD, root=root, content="before", name="a")
        request_abort(thread_id=THREAD, root=root, reason="pause")

        async def run():
            first = await app.ainvoke({"messages": [HumanMessage("task")]}, CONFIG)
            return first, await app.ainvoke(Command(resume=True), CONFIG)

        first, second = asyncio.run(run())
        assert first["__interrupt__"][0].value["reason"] == "pause"
        assert contents(second["messages"]) == ["task", "before", "answer 1"]
