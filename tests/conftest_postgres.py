"""The PostgreSQL server that the tests of the PostgreSQL inbox run against.

Its fixtures reach every test module through ``pytest_plugins`` in ``tests/conftest.py``. The server
is ``$PROMPTSTRAT_TEST_DSN`` (``.ci/run`` starts a throwaway one with ``.ci/postgres start``).
Without it the tests skip with the reason; with ``PROMPTSTRAT_REQUIRE_POSTGRES=1`` (set by CI) they
fail instead, so CI can never pass by skipping them.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import NoReturn

import pytest

from langchain_promptstrat.extras import install_hint

TEST_DSN_ENV = "PROMPTSTRAT_TEST_DSN"
REQUIRE_ENV = "PROMPTSTRAT_REQUIRE_POSTGRES"
NO_SERVER = f"no PostgreSQL: set {TEST_DSN_ENV} or run .ci/run"


def postgres_required() -> bool:
    """Return whether a missing server is a failure (CI) rather than a reason to skip."""
    return os.environ.get(REQUIRE_ENV, "").strip().lower() in ("1", "true", "yes")


def unavailable(reason: str) -> NoReturn:
    """Skip with ``reason``, or fail with it when the environment requires PostgreSQL."""
    if postgres_required():
        pytest.fail(
            f"{reason} ({REQUIRE_ENV} is set: the PostgreSQL tests must run here)", pytrace=False
        )
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_dsn() -> str:
    """The connection string of a reachable PostgreSQL server on which the tests may create
    schemas."""
    dsn = os.environ.get(TEST_DSN_ENV, "").strip()
    if not dsn:
        unavailable(NO_SERVER)
    try:
        import psycopg
    except ImportError:
        unavailable(f"psycopg is not installed: {install_hint('postgres')}")
    try:
        psycopg.connect(dsn, connect_timeout=10).close()
    except psycopg.Error as exc:
        pytest.fail(
            f"{TEST_DSN_ENV} is set but its server cannot be reached: {' '.join(str(exc).split())}",
            pytrace=False,
        )
    return dsn


@pytest.fixture(scope="session")
def postgres_schema(postgres_dsn: str) -> Iterator[str]:
    """A fresh schema holding the inbox tables for this test session, dropped at its end."""
    import psycopg
    from psycopg import sql

    from langchain_promptstrat.inbox.postgres import PostgresInboxes

    schema = f"promptstrat_test_{secrets.token_hex(4)}"
    PostgresInboxes(postgres_dsn, schema=schema).setup()
    yield schema
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
