"""Specification of the inbox's delivery guarantee, proved by breaking things: killed readers,
failing models, editors, hostile directories and a database outage."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import socket
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_promptstrat.adapters.langgraph import pre_model_hook
from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.inbox.delivery import notice_id, pick_up, wait_settled
from langchain_promptstrat.inbox.directory import DirectoryInbox, post_to_inbox, request_abort
from langchain_promptstrat.inbox.paths import inbox_dir, inbox_removed_dir
from langchain_promptstrat.strategies.inbox import Inbox
from langchain_promptstrat.testing import ScriptedChatModel, make_sized_tool

_spec = importlib.util.spec_from_file_location(
    "inbox_kills", Path(__file__).parent.parent / "benchmarks" / "inbox_kills.py"
)
inbox_kills = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["inbox_kills"] = inbox_kills
_spec.loader.exec_module(inbox_kills)  # type: ignore[union-attr]

KILLS = 400
THREAD = "run.1"
CONFIG = {"configurable": {"thread_id": THREAD}, "recursion_limit": 200}

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


def contents(messages) -> list[Any]:
    return [m.content for m in messages]


def react_agent(model: ScriptedChatModel, hook: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            model,
            [make_sized_tool("fetch", sizes=200)],
            pre_model_hook=hook,
            checkpointer=InMemorySaver(),
        )


# --------------------------------------------------------------------------- killed readers


def _report(figures, capsys) -> None:
    with capsys.disabled():
        print(f"\n{inbox_kills.HEADER}\n{figures.row()}")


def _check(figures: Any, mode: str) -> None:
    assert figures.killed == KILLS and figures.posted == 2 * KILLS and figures.aborts_posted > 0
    assert figures.duplicated == 0
    if (
        mode == "handover"
    ):  # at most once: what a kill or a failed model call took is counted, never sent twice
        assert (
            figures.delivered + figures.lost
            == figures.posted + figures.aborts_posted - figures.aborts_honoured
        )
    elif (
        mode == "two-phase"
    ):  # inbox_pickup: notices exactly once; an abort is consumed when raised (at most once)
        assert (
            figures.delivered == figures.posted
            and figures.lost == figures.aborts_posted - figures.aborts_honoured
        )
    else:
        assert figures.lost == 0 and figures.delivered == figures.posted
        assert figures.aborts_honoured == figures.aborts_posted


@pytest.mark.parametrize("mode", inbox_kills.MODES)
def test_killed_readers_on_the_directory_lose_nothing(mode, tmp_path, capsys):
    """400 readers SIGKILLed at random points (and failing model calls): every notice and abort
    delivered exactly once, persisted, one-call or two-phase (inbox_pickup; its aborts at most
    once); the handover mode sends none twice and its losses are the counted window."""
    figures = inbox_kills.run_kills(
        inbox_kills.directory_factory(tmp_path),
        backend="directory",
        mode=mode,
        kills=KILLS,
        workdir=tmp_path,
    )
    _report(figures, capsys)
    _check(figures, mode)


@pytest.mark.parametrize("mode", inbox_kills.MODES)
def test_killed_readers_on_postgresql_lose_nothing(
    mode, postgres_dsn, postgres_schema, tmp_path, capsys
):  # noqa: F811
    """The same 400 kills on PostgreSQL: exactly once persisted, one-call or two-phase, at most once
    in the handover mode."""
    figures = inbox_kills.run_kills(
        inbox_kills.postgres_factory(postgres_dsn, postgres_schema),
        backend="postgresql",
        mode=mode,
        kills=KILLS,
        max_delay=0.03,
        workdir=tmp_path,
    )
    _report(figures, capsys)
    _check(figures, mode)


# --------------------------------------------------------------------------- failing model calls


class TestFailingModelCalls:
    def test_hook_a_notice_given_to_a_model_call_that_raised_reaches_the_retry_once(self, tmp_path):
        """create_react_agent + hook: the model raises, the caller retries with new input, the
        notice is there once."""
        model = ScriptedChatModel([RuntimeError("provider down"), "ok"])
        agent = react_agent(model, pre_model_hook(inbox_root=tmp_path))
        post_to_inbox(thread_id=THREAD, root=tmp_path, content="use the staging database")
        with pytest.raises(RuntimeError, match="provider down"):
            agent.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        out = agent.invoke({"messages": [HumanMessage("again")]}, CONFIG)
        assert contents(model.calls[-1]).count("use the staging database") == 1
        assert contents(out["messages"]).count("use the staging database") == 1
        agent.invoke({"messages": [HumanMessage("more")]}, CONFIG)
        # this process's watcher records it once a stored checkpoint holds it, not on a timer the
        # test races
        assert wait_settled()
        assert (
            os.listdir(inbox_removed_dir(tmp_path / "run.1.chat")) != []
            and DirectoryInbox.for_thread(THREAD, tmp_path).in_flight() == []
        )

    def test_hook_without_persisting_hands_a_notice_over_at_most_once(self, tmp_path):
        """pre_model_hook(persist_inbox=False) records a notice as delivered when handed over: a
        model call that then raises takes it with it (the README's stated window), and the retry
        does not get it again, nor twice."""
        model = ScriptedChatModel([RuntimeError("provider down"), "ok"])
        agent = react_agent(model, pre_model_hook(inbox_root=tmp_path, persist_inbox=False))
        post_to_inbox(thread_id=THREAD, root=tmp_path, content="use the staging database")
        with pytest.raises(RuntimeError, match="provider down"):
            agent.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        agent.invoke({"messages": [HumanMessage("again")]}, CONFIG)
        store = DirectoryInbox.for_thread(THREAD, tmp_path)
        assert [contents(call).count("use the staging database") for call in model.calls] == [1, 0]
        assert (
            store.in_flight() == []
            and store.pending() == []
            and len(store.delivered_entries()) == 1
        )

    def test_middleware_one_call_notice_is_acknowledged_only_after_the_model_answered(
        self, tmp_path
    ):
        """persist_inbox=False: a model call that raises leaves the notice claimed; the retry gets
        it under the same id."""
        from langchain.agents import create_agent

        from langchain_promptstrat.adapters.middleware import PromptStrategyMiddleware

        model = ScriptedChatModel([RuntimeError("provider down"), "ok"])
        app = create_agent(
            model,
            [make_sized_tool("fetch", sizes=200)],
            system_prompt="sys",
            middleware=[PromptStrategyMiddleware(inbox_root=tmp_path, persist_inbox=False)],
        )
        store = DirectoryInbox.for_thread(THREAD, tmp_path)
        post_to_inbox(thread_id=THREAD, root=tmp_path, content="look at the logs")
        with pytest.raises(RuntimeError):
            app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        (lease,) = store.in_flight()
        assert store.pending() == [] and lease.state == "mine"
        app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        (first, second) = model.calls
        assert [m.id for m in second if m.content == "look at the logs"] == [
            m.id for m in first if m.content == "look at the logs"
        ]
        assert [m.id for m in second if m.content == "look at the logs"] == [notice_id(lease.token)]
        assert store.in_flight() == [] and [e.name for e in store.delivered_entries()] != []

    def test_middleware_one_call_notice_answered_by_a_resumed_process_is_not_sent_again(
        self, tmp_path
    ):
        """persist_inbox=False with a checkpointer: a step resumed by a fresh middleware (another
        process) acknowledges the notice its model answered, so the next model call does not get it
        again."""
        from langchain.agents import create_agent

        from langchain_promptstrat.adapters.middleware import PromptStrategyMiddleware

        model = ScriptedChatModel([RuntimeError("killed mid-call"), "ok", "later"])
        saver = InMemorySaver()

        def app() -> Any:  # a fresh middleware each time: what a restarted worker builds
            mw = PromptStrategyMiddleware(inbox_root=tmp_path, persist_inbox=False)
            return create_agent(model, [], system_prompt="sys", middleware=[mw], checkpointer=saver)

        post_to_inbox(thread_id=THREAD, root=tmp_path, content="look at the logs")
        with pytest.raises(RuntimeError):
            app().invoke({"messages": [HumanMessage("task")]}, CONFIG)
        app().invoke(None, CONFIG)  # resume the failed step from the checkpoint
        app().invoke({"messages": [HumanMessage("next")]}, CONFIG)
        store = DirectoryInbox.for_thread(THREAD, tmp_path)
        assert [contents(call).count("look at the logs") for call in model.calls] == [1, 1, 0]
        assert store.in_flight() == [] and len(store.delivered_entries()) == 1

    @pytest.mark.parametrize("run", ["invoke", "ainvoke"])
    def test_middleware_one_call_notice_whose_acknowledgement_failed_is_settled_by_the_next_pickup(
        self, run, tmp_path, monkeypatch
    ):
        """persist_inbox=False (sync and async): when recording a delivery fails after the model
        answered, the answered id kept in private state lets the next pickup record it instead of
        sending the notice to a second model call."""
        import asyncio

        from langchain.agents import create_agent

        from langchain_promptstrat.adapters.middleware import ANSWERED_KEY, PromptStrategyMiddleware

        model = ScriptedChatModel(["ok", "later"])
        app = create_agent(
            model,
            [],
            system_prompt="sys",
            checkpointer=InMemorySaver(),
            middleware=[PromptStrategyMiddleware(inbox_root=tmp_path, persist_inbox=False)],
        )
        post_to_inbox(thread_id=THREAD, root=tmp_path, content="look at the logs")
        real = DirectoryInbox.acknowledge

        def outage(self: DirectoryInbox, token: str, name: str | None = None) -> Any:
            raise OSError("disk unavailable")

        def invoke(text: str) -> Any:
            if run == "invoke":
                return app.invoke({"messages": [HumanMessage(text)]}, CONFIG)
            return asyncio.run(app.ainvoke({"messages": [HumanMessage(text)]}, CONFIG))

        monkeypatch.setattr(DirectoryInbox, "acknowledge", outage)
        invoke("task")
        assert (
            wait_settled()
        )  # the failed acknowledgement was tried before the disk comes back, not raced by it
        store = DirectoryInbox.for_thread(THREAD, tmp_path)
        (lease,) = store.in_flight()
        assert app.get_state(CONFIG).values[ANSWERED_KEY] == [notice_id(lease.token)]
        monkeypatch.setattr(DirectoryInbox, "acknowledge", real)
        invoke("next")
        assert (
            wait_settled()
        )  # the recording is acknowledged once the checkpoint holding it is stored
        assert [contents(call).count("look at the logs") for call in model.calls] == [1, 0]
        assert store.in_flight() == [] and len(store.delivered_entries()) == 1
        assert app.get_state(CONFIG).values.get(ANSWERED_KEY) is None

    def test_middleware_one_call_notice_a_strategy_left_out_stays_claimed_for_the_next_pickup(
        self, tmp_path
    ):
        """persist_inbox=False: a notice the strategies removed from the request was not answered,
        so it is neither acknowledged nor recorded as answered; it stays claimed and the next pickup
        delivers it again."""
        from langchain.agents import create_agent

        from langchain_promptstrat.adapters.middleware import ANSWERED_KEY, PromptStrategyMiddleware

        def hide(messages: Any) -> Any:
            return [m for m in messages if m.content != "hidden"]

        model = ScriptedChatModel(["ok"])
        app = create_agent(
            model,
            [],
            system_prompt="sys",
            checkpointer=InMemorySaver(),
            middleware=[
                PromptStrategyMiddleware(["inbox", hide], inbox_root=tmp_path, persist_inbox=False)
            ],
        )
        post_to_inbox(thread_id=THREAD, root=tmp_path, content="hidden", name="a.txt")
        post_to_inbox(thread_id=THREAD, root=tmp_path, content="shown", name="b.txt")
        app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        store = DirectoryInbox.for_thread(THREAD, tmp_path)
        assert contents(model.calls[0])[-1] == "shown" and "hidden" not in contents(model.calls[0])
        assert wait_settled()  # "shown" is acknowledged once the answer's checkpoint is stored
        (lease,) = store.in_flight()
        assert lease.name == "a.txt" and [e.name for e in store.delivered_entries()] == ["b.txt"]
        assert notice_id(lease.token) not in (app.get_state(CONFIG).values.get(ANSWERED_KEY) or [])


# --------------------------------------------------------------------------- editors


def _editor_round(inbox: Path, files: int, quiet: float, write) -> tuple[list[str], list[str], Any]:
    """Write ``files`` notices with ``write`` while a reader picks up every 2 ms; return what was
    read and the pickups' blanks."""
    store = DirectoryInbox(inbox, inbox.with_suffix(".inbox_removed"), quiet_seconds=quiet)
    got: list[str] = []
    blanks: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set() or store.pending():
            result = pick_up(store)
            got.extend(str(m.content) for m in result.delivered)
            blanks.extend(result.empty)
            time.sleep(0.002)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        expected = write(inbox)
    finally:
        time.sleep(quiet * 2)
        stop.set()
        thread.join(30)
    return got, blanks, expected


class TestEditors:
    QUIET = 0.3

    def test_a_file_written_in_pieces_is_never_read_half_written(self, tmp_path, capsys):
        """400 files each written in four pieces with pauses shorter than the quiet time are all
        read whole, once."""
        inbox = tmp_path / "agent.inbox"
        inbox.mkdir()

        def write(directory: Path) -> list[str]:
            texts = [f"instruction {i}: " + "word " * 50 for i in range(400)]
            handles = [
                open(directory / f"note-{i:03}.txt", "w", encoding="utf-8") for i in range(400)
            ]
            quarter = len(texts[0]) // 4
            for piece in range(4):
                for handle, text in zip(handles, texts, strict=False):
                    handle.write(
                        text[piece * quarter : None if piece == 3 else (piece + 1) * quarter]
                    )
                    handle.flush()
                time.sleep(0.05)
            for handle in handles:
                handle.close()
            return texts

        got, blanks, texts = _editor_round(inbox, 400, self.QUIET, write)
        partial = [g for g in got if g not in texts]
        with capsys.disabled():
            print(
                f"\neditor, four pieces: {len(texts)} written, {len(set(got) & set(texts))} read "
                f"whole, {len(partial)} partial"
            )
        assert partial == [] and sorted(got) == sorted(texts) and blanks == []

    def test_a_file_created_empty_then_filled_is_delivered_with_its_text(self, tmp_path):
        """A file created empty (and left so longer than the quiet time) waits, and is delivered
        once filled."""
        inbox = tmp_path / "agent.inbox"
        inbox.mkdir()

        def write(directory: Path) -> list[str]:
            paths = [directory / f"todo-{i:03}.md" for i in range(100)]
            for path in paths:
                path.touch()
            time.sleep(self.QUIET * 2)
            texts = [f"then do step {i}" for i in range(100)]
            for path, text in zip(paths, texts, strict=False):
                path.write_text(text, encoding="utf-8")
            return texts

        got, blanks, texts = _editor_round(inbox, 100, self.QUIET, write)
        assert sorted(got) == sorted(texts) and blanks == []

    def test_posts_are_ready_at_once_whatever_the_quiet_time(self, tmp_path):
        """post_to_inbox writes read-only files, which a pickup takes immediately even with a long
        quiet time."""
        save = tmp_path / "agent.chat"
        post_to_inbox(save, "now")
        store = DirectoryInbox.for_save_file(save)
        store.quiet_seconds = 3600
        assert contents(pick_up(store).delivered) == ["now"]

    def test_the_quiet_time_is_a_setting(self, tmp_path, monkeypatch):
        """INBOX_QUIET_SECONDS sets how long a writable file must stay unchanged."""
        monkeypatch.setenv("INBOX_QUIET_SECONDS", "3600")
        inbox = inbox_dir(tmp_path / "agent.chat")
        inbox.mkdir()
        (inbox / "fresh.txt").write_text("still typing")
        store = DirectoryInbox.for_save_file(tmp_path / "agent.chat")
        assert (
            store.quiet_seconds == 3600
            and pick_up(store).delivered == []
            and store.pending() == ["fresh.txt"]
        )
        os.utime(inbox / "fresh.txt", (time.time() - 7200, time.time() - 7200))
        assert contents(pick_up(store).delivered) == ["still typing"]

    @pytest.mark.parametrize(
        ("written", "reason"),
        [("stop, wrong table\n", "stop, wrong table"), ("", "empty abort file")],
    )
    def test_a_hand_written_abort_stops_the_very_next_model_call(
        self, written, reason, tmp_path, monkeypatch
    ):
        """`echo stop > abort` leaves a writable file changed a moment ago; it must stop the agent
        before its next model call (maybe the destructive one), not wait out the quiet time like a
        notice. Its text, complete or not (empty here), is the reason; an empty one gets the
        default."""
        monkeypatch.setenv("INBOX_QUIET_SECONDS", "3600")
        inbox = inbox_dir(tmp_path / f"{THREAD}.chat")
        inbox.mkdir()
        (inbox / "abort").write_text(written)  # writable, modified just now
        model = ScriptedChatModel(["must not be called"])
        app = react_agent(model, pre_model_hook(inbox_root=tmp_path))
        out = app.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        assert model.calls == [] and reason in out["__interrupt__"][0].value["reason"]


# --------------------------------------------------------------------------- hostile directories


class TestHostileDirectories:
    def test_a_symlinked_inbox_is_refused_with_one_warning(self, tmp_path, caplog):
        """An inbox that is a symlink to a directory outside the root is not read: nothing moved,
        one warning."""
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text("private")
        root = tmp_path / "root"
        root.mkdir()
        (root / "run.1.inbox").symlink_to(outside)
        store = DirectoryInbox.for_thread(THREAD, root)
        with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
            assert pick_up(store).delivered == [] and pick_up(store).delivered == []
        assert (outside / "secret.txt").read_text() == "private" and not (
            root / "run.1.inbox_removed"
        ).exists()
        assert (
            [r.getMessage() for r in caplog.records].count(caplog.records[0].getMessage())
            == 1
            == len(caplog.records)
        )
        assert "symbolic link" in caplog.records[0].getMessage()

    def test_a_symlinked_history_is_refused_and_nothing_is_moved(self, tmp_path, caplog):
        """A removed directory that is a symlink elsewhere: the notices stay pending, one
        warning."""
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        root = tmp_path / "root"
        root.mkdir()
        (root / "run.1.inbox_removed").symlink_to(elsewhere)
        post_to_inbox(thread_id=THREAD, root=root, content="stay", name="n.txt")
        store = DirectoryInbox.for_thread(THREAD, root)
        with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
            assert pick_up(store).delivered == [] and pick_up(store).delivered == []
        assert os.listdir(elsewhere) == [] and os.listdir(root / "run.1.inbox") == ["n.txt"]
        assert len(caplog.records) == 1

    def test_the_application_root_wins_over_the_run_configs_save_file(self, tmp_path, caplog):
        """configurable.save_file cannot move an inbox rooted by the application, unless
        allow_save_file=True."""
        root, other = tmp_path / "root", tmp_path / "other"
        post_to_inbox(other / "x.chat", "from anywhere")
        post_to_inbox(thread_id=THREAD, root=root, content="from the root")
        config = {"configurable": {"thread_id": THREAD, "save_file": str(other / "x.chat")}}
        with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
            assert (
                Inbox(root=root).invoke([HumanMessage("t")], config)[-1].content == "from the root"
            )
        assert "save_file is ignored" in caplog.text
        assert (
            Inbox(root=root, allow_save_file=True).invoke([HumanMessage("t")], config)[-1].content
            == "from anywhere"
        )

    def test_a_run_config_cannot_name_another_threads_inbox_under_the_environments_root(
        self, tmp_path, monkeypatch
    ):
        """A root set by the deployer's environment binds a run to its thread's own inbox:
        configurable.save_file pointing at thread A's inbox neither reads A's notices nor takes A's
        abort (a request chose the config)."""
        root = tmp_path / "root"
        monkeypatch.setenv("PROMPTSTRAT_INBOX_ROOT", str(root))
        post_to_inbox(thread_id="A", content="A's secret")
        request_abort(thread_id="A", reason="A's abort")
        post_to_inbox(thread_id="B", content="for B")
        config = {"configurable": {"thread_id": "B", "save_file": str(root / "A.chat")}}
        assert [m.content for m in Inbox().invoke([HumanMessage("t")], config)] == ["t", "for B"]
        left = DirectoryInbox.for_thread("A").pending()
        assert len(left) == 2 and "abort" in left

    def test_a_run_config_cannot_name_another_threads_inbox_in_postgresql(
        self, postgres_dsn, postgres_schema
    ):  # noqa: F811
        """The PostgreSQL provider serves a run its own thread's inbox whatever
        configurable.save_file says; a save file chooses the inbox only when the code passes
        allow_save_file=True."""
        from langchain_promptstrat.inbox.postgres import PostgresInboxes

        inboxes = PostgresInboxes(postgres_dsn, schema=postgres_schema)
        victim = inboxes.for_save_file("/srv/victim.chat")
        victim.post("the victim's notice", name="v.txt")
        victim.request_abort("the victim's abort")
        config = {
            "configurable": {"thread_id": f"own-{os.getpid()}", "save_file": "/srv/victim.chat"}
        }
        assert [m.content for m in Inbox(backend=inboxes).invoke([HumanMessage("t")], config)] == [
            "t"
        ]
        assert sorted(victim.pending()) == ["abort", "v.txt"]
        with pytest.raises(Exception, match="the victim's abort"):
            Inbox(backend=inboxes, allow_save_file=True).invoke([HumanMessage("t")], config)

    def test_a_notice_over_the_size_cap_stays_in_place_with_one_warning(self, tmp_path, caplog):
        """A file larger than INBOX_MAX_NOTICE_BYTES is neither delivered nor moved; the others are
        delivered."""
        save = tmp_path / "agent.chat"
        post_to_inbox(save, "x" * 5000, name="big.txt")
        post_to_inbox(save, "small", name="small.txt")
        store = DirectoryInbox(inbox_dir(save), inbox_removed_dir(save), max_notice_bytes=1000)
        with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
            assert (
                contents(pick_up(store).delivered) == ["small"] and pick_up(store).delivered == []
            )
        assert (
            store.pending() == ["big.txt"]
            and len(caplog.records) == 1
            and "notice limit" in caplog.text
        )

    def test_the_size_cap_is_a_setting(self, tmp_path, monkeypatch):
        """INBOX_MAX_NOTICE_BYTES sets the cap of the writers and of the readers: a file larger than
        it, put there by other means, stays pending."""
        monkeypatch.setenv("INBOX_MAX_NOTICE_BYTES", "10")
        with pytest.raises(InboxError, match="at most 10"):
            post_to_inbox(tmp_path / "agent.chat", "more than ten bytes")
        monkeypatch.setenv("INBOX_MAX_NOTICE_BYTES", "100")
        post_to_inbox(tmp_path / "agent.chat", "more than ten bytes")
        monkeypatch.setenv("INBOX_MAX_NOTICE_BYTES", "10")
        assert pick_up(DirectoryInbox.for_save_file(tmp_path / "agent.chat")).delivered == []

    def test_a_file_name_that_is_not_utf8_never_reaches_metadata_as_a_lone_surrogate(
        self, tmp_path
    ):
        """A name with invalid UTF-8 bytes is delivered with an escaped name that encodes and
        serialises as JSON."""
        inbox = inbox_dir(tmp_path / "agent.chat")
        inbox.mkdir()
        with open(os.path.join(os.fsencode(inbox), b"caf\xe9.txt"), "wb") as f:
            f.write(b"latin-1 name")
        result = pick_up(DirectoryInbox.for_save_file(tmp_path / "agent.chat"))
        (message,) = result.delivered
        promptstrat = message.additional_kwargs["promptstrat"]
        assert promptstrat["file"] == "caf\\xe9.txt"
        json.dumps(promptstrat).encode("utf-8")  # would raise on a lone surrogate


# --------------------------------------------------------------------------- PostgreSQL outage


class TestPlantedFiles:
    """What someone who can write under the inbox root plants there cannot make a listing or a
    pickup do (issue 29)."""

    def test_a_symlink_in_a_claim_shows_no_preview_of_its_target(self, tmp_path):
        """A listing's preview reads regular files only: a link planted in a claim directory never
        reveals its target."""
        secret = tmp_path / "secret.txt"
        secret.write_text("the server's secret")
        store = DirectoryInbox.for_thread(THREAD, tmp_path / "root")
        store.post("real", name="n.txt")
        claim = store.lease("n.txt")
        planted = store.claims_path / f"{'0' * 32}.planted-1-1"
        planted.mkdir()
        (planted / "link.txt").symlink_to(secret)
        heads = {lease.name: lease.head for lease in store.in_flight(with_head=True)}
        assert heads == {"n.txt": b"real", "link.txt": None} and claim is not None

    def test_a_fifo_in_a_claim_does_not_block_a_listing(self, tmp_path):
        """A FIFO would block open() forever: a listing opens without blocking and shows it with no
        preview."""
        store = DirectoryInbox.for_thread(THREAD, tmp_path / "root")
        store.post("real", name="n.txt")
        store.lease("n.txt")
        planted = store.claims_path / f"{'0' * 32}.planted-1-1"
        planted.mkdir()
        os.mkfifo(planted / "fifo")
        done = []
        reader = threading.Thread(
            target=lambda: done.append(store.in_flight(with_head=True)), daemon=True
        )
        reader.start()
        reader.join(10)
        assert done and {lease.name: lease.head for lease in done[0]} == {
            "n.txt": b"real",
            "fifo": None,
        }

    def test_a_symlinked_claims_directory_is_refused_and_nothing_is_created_outside(self, tmp_path):
        """A .claims link would lead the claims (and the notices in them) outside the root: refused,
        the notice stays pending."""
        outside = tmp_path / "outside"
        outside.mkdir()
        store = DirectoryInbox.for_thread(THREAD, tmp_path / "root")
        store.post("stay", name="n.txt")
        store.removed_path.mkdir(parents=True)
        store.claims_path.symlink_to(outside)
        assert pick_up(store).delivered == [] and store.in_flight() == []
        assert os.listdir(outside) == [] and os.listdir(store.path) == ["n.txt"]

    def test_a_file_grown_after_it_was_admitted_is_read_up_to_the_cap_only(self, tmp_path):
        """ready() admits a file by its size then; an editor may grow it before the claim: the read
        stops at the cap."""
        save = tmp_path / "agent.chat"
        store = DirectoryInbox(inbox_dir(save), inbox_removed_dir(save), max_notice_bytes=1000)
        store.post("small", name="n.txt")
        assert store.ready() == ["n.txt"]
        path = store.path / "n.txt"
        path.chmod(0o644)
        path.write_bytes(b"x" * 1_000_000)
        claimed = store.lease("n.txt")
        assert claimed is not None and claimed.data == b"x" * 1000

    def test_a_long_name_delivered_twice_gets_a_history_name_within_255_bytes(self, tmp_path):
        """stem.1.ext of a 255-byte name would be 257 bytes (ENAMETOOLONG) and the second notice
        would stay in flight
        forever: the history name cuts the stem instead, and both notices are delivered."""
        store = DirectoryInbox.for_thread(THREAD, tmp_path / "root")
        name = "é" * 125 + "x.txt"
        assert len(name.encode()) == 255
        delivered = []
        for text in ("first", "second", "third"):
            store.post(text, name=name)
            delivered += contents(pick_up(store).delivered)
        assert (
            delivered == ["first", "second", "third"]
            and store.in_flight() == []
            and store.pending() == []
        )
        assert (
            all(len(os.fsencode(e.name)) <= 255 for e in store.delivered_entries())
            and len(store.delivered_entries()) == 3
        )

    def test_a_listing_leaves_a_fresh_claim_of_another_reader_in_this_process_alone(self, tmp_path):
        """Between a reader's mkdir of its claim and its rename into it, the claim is empty; a
        listing (GET in the agent's process) used to remove it as a leftover of its own, and the
        lease then failed as if another reader had won."""
        from langchain_promptstrat.inbox.directory import new_claim_dir

        store = DirectoryInbox.for_thread(THREAD, tmp_path / "root")
        store.removed_path.mkdir(parents=True)
        fresh = new_claim_dir(store.claims_path, "f" * 32)
        assert store.in_flight(with_head=True) == [] and fresh.is_dir()


class _Proxy:
    """A TCP forwarder to the PostgreSQL server that can be taken down and brought back on the same
    port."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for conn in self._conns:
            try:
                conn.close()
            except OSError:
                pass
        self._conns.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self._conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass


def test_a_postgresql_outage_degrades_to_no_notices_and_delivers_once_back(
    postgres_dsn, postgres_schema, caplog
):  # noqa: F811
    """Server unreachable: model calls go on without notices, one warning for the outage; once back,
    delivered once."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from langchain_promptstrat.inbox.postgres import PostgresInboxes

    info = conninfo_to_dict(postgres_dsn)
    proxy = _Proxy(str(info.get("host", "127.0.0.1")), int(info.get("port", 5432)))
    proxied = make_conninfo(postgres_dsn, host="127.0.0.1", port=str(proxy.port))
    thread = f"outage-{os.getpid()}-{time.monotonic_ns()}"
    config = {"configurable": {"thread_id": thread}, "recursion_limit": 200}
    PostgresInboxes(postgres_dsn, schema=postgres_schema).for_thread(thread).post(
        "use the staging database"
    )
    model = ScriptedChatModel.long_run(2)
    agent = react_agent(
        model, pre_model_hook(backend=PostgresInboxes(proxied, schema=postgres_schema))
    )
    try:
        with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
            out = agent.invoke(
                {"messages": [HumanMessage("task")]}, config
            )  # three model calls, all without the server
            assert out["messages"][-1].content == "done" and len(model.calls) == 3
            assert not any("staging" in str(m.content) for call in model.calls for m in call)
            outage = [r for r in caplog.records if "cannot be read" in r.getMessage()]
            assert len(outage) == 1
            proxy.up()
            out = agent.invoke({"messages": [HumanMessage("go on")]}, config)
        assert contents(out["messages"]).count("use the staging database") == 1
        assert "reachable again" in caplog.text
    finally:
        proxy.down()
