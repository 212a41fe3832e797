"""Specification of the inbox contract, run against every backend: the directory and PostgreSQL.

Each test of the contract runs once per backend (the fixture ``inbox_backend``); the
PostgreSQL runs need a server (``$PROMPTSTRAT_TEST_DSN``, see ``conftest_postgres.py``) and
skip without one. The tests that kill a reader in mid-claim hold the database to its
stronger promise (a notice is delivered once or still pending) and run on PostgreSQL only.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import multiprocessing
import os
import random
import re
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langchain_promptstrat.errors import ConfigError, InboxAborted, InboxError
from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.inbox.contract import (
    PREVIEW_BYTES,
    InboxBackend,
    InboxProvider,
    NoticeNameTaken,
    is_inbox_backend,
)
from langchain_promptstrat.inbox.delivery import pick_up
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.locate import inbox_for_config
from langchain_promptstrat.messages import mark_of
from langchain_promptstrat.strategies.inbox import Inbox
from langchain_promptstrat.tokens import TokenCounter

BACKENDS = ["directory", "postgres"]


# --------------------------------------------------------------------------- the backends under
# test


@dataclass
class BackendKit:
    """One backend under test, around a fresh conversation (thread) of its own."""

    kind: str
    thread_id: str
    provider: Any
    """What ``backend=`` takes to serve every thread (None for the directory default)."""
    root: Path | None
    """The directory backend's inbox root (None for PostgreSQL)."""
    make: Callable[[str], InboxBackend]
    """Return a new backend object for a thread, with its own connection (safe in a forked
    child)."""
    history: Callable[[InboxBackend], dict[str, bytes]]
    """Return the history of an inbox: history name -> content."""
    break_claims: Callable[[pytest.MonkeyPatch], None]
    """Make every claim in this process fail midway (a failed rename, a failing statement)."""
    dsn: str | None = None
    """The PostgreSQL server's connection string (None for the directory)."""
    schema: str | None = None
    """The schema holding the inbox tables (None for the directory)."""
    close: Callable[[], None] = lambda: None
    """Close what :attr:`make` opened in this process."""

    @functools.cached_property
    def store(self) -> InboxBackend:
        """The inbox of the kit's thread, for this process (a forked child makes its own)."""
        return self.make(self.thread_id)

    @property
    def config(self) -> dict[str, Any]:
        """A run config naming the kit's thread."""
        return {"configurable": {"thread_id": self.thread_id}}

    def strategy(self) -> Inbox:
        """The inbox strategy reading this backend."""
        return Inbox(backend=self.provider, root=self.root)


def _directory_kit(tmp_path: Path, thread_id: str) -> BackendKit:
    root = tmp_path / "threads"
    root.mkdir()

    def history(store: DirectoryInbox) -> dict[str, bytes]:
        removed = store.removed_path
        if not removed.exists():
            return {}
        return {p.name: p.read_bytes() for p in removed.iterdir() if not p.name.startswith(".")}

    def break_claims(monkeypatch: pytest.MonkeyPatch) -> None:
        def busy(src, dst):
            raise OSError(errno.EBUSY, "Device or resource busy", str(src))

        monkeypatch.setattr(os, "rename", busy)

    return BackendKit(
        "directory",
        thread_id,
        None,
        root,
        make=lambda thread: DirectoryInbox.for_thread(thread, root),
        history=history,
        break_claims=break_claims,
    )


def _postgres_kit(dsn: str, schema: str, thread_id: str) -> BackendKit:
    import psycopg
    from psycopg import sql

    from langchain_promptstrat.inbox.postgres import DELIVERED_TABLE, PostgresInbox, PostgresInboxes

    opened: list[tuple[int, psycopg.Connection]] = []

    def make(thread: str) -> PostgresInbox:
        conn = psycopg.connect(dsn, autocommit=True)
        opened.append((os.getpid(), conn))
        return PostgresInbox(conn, thread_id=thread, schema=schema)

    def close() -> None:
        for pid, conn in opened:
            if pid == os.getpid():  # a forked child's connections went with it
                conn.close()

    def history(store: PostgresInbox) -> dict[str, bytes]:
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                sql.SQL("SELECT name, content FROM {} WHERE thread_id = %s").format(
                    sql.Identifier(schema, DELIVERED_TABLE)
                ),
                [store.thread_id],
            ).fetchall()
        return {name: bytes(content) for name, content in rows}

    def break_claims(monkeypatch: pytest.MonkeyPatch) -> None:
        def failing_statement(self, cursor, name, history_name):
            cursor.execute(
                "SELECT 1 / 0"
            )  # the notice is already moved to the history: this rolls it back

        monkeypatch.setattr(PostgresInbox, "_before_commit", failing_statement)

    return BackendKit(
        "postgres",
        thread_id,
        PostgresInboxes(dsn, schema=schema),
        None,
        make=make,
        history=history,
        break_claims=break_claims,
        dsn=dsn,
        schema=schema,
        close=close,
    )


@pytest.fixture(params=BACKENDS)
def inbox_backend(request, tmp_path) -> Iterator[BackendKit]:
    """Each backend in turn, around a fresh thread whose id needs escaping on disk."""
    thread_id = f"run/{secrets.token_hex(4)} é"
    if request.param == "directory":
        kit = _directory_kit(tmp_path, thread_id)
    else:
        kit = _postgres_kit(
            request.getfixturevalue("postgres_dsn"),
            request.getfixturevalue("postgres_schema"),
            thread_id,
        )
    yield kit
    kit.close()


@pytest.fixture
def postgres_kit(request) -> Iterator[BackendKit]:
    """The PostgreSQL backend alone, around a fresh thread."""
    dsn, schema = (
        request.getfixturevalue("postgres_dsn"),
        request.getfixturevalue("postgres_schema"),
    )
    kit = _postgres_kit(dsn, schema, f"run-{secrets.token_hex(4)}")
    yield kit
    kit.close()


