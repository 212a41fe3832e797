"""How the PostgreSQL inbox reaches its database: the kinds of connection, one transaction at a time, setup.

:class:`Database` takes what the user passes (a connection string, a
``psycopg_pool.ConnectionPool``, a ``psycopg.Connection``), hands out a cursor inside a
transaction that commits or rolls back as a whole, creates or migrates the tables
(:data:`~langchain_promptstrat.inbox.postgres_sql.MIGRATIONS`) and turns a database error
into an :class:`~langchain_promptstrat.errors.InboxError` that names the fix. psycopg is
imported when a ``Database`` is built, so the package imports without it.

It runs the statements it is given and knows nothing of notices, claims or threads:
that is :mod:`~langchain_promptstrat.inbox.postgres`'s.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from langchain_promptstrat.errors import ConfigError, InboxError
from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.inbox.postgres_sql import DELIVERED_TABLE, MIGRATIONS, PENDING_TABLE, VERSION_TABLE

if TYPE_CHECKING:
    from typing_extensions import LiteralString  # psycopg's sql.SQL takes only literal text: no injection

__all__ = ["CONNECT_TIMEOUT", "DSN_ENV", "INSTALL_HINT", "Database"]

DSN_ENV = "PROMPTSTRAT_INBOX_DSN"
"""Environment variable the CLI reads for the inbox database's connection string."""

INSTALL_HINT = install_hint("postgres")

_SETUP_LOCK = 0x7073_696E_6278_0001
"""Advisory lock key serialising concurrent ``setup()`` calls (racing CREATE TABLE IF NOT EXISTS can fail)."""

CONNECT_TIMEOUT = 3
"""Seconds a connection string without its own ``connect_timeout`` waits for the server."""


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ConfigError(f"the PostgreSQL inbox needs psycopg 3, which is not installed: {INSTALL_HINT}") from exc
    return psycopg


_connection_locks: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


class Database:
    """Where the inbox tables live and how to get a connection to them, one transaction at a time."""

    def __init__(self, conn: Any, schema: str | None) -> None:
        psycopg = _psycopg()
        from psycopg import sql

        self._sql = sql
        if isinstance(conn, str):
            if not conn.strip():
                raise ConfigError(f"the PostgreSQL inbox's connection string is empty; pass a DSN or set {DSN_ENV}")
            self.kind = "dsn"
        elif isinstance(conn, psycopg.Connection):
            self.kind = "connection"
            with _locks_guard:
                self._lock = _connection_locks.setdefault(conn, threading.Lock())
        elif isinstance(conn, psycopg.AsyncConnection) or type(conn).__name__.startswith("Async"):
            raise ConfigError("the PostgreSQL inbox is synchronous; pass a psycopg.Connection, a ConnectionPool or a DSN")
        elif callable(getattr(conn, "connection", None)):
            self.kind = "pool"
        else:
            raise ConfigError(
                f"cannot use {type(conn).__name__} as the inbox database; pass a connection string, "
                "a psycopg.Connection or a psycopg_pool.ConnectionPool"
            )
        if schema is not None and (not isinstance(schema, str) or not schema):
            raise ConfigError(f"schema must be a non-empty string or None, got {schema!r}")
        self.conn: Any = conn
        self.schema = schema
        self.psycopg = psycopg
        table = (lambda name: sql.Identifier(schema, name)) if schema else sql.Identifier
        self.names = {"pending": table(PENDING_TABLE), "delivered": table(DELIVERED_TABLE), "version": table(VERSION_TABLE)}
        prefix = f"{schema}." if schema else ""
        self.pending_label = f"{prefix}{PENDING_TABLE}"
        self.delivered_label = f"{prefix}{DELIVERED_TABLE}"

    def query(self, text: LiteralString) -> Any:
        """Return ``text`` with its ``{pending}``/``{delivered}``/``{version}`` placeholders as quoted table names."""
        return self._sql.SQL(text).format(**self.names)

    def describe(self) -> str:
        """Return ``host:port/dbname`` of the database, never the password."""
        try:
            if self.kind == "dsn":
                from psycopg.conninfo import conninfo_to_dict

                info = conninfo_to_dict(self.conn)
                return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"
            if self.kind == "connection":
                return f"{self.conn.info.host}:{self.conn.info.port}/{self.conn.info.dbname}"
        except Exception:  # a description must never hide the real error
            pass
        return "the inbox database"

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        if self.kind == "dsn":
            # an unreachable server fails a pickup within seconds instead of hanging the model call
            timeout = {} if "connect_timeout" in self.conn else {"connect_timeout": CONNECT_TIMEOUT}
            with self.psycopg.connect(self.conn, autocommit=True, **timeout) as conn:
                yield conn
        elif self.kind == "pool":
            with self.conn.connection() as conn:
                yield conn
        else:
            with self._lock:
                yield self.conn

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """Yield a cursor inside a transaction that commits when the block ends and rolls back if it raises."""
        with self._connection() as conn:
            if conn.info.transaction_status != self.psycopg.pq.TransactionStatus.IDLE:
                # conn.transaction() would only open a savepoint, and nothing would commit.
                raise InboxError(
                    "the connection given to the PostgreSQL inbox is inside a transaction; pass an autocommit "
                    "connection (psycopg.connect(..., autocommit=True)), a pool or a connection string"
                )
            with conn.transaction(), conn.cursor() as cursor:
                yield cursor

    def failure(self, exc: Exception, doing: str) -> InboxError:
        """Return the :class:`InboxError` that tells what ``doing`` met, naming the fix where there is one."""
        where = self.describe()
        if isinstance(exc, self.psycopg.errors.UndefinedTable):
            return InboxError(
                f"cannot {doing}: the inbox tables do not exist in {where}; call setup() once "
                "(PostgresInboxes(dsn).setup(), like LangGraph's PostgresSaver.setup(); "
                "from a shell: promptstrat inbox setup --dsn DSN)"
            )
        text = " ".join(str(exc).split()) or type(exc).__name__
        return InboxError(f"cannot {doing} in the PostgreSQL inbox at {where}: {text}")

    def setup(self) -> None:
        """Create the tables, or migrate them to the newest version; safe to call again and concurrently."""
        try:
            with self.transaction() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_SETUP_LOCK])
                if self.schema:
                    cursor.execute(self._sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(self._sql.Identifier(self.schema)))
                cursor.execute(self.query(
                    "CREATE TABLE IF NOT EXISTS {version} ("
                    " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
                ))
                cursor.execute(self.query("SELECT coalesce(max(version), 0) FROM {version}"))
                current = cursor.fetchone()[0]
                for version, statements in enumerate(MIGRATIONS, 1):
                    if version <= current:
                        continue
                    for statement in statements:
                        cursor.execute(self.query(statement))
                    cursor.execute(self.query("INSERT INTO {version} (version) VALUES (%s)"), [version])
        except self.psycopg.Error as exc:
            raise self.failure(exc, "set up the inbox tables") from exc

    def version(self) -> int:
        """Return the schema version applied to the database (0 before :meth:`setup`)."""
        try:
            with self.transaction() as cursor:
                cursor.execute(self.query("SELECT coalesce(max(version), 0) FROM {version}"))
                return int(cursor.fetchone()[0])
        except self.psycopg.errors.UndefinedTable:
            return 0
        except self.psycopg.Error as exc:
            raise self.failure(exc, "read the inbox schema version") from exc
