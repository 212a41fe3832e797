"""Time ``GET /threads/{id}/inbox?limit=1`` against how many notices a thread holds pending.

The routes (``langchain_promptstrat.server:app``) are driven in process with Starlette's test
client, on the directory backend and, when ``PROMPTSTRAT_TEST_DSN`` is set, on PostgreSQL (in
a schema of its own, dropped at the end). For each size the thread's inbox is filled directly
(files written read-only, rows inserted in one statement: posting is not what is measured),
then one ``GET ?limit=1`` is timed (the median of five), then eight at once from eight threads
(the wall time until the last answers). The page size bounds the answer; this shows whether it
bounds the work.

Run: ``python benchmarks/inbox_listing.py [--sizes 5000,50000]``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from starlette.testclient import TestClient

from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.server import app

THREAD = "bench-thread"
NOTICE = b"Check the retry budget too; the staging database is read-only until noon. " * 3
PARALLEL = 8


def fill_directory(root: Path, count: int) -> None:
    store = DirectoryInbox.for_thread(THREAD, root)
    store.path.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        path = store.path / f"n{i:06d}.txt"
        path.write_bytes(NOTICE)
        path.chmod(0o444)


@contextmanager
def postgres_schema(dsn: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql

    from langchain_promptstrat.inbox.postgres import PostgresInboxes

    schema = f"promptstrat_bench_{secrets.token_hex(4)}"
    PostgresInboxes(dsn, schema=schema).setup()
    try:
        yield f"{dsn}{'&' if '?' in dsn else '?'}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def fill_postgres(dsn: str, count: int) -> None:
    import psycopg
    from psycopg import sql

    from langchain_promptstrat.inbox.postgres import PENDING_TABLE

    table = sql.Identifier(PENDING_TABLE)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DELETE FROM {}").format(table))
        conn.execute(
            sql.SQL(
                "INSERT INTO {} (thread_id, name, content) SELECT %s, 'n' || lpad(g::text, 6, '0') "
                "|| '.txt', %s FROM generate_series(0, %s - 1) AS g"
            ).format(table),
            [THREAD, NOTICE, count],
        )


def timed(client: TestClient) -> float:
    start = time.perf_counter()
    answer = client.get(f"/threads/{THREAD}/inbox?limit=1")
    assert answer.status_code == 200 and len(answer.json()["pending"]) == 1, answer.text
    return time.perf_counter() - start


def measure(client: TestClient) -> tuple[float, float]:
    """Return the median time of one GET and the wall time of eight at once, in seconds."""
    one = statistics.median(timed(client) for _ in range(5))
    start = time.perf_counter()
    with ThreadPoolExecutor(PARALLEL) as pool:
        list(pool.map(lambda _: timed(client), range(PARALLEL)))
    return one, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,50000", help="pending notices, comma-separated")
    sizes = [int(size) for size in parser.parse_args().sizes.split(",")]
    rows = []
    os.environ.pop("PROMPTSTRAT_INBOX_DSN", None)
    with tempfile.TemporaryDirectory() as home:
        for size in sizes:
            root = Path(home) / f"root-{size}"
            fill_directory(root, size)
            os.environ["PROMPTSTRAT_INBOX_ROOT"] = str(root)
            with TestClient(app) as client:
                rows.append(("directory", size, *measure(client)))
    dsn = os.environ.get("PROMPTSTRAT_TEST_DSN", "").strip()
    if dsn:
        with postgres_schema(dsn) as schema_dsn:
            os.environ["PROMPTSTRAT_INBOX_DSN"] = schema_dsn
            for size in sizes:
                fill_postgres(schema_dsn, size)
                with TestClient(app) as client:
                    rows.append(("postgresql", size, *measure(client)))
    else:
        print("PROMPTSTRAT_TEST_DSN is not set: the directory backend only", file=sys.stderr)
    print(f"| backend | pending | one GET ?limit=1 | {PARALLEL} GETs at once |")
    print("| --- | --- | --- | --- |")
    for backend, size, one, parallel in rows:
        print(f"| {backend} | {size:,} | {one * 1000:,.0f} ms | {parallel * 1000:,.0f} ms |")


if __name__ == "__main__":
    main()