def contents(messages) -> list[str]:
    return [m.content for m in messages]


def pick_up_through_the_strategy(kit: BackendKit) -> list[str]:
    """Run the Inbox strategy as a Runnable for the kit's thread; return the delivered notices'
    contents."""
    return contents(kit.strategy().invoke([HumanMessage("task")], kit.config)[1:])


# --------------------------------------------------------------------------- the contract


class TestContract:
    def test_the_backend_and_its_provider_keep_the_protocols(self, inbox_backend):
        """A thread's inbox is an InboxBackend; what backend= takes is a provider (or None, the
        directory default)."""
        assert isinstance(inbox_backend.store, InboxBackend) and is_inbox_backend(
            inbox_backend.store
        )
        provider = inbox_backend.provider or DirectoryInbox
        assert isinstance(provider, InboxProvider) and not is_inbox_backend(provider)

    def test_an_inbox_never_posted_to_is_empty(self, inbox_backend):
        """A fresh thread has no pending notice and no history, and a pickup delivers nothing."""
        store = inbox_backend.store
        assert (store.pending(), store.delivered_entries()) == ([], [])
        assert pick_up_through_the_strategy(inbox_backend) == []
        assert store.pending() == []

    def test_pending_lists_names_in_code_point_order(self, inbox_backend):
        """Names sort by code point: upper case before lower, '10' before '9', accented letters
        last."""
        store = inbox_backend.store
        names = ["b", "a", "B", "é", "a.txt", "10", "9", "a-1"]
        for name in names:
            store.post(name, name=name)
        assert store.pending() == sorted(names)
        assert [e.name for e in store.pending_entries()] == sorted(names)

    def test_notices_are_delivered_in_name_order_as_marked_user_messages(self, inbox_backend):
        """The strategy appends each notice once, in name order, marked with its name (no path: the
        mark is stored with the conversation)."""
        store = inbox_backend.store
        for name in ("c", "a", "b"):
            store.post(f"notice {name}", name=name)
        out = inbox_backend.strategy().invoke([HumanMessage("task")], inbox_backend.config)
        assert contents(out) == ["task", "notice a", "notice b", "notice c"]
        marks = [mark_of(m) for m in out[1:]]
        assert [(m["kind"], m["file"]) for m in marks] == [
            ("inbox_delivery", name) for name in "abc"
        ]
        assert not any("/" in str(value) for m in marks for value in m.values())
        assert store.pending() == []

    def test_a_notice_is_consumed_once(self, inbox_backend):
        """A claimed notice is not claimed again, and the next pickup delivers nothing."""
        store = inbox_backend.store
        store.post("once", name="n.txt")
        claimed = store.claim("n.txt")
        assert (claimed.name, claimed.data) == ("n.txt", b"once")
        assert store.claim("n.txt") is None
        assert pick_up_through_the_strategy(inbox_backend) == []

    def test_a_name_clash_in_the_history_takes_the_first_free_number(self, inbox_backend):
        """Delivered names that clash become name.N.ext with the first free N; nothing in the
        history is overwritten."""
        store = inbox_backend.store
        for name, text in (("a.txt", "old"), ("a.2.txt", "old2")):
            store.post(text, name=name)
            store.claim(name)
        names = []
        for text in ("one", "two", "three"):
            store.post(text, name="a.txt")
            names.append(store.claim("a.txt").name)
        assert names == ["a.txt"] * 3
        assert inbox_backend.history(store) == {
            "a.txt": b"old",
            "a.2.txt": b"old2",
            "a.1.txt": b"one",
            "a.3.txt": b"two",
            "a.4.txt": b"three",
        }

    def test_an_extensionless_clash_appends_the_number(self, inbox_backend):
        """Three aborts in a row land in the history as abort, abort.1, abort.2."""
        store = inbox_backend.store
        for reason in ("x", "y", "z"):
            store.request_abort(reason)
            store.claim("abort")
        assert inbox_backend.history(store) == {"abort": b"x", "abort.1": b"y", "abort.2": b"z"}

    def test_abort_raises_through_the_strategy_once_and_later_notices_stay_pending(
        self, inbox_backend
    ):
        """'abort' raises InboxAborted with its reason and the notices before it; it is consumed
        once; later ones wait."""
        store = inbox_backend.store
        for name in ("0-first", "Abort", "abort.txt", "my-abort", "zz"):
            store.post(name, name=name)
        store.request_abort("  budget exhausted\n")
        strategy = inbox_backend.strategy()
        with pytest.raises(InboxAborted) as caught:
            strategy.invoke([HumanMessage("task")], inbox_backend.config)
        assert caught.value.reason == "budget exhausted"
        assert contents(caught.value.delivered) == ["0-first", "Abort"]
        assert caught.value.path.endswith("/abort")
        assert store.pending() == ["abort.txt", "my-abort", "zz"]
        assert sorted(inbox_backend.history(store)) == ["0-first", "Abort", "abort"]
        assert pick_up_through_the_strategy(inbox_backend) == ["abort.txt", "my-abort", "zz"]

    def test_an_empty_abort_aborts_with_a_default_reason_and_its_place_apart(self, inbox_backend):
        """A blank reason falls back to a sentence; the consumed abort's place in the history is the
        error's path only."""
        store = inbox_backend.store
        store.request_abort("")
        with pytest.raises(InboxAborted) as caught:
            pick_up_through_the_strategy(inbox_backend)
        assert caught.value.reason == "abort requested through the inbox (an empty abort file)"
        assert caught.value.path is not None and caught.value.path.endswith("/abort")

    def test_the_history_keeps_each_delivery_with_its_post_and_delivery_time(self, inbox_backend):
        """Each delivered notice stays in the history with the time it was posted, oldest first, and
        when it was delivered: a listing can say when (the directory reads the file's ctime)."""
        store = inbox_backend.store
        for i in range(3):
            store.post(f"n{i}", name=f"n{i}")
            time.sleep(0.02)
        posted = {e.name: e.mtime for e in store.pending_entries()}
        assert pick_up_through_the_strategy(inbox_backend) == ["n0", "n1", "n2"]
        history = store.delivered_entries()
        assert [(e.name, e.mtime) for e in history] == sorted(
            posted.items(), key=lambda item: item[1]
        )
        assert [e.size for e in history] == [2, 2, 2]
        now = time.time()
        assert all(e.delivered_at is not None and e.mtime <= e.delivered_at <= now for e in history)

    def test_a_failed_claim_leaves_the_notice_pending_for_the_next_pickup(
        self, inbox_backend, monkeypatch
    ):
        """A claim that fails is reported as skipped; the notice stays pending, unrecorded, and is
        delivered next time."""
        store = inbox_backend.store
        store.post("survivor", name="n.txt")
        with monkeypatch.context() as patch:
            inbox_backend.break_claims(patch)
            picked = pick_up(store)
            assert (
                pick_up_through_the_strategy(inbox_backend) == []
            )  # the model call goes on without it
        assert picked.delivered == [] and [s["file"] for s in picked.skipped] == ["n.txt"]
        waiting = store.pending() + [
            lease.name for lease in store.in_flight()
        ]  # pending, or claimed by this process
        assert waiting == ["n.txt"] and inbox_backend.history(store) == {}
        assert pick_up_through_the_strategy(inbox_backend) == ["survivor"]

    def test_in_flight_claims_carry_their_first_bytes_only_when_asked(self, inbox_backend):
        """in_flight(with_head=True) gives each claim's first PREVIEW_BYTES for listings; a pickup's
        in_flight() reads none."""
        store = inbox_backend.store
        store.post("é" * 300, name="long.txt")
        store.post("short", name="short.txt")
        assert store.lease("long.txt") is not None and store.lease("short.txt") is not None
        listed = store.in_flight(with_head=True)
        assert [(lease.name, lease.size) for lease in listed] == [
            ("long.txt", 600),
            ("short.txt", 5),
        ]
        assert [lease.head for lease in listed] == [("é" * 300).encode()[:PREVIEW_BYTES], b"short"]
        assert [lease.head for lease in store.in_flight()] == [None, None]

    def test_post_refuses_a_pending_name_the_reserved_name_and_empty_content(self, inbox_backend):
        """The writers refuse what the directory backend refuses, with the same messages."""
        store = inbox_backend.store
        store.post("first", name="n.txt")
        with pytest.raises(InboxError, match="a notice named 'n.txt' is already pending in"):
            store.post("second", name="n.txt")
        with pytest.raises(InboxError, match="reserved"):
            store.post("x", name="abort")
        with pytest.raises(InboxError, match="empty"):
            store.post(" \n")
        for bad, problem in (
            (".hidden", "starts with '.'"),
            ("a/b", "plain file name"),
            ("", "non-empty"),
        ):
            with pytest.raises(
                InboxError, match=problem
            ):  # the directory backend's wording (test_inbox_store.py)
                store.post("x", name=bad)
        store.request_abort("first")
        with pytest.raises(InboxError, match="an abort is already pending"):
            store.request_abort("second")
        assert store.pending() == ["abort", "n.txt"]
        assert pick_up(store).abort_reason == "first"

    def test_default_names_sort_in_arrival_order(self, inbox_backend):
        """Notices posted without a name are delivered in the order they were posted."""
        store = inbox_backend.store
        for i in range(10):
            store.post(f"{i}")
        assert pick_up_through_the_strategy(inbox_backend) == [str(i) for i in range(10)]

    def test_bytes_that_are_not_utf8_are_delivered_with_replacement_characters(self, inbox_backend):
        """Content is stored as bytes and decoded as the directory backend decodes a file."""
        inbox_backend.store.post(b"caf\xe9 ok", name="bad")
        assert pick_up_through_the_strategy(inbox_backend) == ["caf\ufffd ok"]

    def test_threads_have_separate_inboxes(self, inbox_backend):
        """A notice posted to one thread is never delivered to another."""
        other = inbox_backend.make(inbox_backend.thread_id + "-other")
        other.post("not yours", name="n")
        assert pick_up_through_the_strategy(inbox_backend) == []
        assert other.pending() == ["n"]

    def test_a_bound_backend_serves_the_strategy_without_a_save_file(self, inbox_backend):
        """Inbox(backend=<one thread's inbox>) delivers that inbox on every call, config or not."""
        store = inbox_backend.store
        store.post("direct", name="n")
        assert contents(Inbox(backend=store).compact([]).messages) == ["direct"]
        assert inbox_for_config({}, backend=store) is store


