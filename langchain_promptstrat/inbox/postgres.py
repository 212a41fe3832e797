"""The inbox in PostgreSQL: the directory backend's consume-once contract for workers on many machines.

Two tables stand for the two directories: ``promptstrat_inbox_pending`` (the ``.inbox``
directory: one row per notice, keyed by thread and name) and
``promptstrat_inbox_delivered`` (the ``.inbox_removed`` directory: every delivered notice
under its history name, with its original name, content, posting time and delivery time).
``setup()`` creates them, once, like LangGraph's ``PostgresSaver.setup()``; the table
``promptstrat_inbox_migrations`` records which schema version is applied, so a later
version of this package can migrate.

Claim (why each notice reaches exactly one reader and none is lost): one transaction runs
one statement that deletes the pending row (``SELECT ... FOR UPDATE SKIP LOCKED``, then
``DELETE ... RETURNING``) and inserts it into the history under the first free name
(``name``, ``stem.1.ext``, ...), then commits. A row can be deleted by one committed
transaction only: a reader that finds it locked skips it (another reader is claiming it),
one that finds it deleted gets nothing. The history's primary key (thread, name) makes an
overwrite impossible; when two readers pick the same free history name at once, the second
insert does nothing and the reader tries the next free name, inside the same transaction.
The notice is handed to the caller only after COMMIT succeeded. Anything that fails
before COMMIT (an error, a lost connection, a killed reader: the server rolls back a
transaction whose client is gone) leaves the row pending, undelivered and unrecorded.
The one window is COMMIT itself: a connection lost after the server committed but before
the reader heard so leaves the notice recorded as delivered but never shown to a model,
at most once, as in the directory backend.

Leases (what the strategy uses, so nothing is lost to a crash): ``lease(name)`` marks the
pending row with a claim token, its owner (host, process, start time) and the time, in one
``UPDATE ... WHERE claim_token IS NULL`` (one winner); claimed rows are neither pending nor
delivered. ``acknowledge(token, name)`` then moves the row into the history as ``claim``
does. ``take_over`` re-owns the claim of a dead owner or an expired lease (``UPDATE ...
WHERE claimed_by = <old owner>``: one winner), keeping its token. Schema version 2 adds
the three columns.

Connections: pass a connection string (a new connection per operation: simple, fork-safe,
fine for a CLI or a few workers), a ``psycopg_pool.ConnectionPool`` (production), or a
``psycopg.Connection`` in autocommit mode or idle (used under a lock, one operation at a
time; never share one across ``fork``). psycopg is imported when a backend is built.

This module holds the two public classes and the thread-id rules; the SQL is
:mod:`~langchain_promptstrat.inbox.postgres_sql`'s and the connection handling
:mod:`~langchain_promptstrat.inbox.postgres_connection`'s. Like every backend it knows
nothing of what a notice means to a run (messages, aborts, acknowledgement after a model
call): that is :mod:`~langchain_promptstrat.inbox.delivery`'s.
"""

from __future__ import annotations

import os
import secrets
from typing import TYPE_CHECKING, Any

from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.inbox.contract import ABORT_FILE, Claimed, InboxEntry, Lease
from langchain_promptstrat.inbox.notices import (
    NoticeNameTaken,
    abort_reason_bytes,
    check_notice_name,
    check_notice_size,
    default_notice_name,
    notice_bytes,
    notice_limits,
    split_ext,
    warn_once,
)
from langchain_promptstrat.inbox.owners import current_owner
from langchain_promptstrat.inbox.paths import canonical_thread_id, encode_thread_id, inbox_dir
from langchain_promptstrat.inbox.postgres_connection import Database
from langchain_promptstrat.inbox.postgres_sql import (
    ACKNOWLEDGE,
    CLAIM,
    DELIVERED,
    IN_FLIGHT,
    IN_FLIGHT_WITH_HEAD,
    LEASE,
    PENDING,
    POST,
    RECORD,
    TAKE_OVER,
)

if TYPE_CHECKING:
    import psycopg
    from typing_extensions import LiteralString  # psycopg's sql.SQL takes only literal text: no injection

__all__ = ["PostgresInbox", "PostgresInboxes", "save_file_thread_id"]

_MAX_NAME_ATTEMPTS = 100
_MAX_THREAD_ID_BYTES = 2048
"""Longest thread id kept: with a 255-byte name it stays within a B-tree index entry (2704 bytes)."""

def save_file_thread_id(save_file: str | os.PathLike[str]) -> str:
    """Return the thread id that stands for a save file in the database: the absolute path of its inbox sibling.

    The sibling rule still applies (``x/agent.chat`` and ``x/agent.json`` share
    ``/abs/x/agent.inbox``); ``.`` and ``..`` are resolved lexically, symbolic links are not.
    """
    return os.path.abspath(inbox_dir(save_file))


