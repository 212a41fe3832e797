"""The inbox in PostgreSQL (:class:`PostgresInbox`, :class:`PostgresInboxes`): the directory
backend's contract in two tables.

``promptstrat_inbox_pending`` stands for the ``.inbox`` directory (leased rows carry their
claim) and ``promptstrat_inbox_delivered`` for the history; ``setup()`` creates them once and
records the schema version, like LangGraph's ``PostgresSaver.setup()``. A claim deletes the
pending row (``FOR UPDATE SKIP LOCKED``) and inserts it under the first free history name in
one transaction, handed over only after COMMIT; ``lease`` and ``take_over`` are one ``UPDATE``
each with one winner. ``conn`` is a DSN (a connection per operation: fork-safe), a
``psycopg_pool.ConnectionPool`` or an idle or autocommit ``psycopg.Connection`` (used under a
lock). Table names are quoted identifiers, values always parameters.
"""

from __future__ import annotations

import os
import secrets
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from langchain_promptstrat.errors import ConfigError, InboxError
from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.inbox.contract import (
    Claimed,
    InboxEntry,
    Lease,
    NoticeStore,
    current_owner,
    default_notice_name,
    name_stem,
    notice_limits,
)
from langchain_promptstrat.inbox.paths import canonical_thread_id, encode_thread_id, inbox_dir

if TYPE_CHECKING:
    import psycopg
    from typing_extensions import (
        LiteralString,
    )  # psycopg's sql.SQL takes only literal text: no injection

_MAX_NAME_ATTEMPTS = 100
_MAX_THREAD_ID_BYTES = 2048
"""Longest thread id kept: with a 255-byte name it stays within a B-tree index entry (2704
bytes)."""

PENDING_TABLE = "promptstrat_inbox_pending"
DELIVERED_TABLE = "promptstrat_inbox_delivered"
VERSION_TABLE = "promptstrat_inbox_migrations"
THREADS_TABLE = "promptstrat_inbox_threads"

MIGRATIONS: list[list[LiteralString]] = [
    [  # version 1
        # COLLATE "C": names sort by code point, as the directory backend sorts file names.
        """CREATE TABLE IF NOT EXISTS {pending} (
            thread_id text COLLATE "C" NOT NULL,
            name text COLLATE "C" NOT NULL,
            content bytea NOT NULL,
            posted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            PRIMARY KEY (thread_id, name)
        )""",
        """CREATE TABLE IF NOT EXISTS {delivered} (
            thread_id text COLLATE "C" NOT NULL,
            name text COLLATE "C" NOT NULL,
            original_name text COLLATE "C" NOT NULL,
            content bytea NOT NULL,
            posted_at timestamptz NOT NULL,
            delivered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            PRIMARY KEY (thread_id, name)
        )""",
    ],
    [  # version 2: leases (a notice claimed but not yet acknowledged stays in the pending table)
        """ALTER TABLE {pending}
            ADD COLUMN IF NOT EXISTS claim_token text COLLATE "C",
            ADD COLUMN IF NOT EXISTS claimed_by text COLLATE "C",
            ADD COLUMN IF NOT EXISTS leased_at timestamptz""",
    ],
    [  # version 3: the LangGraph Server thread (its creation time) each inbox belongs to
        """CREATE TABLE IF NOT EXISTS {threads} (
            thread_id text COLLATE "C" PRIMARY KEY,
            created_at text NOT NULL
        )""",
    ],
]
"""Schema versions, oldest first (``MIGRATIONS[v - 1]`` takes v-1 to v): append, never edit."""