# --------------------------------------------------------------------------- under load


READERS, WRITERS, PER_WRITER = 4, 2, 250


class TestHostileWriters:
    """What a caller who chooses names, sizes and thread ids cannot do, on every backend (issue
    29)."""

    def test_a_taken_name_is_notice_name_taken_naming_no_path(self, inbox_backend):
        """A second notice or abort under a pending name raises NoticeNameTaken (a FileExistsError:
        the HTTP route's 409), whose sentence says what to do and names neither a directory nor a
        table."""
        store = inbox_backend.store
        store.post("first", name="same")
        store.request_abort("first")
        for attempt in (
            lambda: store.post("second", name="same"),
            lambda: store.request_abort("second"),
        ):
            with pytest.raises(NoticeNameTaken) as caught:
                attempt()
            assert isinstance(
                caught.value, FileExistsError
            ) and "already pending in this inbox" in str(caught.value)
            assert "/" not in str(caught.value) and "pg:" not in str(caught.value)

    def test_every_writer_refuses_an_over_cap_notice_or_abort_reason_with_one_sentence(
        self, inbox_backend, monkeypatch
    ):
        """The cap holds for Python writers as over HTTP: an over-cap notice would otherwise stay
        pending forever, and an over-cap abort reason become a huge interrupt payload. Nothing is
        written."""
        monkeypatch.setenv("PROMPTSTRAT_INBOX_MAX_NOTICE_BYTES", "100")
        store = inbox_backend.make(inbox_backend.thread_id)
        with pytest.raises(
            InboxError,
            match=r"^the notice is 101 bytes; this inbox takes at most 100 "
            r"\(INBOX_MAX_NOTICE_BYTES\)$",
        ):
            store.post("x" * 101)
        with pytest.raises(
            InboxError, match=r"^the abort reason is 102 bytes; this inbox takes at most 100"
        ):
            store.request_abort("é" * 51)
        assert store.pending() == []
        store.post("x" * 100)
        store.request_abort("é" * 50)
        assert len(store.pending()) == 2

    @pytest.mark.parametrize(
        "name", ["a\x1b[2Jb", "a\nb", "n\ud800", "n\udc80", "tab\there", "rtl\u202eexe.txt"]
    )
    def test_a_name_with_control_invisible_or_undecodable_characters_is_refused(
        self, inbox_backend, name
    ):
        """A name is printed to operators (inbox ls, listings): an escape sequence would drive their
        terminal, a newline forge a line, a lone surrogate fail at the filesystem or the database.
        Refused before anything is written."""
        with pytest.raises(InboxError, match="control, invisible or undecodable"):
            inbox_backend.store.post("x", name=name)
        assert inbox_backend.store.pending() == []

    @pytest.mark.parametrize("text", ["n\ud800", "\udc80"])
    def test_a_lone_surrogate_in_a_notice_or_reason_is_refused(self, inbox_backend, text):
        """Neither a file nor a text column can hold half a character: refused with InboxError
        naming it."""
        with pytest.raises(InboxError, match="lone surrogate"):
            inbox_backend.store.post(text)
        with pytest.raises(InboxError, match="lone surrogate"):
            inbox_backend.store.request_abort(text)

    def test_every_spelling_of_a_uuid_thread_reaches_one_inbox(self, inbox_backend):
        """LangGraph Server takes a UUID thread id uppercase, without hyphens, in braces or as
        urn:uuid: and means one
        thread: notices posted under each spelling are all delivered to that thread's run, none
            stranded."""
        thread = "8f14e45f-ceea-467f-a8f2-3d2c8c1d5a11"
        spellings = [
            thread,
            thread.upper(),
            thread.replace("-", ""),
            "{" + thread + "}",
            "urn:uuid:" + thread,
        ]
        for i, spelling in enumerate(spellings):
            inbox_backend.make(spelling).post(f"notice {i}", name=f"n{i}")
        for spelling in spellings:
            assert inbox_backend.make(spelling).pending() == [f"n{i}" for i in range(5)]
        assert sorted(contents(pick_up(inbox_backend.make(thread)).delivered)) == [
            f"notice {i}" for i in range(5)
        ]


