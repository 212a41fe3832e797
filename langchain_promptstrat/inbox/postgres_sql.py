"""The tables and statements of the PostgreSQL inbox: the schema's migrations and the SQL each operation runs.

Table names appear as ``{pending}``, ``{delivered}`` and ``{version}`` placeholders, which
:meth:`~langchain_promptstrat.inbox.postgres_connection.Database.query` fills with quoted
identifiers (in the configured schema); values are always psycopg parameters
(``%(name)s``). Why the claim statements deliver each notice to exactly one reader is told
in :mod:`~langchain_promptstrat.inbox.postgres`.

Text only: no connection, no execution, nothing formatted from a caller's input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import LiteralString  # psycopg's sql.SQL takes only literal text: no injection

__all__ = [
    "ACKNOWLEDGE",
    "CLAIM",
    "DELIVERED",
    "DELIVERED_TABLE",
    "IN_FLIGHT",
    "IN_FLIGHT_WITH_HEAD",
    "LEASE",
    "MIGRATIONS",
    "PENDING",
    "PENDING_TABLE",
    "POST",
    "RECORD",
    "TAKE_OVER",
    "VERSION_TABLE",
]

PENDING_TABLE = "promptstrat_inbox_pending"
DELIVERED_TABLE = "promptstrat_inbox_delivered"
VERSION_TABLE = "promptstrat_inbox_migrations"

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
]
"""Schema versions, oldest first: ``MIGRATIONS[v - 1]`` takes the schema from version v-1 to v.
Append, never edit: a database records the versions it applied in ``promptstrat_inbox_migrations``."""

# The first free history name among name, stem.1.ext, stem.2.ext, ...: the candidates run
# from 0 to the number of history rows of the thread that could hold one of them (the name
# itself and every name starting with "stem."), so one of them is always free.
_FIRST_FREE_NAME = """
    SELECT c.candidate FROM (
        SELECT g, CASE WHEN g = 0 THEN %(name)s ELSE %(stem)s || '.' || g::text || %(ext)s END AS candidate
        FROM generate_series(0, (
            SELECT count(*) FROM {delivered}
            WHERE thread_id = %(thread)s AND (name = %(name)s OR (name >= %(family_lo)s AND name < %(family_hi)s))
        )::int) AS g
    ) AS c
    WHERE NOT EXISTS (SELECT 1 FROM {delivered} AS d WHERE d.thread_id = %(thread)s AND d.name = c.candidate)
    ORDER BY c.g
    LIMIT 1
"""

CLAIM = """
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
        SELECT %(thread)s, (""" + _FIRST_FREE_NAME + """), %(name)s, claimed.content, claimed.posted_at
        FROM claimed
        ON CONFLICT DO NOTHING
        RETURNING name, delivered_at
    )
    SELECT claimed.content, claimed.posted_at, recorded.name, recorded.delivered_at
    FROM claimed LEFT JOIN recorded ON true
"""

# A claim skips a row another reader is claiming; an acknowledgement waits for it (a reader
# merely trying to lease the same name holds its lock for an instant).
ACKNOWLEDGE = CLAIM.replace("@MATCH@", "claim_token = %(token)s").replace("@SKIP@", "")
CLAIM = CLAIM.replace("@MATCH@", "name = %(name)s AND claim_token IS NULL").replace("@SKIP@", "SKIP LOCKED")

LEASE = """
    UPDATE {pending} SET claim_token = %(token)s, claimed_by = %(owner)s, leased_at = clock_timestamp()
    WHERE thread_id = %(thread)s AND name = %(name)s AND claim_token IS NULL
    RETURNING content, posted_at
"""

TAKE_OVER = """
    UPDATE {pending} SET claimed_by = %(owner)s, leased_at = clock_timestamp()
    WHERE thread_id = %(thread)s AND claim_token = %(token)s AND claimed_by = %(old)s
    RETURNING name, content, posted_at
"""

IN_FLIGHT = """
    SELECT claim_token, name, claimed_by, leased_at, posted_at, octet_length(content), NULL FROM {pending}
    WHERE thread_id = %(thread)s AND claim_token IS NOT NULL ORDER BY posted_at, name
"""

IN_FLIGHT_WITH_HEAD = """
    SELECT claim_token, name, claimed_by, leased_at, posted_at, octet_length(content), substring(content FROM 1 FOR 240)
    FROM {pending} WHERE thread_id = %(thread)s AND claim_token IS NOT NULL ORDER BY posted_at, name
"""

RECORD = """
    INSERT INTO {delivered} (thread_id, name, original_name, content, posted_at)
    SELECT %(thread)s, (""" + _FIRST_FREE_NAME + """), %(name)s, %(content)s, %(posted_at)s
    ON CONFLICT DO NOTHING
    RETURNING name, delivered_at
"""

POST = """
    INSERT INTO {pending} (thread_id, name, content) VALUES (%(thread)s, %(name)s, %(content)s)
    ON CONFLICT DO NOTHING
    RETURNING name
"""

PENDING = """
    SELECT name, posted_at, octet_length(content), substring(content FROM 1 FOR 240) FROM {pending}
    WHERE thread_id = %(thread)s AND claim_token IS NULL ORDER BY name
"""

DELIVERED = """
    SELECT name, posted_at, octet_length(content), delivered_at, substring(content FROM 1 FOR 240) FROM {delivered}
    WHERE thread_id = %(thread)s ORDER BY posted_at, name
"""