# The first free history name among name, stem.1.ext, stem.2.ext, ...: the candidates run
# from 0 to the number of history rows of the thread that could hold one of them (the name
# itself and every name starting with "stem."), so one of them is always free.
_FIRST_FREE_NAME = """
    SELECT c.candidate FROM (
        SELECT g,
            CASE WHEN g = 0 THEN %(name)s ELSE %(stem)s || '.' || g::text || %(ext)s END
            AS candidate
        FROM generate_series(0, (
            SELECT count(*) FROM {delivered}
            WHERE thread_id = %(thread)s
                AND (name = %(name)s OR (name >= %(family_lo)s AND name < %(family_hi)s))
        )::int) AS g
    ) AS c
    WHERE NOT EXISTS (
        SELECT 1 FROM {delivered} AS d WHERE d.thread_id = %(thread)s AND d.name = c.candidate
    )
    ORDER BY c.g
    LIMIT 1
"""

CLAIM = (
    """
    WITH claimed AS (
        DELETE FROM {pending} AS p
        USING (
            SELECT thread_id, name FROM {pending}
            WHERE thread_id = %(thread)s AND @MATCH@
            FOR UPDATE @SKIP@
        ) AS target
        WHERE p.thread_id = target.thread_id AND p.name = target.name
        RETURNING p.content, p.posted_at
    ), recorded AS (
        INSERT INTO {delivered} (thread_id, name, original_name, content, posted_at)
        SELECT %(thread)s, ("""
    + _FIRST_FREE_NAME
    + """), %(name)s, claimed.content, claimed.posted_at
        FROM claimed
        ON CONFLICT DO NOTHING
        RETURNING name, delivered_at
    )
    SELECT claimed.content, claimed.posted_at, recorded.name, recorded.delivered_at
    FROM claimed LEFT JOIN recorded ON true
"""
)

# A claim skips a row another reader is claiming; an acknowledgement waits for it (a reader
# merely trying to lease the same name holds its lock for an instant).
ACKNOWLEDGE = CLAIM.replace("@MATCH@", "claim_token = %(token)s").replace("@SKIP@", "")
CLAIM = CLAIM.replace("@MATCH@", "name = %(name)s AND claim_token IS NULL").replace(
    "@SKIP@", "SKIP LOCKED"
)

LEASE = """
    UPDATE {pending}
    SET claim_token = %(token)s, claimed_by = %(owner)s, leased_at = clock_timestamp()
    WHERE thread_id = %(thread)s AND name = %(name)s AND claim_token IS NULL
    RETURNING content, posted_at
"""

TAKE_OVER = """
    UPDATE {pending} SET claimed_by = %(owner)s, leased_at = clock_timestamp()
    WHERE thread_id = %(thread)s AND claim_token = %(token)s AND claimed_by = %(old)s
    RETURNING name, content, posted_at
"""

IN_FLIGHT_WITH_HEAD = """
    SELECT claim_token, name, claimed_by, leased_at, posted_at, octet_length(content),
        substring(content FROM 1 FOR 240)
    FROM {pending} WHERE thread_id = %(thread)s AND claim_token IS NOT NULL ORDER BY posted_at, name
"""
IN_FLIGHT = IN_FLIGHT_WITH_HEAD.replace("substring(content FROM 1 FOR 240)", "NULL")

RECORD = (
    """
    INSERT INTO {delivered} (thread_id, name, original_name, content, posted_at)
    SELECT %(thread)s, ("""
    + _FIRST_FREE_NAME
    + """), %(name)s, %(content)s, %(posted_at)s
    ON CONFLICT DO NOTHING
    RETURNING name, delivered_at
"""
)

POST = """
    INSERT INTO {pending} (thread_id, name, content) VALUES (%(thread)s, %(name)s, %(content)s)
    ON CONFLICT DO NOTHING
    RETURNING name
"""

PENDING = """
    SELECT name, posted_at, octet_length(content), NULL, substring(content FROM 1 FOR 240)
    FROM {pending} WHERE thread_id = %(thread)s AND claim_token IS NULL
    ORDER BY name OFFSET %(offset)s LIMIT %(limit)s
"""

DELIVERED = """
    SELECT name, posted_at, octet_length(content), delivered_at, substring(content FROM 1 FOR 240)
    FROM {delivered} WHERE thread_id = %(thread)s
    ORDER BY posted_at, name OFFSET %(offset)s LIMIT %(limit)s
"""