class TestThreadLives:
    """An inbox belongs to one life of a LangGraph Server thread, named by its creation time."""

    def test_a_thread_created_again_finds_none_of_the_earlier_threads_notices(self, inbox_backend):
        """Pending, in-flight and delivered notices of the thread created at T1 are removed once the
        thread created at T2 binds the inbox: no one reads or receives a deleted thread's notices
        (issue 42)."""
        store = inbox_backend.store
        assert store.bind_to_thread("T1", create=True) is False
        for name in ("delivered", "in-flight", "pending"):
            store.post(f"the T1 thread's {name} notice", name=name)
        store.claim("delivered")
        assert store.lease("in-flight") is not None
        assert store.bind_to_thread("T1") is False and len(store.pending()) == 1  # nothing removed
        assert store.bind_to_thread("T2") is True
        assert (store.pending(), store.in_flight(), store.delivered_entries()) == ([], [], [])
        assert pick_up(store).delivered == [] and store.bind_to_thread("T2") is False
        store.post("the T2 thread's notice", name="n")
        delivered = pick_up(inbox_backend.make(inbox_backend.thread_id)).delivered
        assert contents(delivered) == ["the T2 thread's notice"]

    def test_an_inbox_that_records_no_thread_is_adopted_with_its_notices(self, inbox_backend):
        """Notices posted before the server first saw the thread (from a shell, say) belong to the
        first thread that binds the inbox; nothing is removed then; a later thread removes them."""
        store = inbox_backend.store
        store.post("posted from a shell", name="n")
        assert store.bind_to_thread("T1") is False and store.pending() == ["n"]
        assert store.bind_to_thread("T2") is True and store.pending() == []

    def test_binding_an_empty_inbox_creates_nothing_unless_a_writer_asks(self, inbox_backend):
        """A listing or a pickup of a thread without an inbox leaves nothing behind; a writer about
        to post records its thread, so that the notice belongs to it from the start."""
        store = inbox_backend.store
        assert store.bind_to_thread("T1") is False
        if inbox_backend.root is not None:
            assert os.listdir(inbox_backend.root) == []
        assert store.bind_to_thread("T1", create=True) is False
        assert store.bind_to_thread("T1") is False
        store.post("for T1", name="n")
        assert store.bind_to_thread("T2") is True and store.pending() == []

    def test_writers_binding_a_new_thread_at_once_remove_the_old_notices_once(self, inbox_backend):
        """Eight writers of the thread created at T2 bind and post together over the T1 thread's
        inbox: exactly one of them removes the old notices, and no removal lands after a post."""
        store = inbox_backend.store
        store.bind_to_thread("T1", create=True)
        for i in range(20):
            store.post(f"old {i}", name=f"old-{i}")
        removed: list[bool] = []
        barrier = threading.Barrier(8)

        def write(i: int) -> None:
            mine = inbox_backend.make(inbox_backend.thread_id)
            barrier.wait()
            removed.append(mine.bind_to_thread("T2", create=True))
            mine.post(f"new {i}", name=f"new-{i}")

        writers = [threading.Thread(target=write, args=(i,)) for i in range(8)]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(30)
        assert sorted(removed) == [False] * 7 + [True]
        assert store.pending() == sorted(f"new-{i}" for i in range(8))

    def test_a_run_gets_its_threads_inbox_of_this_life_or_none_losing_nothing(self, inbox_backend):
        """With a server saying when threads were created, a run's inbox is bound before use: a
        thread created again gets none of the old notices, a thread that is gone gets no inbox,
        and a server that cannot answer holds the notices back (no inbox this time), losing none."""
        from langchain_promptstrat.inbox.locate import bind_inboxes_to_threads

        kit = inbox_backend
        created = {kit.thread_id: "T1"}

        def created_at(thread_id: str) -> str | None:
            if created.get(thread_id) == "down":
                raise InboxError("the server did not answer")
            return created.get(thread_id)

        def run_inbox() -> Any:
            return inbox_for_config(kit.config, backend=kit.provider, root=kit.root)

        kit.store.post("for the T1 thread", name="n")
        bind_inboxes_to_threads(created_at)
        try:
            assert run_inbox().pending() == ["n"]
            created[kit.thread_id] = "down"
            assert run_inbox() is None and kit.store.pending() == ["n"]
            del created[kit.thread_id]
            assert run_inbox() is None and kit.store.pending() == ["n"]
            created[kit.thread_id] = "T2"
            assert run_inbox().pending() == [] and kit.store.delivered_entries() == []
        finally:
            bind_inboxes_to_threads(None)
        assert run_inbox() is not None  # outside LangGraph Server nothing asks