def _check_thread_id(thread_id: object) -> str:
    if not isinstance(thread_id, str):
        raise InboxError(f"thread_id must be a string, got {type(thread_id).__name__}")
    if not thread_id:
        raise InboxError("thread_id is empty; an inbox needs a non-empty thread id")
    if "\x00" in thread_id or not _is_utf8(thread_id):
        raise InboxError(f"thread_id {thread_id!r} holds NUL or a lone surrogate, which PostgreSQL text cannot store")
    if len(thread_id.encode("utf-8")) > _MAX_THREAD_ID_BYTES:
        raise InboxError(f"thread_id is longer than {_MAX_THREAD_ID_BYTES} bytes, more than the inbox tables can index")
    return canonical_thread_id(thread_id)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class PostgresInboxes:
    """The PostgreSQL inboxes of every conversation in one database: an inbox provider.

    ``PostgresInboxes(dsn).for_thread("run-1")`` is the inbox of LangGraph thread
    ``run-1``; pass the provider itself as ``backend=`` to the ``Inbox`` strategy (and the
    LangGraph adapters), which ask it for each run's thread. ``conn`` is a connection
    string, a ``psycopg_pool.ConnectionPool`` or a ``psycopg.Connection``; ``schema``
    places the tables in that schema (default: the connection's search path).
    """

    def __init__(self, conn: str | psycopg.Connection | Any, *, schema: str | None = None) -> None:
        self._db = conn if isinstance(conn, Database) else Database(conn, schema)

    def __repr__(self) -> str:
        return f"PostgresInboxes({self._db.describe()!r}, schema={self._db.schema!r})"

    def setup(self) -> None:
        """Create the inbox tables (or migrate them to this version's schema); idempotent."""
        self._db.setup()

    def schema_version(self) -> int:
        """Return the schema version the database holds (0 before :meth:`setup`)."""
        return self._db.version()

    def for_thread(self, thread_id: str) -> PostgresInbox:
        """Return the inbox of LangGraph thread ``thread_id``."""
        return PostgresInbox(self._db, thread_id=thread_id)

    def for_save_file(self, save_file: str | os.PathLike[str]) -> PostgresInbox:
        """Return the inbox of the conversation saved to ``save_file`` (thread id: :func:`save_file_thread_id`)."""
        return PostgresInbox(self._db, thread_id=save_file_thread_id(save_file))