COUNT_PENDING = """
    SELECT count(*) FROM {pending} WHERE thread_id = %(thread)s AND claim_token IS NULL
"""
COUNT_DELIVERED = "SELECT count(*) FROM {delivered} WHERE thread_id = %(thread)s"

BOUND_THREAD = "SELECT created_at FROM {threads} WHERE thread_id = %(thread)s"
HOLDS_ANYTHING = """
    SELECT EXISTS (SELECT 1 FROM {pending} WHERE thread_id = %(thread)s)
        OR EXISTS (SELECT 1 FROM {delivered} WHERE thread_id = %(thread)s)
"""
RECORD_THREAD = """
    INSERT INTO {threads} (thread_id, created_at) VALUES (%(thread)s, %(created)s)
    ON CONFLICT (thread_id) DO NOTHING RETURNING created_at
"""
EMPTY_FOR_ANOTHER_THREAD: list[LiteralString] = [
    "DELETE FROM {pending} WHERE thread_id = %(thread)s",
    "DELETE FROM {delivered} WHERE thread_id = %(thread)s",
    "UPDATE {threads} SET created_at = %(created)s WHERE thread_id = %(thread)s",
]


DSN_ENV = "PROMPTSTRAT_INBOX_DSN"
"""Environment variable the CLI reads for the inbox database's connection string."""

INSTALL_HINT = install_hint("postgres")

_SETUP_LOCK = 0x7073_696E_6278_0001
"""Advisory lock key serialising concurrent ``setup()`` calls (racing CREATE TABLE IF NOT EXISTS can
fail)."""

CONNECT_TIMEOUT = 3
"""Seconds a connection string without its own ``connect_timeout`` waits for the server."""


_connection_locks: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