class TestPickupBudget:
    """One pickup admits notices up to a share of the ceiling; the rest wait, in order, none lost
    (issue 29)."""

    def test_a_flood_is_delivered_in_order_a_budget_per_pickup_with_nothing_lost(
        self, inbox_backend, monkeypatch
    ):
        """200 notices of 1 KB (131 tokens each) under a 10,000-token ceiling and a 0.25 share: each
        pickup admits 2,500 tokens at most (so 19 notices), says so, and after enough pickups every
        notice arrived once, in order."""
        monkeypatch.setenv("PROMPTSTRAT_MAX_TOKENS", "10000")
        monkeypatch.setenv("PROMPTSTRAT_INBOX_PICKUP_SHARE", "0.25")
        store = inbox_backend.store
        for i in range(200):
            store.post(f"{i:04d} " + "x" * 995, name=f"n{i:04d}")
        got: list[str] = []
        pickups = 0
        while len(got) < 200 and pickups < 150:
            result = pick_up(store)
            pickups += 1
            assert result.budget_tokens == 2500 and TokenCounter()(result.delivered) <= 2500
            assert result.waiting == 200 - len(got) - len(result.delivered)
            got += [str(m.content)[:4] for m in result.delivered]
        assert got == [f"{i:04d}" for i in range(200)]
        assert pickups == 11  # 19 a pickup: -(-200 // 19)
        assert store.pending() == [] and store.in_flight() == []

    def test_an_abort_behind_a_spent_budget_is_still_honoured_now(self, inbox_backend):
        """A flood of notices must not delay a stop: the abort is taken while the notices past the
        budget wait."""
        store = inbox_backend.store
        for i in range(5):
            store.post("x" * 100, name=f"a{i}")
        store.request_abort("stop now")
        result = pick_up(store, budget_tokens=40)  # 17 tokens each: two fit
        assert (
            result.aborted
            and result.abort_reason == "stop now"
            and len(result.delivered) == 2
            and result.waiting == 3
        )
        assert [m.content for m in pick_up(store).delivered] == ["x" * 100] * 3

    def test_the_first_notice_is_admitted_even_over_the_budget(self, inbox_backend):
        """A notice larger than the budget (but under the cap) is delivered alone rather than
        waiting forever."""
        store = inbox_backend.store
        store.post("y" * 1000, name="big")
        store.post("z", name="small")
        assert [m.content for m in pick_up(store, budget_tokens=10).delivered] == ["y" * 1000]
        assert [m.content for m in pick_up(store, budget_tokens=10).delivered] == ["z"]

    def test_notices_are_counted_in_tokens_not_bytes(self, inbox_backend, monkeypatch):
        """Three notices of 600 bytes and 105 tokens fit a 350-token budget together: the budget is
        a share of the ceiling in tokens, so a notice is counted as the prompt will count it."""
        monkeypatch.setenv("PROMPTSTRAT_MAX_TOKENS", "1400")
        monkeypatch.setenv("PROMPTSTRAT_INBOX_PICKUP_SHARE", "0.25")
        store = inbox_backend.store
        for i in range(3):
            store.post("hello " * 100, name=f"h{i}")
        result = pick_up(store)
        assert (len(result.delivered), result.waiting) == (3, 0)

    def test_the_prompts_own_counter_counts_the_notices(self, inbox_backend):
        """A pickup given the prompt's counter counts with it: a counter finding 60 tokens in each
        notice admits one of two notices under a 100-token budget."""
        store = inbox_backend.store
        store.post("a", name="a")
        store.post("b", name="b")
        result = pick_up(store, budget_tokens=100, count=lambda messages: 60 * len(messages))
        assert ([m.content for m in result.delivered], result.waiting) == (["a"], 1)


