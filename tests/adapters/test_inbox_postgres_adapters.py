"""The LangGraph node and pre-model hook over the PostgreSQL inbox: notices, abort as interrupt,
resume."""

from __future__ import annotations

import secrets

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

from langchain_promptstrat.adapters.langgraph import make_inbox_node, pre_model_hook
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.inbox.delivery import wait_settled
from langchain_promptstrat.strategies.inbox import Inbox


@pytest.fixture
def inboxes(postgres_dsn, postgres_schema):  # noqa: F811
    """The PostgreSQL inbox provider on the session's schema."""
    from langchain_promptstrat.inbox.postgres import PostgresInboxes

    return PostgresInboxes(postgres_dsn, schema=postgres_schema)


def build(backend, seen):
    def model(state):
        seen.append([m.content for m in state["messages"]])
        return {"messages": [AIMessage(f"answer {len(seen)}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("inbox", make_inbox_node(backend=backend))
    graph.add_node("model", model)
    graph.add_edge(START, "inbox")
    graph.add_edge("inbox", "model")
    graph.add_edge("model", END)
    return graph.compile(checkpointer=InMemorySaver())


class TestNodeOverPostgres:
    def test_notices_abort_and_resume(self, inboxes):
        """Notices reach the model once; abort interrupts; resume delivers what came before it
        once."""
        thread = f"t-{secrets.token_hex(4)}"
        config = {"configurable": {"thread_id": thread}}
        store = inboxes.for_thread(thread)
        seen = []
        app = build(inboxes, seen)
        store.post("before", name="a")
        store.request_abort("stop")
        store.post("after", name="b")
        out = app.invoke({"messages": [HumanMessage("task")]}, config)
        payload = out["__interrupt__"][0].value
        assert (
            payload["reason"] == "stop"
            and payload["abort"] == "abort"
            and payload["notices"] == ["a"]
            and seen == []
        )
        assert not any("pg:" in str(value) for value in payload.values())
        out = app.invoke(Command(resume="go on"), config)
        assert [m.content for m in out["messages"]] == [
            "task",
            "before",
            "go on",
            "after",
            "answer 1",
        ]
        # acknowledged once the stored checkpoint holds them, without waiting for the thread's next
        # pickup
        assert wait_settled()
        assert store.in_flight() == [] and sorted(e.name for e in store.delivered_entries()) == [
            "a",
            "abort",
            "b",
        ]
        app.invoke({"messages": [HumanMessage("next")]}, config)
        assert store.in_flight() == [] and sorted(e.name for e in store.delivered_entries()) == [
            "a",
            "abort",
            "b",
        ]

    def test_root_with_postgres_is_refused(self, inboxes, tmp_path):
        """root= goes with the directory backend only."""
        with pytest.raises(ConfigError, match="root= is the directory backend's"):
            make_inbox_node(root=tmp_path, backend=inboxes)


class TestHookOverPostgres:
    def test_hook_takes_the_backend_from_its_argument_or_the_inbox_strategy(self, inboxes):
        """pre_model_hook(backend=...) and pre_model_hook([Inbox(backend=...)]) read the same
        PostgreSQL inbox."""
        thread = f"t-{secrets.token_hex(4)}"
        config = {"configurable": {"thread_id": thread}}
        store = inboxes.for_thread(thread)
        for hook in (
            pre_model_hook("inbox", backend=inboxes),
            pre_model_hook([Inbox(backend=inboxes)]),
        ):
            store.post("hello", name="n")
            update = hook({"messages": [HumanMessage("task")]}, config)
            assert [m.content for m in update["llm_input_messages"]] == ["task", "hello"]
            assert (
                store.pending() == [] and store.in_flight() == []
            )  # acknowledged once the model call returned


class TestMiddlewareOverPostgres:
    def test_abort_interrupts_and_resume_continues(self, inboxes):
        """PromptStrategyMiddleware(backend=...) delivers the thread's PostgreSQL notices once and
        interrupts on abort."""
        from langchain.agents import create_agent

        from langchain_promptstrat.adapters.middleware import PromptStrategyMiddleware
        from langchain_promptstrat.testing import ScriptedChatModel, make_sized_tool

        thread = f"t-{secrets.token_hex(4)}"
        config = {"configurable": {"thread_id": thread}, "recursion_limit": 200}
        store = inboxes.for_thread(thread)
        model = ScriptedChatModel.long_run(2)
        app = create_agent(
            model,
            [make_sized_tool("fetch", sizes=200)],
            system_prompt="sys",
            middleware=[PromptStrategyMiddleware(backend=inboxes, persist_inbox=False)],
            checkpointer=InMemorySaver(),
        )
        store.post("before", name="0-before")
        store.request_abort("stop")
        out = app.invoke({"messages": [HumanMessage("task")]}, config)
        assert out["__interrupt__"][0].value["reason"] == "stop" and model.calls == []
        out = app.invoke(Command(resume=True), config)
        assert out["messages"][-1].content == "done"
        assert [[m.content for m in call].count("before") for call in model.calls] == [
            1,
            0,
            0,
        ]  # long_run(2): 2 calls + the answer
        assert (
            store.pending() == [] and store.in_flight() == []
        )  # acknowledged once the model call returned