class PostgresInbox:
    """The inbox of one conversation (a thread) in PostgreSQL: the directory backend's contract in two tables.

    Build it with ``PostgresInbox(conn, thread_id=...)``, :meth:`for_thread`, or a
    :class:`PostgresInboxes` provider; call :meth:`setup` once per database. Notices are
    delivered in name order and claimed by exactly one reader (see the module docstring);
    the history keeps each delivered notice with its posting and delivery times.
    Failures are raised as :class:`InboxError`, which the ``Inbox`` strategy treats like an
    unmovable file: a notice whose claim failed stays pending for the next pickup.
    """

    def __init__(
        self,
        conn: str | psycopg.Connection | Any,
        *,
        thread_id: str,
        schema: str | None = None,
        lease_seconds: float | None = None,
        max_notice_bytes: int | None = None,
    ) -> None:
        self._db = conn if isinstance(conn, Database) else Database(conn, schema)
        self.thread_id = _check_thread_id(thread_id)
        self._key = encode_thread_id(thread_id)
        _, lease, cap = notice_limits()
        self.lease_seconds = lease if lease_seconds is None else lease_seconds
        self.max_notice_bytes = cap if max_notice_bytes is None else max_notice_bytes

    @classmethod
    def for_thread(cls, thread_id: str, conn: str | psycopg.Connection | Any, *, schema: str | None = None) -> PostgresInbox:
        """Return the inbox of LangGraph thread ``thread_id`` in the database ``conn``."""
        return cls(conn, thread_id=thread_id, schema=schema)

    @classmethod
    def for_save_file(
        cls, save_file: str | os.PathLike[str], conn: str | psycopg.Connection | Any, *, schema: str | None = None
    ) -> PostgresInbox:
        """Return the inbox of the conversation saved to ``save_file`` in the database ``conn``."""
        return cls(conn, thread_id=save_file_thread_id(save_file), schema=schema)

    def __repr__(self) -> str:
        return f"PostgresInbox({self._db.describe()!r}, thread_id={self.thread_id!r})"

    @property
    def location(self) -> str:
        """Return ``pg:<pending table>/<encoded thread id>``: where the pending notices lie."""
        return f"pg:{self._db.pending_label}/{self._key}"

    def _pending_at(self, name: str) -> str:
        return f"{self.location}/{name}"

    def _delivered_at(self, name: str) -> str:
        return f"pg:{self._db.delivered_label}/{self._key}/{name}"

    def setup(self) -> None:
        """Create the inbox tables (or migrate them to this version's schema); idempotent."""
        self._db.setup()

    # ----------------------------------------------------------------- reading

    def pending(self) -> list[str]:
        """Return the names of the thread's pending notices, sorted by code point; none before the first post."""
        return [entry.name for entry in self.pending_entries()]

    def pending_entries(self) -> list[InboxEntry]:
        """Return the pending notices with their posting times and sizes, in delivery order."""
        rows = self._fetch(PENDING, "list the pending notices")
        return [InboxEntry(name, posted.timestamp(), size, head=bytes(head)) for name, posted, size, head in rows]

    def delivered_entries(self) -> list[InboxEntry]:
        """Return the history: each delivered notice under its history name, oldest posting time first."""
        rows = self._fetch(DELIVERED, "list the delivered notices")
        return [
            InboxEntry(name, posted.timestamp(), size, delivered.timestamp(), bytes(head))
            for name, posted, size, delivered, head in rows
        ]

    def _fetch(self, query: LiteralString, doing: str) -> list[tuple[Any, ...]]:
        try:
            with self._db.transaction() as cursor:
                cursor.execute(self._db.query(query), {"thread": self.thread_id})
                rows: list[tuple[Any, ...]] = cursor.fetchall()
                return rows
        except self._db.psycopg.Error as exc:
            raise self._db.failure(exc, doing) from exc

    def claim(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Take pending notice ``name`` and record it in the history, in one transaction; return it with its content.

        Returns None when another reader took it first or is taking it now (it is then
        locked, and skipped rather than waited for). Raises :class:`InboxError` when the
        claim fails, with the notice still pending. ``need_content`` is accepted for the
        contract's sake: a row's content is always readable.
        """
        moved = self._move_into_history(CLAIM, self._history_params(name), name, "claim", "left pending")
        if moved is None:
            return None
        content, posted_at, final = moved
        return Claimed(name=name, path=self._delivered_at(final), mtime=posted_at.timestamp(), data=bytes(content))

    def _history_params(self, name: str, **extra: Any) -> dict[str, Any]:
        """Return the query parameters that move notice ``name`` into the history under its first free name."""
        stem, ext = split_ext(name)
        return {
            "thread": self.thread_id, "name": name, "stem": stem, "ext": ext,
            "family_lo": stem + ".", "family_hi": stem + "/",  # the names that start with "stem."
            **extra,
        }

    def _move_into_history(
        self, query: LiteralString, params: dict[str, Any], name: str, doing: str, left: str
    ) -> tuple[Any, Any, str] | None:
        """Run ``query`` (which takes the notice and records it) in one transaction; return its content, posting time and history name.

        Returns None when the query took no row. When another transaction took the history
        name a moment ago, the next free one is recorded instead, at most
        ``_MAX_NAME_ATTEMPTS`` times; then the notice stays where it was (``left``).
        """
        try:
            with self._db.transaction() as cursor:
                cursor.execute(self._db.query(query), params)
                row = cursor.fetchone()
                if row is None:
                    return None
                content, posted_at, final, _ = row
                attempts = 1
                while final is None:
                    if attempts >= _MAX_NAME_ATTEMPTS:
                        raise InboxError(f"no free history name for {name!r} after {attempts} attempts; {left}")
                    attempts += 1
                    cursor.execute(self._db.query(RECORD), {**params, "content": content, "posted_at": posted_at})
                    recorded = cursor.fetchone()
                    final = recorded[0] if recorded else None
                self._before_commit(cursor, name, final)
        except self._db.psycopg.Error as exc:
            raise self._db.failure(exc, f"{doing} {name!r}") from exc
        return content, posted_at, final

    # ----------------------------------------------------------------- leases

    def ready(self) -> list[str]:
        """Return the pending names a pickup may take now: all but those over :attr:`max_notice_bytes` (one warning each)."""
        names = []
        for entry in self.pending_entries():
            if entry.size > self.max_notice_bytes and entry.name != ABORT_FILE:
                warn_once(
                    ("too-large", self.location, entry.name, str(entry.size)),
                    "inbox: %s/%s is %d bytes, over the %d-byte notice limit (INBOX_MAX_NOTICE_BYTES); "
                    "it is left pending, not delivered",
                    self.location, entry.name, entry.size, self.max_notice_bytes,
                )
                continue
            names.append(entry.name)
        return names

    def lease(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Claim pending notice ``name`` for this process without recording its delivery; None when another reader took it.

        The row stays in the pending table, marked with a token and this process as owner,
        until :meth:`acknowledge`; a killed reader's claim is taken over by a later pickup.
        """
        token = secrets.token_hex(16)
        try:
            with self._db.transaction() as cursor:
                cursor.execute(
                    self._db.query(LEASE),
                    {"thread": self.thread_id, "name": name, "token": token, "owner": current_owner()},
                )
                row = cursor.fetchone()
        except self._db.psycopg.Error as exc:
            raise self._db.failure(exc, f"claim {name!r}") from exc
        if row is None:
            return None
        content, posted_at = row
        return Claimed(name=name, path=self._pending_at(name), mtime=posted_at.timestamp(), data=bytes(content), token=token)

    def in_flight(self, *, with_head: bool = False) -> list[Lease]:
        """Return the claims not yet acknowledged, oldest posting time first (``with_head``: with their first bytes)."""
        rows = self._fetch(IN_FLIGHT_WITH_HEAD if with_head else IN_FLIGHT, "list the claimed notices")
        return [
            Lease(token, name, owner, leased.timestamp(), self.lease_seconds, posted.timestamp(), size,
                  None if head is None else bytes(head))
            for token, name, owner, leased, posted, size, head in rows
        ]

    def take_over(self, lease: Lease, *, need_content: bool = True) -> Claimed | None:
        """Make ``lease`` this process's claim (renewing it) and return the notice; None when acknowledged or taken."""
        try:
            with self._db.transaction() as cursor:
                cursor.execute(
                    self._db.query(TAKE_OVER),
                    {"thread": self.thread_id, "token": lease.token, "owner": current_owner(), "old": lease.owner},
                )
                row = cursor.fetchone()
        except self._db.psycopg.Error as exc:
            raise self._db.failure(exc, f"take over the claim of {lease.name!r}") from exc
        if row is None:
            return None
        name, content, posted_at = row
        return Claimed(name=name, path=self._pending_at(name), mtime=posted_at.timestamp(), data=bytes(content), token=lease.token)

    def acknowledge(self, token: str, name: str | None = None) -> str | None:
        """Record claim ``token`` (of notice ``name``) as delivered, in one transaction; None when it is not in flight."""
        if name is None:
            found = [lease.name for lease in self.in_flight() if lease.token == token]
            if not found:
                return None
            name = found[0]
        moved = self._move_into_history(
            ACKNOWLEDGE, self._history_params(name, token=token), name, "acknowledge", "left claimed"
        )
        return None if moved is None else self._delivered_at(moved[2])

    def _before_commit(self, cursor: Any, name: str, history_name: str) -> None:
        """Run inside the claim's transaction once the notice is moved, just before COMMIT; nothing by default.

        A seam for tests that stop or kill a reader in mid-claim.
        """

    # ----------------------------------------------------------------- writing

    def post(self, content: str | bytes, *, name: str | None = None) -> str:
        """Post a notice and return where it lies (``pg:<table>/<thread>/<name>``); ``name`` defaults to an arrival-ordered one.

        Refuses the reserved name ``abort`` (use :meth:`request_abort`), names that would be
        hidden or path-like, empty content, and a name that is already pending, exactly
        as the directory backend does.
        """
        if name is not None:
            check_notice_name(name)
            if name == ABORT_FILE:
                raise InboxError("'abort' is reserved for abort requests; use request_abort() or `promptstrat inbox abort`")
        data = check_notice_size(notice_bytes(content), self.max_notice_bytes)
        if not data.strip():
            raise InboxError("refusing to post an empty notice; give it some content")
        return self._insert(data, name)

    def request_abort(self, reason: str = "") -> str:
        """Post the reserved ``abort`` notice (content: ``reason``) and return where it lies.

        Raises :class:`InboxError` when an abort is already pending, rather than replace its reason,
        or when the reason is over the notice cap.
        """
        return self._insert(check_notice_size(abort_reason_bytes(reason), self.max_notice_bytes, "abort reason"), ABORT_FILE)

    def _insert(self, data: bytes, name: str | None) -> str:
        try:
            for _ in range(_MAX_NAME_ATTEMPTS):
                final = name or default_notice_name()
                with self._db.transaction() as cursor:
                    cursor.execute(self._db.query(POST), {"thread": self.thread_id, "name": final, "content": data})
                    inserted = cursor.fetchone() is not None
                if inserted:
                    return self._pending_at(final)
                if name is not None:
                    what = "an abort is" if name == ABORT_FILE else f"a notice named {name!r} is"
                    raise NoticeNameTaken(f"{what} already pending in this inbox; wait for it to be delivered or pick another name")
        except self._db.psycopg.Error as exc:
            raise self._db.failure(exc, "post a notice") from exc
        raise InboxError(f"could not find a free notice name in {self.location}")  # pragma: no cover
