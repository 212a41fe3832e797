"""Kill inbox readers at random points and count what was posted, delivered, duplicated and lost.

A parent process posts notices (and, now and then, an abort request) and forks one reader
after another, each SIGKILLed a random delay after it is ready (its connection open): in its
pickup, in its model call, while recording the answer, while acknowledging. The package is imported once, in the parent, so
a kill costs milliseconds. Every reader plays an agent step:

* ``persisted`` (the hook's and the middleware's default, with a checkpointer): pick up
  with ``seen`` = the notice ids already in the conversation, call the model, and append
  the notices to the conversation (one ``write``, standing for the checkpoint). The next
  pickup acknowledges them.
* ``one-call`` (``persist_inbox=False`` in the middleware): pick up, call the model, record
  its answer, then acknowledge. A kill between the answer and the acknowledgement is the
  one window in which a notice reaches a second model call.

The model raises on a share of the calls (``raise_rate``); nothing is recorded then, and
the notices come back at the next pickup. After the last kill the parent drains the inbox
with the same loop. A notice is *delivered* when a successful model call recorded it.

Run: ``python benchmarks/inbox_kills.py`` (PostgreSQL too when ``PROMPTSTRAT_TEST_DSN`` is
set, e.g. after ``eval "$(.ci/postgres start)"``).
"""

from __future__ import annotations

import os
import random
import secrets
import select
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_promptstrat.inbox_store import DirectoryInbox
from langchain_promptstrat.strategies.inbox import acknowledge_notices, notice_id, pick_up

MODES = ("persisted", "one-call")


@dataclass
class Figures:
    """What one kill run counted."""

    backend: str
    mode: str
    posted: int
    killed: int
    model_raised: int
    delivered: int
    duplicated: int
    lost: int
    aborts_posted: int
    aborts_honoured: int
    seconds: float

    def row(self) -> str:
        """Return the figures as one Markdown table row."""
        return (
            f"| {self.backend} | {self.mode} | {self.posted} | {self.killed} | {self.model_raised} | {self.delivered} | "
            f"{self.duplicated} | {self.lost} | {self.aborts_honoured}/{self.aborts_posted} | {self.seconds:.1f} s |"
        )


HEADER = (
    "| backend | mode | notices posted | readers killed | model calls raised | delivered | duplicated | lost "
    "| aborts honoured | time |\n|---|---|---|---|---|---|---|---|---|---|"
)


def _read_log(log: Path) -> list[str]:
    try:
        return log.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []


def _step(store: Any, log: Path, mode: str, rng: random.Random, raise_rate: float) -> bool:
    """Run one agent step: pickup, model call, record; return whether it took anything."""
    lines = _read_log(log)
    seen = frozenset(line.split("\t", 1)[0] for line in lines) if mode == "persisted" else frozenset()
    result = pick_up(store, seen=seen, settle=False)
    if result.aborted:  # acted on (recorded), then acknowledged: by the next pickup, or at once in one-call mode
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"{notice_id(result.abort_token or '')}\tabort {result.abort_reason}\n".encode())
        os.close(fd)
        if mode == "one-call" and result.abort_token:
            store.acknowledge(result.abort_token, "abort")
        return True
    if not result.delivered:
        return False
    if rng.random() < raise_rate:  # the model call raised: nothing recorded, nothing acknowledged
        fd = os.open(log.with_suffix(".raised"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, b"x")
        os.close(fd)
        return True
    record = "".join(f"{m.id}\t{m.content}\n" for m in result.delivered)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, record.encode())  # one write: the checkpoint (persisted) or the model's recorded answer (one-call)
    os.close(fd)
    if mode == "one-call":
        acknowledge_notices(store, result.delivered)
    return True


def _reader(make: Callable[[], Any], log: Path, mode: str, raise_rate: float, started: int) -> None:
    rng = random.Random(os.getpid())
    store = make()
    os.write(started, b".")  # ready to work (connected): the kill clock starts now
    while True:
        if not _step(store, log, mode, rng, raise_rate):
            time.sleep(0.0005)