def _load_reader(kit: BackendKit, done, out: str) -> None:
    store = kit.make(kit.thread_id)
    got = []
    while True:
        finished = done.is_set()
        result = pick_up(store)
        got += [(mark_of(m)["file"], m.content) for m in result.delivered]
        assert not result.skipped, result.skipped
        if finished and not store.pending():
            break
        if not result.delivered:
            time.sleep(0.002)
    Path(out).write_text(json.dumps(got))


def _load_writer(kit: BackendKit, number: int) -> None:
    store = kit.make(kit.thread_id)
    for i in range(PER_WRITER):
        content = f"w{number}-{i}:" + "x" * 3000
        if number == 0:
            store.post(content)
            continue
        while (
            True
        ):  # reuse one name as soon as it is free: claims race the writer, history names clash
            try:
                store.post(content, name="same.txt")
                break
            except InboxError:
                time.sleep(0.0005)


class TestLoad:
    def test_readers_and_writers_in_many_processes_lose_and_duplicate_nothing(
        self, inbox_backend, tmp_path
    ):
        """4 readers and 2 writers, 500 notices: each delivered once, none lost, the history
        complete and intact."""
        kit = inbox_backend
        ctx = multiprocessing.get_context("fork")
        done = ctx.Event()
        outs = [str(tmp_path / f"reader{i}.json") for i in range(READERS)]
        readers = [ctx.Process(target=_load_reader, args=(kit, done, out)) for out in outs]
        writers = [ctx.Process(target=_load_writer, args=(kit, n)) for n in range(WRITERS)]
        deadline = time.monotonic() + 40
        for p in readers + writers:
            p.start()
        for p in writers:
            p.join(max(0.1, deadline - time.monotonic()))
        done.set()
        for p in readers:
            p.join(max(0.1, deadline - time.monotonic()))
        for p in readers + writers:
            if p.is_alive():
                p.kill()
        assert [p.exitcode for p in readers + writers] == [0] * (READERS + WRITERS)

        delivered = [content for out in outs for _, content in json.loads(Path(out).read_text())]
        posted = {f"w{n}-{i}:" + "x" * 3000 for n in range(WRITERS) for i in range(PER_WRITER)}
        assert len(delivered) == len(set(delivered)), "a notice was delivered twice"
        assert set(delivered) == posted, "a notice was lost"
        history = kit.history(kit.store)
        assert len(history) == len(posted) and {v.decode() for v in history.values()} == posted, (
            "the history is incomplete"
        )
        assert sum(name == "same.txt" or name.startswith("same.") for name in history) == PER_WRITER
        assert kit.store.pending() == []


# --------------------------------------------------------------------------- PostgreSQL: killed
# readers


def _stalling_reader(dsn: str, schema: str, thread_id: str, name: str, inside) -> None:
    """Claim ``name`` and stop inside the claim's transaction, after the move, before COMMIT, until
    killed."""
    import psycopg

    from langchain_promptstrat.inbox.postgres import PostgresInbox

    class Stalling(PostgresInbox):
        def _before_commit(self, cursor, name, history_name):
            inside.set()
            time.sleep(120)

    Stalling(psycopg.connect(dsn, autocommit=True), thread_id=thread_id, schema=schema).claim(name)


def _storm_reader(kit: BackendKit, out: str) -> None:
    """Claim forever, one notice every few milliseconds, appending each to ``out`` as soon as it is
    ours."""
    store = kit.make(kit.thread_id)
    with open(out, "a") as report:
        while True:
            for name in store.pending():
                claimed = store.claim(name)
                if claimed is not None:
                    report.write(claimed.data.decode() + "\n")
                    report.flush()
                time.sleep(0.002)  # the reader's other work: the kills land in and out of claims


def _claim_eventually(store, name: str, timeout: float = 15.0):
    """Return the claim of ``name`` once the lock a dead reader held is gone."""
    deadline = time.monotonic() + timeout
    while True:
        claimed = store.claim(name)
        if claimed is not None or time.monotonic() > deadline:
            return claimed
        time.sleep(0.05)


