"""Kill inbox readers at random points and count what was posted, delivered, duplicated and lost.

A parent process posts notices (and, now and then, an abort request) and forks one reader after
another, each SIGKILLed a random delay after it is ready (its connection open): in its pickup, in
its model call, while recording the answer, while acknowledging. The package is imported once, in
the parent, so a kill costs milliseconds. Every reader plays an agent step:

* ``persisted`` (the hook's and the middleware's default, with a checkpointer): pick up
  with ``seen`` = the notice ids already in the conversation, call the model, and append
  the notices to the conversation (one ``write``, standing for the checkpoint). The next
  pickup acknowledges them.
* ``one-call`` (``PromptStrategyMiddleware(persist_inbox=False)`` with a checkpointer), in
  the middleware's order: pick up with ``seen`` = the ids of the notices already answered
  and ``held`` = those waiting in private state, and write the new ones into that state
  (one ``write``: ``before_model``'s checkpoint); call the model on the waiting notices;
  acknowledge them; record the answer, which clears them from the waiting list and adds
  their ids to the answered ones (one ``write``: the model step's checkpoint).
* ``two-phase`` (:func:`~langchain_promptstrat.inbox_pickup`, a custom loop storing its own
  conversation): take the notices with ``seen`` = the ids the stored conversation holds,
  call the model, store the notices with the answer (one ``write``), acknowledge. An abort
  is consumed when ``inbox_pickup`` raises it: at most once, as a stop request (a kill stops
  the reader too).
* ``handover`` (``pre_model_hook(persist_inbox=False)``, a graph without a checkpointer,
  ``prepare_prompt``, the Runnable): pick up acknowledging at once (``settle=True``), call
  the model, record its answer. A kill or a failed model call after the pickup loses the
  notices it took: this mode counts that window, it does not close it.

The model raises on a share of the calls (``raise_rate``); nothing is recorded then, and
the notices come back at the next pickup. After the last kill the parent drains the inbox
with the same loop. A notice is *delivered* when a successful model call recorded it.

Run: ``python benchmarks/inbox_kills.py`` (PostgreSQL too when ``PROMPTSTRAT_TEST_DSN`` is
set, e.g. after ``eval "$(.ci/postgres start)"``).
"""

from __future__ import annotations

import json
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

from langchain_core.messages import HumanMessage, message_to_dict, messages_from_dict

from langchain_promptstrat.errors import InboxAborted
from langchain_promptstrat.inbox.delivery import acknowledge_notices, notice_id, pick_up
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.pickup import inbox_pickup

MODES = ("persisted", "one-call", "two-phase", "handover")
"""The delivery modes a run can play; ``handover`` is at most once by design, and so are
``two-phase`` aborts (see above)."""


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
            f"| {self.backend} | {self.mode} | {self.posted} | {self.killed} | "
            f"{self.model_raised} | {self.delivered} | "
            f"{self.duplicated} | {self.lost} | {self.aborts_honoured}/{self.aborts_posted} | "
            f"{self.seconds:.1f} s |"
        )


HEADER = (
    "| backend | mode | notices posted | readers killed | model calls raised | delivered | "
    "duplicated | lost "
    "| aborts honoured | time |\n|---|---|---|---|---|---|---|---|---|---|"
)


def _records(path: Path) -> list[list[Any]]:
    """Return the records of ``path``, one JSON array per write; a write torn by a kill is not a
    record.

    SIGKILL can cut a ``write`` short at a page boundary, as a crash aborts a checkpoint's
    transaction: each write starts with a newline, so a torn one stays on a line of its own
    that does not parse, and counts as never written.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def _append(path: Path, entries: list[Any]) -> None:
    """Append ``entries`` to ``path`` as one record in one ``write``: a checkpoint, written whole or
    not at all."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, ("\n" + json.dumps(entries) + "\n").encode())
    os.close(fd)


def _read_log(log: Path) -> list[tuple[str, str]]:
    """Return the conversation's recorded ``(message id, text)`` entries, in order."""
    return [(str(nid), str(text)) for record in _records(log) for nid, text in record]


def _waiting(log: Path, answered: frozenset[str]) -> list[Any]:
    """Return the notices waiting in private state for a model call: written by a pickup, not yet
    answered."""
    found: dict[str, Any] = {}
    for record in _records(log.with_suffix(".waiting")):
        for message in record:
            nid = message["data"]["id"]
            if nid not in answered:
                found.setdefault(nid, message)
    return messages_from_dict(list(found.values()))


class _ModelRaised(Exception):
    """The model call of a two-phase step failed."""


def _two_phase_step(store: Any, log: Path, rng: random.Random, raise_rate: float) -> bool:
    """Run one step of a custom loop on :func:`inbox_pickup`: take, call the model, store,
    acknowledge."""
    history = [
        HumanMessage(text, id=nid) for nid, text in _read_log(log)
    ]  # the stored conversation
    try:
        with inbox_pickup(history, ["inbox"], backend=store) as pickup:
            if not pickup.notices:
                return False
            if (
                rng.random() < raise_rate
            ):  # the model call raised: nothing stored, nothing acknowledged
                _append(log.with_suffix(".raised"), [])
                raise _ModelRaised
            _append(
                log, [[m.id, m.content] for m in pickup.notices]
            )  # the answer stored with its notices
            pickup.acknowledge()
    except _ModelRaised:
        pass
    except InboxAborted as exc:
        _append(log, [[f"abort-{secrets.token_hex(4)}", f"abort {exc.reason}"]])
    return True


