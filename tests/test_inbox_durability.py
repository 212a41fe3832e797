"""Specification of when a notice is acknowledged: only once a checkpoint *stored* by the
checkpointer holds it.

LangGraph's default ``durability="async"`` writes each checkpoint in the background, behind
the run, and ``"exit"`` only when the run ends; a notice acknowledged (moved to the history)
before its checkpoint is on disk is lost when the process dies in between. These tests read
the inbox and the checkpointer back, never the run's memory.
"""

from __future__ import annotations

import os
import secrets
import signal
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

from langchain_promptstrat.adapters.langgraph import make_inbox_node, pre_model_hook
from langchain_promptstrat.inbox.delivery import notice_ids, wait_settled
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.testing import ScriptedChatModel, make_sized_tool

DURABILITY = ("sync", "async", "exit")
FRONT_ENDS = ("middleware", "hook")


class LostWrites(InMemorySaver):
    """A checkpointer whose writes never arrive: a run whose process died before its checkpoints
    reached the disk.

    It counts the reads made by the inbox's settle watchers (their own thread), which ask it
    whether a stored checkpoint holds the notices they wait for.
    """

    watcher_reads = 0

    def get_tuple(self, config: RunnableConfig) -> Any:
        if threading.current_thread().name == "promptstrat-inbox-settle":
            self.watcher_reads += 1
        return super().get_tuple(config)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        return None