def run_kills(
    make: Callable[[], Any],
    *,
    backend: str,
    mode: str,
    kills: int = 400,
    per_round: int = 2,
    max_delay: float = 0.015,
    raise_rate: float = 0.2,
    abort_every: int = 25,
    workdir: str | os.PathLike[str],
    seed: int = 0,
) -> Figures:
    """Post ``per_round`` notices, fork a reader, SIGKILL it up to ``max_delay`` s after it is ready; ``kills`` times; drain."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    rng = random.Random(seed)
    log = Path(workdir) / f"conversation-{backend}-{mode}.log"
    store = make()
    posted: list[str] = []
    aborts: list[str] = []
    started = time.monotonic()
    for round_no in range(kills):
        for _ in range(per_round):
            text = f"notice {len(posted)} {secrets.token_hex(4)}"
            store.post(text)
            posted.append(text)
        waiting = store.pending() + [lease.name for lease in store.in_flight()]
        if round_no % abort_every == abort_every - 1 and "abort" not in waiting:
            reason = f"stop {len(aborts)}"
            store.request_abort(reason)
            aborts.append(reason)
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the reader
            try:
                os.close(ready_r)
                _reader(make, log, mode, raise_rate, ready_w)
            finally:
                os._exit(0)
        os.close(ready_w)
        select.select([ready_r], [], [], 10)
        os.close(ready_r)
        time.sleep(rng.uniform(0, max_delay))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    drain_rng = random.Random(seed + 1)
    idle = 0
    while idle < 3:  # the parent is a new reader: it recovers the claims of the killed ones
        took = _step(store, log, mode, drain_rng, 0.0)
        busy = store.pending() or store.in_flight()
        idle = 0 if (took or busy) else idle + 1
        if busy and not took:
            time.sleep(0.001)
    lines = _read_log(log)
    texts = [line.split("\t", 1)[1] for line in lines]
    notices = Counter(text for text in texts if not text.startswith("abort "))
    honoured = Counter(text.removeprefix("abort ") for text in texts if text.startswith("abort "))
    raised_path = log.with_suffix(".raised")
    model_raised = raised_path.stat().st_size if raised_path.exists() else 0
    return Figures(
        backend=backend, mode=mode, posted=len(posted), killed=kills, model_raised=model_raised,
        delivered=len(set(notices) & set(posted)),
        duplicated=sum(count - 1 for count in notices.values()) + sum(count - 1 for count in honoured.values()),
        lost=len(set(posted) - set(notices)) + len(set(aborts) - set(honoured)),
        aborts_posted=len(aborts), aborts_honoured=len(set(honoured) & set(aborts)),
        seconds=time.monotonic() - started,
    )


def directory_factory(workdir: str | os.PathLike[str]) -> Callable[[], DirectoryInbox]:
    """Return a factory of the directory inbox of one conversation under ``workdir``."""
    save_file = Path(workdir) / "agent.chat"
    return lambda: DirectoryInbox.for_save_file(save_file)


def postgres_factory(dsn: str, schema: str | None = None) -> Callable[[], Any]:
    """Return a factory of the PostgreSQL inbox of one fresh thread (tables set up), one connection per call.

    Each reader opens its own connection once, after the fork, as a worker process would.
    """
    import psycopg

    from langchain_promptstrat.inbox_postgres import PostgresInboxes

    PostgresInboxes(dsn, schema=schema).setup()
    thread = f"kills-{secrets.token_hex(4)}"
    return lambda: PostgresInboxes(psycopg.connect(dsn, autocommit=True), schema=schema).for_thread(thread)


def main() -> None:
    """Print the kill figures of both modes on the directory backend, and on PostgreSQL when a DSN is set."""
    print(HEADER)
    with tempfile.TemporaryDirectory() as workdir:
        for mode in MODES:
            sub = Path(workdir) / mode
            sub.mkdir()
            print(run_kills(directory_factory(sub), backend="directory", mode=mode, workdir=sub).row(), flush=True)
        dsn = os.environ.get("PROMPTSTRAT_TEST_DSN")
        if dsn:
            for mode in MODES:
                print(run_kills(postgres_factory(dsn), backend="postgresql", mode=mode, max_delay=0.03, workdir=workdir).row(), flush=True)
        else:
            print("(PostgreSQL skipped: set PROMPTSTRAT_TEST_DSN)", file=sys.stderr)


if __name__ == "__main__":
    main()