class TestKilledReaders:
    def test_a_reader_killed_inside_the_claim_transaction_leaves_the_notice_pending(
        self, postgres_kit
    ):
        """SIGKILL after the move and before COMMIT: the notice is still pending, then delivered
        once to the next reader."""
        kit = postgres_kit
        store = kit.store
        store.post("survivor", name="n.txt")
        ctx = multiprocessing.get_context("fork")
        inside = ctx.Event()
        reader = ctx.Process(
            target=_stalling_reader, args=(kit.dsn, kit.schema, kit.thread_id, "n.txt", inside)
        )
        reader.start()
        try:
            assert inside.wait(20), "the reader never reached its claim's transaction"
            assert (
                store.claim("n.txt") is None
            )  # locked by the stalled reader: skipped, not waited for
            assert store.pending() == ["n.txt"] and kit.history(store) == {}
            os.kill(reader.pid, signal.SIGKILL)
            reader.join(10)
        finally:
            if reader.is_alive():
                reader.kill()
        assert reader.exitcode == -signal.SIGKILL
        assert store.pending() == ["n.txt"] and kit.history(store) == {}
        claimed = _claim_eventually(store, "n.txt")
        assert claimed is not None and claimed.data == b"survivor"
        assert kit.history(store) == {"n.txt": b"survivor"} and store.pending() == []

    def test_a_connection_lost_inside_the_claim_transaction_leaves_the_notice_pending(
        self, postgres_kit
    ):
        """The server ends the reader's session before COMMIT: the claim raises InboxError and the
        notice stays pending."""
        import psycopg

        from langchain_promptstrat.inbox.postgres import PostgresInbox

        kit = postgres_kit
        store = kit.store
        store.post("survivor", name="n.txt")

        class Terminated(PostgresInbox):
            def _before_commit(self, cursor, name, history_name):
                with psycopg.connect(kit.dsn, autocommit=True) as admin:
                    admin.execute(
                        "SELECT pg_terminate_backend(%s)", [cursor.connection.info.backend_pid]
                    )

        victim = Terminated(kit.dsn, thread_id=kit.thread_id, schema=kit.schema)
        with pytest.raises(InboxError, match="cannot claim 'n.txt'"):
            victim.claim("n.txt")
        assert store.pending() == ["n.txt"] and kit.history(store) == {}
        assert pick_up(store).delivered[0].content == "survivor"

    def test_readers_killed_at_random_moments_deliver_each_notice_once_or_leave_it_pending(
        self, postgres_kit, tmp_path
    ):
        """Readers SIGKILLed at random points of their pickups: after each kill every notice is in
        the history once or pending."""
        kit = postgres_kit
        store = kit.store
        posted = {f"notice {i:03d}" for i in range(400)}
        for text in sorted(posted):
            store.post(text, name=text.replace(" ", "-"))
        ctx = multiprocessing.get_context("fork")
        rng = random.Random(4)
        outs, killed_in_mid_run = [], 0
        for round_ in range(10):
            outs.append(str(tmp_path / f"reader{round_}.txt"))
            readers = [ctx.Process(target=_storm_reader, args=(kit, outs[-1])) for _ in range(2)]
            for reader in readers:
                reader.start()
            time.sleep(rng.uniform(0.03, 0.09))
            for reader in readers:
                os.kill(reader.pid, signal.SIGKILL)
            for reader in readers:
                reader.join(10)
            assert [r.exitcode for r in readers] == [-signal.SIGKILL] * 2
            # A dead reader's open transaction is invisible to others until the server rolls it
            # back, so the invariant holds at once, whether or not the server has noticed yet.
            history = [content.decode() for content in kit.history(store).values()]
            pending = [name.replace("-", " ") for name in store.pending()]
            assert len(history) == len(set(history)), "a notice was recorded twice"
            assert sorted(history + pending) == sorted(posted), (
                "a notice was lost, or is both pending and delivered"
            )
            killed_in_mid_run += bool(pending)
        reported = [
            line
            for out in outs
            if os.path.exists(out)
            for line in Path(out).read_text().splitlines()
        ]
        assert len(reported) == len(set(reported)), "a notice was delivered twice"
        assert set(reported) <= set(history)
        assert killed_in_mid_run >= 3, (
            "the kills did not land while notices were pending; tune the timings"
        )

        for _ in range(40):  # a reader that is not killed delivers the rest, each once
            if not store.pending():
                break
            pick_up(store)
            time.sleep(0.05)
        history = [content.decode() for content in kit.history(store).values()]
        assert store.pending() == [] and sorted(history) == sorted(posted)


class TestPostgresHistoryNames:
    def test_two_claims_racing_for_one_history_name_both_land_without_overwriting(
        self, postgres_kit
    ):
        """A claim whose history name another open claim just took waits for it, then takes the next
        free name."""
        from langchain_promptstrat.inbox.postgres import PostgresInbox

        kit = postgres_kit
        store = kit.store
        store.post("old", name="a.txt")
        store.claim("a.txt")
        store.post("x", name="a.1.txt")
        store.post("y", name="a.txt")  # its first free history name is a.1.txt too, until x commits
        entered, release, first = threading.Event(), threading.Event(), []

        class Holding(PostgresInbox):
            def _before_commit(self, cursor, name, history_name):
                entered.set()
                release.wait(10)

        holder = Holding(kit.dsn, thread_id=kit.thread_id, schema=kit.schema)
        thread = threading.Thread(target=lambda: first.append(holder.claim("a.1.txt")))
        thread.start()
        assert entered.wait(10)
        threading.Timer(0.3, release.set).start()
        second = store.claim("a.txt")  # waits on the holder's uncommitted a.1.txt, then retries
        thread.join(10)
        assert first[0].path.endswith("/a.1.txt") and second.path.endswith("/a.2.txt")
        assert kit.history(store) == {"a.txt": b"old", "a.1.txt": b"x", "a.2.txt": b"y"}


# --------------------------------------------------------------------------- PostgreSQL: schema and
# connections