def _step(store: Any, log: Path, mode: str, rng: random.Random, raise_rate: float) -> bool:
    """Run one agent step: pickup, model call, record; return whether it took anything."""
    if mode == "two-phase":
        return _two_phase_step(store, log, rng, raise_rate)
    answered = frozenset(nid for nid, _ in _read_log(log))
    waiting = _waiting(log, answered) if mode == "one-call" else []
    result = pick_up(
        store,
        seen=answered if mode != "handover" else frozenset(),
        held=frozenset(m.id for m in waiting),
        settle=mode == "handover",
    )
    if (
        result.aborted
    ):  # acted on (recorded), then acknowledged: by the next pickup, or at once in the other modes
        _append(log, [[notice_id(result.abort_token or ""), f"abort {result.abort_reason}"]])
        if mode != "persisted" and result.abort_token:
            store.acknowledge(result.abort_token, "abort")
        return True
    if (
        mode == "one-call" and result.delivered
    ):  # before_model's checkpoint: the notices wait in private state
        _append(log.with_suffix(".waiting"), [message_to_dict(m) for m in result.delivered])
    given = [*waiting, *result.delivered]
    if not given:
        return False
    if (
        rng.random() < raise_rate
    ):  # the model call raised: nothing recorded (handover: the notices are gone)
        _append(log.with_suffix(".raised"), [])
        return True
    if (
        mode == "one-call"
    ):  # acknowledged after the answer, before the step's checkpoint, as the middleware does
        acknowledge_notices(store, given)
    # one write: the checkpoint holding the notices (persisted) or the model's answer with their ids
    # (one-call)
    _append(log, [[m.id, m.content] for m in given])
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
    """Post ``per_round`` notices, fork a reader, SIGKILL it up to ``max_delay`` s after it is
    ready; ``kills`` times; drain."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    rng = random.Random(seed)
    log = Path(workdir) / f"conversation-{backend}-{mode}.log"
    store = make()
    if (
        mode == "two-phase"
    ):  # its first call imports what the strategies need: in the parent, once, not in each reader
        with inbox_pickup([HumanMessage("warm up")], ["inbox"], backend=store):
            pass
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
    texts = [text for _, text in _read_log(log)]
    notices = Counter(text for text in texts if not text.startswith("abort "))
    honoured = Counter(text.removeprefix("abort ") for text in texts if text.startswith("abort "))
    model_raised = len(_records(log.with_suffix(".raised")))
    return Figures(
        backend=backend,
        mode=mode,
        posted=len(posted),
        killed=kills,
        model_raised=model_raised,
        delivered=len(set(notices) & set(posted)),
        duplicated=sum(count - 1 for count in notices.values())
        + sum(count - 1 for count in honoured.values()),
        lost=len(set(posted) - set(notices)) + len(set(aborts) - set(honoured)),
        aborts_posted=len(aborts),
        aborts_honoured=len(set(honoured) & set(aborts)),
        seconds=time.monotonic() - started,
    )


def directory_factory(workdir: str | os.PathLike[str]) -> Callable[[], DirectoryInbox]:
    """Return a factory of the directory inbox of one conversation under ``workdir``."""
    save_file = Path(workdir) / "agent.chat"
    return lambda: DirectoryInbox.for_save_file(save_file)


def postgres_factory(dsn: str, schema: str | None = None) -> Callable[[], Any]:
    """Return a factory of the PostgreSQL inbox of one fresh thread (tables set up), one connection
    per call.

    Each reader opens its own connection once, after the fork, as a worker process would.
    """
    import psycopg

    from langchain_promptstrat.inbox.postgres import PostgresInboxes

    PostgresInboxes(dsn, schema=schema).setup()
    thread = f"kills-{secrets.token_hex(4)}"
    return lambda: PostgresInboxes(psycopg.connect(dsn, autocommit=True), schema=schema).for_thread(
        thread
    )


def main() -> None:
    """Print the kill figures of both modes on the directory backend, and on PostgreSQL when a DSN
    is set."""
    print(HEADER)
    with tempfile.TemporaryDirectory() as workdir:
        for mode in MODES:
            sub = Path(workdir) / mode
            sub.mkdir()
            print(
                run_kills(
                    directory_factory(sub), backend="directory", mode=mode, workdir=sub
                ).row(),
                flush=True,
            )
        dsn = os.environ.get("PROMPTSTRAT_TEST_DSN")
        if dsn:
            for mode in MODES:
                print(
                    run_kills(
                        postgres_factory(dsn),
                        backend="postgresql",
                        mode=mode,
                        max_delay=0.03,
                        workdir=workdir,
                    ).row(),
                    flush=True,
                )
        else:
            print("(PostgreSQL skipped: set PROMPTSTRAT_TEST_DSN)", file=sys.stderr)


if __name__ == "__main__":
    main()