def agent(front_end: str, root: Path, checkpointer: Any, script: list[Any]) -> Any:
    """Return the real graph front end over the inbox under ``root``: create_agent + middleware
    (``middleware-one-call``: with ``persist_inbox=False``), or create_react_agent + hook."""
    model = ScriptedChatModel(script)
    tools = [make_sized_tool("fetch", sizes=200)]
    if front_end.startswith("middleware"):
        from langchain.agents import create_agent

        from langchain_promptstrat.adapters.middleware import PromptStrategyMiddleware

        middleware = PromptStrategyMiddleware(
            inbox_root=root, persist_inbox=front_end == "middleware"
        )
        return create_agent(model, tools, middleware=[middleware], checkpointer=checkpointer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(
            model, tools, pre_model_hook=pre_model_hook(inbox_root=root), checkpointer=checkpointer
        )


@pytest.fixture
def short_lease(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Leases of half a second, so a watcher waiting for a checkpoint that never comes gives up
    within the test."""
    monkeypatch.setenv("PROMPTSTRAT_INBOX_LEASE_SECONDS", "0.5")
    yield
    assert wait_settled(5.0)


def stored_notices(db: Path, thread: str) -> list[str]:
    """Return the contents of the notices in the thread's latest checkpoint, read from the SQLite
    file by a new saver."""
    with sqlite3.connect(db, check_same_thread=False) as conn:
        stored = SqliteSaver(conn).get_tuple(
            {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        )
    assert stored is not None
    messages = stored.checkpoint["channel_values"]["messages"]
    ids = notice_ids(messages)
    return [str(m.content) for m in messages if m.id in ids]


@pytest.mark.parametrize("durability", DURABILITY)
@pytest.mark.parametrize("front_end", [*FRONT_ENDS, "middleware-one-call"])
def test_no_front_end_acknowledges_a_notice_no_stored_checkpoint_holds(
    front_end, durability, tmp_path, short_lease
):
    """The run sees the notice, but its checkpoints never reach storage (the process died first):
    the notice must stay in flight for the next reader, whatever the durability mode, instead of
    being moved to the history and lost."""
    thread = f"t-{secrets.token_hex(3)}"
    store = DirectoryInbox.for_thread(thread, tmp_path)
    store.post("steer left", name="a.txt")
    saver = LostWrites()
    app = agent(
        front_end, tmp_path, saver, [{"tool_calls": [{"name": "fetch", "args": {}}]}, "answer"]
    )
    out = app.invoke(
        {"messages": [HumanMessage("task")]},
        {"configurable": {"thread_id": thread}},
        durability=durability,
    )
    if (
        front_end != "middleware-one-call"
    ):  # one-call notices reach the model call, never the messages
        assert "steer left" in [
            m.content for m in out["messages"]
        ]  # delivered to the run, in its memory
    # Let the watcher wait out its lease (no checkpoint ever holds the notice): the claim is then
    # left, not acknowledged. Waiting for it, rather than asserting it is still waiting a moment
    # later, keeps the test independent of how fast the run was.
    assert wait_settled(5.0)
    assert (
        saver.watcher_reads > 0
    )  # it waited for a checkpoint that holds the notice, asking the checkpointer, and found none
    # claimed (taken out of the pending set, so the run had it), and not moved to the history
    assert (
        store.pending() == []
        and [lease.name for lease in store.in_flight()] == ["a.txt"]
        and store.delivered_entries() == []
    )


@pytest.mark.parametrize("durability", DURABILITY)
@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_a_runs_last_notice_is_acknowledged_once_the_sqlite_checkpoint_holding_it_is_written(
    front_end, durability, tmp_path
):
    """A notice answered by the run's last model call is settled once its checkpoint is on disk, not
    left in flight ("owner alive, in lease") until the thread's next run; the SQLite file holds it
    exactly once."""
    thread = f"t-{secrets.token_hex(3)}"
    store = DirectoryInbox.for_thread(thread, tmp_path)
    store.post("steer left", name="a.txt")
    db = tmp_path / "checkpoints.sqlite"
    with sqlite3.connect(db, check_same_thread=False) as conn:
        app = agent(front_end, tmp_path, SqliteSaver(conn), ["answer"])
        app.invoke(
            {"messages": [HumanMessage("task")]},
            {"configurable": {"thread_id": thread}},
            durability=durability,
        )
        assert wait_settled(5.0)
    assert store.in_flight() == [] and [e.name for e in store.delivered_entries()] == ["a.txt"]
    assert stored_notices(db, thread) == ["steer left"]


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_an_async_graph_over_an_async_sqlite_checkpointer_settles_its_last_notice(
    front_end, tmp_path
):
    """ainvoke over AsyncSqliteSaver: the watcher reads the async checkpointer from its own thread
    and settles the notice once its checkpoint is written."""
    import asyncio

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    thread = f"t-{secrets.token_hex(3)}"
    store = DirectoryInbox.for_thread(thread, tmp_path)
    store.post("steer left", name="a.txt")

    async def run() -> bool:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
            app = agent(front_end, tmp_path, saver, ["answer"])
            await app.ainvoke(
                {"messages": [HumanMessage("task")]}, {"configurable": {"thread_id": thread}}
            )
            return await asyncio.to_thread(
                wait_settled, 5.0
            )  # the saver's loop stays free to answer the watcher

    assert asyncio.run(run())
    assert store.in_flight() == [] and [e.name for e in store.delivered_entries()] == ["a.txt"]


class SlowDisk(SqliteSaver):
    """A SQLite checkpointer on a slow disk: each checkpoint takes 150 ms to write (in the
    background, with "async")."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        time.sleep(0.15)
        return super().put(config, checkpoint, metadata, new_versions)


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_a_reader_killed_the_instant_it_acknowledges_leaves_the_notice_in_the_stored_conversation(
    front_end, tmp_path
):
    """The issue's deterministic loss: with the default durability the checkpoint holding a notice
    is written behind the run, so a reader killed the instant it moves the notice to the history
    must already have it on disk; the resumed thread's stored conversation then holds it exactly
    once."""
    thread = f"t-{secrets.token_hex(3)}"
    store = DirectoryInbox.for_thread(thread, tmp_path)
    store.post("steer left", name="a.txt")
    db = tmp_path / "checkpoints.sqlite"
    with sqlite3.connect(db) as conn:
        SqliteSaver(conn).setup()
    pid = os.fork()
    if pid == 0:  # the reader: SIGKILLed by its own acknowledgement, right after the notice moved
        try:
            acknowledge = DirectoryInbox.acknowledge

            def acknowledge_then_die(
                self: DirectoryInbox, token: str, name: str | None = None
            ) -> Any:
                where = acknowledge(self, token, name)
                os.kill(os.getpid(), signal.SIGKILL)
                return where

            DirectoryInbox.acknowledge = acknowledge_then_die  # type: ignore[method-assign]
            conn = sqlite3.connect(db, check_same_thread=False)
            app = agent(
                front_end,
                tmp_path,
                SlowDisk(conn),
                [{"tool_calls": [{"name": "fetch", "args": {}}]}, "answer"],
            )
            app.invoke(
                {"messages": [HumanMessage("task")]}, {"configurable": {"thread_id": thread}}
            )
            time.sleep(5)  # the watcher acknowledges (and dies) once the checkpoint is written
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert [e.name for e in store.delivered_entries()] == [
        "a.txt"
    ]  # it did acknowledge before dying
    with sqlite3.connect(db, check_same_thread=False) as conn:
        app = agent(front_end, tmp_path, SqliteSaver(conn), ["resumed"])
        app.invoke({"messages": [HumanMessage("go on")]}, {"configurable": {"thread_id": thread}})
    assert stored_notices(db, thread) == ["steer left"]


# --------------------------------------------------------------------------- abort + resume, two
# readers


def node_graph(backend: Any, root: Path | None, answers: list[list[str]]) -> Any:
    """Return inbox node -> model over its own checkpointer: one reader of the thread's inbox."""

    def model(state: MessagesState) -> dict[str, Any]:
        answers.append([str(m.content) for m in state["messages"]])
        return {"messages": [AIMessage(f"answer {len(answers)}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("inbox", make_inbox_node(root=root, backend=backend))
    graph.add_node("model", model)
    graph.add_edge(START, "inbox")
    graph.add_edge("inbox", "model")
    graph.add_edge("model", END)
    return graph.compile(checkpointer=InMemorySaver())


def _two_readers(backend: Any, root: Path | None, store: Any, thread: str) -> None:
    config = {"configurable": {"thread_id": thread}}
    first: list[list[str]] = []
    second: list[list[str]] = []
    reader_a, reader_b = node_graph(backend, root, first), node_graph(backend, root, second)
    store.post("before", name="a")
    store.request_abort("stop")
    out = reader_a.invoke({"messages": [HumanMessage("task")]}, config)
    assert out["__interrupt__"][0].value["reason"] == "stop"
    reader_a.invoke(Command(resume=True), config)
    reader_b.invoke(
        {"messages": [HumanMessage("task")]}, config
    )  # the same thread, served by a second reader
    assert wait_settled(5.0)
    seen_by = [answers[-1].count("before") for answers in (first, second)]
    assert seen_by == [1, 0]
    assert store.in_flight() == [] and sorted(e.name for e in store.delivered_entries()) == [
        "a",
        "abort",
    ]


def test_a_notice_taken_with_an_abort_is_not_delivered_again_by_a_second_reader_on_the_directory(
    tmp_path,
):
    """The notice consumed before an abort enters the first reader's state on resume; a second
    reader in the same process must not take over its claim and deliver it a second time."""
    thread = f"t-{secrets.token_hex(3)}"
    _two_readers(None, tmp_path, DirectoryInbox.for_thread(thread, tmp_path), thread)


def test_a_notice_taken_with_an_abort_is_not_delivered_again_by_a_second_reader_on_postgresql(
    postgres_dsn, postgres_schema
):  # noqa: F811
    """The same two readers on the PostgreSQL backend: the notice reaches one conversation, once."""
    from langchain_promptstrat.inbox.postgres import PostgresInboxes

    inboxes = PostgresInboxes(postgres_dsn, schema=postgres_schema)
    thread = f"t-{secrets.token_hex(3)}"
    _two_readers(inboxes, None, inboxes.for_thread(thread), thread)


# --------------------------------------------------------------------------- dead readers


def test_a_killed_reader_not_yet_reaped_is_dead_and_its_claim_is_recovered_at_once(tmp_path):
    """A reader SIGKILLed whose parent has not reaped it yet (a zombie, /proc state Z) will never
    acknowledge: its claim is taken over by the next pickup, not left waiting for the 600 s
    lease."""
    import os
    import signal
    import time

    from langchain_promptstrat.inbox.contract import owner_state
    from langchain_promptstrat.inbox.delivery import pick_up

    store = DirectoryInbox.for_thread("zombie", tmp_path)
    store.post("steer left", name="a.txt")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the reader: claim, report its owner name, wait to be killed
        try:
            store.lease("a.txt")
            os.write(write_fd, store.in_flight()[0].owner.encode())
            time.sleep(60)
        finally:
            os._exit(0)
    try:
        os.close(write_fd)
        owner = os.read(read_fd, 200).decode()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z":
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert owner_state(owner) == "dead"
        assert [m.content for m in pick_up(store).delivered] == ["steer left"]
        assert store.in_flight() == []
    finally:
        os.waitpid(pid, 0)