class PostgresInboxes:
    """The PostgreSQL inboxes of every conversation in one database: an inbox provider
    (``backend=``).

    ``conn`` is a connection string, a ``psycopg_pool.ConnectionPool`` or a ``psycopg.Connection``;
    ``schema`` places the tables there (default: the search path).
    """

    def __init__(self, conn: str | psycopg.Connection | Any, *, schema: str | None = None) -> None:
        try:
            import psycopg
            from psycopg import sql
        except ImportError as exc:
            raise ConfigError(
                f"the PostgreSQL inbox needs psycopg 3, which is not installed: {INSTALL_HINT}"
            ) from exc

        self._sql = sql
        if isinstance(conn, str):
            if not conn.strip():
                raise ConfigError(
                    "the PostgreSQL inbox's connection string is empty; pass a DSN or set "
                    f"{DSN_ENV}"
                )
            self._kind = "dsn"
        elif isinstance(conn, psycopg.Connection):
            self._kind = "connection"
            with _locks_guard:
                self._lock = _connection_locks.setdefault(conn, threading.Lock())
        elif isinstance(conn, psycopg.AsyncConnection) or type(conn).__name__.startswith("Async"):
            raise ConfigError(
                "the PostgreSQL inbox is synchronous; pass a psycopg.Connection, a ConnectionPool "
                "or a DSN"
            )
        elif callable(getattr(conn, "connection", None)):
            self._kind = "pool"
        else:
            raise ConfigError(
                f"cannot use {type(conn).__name__} as the inbox database; pass a connection "
                "string, "
                "a psycopg.Connection or a psycopg_pool.ConnectionPool"
            )
        if schema is not None and (not isinstance(schema, str) or not schema):
            raise ConfigError(f"schema must be a non-empty string or None, got {schema!r}")
        self._conn: Any = conn
        self.schema = schema
        self._pg: Any = psycopg
        table = (lambda name: sql.Identifier(schema, name)) if schema else sql.Identifier
        self._names = {
            "pending": table(PENDING_TABLE),
            "delivered": table(DELIVERED_TABLE),
            "version": table(VERSION_TABLE),
            "threads": table(THREADS_TABLE),
        }
        self._prefix = f"{schema}." if schema else ""

    def __repr__(self) -> str:
        return f"PostgresInboxes({self._describe()!r}, schema={self.schema!r})"

    def for_thread(self, thread_id: str) -> PostgresInbox:
        """Return the inbox of LangGraph thread ``thread_id``."""
        return PostgresInbox(self, thread_id=thread_id)

    def for_save_file(self, save_file: str | os.PathLike[str]) -> PostgresInbox:
        """Return the inbox of the conversation saved to ``save_file`` (thread id:
        :func:`save_file_thread_id`)."""
        return PostgresInbox(self, thread_id=save_file_thread_id(save_file))

    def _query(self, text: LiteralString) -> Any:
        """Return ``text`` with its placeholders (``{pending}``, ...) as quoted table names."""
        return self._sql.SQL(text).format(**self._names)

    def _describe(self) -> str:
        """Return ``host:port/dbname`` of the database, never the password."""
        with suppress(Exception):  # a description must never hide the real error
            if self._kind == "dsn":
                from psycopg.conninfo import conninfo_to_dict

                info = conninfo_to_dict(self._conn)
                host, port = info.get("host", "localhost"), info.get("port", 5432)
                return f"{host}:{port}/{info.get('dbname', '')}"
            if self._kind == "connection":
                return f"{self._conn.info.host}:{self._conn.info.port}/{self._conn.info.dbname}"
        return "the inbox database"

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        if self._kind == "dsn":
            # an unreachable server fails a pickup within seconds instead of hanging the model call
            timeout = (
                {} if "connect_timeout" in self._conn else {"connect_timeout": CONNECT_TIMEOUT}
            )
            with self._pg.connect(self._conn, autocommit=True, **timeout) as conn:
                yield conn
        elif self._kind == "pool":
            with self._conn.connection() as conn:
                yield conn
        else:
            with self._lock:
                yield self._conn

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """Yield a cursor inside a transaction that commits when the block ends and rolls back if it
        raises."""
        with self._connection() as conn:
            if conn.info.transaction_status != self._pg.pq.TransactionStatus.IDLE:
                # conn.transaction() would only open a savepoint, and nothing would commit.
                raise InboxError(
                    "the connection given to the PostgreSQL inbox is inside a transaction; pass "
                    "an autocommit "
                    "connection (psycopg.connect(..., autocommit=True)), a pool or a connection "
                    "string"
                )
            with conn.transaction(), conn.cursor() as cursor:
                yield cursor

    def _failure(self, exc: Exception, doing: str) -> InboxError:
        """Return the :class:`InboxError` that tells what ``doing`` met, naming the fix where there
        is one."""
        where = self._describe()
        if isinstance(exc, self._pg.errors.UndefinedTable):
            return InboxError(
                f"cannot {doing}: the inbox tables do not exist in {where}; call setup() once "
                "(PostgresInboxes(dsn).setup(), like LangGraph's PostgresSaver.setup(); "
                "from a shell: promptstrat inbox setup --dsn DSN)"
            )
        text = " ".join(str(exc).split()) or type(exc).__name__
        return InboxError(f"cannot {doing} in the PostgreSQL inbox at {where}: {text}")

    def setup(self) -> None:
        """Create the inbox tables, or migrate them to this version's schema; safe to call again and
        concurrently."""
        try:
            with self._transaction() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_SETUP_LOCK])
                if self.schema:
                    cursor.execute(
                        self._sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                            self._sql.Identifier(self.schema)
                        )
                    )
                cursor.execute(
                    self._query(
                        "CREATE TABLE IF NOT EXISTS {version} ("
                        " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT "
                        "now())"
                    )
                )
                cursor.execute(self._query("SELECT coalesce(max(version), 0) FROM {version}"))
                current = cursor.fetchone()[0]
                for version, statements in enumerate(MIGRATIONS, 1):
                    if version <= current:
                        continue
                    for statement in statements:
                        cursor.execute(self._query(statement))
                    cursor.execute(
                        self._query("INSERT INTO {version} (version) VALUES (%s)"), [version]
                    )
        except self._pg.Error as exc:
            raise self._failure(exc, "set up the inbox tables") from exc

    def schema_version(self) -> int:
        """Return the schema version applied to the database (0 before :meth:`setup`)."""
        try:
            with self._transaction() as cursor:
                cursor.execute(self._query("SELECT coalesce(max(version), 0) FROM {version}"))
                return int(cursor.fetchone()[0])
        except self._pg.errors.UndefinedTable:
            return 0
        except self._pg.Error as exc:
            raise self._failure(exc, "read the inbox schema version") from exc