class TestPostgresSetup:
    def test_setup_is_idempotent_and_records_the_schema_version(self, postgres_kit):
        """setup() twice, or from several threads at once, records each version once; all works."""
        import psycopg
        from psycopg import sql

        from langchain_promptstrat.inbox.postgres import MIGRATIONS, VERSION_TABLE, PostgresInboxes

        dsn, schema = postgres_kit.dsn, f"promptstrat_setup_{secrets.token_hex(4)}"
        inboxes = PostgresInboxes(dsn, schema=schema)
        try:
            assert inboxes.schema_version() == 0
            errors: list[BaseException] = []

            def set_up() -> None:
                try:
                    inboxes.setup()
                except BaseException as exc:  # reported below
                    errors.append(exc)

            threads = [threading.Thread(target=set_up) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            inboxes.setup()
            assert errors == [] and inboxes.schema_version() == len(MIGRATIONS) == 3
            with psycopg.connect(dsn) as conn:
                table = sql.Identifier(schema, VERSION_TABLE)
                versions = conn.execute(sql.SQL("SELECT version FROM {}").format(table)).fetchall()
            assert versions == [(1,), (2,), (3,)]
            inboxes.for_thread("t").post("works", name="n")
            assert inboxes.for_thread("t").claim("n").data == b"works"
        finally:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )

    def test_an_inbox_without_its_tables_says_to_call_setup(self, postgres_kit):
        """Before setup() every operation raises InboxError naming setup(), not a bare SQL error."""
        from langchain_promptstrat.inbox.postgres import PostgresInboxes

        store = PostgresInboxes(
            postgres_kit.dsn, schema=f"missing_{secrets.token_hex(4)}"
        ).for_thread("t")
        for operation in (store.pending, lambda: store.post("x"), lambda: store.claim("x")):
            with pytest.raises(InboxError, match=r"tables do not exist .*setup\(\)"):
                operation()

    def test_a_connection_a_pool_and_a_connection_string_all_serve(self, postgres_kit):
        """The three ways to reach the database give the same inbox; a connection is used by one
        thread at a time."""
        import psycopg

        from langchain_promptstrat.inbox.postgres import PostgresInbox

        kit = postgres_kit
        dsn, schema = kit.dsn, kit.schema

        # the shape of psycopg_pool.ConnectionPool: connection() lends a non-autocommit connection
        class Pool:
            @contextlib.contextmanager
            def connection(self) -> Iterator[psycopg.Connection]:
                with psycopg.connect(dsn) as conn:
                    yield conn

        shared = psycopg.connect(dsn)  # not autocommit, idle: each operation is its own transaction
        by_dsn = PostgresInbox(dsn, thread_id=kit.thread_id, schema=schema)
        by_pool = PostgresInbox(Pool(), thread_id=kit.thread_id, schema=schema)
        by_conn = PostgresInbox(shared, thread_id=kit.thread_id, schema=schema)
        by_dsn.post("1", name="a")
        by_pool.post("2", name="b")
        by_conn.post("3", name="c")
        assert by_dsn.pending() == by_pool.pending() == by_conn.pending() == ["a", "b", "c"]

        claimed: list[Any] = []
        threads = [
            threading.Thread(target=lambda n=n: claimed.append(by_conn.claim(n))) for n in "abc"
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert sorted(c.data for c in claimed) == [b"1", b"2", b"3"] and by_pool.pending() == []
        assert shared.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        shared.execute("SELECT 1")  # now inside a transaction the inbox did not open
        with pytest.raises(InboxError, match="inside a transaction"):
            by_conn.pending()
        shared.close()

    def test_thread_ids_postgresql_cannot_store_are_refused(self, postgres_kit):
        """NUL and lone surrogates cannot be PostgreSQL text: refused with InboxError when the inbox
        is built."""
        from langchain_promptstrat.inbox.postgres import PostgresInboxes

        for bad in ("a\x00b", "\udc80", "", "x" * 3000):
            with pytest.raises(InboxError, match="thread_id"):
                PostgresInboxes(postgres_kit.dsn).for_thread(bad)


# --------------------------------------------------------------------------- without a server


class TestBackendOption:
    def test_the_directory_is_the_default_backend(self, tmp_path):
        """Inbox() with no backend reads <root>/<thread>.inbox, as before backends existed."""
        DirectoryInbox.for_thread("t", tmp_path).post("on disk", name="n")
        out = Inbox(root=tmp_path).invoke([], {"configurable": {"thread_id": "t"}})
        assert contents(out) == ["on disk"]

    @pytest.mark.parametrize("bad", ["postgresql://x", 42, DirectoryInbox.__init__])
    def test_something_that_is_no_backend_is_refused(self, bad):
        """backend= must be a provider, one conversation's inbox or None; anything else is a
        ConfigError."""
        with pytest.raises(ConfigError, match="is not an inbox backend"):
            Inbox(backend=bad)

    def test_root_goes_with_the_directory_backend_only(self, tmp_path):
        """root= with another backend is a ConfigError rather than silently ignored."""
        other = DirectoryInbox.for_thread("t", tmp_path)
        with pytest.raises(ConfigError, match="root= is the directory backend's"):
            Inbox(backend=other, root=tmp_path)

    def test_a_provider_serves_each_run_the_inbox_of_its_thread(self, tmp_path):
        """With a provider, configurable.thread_id picks the inbox; configurable.save_file (a
        request may set it) picks one only when the code allows it (allow_save_file=True)."""
        calls = []

        class Provider:
            def for_thread(self, thread_id):
                calls.append(("thread", thread_id))
                return DirectoryInbox.for_thread(thread_id, tmp_path)

            def for_save_file(self, save_file):
                calls.append(("save_file", str(save_file)))
                return DirectoryInbox.for_save_file(save_file)

        DirectoryInbox.for_thread("7", tmp_path).post("for thread 7", name="n")
        strategy = Inbox(backend=Provider())
        assert contents(strategy.invoke([], {"configurable": {"thread_id": 7}})) == ["for thread 7"]
        DirectoryInbox.for_thread("7", tmp_path).post("for thread 7 again", name="m")
        both = {"configurable": {"save_file": str(tmp_path / "x.chat"), "thread_id": "7"}}
        assert contents(strategy.invoke([], both)) == ["for thread 7 again"]
        assert Inbox(backend=Provider(), allow_save_file=True).invoke([], both) == []
        assert strategy.invoke([], {}) == []
        assert calls == [("thread", "7"), ("thread", "7"), ("save_file", str(tmp_path / "x.chat"))]

    def test_without_psycopg_the_error_names_the_extra(self, monkeypatch):
        """Building a PostgreSQL inbox without psycopg raises ConfigError naming the postgres
        extra."""
        from langchain_promptstrat.inbox.postgres import PostgresInboxes

        monkeypatch.setitem(sys.modules, "psycopg", None)
        with pytest.raises(ConfigError, match=re.escape(install_hint("postgres"))):
            PostgresInboxes("postgresql://localhost/x")