def save_file_thread_id(save_file: str | os.PathLike[str]) -> str:
    """Return the thread id that stands for a save file in the database: the absolute path of its
    inbox sibling (lexically resolved)."""
    return os.path.abspath(inbox_dir(save_file))


def _check_thread_id(thread_id: str) -> str:
    try:
        encoded = thread_id.encode("utf-8")
    except UnicodeEncodeError:
        encoded = b"\x00"
    if b"\x00" in encoded:
        raise InboxError(
            f"thread_id {thread_id!r} holds NUL or a lone surrogate, which PostgreSQL text cannot "
            "store"
        )
    if len(encoded) > _MAX_THREAD_ID_BYTES:
        raise InboxError(
            f"thread_id is longer than {_MAX_THREAD_ID_BYTES} bytes, more than the inbox tables "
            "can index"
        )
    return canonical_thread_id(thread_id)


class PostgresInbox(NoticeStore[str]):
    """The inbox of one conversation (a thread) in PostgreSQL; ``conn`` as :class:`PostgresInboxes`,
    or one.

    Failures are raised as :class:`InboxError`: a notice whose claim failed stays pending.
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
        self._db = (
            conn if isinstance(conn, PostgresInboxes) else PostgresInboxes(conn, schema=schema)
        )
        self._key = encode_thread_id(
            thread_id
        )  # refuses a thread id that is not a non-empty string
        self.thread_id = _check_thread_id(thread_id)
        _, lease, cap = notice_limits()
        self.lease_seconds = lease if lease_seconds is None else lease_seconds
        self.max_notice_bytes = cap if max_notice_bytes is None else max_notice_bytes

    def __repr__(self) -> str:
        return f"PostgresInbox({self._db._describe()!r}, thread_id={self.thread_id!r})"

    @property
    def location(self) -> str:
        """Return ``pg:<pending table>/<encoded thread id>``: where the pending notices lie."""
        return f"pg:{self._db._prefix}{PENDING_TABLE}/{self._key}"

    def setup(self) -> None:
        """Create the inbox tables (or migrate them to this version's schema); idempotent."""
        self._db.setup()

    def _run(
        self, query: LiteralString, params: dict[str, Any], doing: str, *, one: bool = True
    ) -> Any:
        """Return the first row (``one``) or all rows of ``query`` run in its own transaction; a
        database error as :class:`InboxError`."""
        try:
            with self._db._transaction() as cursor:
                cursor.execute(self._db._query(query), {"thread": self.thread_id, **params})
                return cursor.fetchone() if one else cursor.fetchall()
        except self._db._pg.Error as exc:
            raise self._db._failure(exc, doing) from exc

    def _claimed(self, name: str, content: Any, posted_at: Any, token: str) -> Claimed:
        return Claimed(
            name=name,
            path=f"{self.location}/{name}",
            mtime=posted_at.timestamp(),
            data=bytes(content),
            token=token,
        )

    def pending(self) -> list[str]:
        """Return the names of the thread's pending notices, sorted by code point; none before the
        first post."""
        return [entry.name for entry in self.pending_entries()]

    def pending_entries(self) -> list[InboxEntry]:
        """Return the pending notices with their posting times and sizes, in delivery order."""
        return self.pending_page(0, None)[0]

    def pending_page(self, offset: int, limit: int | None) -> tuple[list[InboxEntry], int]:
        """Return ``limit`` pending entries from ``offset`` (None: all), in order, and the total."""
        return self._page(PENDING, COUNT_PENDING, offset, limit, "list the pending notices")

    def delivered_entries(self) -> list[InboxEntry]:
        """Return the history: each delivered notice under its history name, oldest posting time
        first."""
        return self.delivered_page(0, None)[0]

    def delivered_page(self, offset: int, limit: int | None) -> tuple[list[InboxEntry], int]:
        """Return ``limit`` delivered entries from ``offset`` (None: all) and the total."""
        return self._page(DELIVERED, COUNT_DELIVERED, offset, limit, "list the delivered notices")

    def _page(
        self, query: LiteralString, count: LiteralString, offset: int, limit: int | None, doing: str
    ) -> tuple[list[InboxEntry], int]:
        """Return one page of ``query``'s entries (only its rows are read) and ``count``'s total."""
        rows = self._run(query, {"offset": offset, "limit": limit}, doing, one=False)
        entries = []
        for name, posted, size, done, head in rows:
            delivered_at = None if done is None else done.timestamp()
            entries.append(InboxEntry(name, posted.timestamp(), size, delivered_at, bytes(head)))
        total = len(rows) if limit is None and not offset else int(self._run(count, {}, doing)[0])
        return entries, total

    def ready(self) -> list[str]:
        """Return the pending names a pickup may take now: all but those over
        :attr:`max_notice_bytes` (one warning each)."""
        return [
            entry.name
            for entry in self.pending_entries()
            if self._fits(entry.name, entry.size, entry.name)
        ]

    def in_flight(self, *, with_head: bool = False) -> list[Lease]:
        """Return the claims not yet acknowledged, oldest posting time first (``with_head``: with
        their first bytes)."""
        rows = self._run(
            IN_FLIGHT_WITH_HEAD if with_head else IN_FLIGHT,
            {},
            "list the claimed notices",
            one=False,
        )
        return [
            Lease(
                token,
                name,
                owner,
                leased.timestamp(),
                self.lease_seconds,
                posted.timestamp(),
                size,
                None if head is None else bytes(head),
            )
            for token, name, owner, leased, posted, size, head in rows
        ]

    def claim(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Take pending notice ``name`` and record it in the history, in one transaction; None when
        another reader has it.

        ``need_content`` is accepted for the contract's sake: a row's content is always readable.
        """
        moved = self._into_history(CLAIM, name, "claim", "left pending")
        if moved is None:
            return None
        content, posted_at, final = moved
        return Claimed(
            name=name,
            path=self._delivered_at(final),
            mtime=posted_at.timestamp(),
            data=bytes(content),
        )

    def lease(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Claim pending notice ``name`` for this process without recording it; None when another
        reader took it."""
        token = secrets.token_hex(16)
        row = self._run(
            LEASE, {"name": name, "token": token, "owner": current_owner()}, f"claim {name!r}"
        )
        return None if row is None else self._claimed(name, row[0], row[1], token)

    def take_over(self, lease: Lease, *, need_content: bool = True) -> Claimed | None:
        """Make ``lease`` this process's claim (renewing it) and return the notice; None when
        acknowledged or taken."""
        params = {"token": lease.token, "owner": current_owner(), "old": lease.owner}
        row = self._run(TAKE_OVER, params, f"take over the claim of {lease.name!r}")
        return None if row is None else self._claimed(row[0], row[1], row[2], lease.token)

    def acknowledge(self, token: str, name: str | None = None) -> str | None:
        """Record claim ``token`` (of notice ``name``) as delivered, in one transaction; None when
        it is not in flight."""
        if name is None:
            name = next((lease.name for lease in self.in_flight() if lease.token == token), None)
            if name is None:
                return None
        moved = self._into_history(ACKNOWLEDGE, name, "acknowledge", "left claimed", token=token)
        return None if moved is None else self._delivered_at(moved[2])

    def _delivered_at(self, name: str) -> str:
        return f"pg:{self._db._prefix}{DELIVERED_TABLE}/{self._key}/{name}"

    def _into_history(
        self, query: LiteralString, name: str, doing: str, left: str, **extra: Any
    ) -> tuple[Any, Any, str] | None:
        """Run ``query`` (take the notice, record it) in one transaction; return its content,
        posting time and history name.

        None when the query took no row. When another transaction took the history name a
        moment ago, the next free one is recorded, at most ``_MAX_NAME_ATTEMPTS`` times.
        """
        stem = name_stem(name)
        params = {
            "thread": self.thread_id,
            "name": name,
            "stem": stem,
            "ext": name[len(stem) :],
            "family_lo": stem + ".",
            "family_hi": stem + "/",  # the names that start with "stem."
            **extra,
        }
        try:
            with self._db._transaction() as cursor:
                cursor.execute(self._db._query(query), params)
                row = cursor.fetchone()
                if row is None:
                    return None
                content, posted_at, final, _ = row
                attempts = 1
                while final is None:
                    if attempts >= _MAX_NAME_ATTEMPTS:
                        raise InboxError(
                            f"no free history name for {name!r} after {attempts} attempts; {left}"
                        )
                    attempts += 1
                    cursor.execute(
                        self._db._query(RECORD),
                        {**params, "content": content, "posted_at": posted_at},
                    )
                    recorded = cursor.fetchone()
                    final = recorded[0] if recorded else None
                self._before_commit(cursor, name, final)
        except self._db._pg.Error as exc:
            raise self._db._failure(exc, f"{doing} {name!r}") from exc
        return content, posted_at, final

    def _before_commit(self, cursor: Any, name: str, history_name: str) -> None:
        """Run inside the claim's transaction just before COMMIT; a seam for tests that stop a
        reader in mid-claim."""

    def bind_to_thread(self, created_at: str, *, create: bool = False) -> bool:
        """Bind this inbox to the thread created at ``created_at``; return whether it was emptied.

        An inbox recorded for another creation time is emptied (its pending, in-flight and
        delivered rows deleted) in the transaction that records the new one, under that record's
        row lock; one recording none is adopted. ``create`` records the binding even where the
        inbox holds nothing yet; otherwise nothing is written for an empty inbox.
        """
        bound = self._run(BOUND_THREAD, {}, "read which thread the inbox belongs to")
        if bound is not None and bound[0] == created_at:
            return False
        params = {"thread": self.thread_id, "created": created_at}
        try:
            with self._db._transaction() as cursor:
                if bound is None:
                    cursor.execute(self._db._query(HOLDS_ANYTHING), params)
                    if not create and not cursor.fetchone()[0]:
                        return False
                    cursor.execute(self._db._query(RECORD_THREAD), params)
                    if cursor.fetchone() is not None:
                        return False
                cursor.execute(self._db._query(BOUND_THREAD + " FOR UPDATE"), params)
                if cursor.fetchone()[0] == created_at:
                    return False
                for statement in EMPTY_FOR_ANOTHER_THREAD:
                    cursor.execute(self._db._query(statement), params)
        except self._db._pg.Error as exc:
            raise self._db._failure(exc, "bind the inbox to its thread") from exc
        return True

    def _write(self, data: bytes, name: str | None) -> str:
        for _ in range(_MAX_NAME_ATTEMPTS):
            final = name or default_notice_name()
            if self._run(POST, {"name": final, "content": data}, "post a notice") is not None:
                return f"{self.location}/{final}"
            if name is not None:
                raise self._taken(name)
        raise InboxError(
            f"could not find a free notice name in {self.location}"
        )  # pragma: no cover
