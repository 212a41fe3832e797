"""Kill the real graph front ends mid-run and count the notices the *stored* conversation lost or
holds twice.

Each front end is the graph a user builds: ``create_agent`` + ``PromptStrategyMiddleware`` or
``create_react_agent`` + ``pre_model_hook``, with a file-backed ``SqliteSaver`` and LangGraph's
default durability (``"async"``: checkpoints written in the background, behind the run). The parent
imports everything once and then, round after round, posts one to three notices to one of a few
threads' inboxes (directory or PostgreSQL), forks a reader that runs the agent on that thread again
and again (each run a tool call and an answer, so two pickups), keeps posting notices while it runs
(``post_every`` seconds apart on average, so most pickups take one), and SIGKILLs the reader at a
uniformly random moment up to ``max_delay`` seconds after it is ready: in a pickup, in a model or
tool call, with a checkpoint in the background, while acknowledging. Then the parent is one healthy
reader: it runs each thread until its inbox holds nothing pending or in flight, and reads every
thread's conversation back from the SQLite file with a new saver. A notice is *delivered* when the
stored conversation holds it, *duplicated* for each extra copy, *lost* when it holds none; *stuck*
counts the claims left in flight.

Run: ``python benchmarks/graph_kills.py`` (PostgreSQL too when ``PROMPTSTRAT_TEST_DSN`` is
set); ``--rounds N`` per front end and backend (default 60).
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import select
import signal
import sqlite3
import sys
import tempfile
import time
import uuid
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_promptstrat.adapters.langgraph import pre_model_hook
from langchain_promptstrat.inbox.delivery import notice_ids, wait_settled
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.testing import make_sized_tool

FRONT_ENDS = ("middleware", "hook")
BACKENDS = ("directory", "postgresql")


class LoopModel(BaseChatModel):
    """A model that calls ``fetch`` once and then answers, with ids unique across processes (no
    reply replaces another)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    @property
    def _llm_type(self) -> str:
        return "graph-kills-loop"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if messages and isinstance(messages[-1], ToolMessage):
            reply = AIMessage("done", id=f"ai-{uuid.uuid4().hex}")
        else:
            call = {
                "name": "fetch",
                "args": {},
                "id": f"call-{uuid.uuid4().hex[:12]}",
                "type": "tool_call",
            }
            reply = AIMessage("", tool_calls=[call], id=f"ai-{uuid.uuid4().hex}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


@dataclass
class Figures:
    """What one kill run of a front end on a backend counted."""

    front_end: str
    backend: str
    rounds: int
    killed: int
    posted: int
    delivered: int
    duplicated: int
    lost: int
    stuck: int
    seconds: float

    def row(self) -> str:
        """Return the figures as one Markdown table row."""
        return (
            f"| {self.front_end} | {self.backend} | {self.rounds} | {self.killed} | {self.posted} "
            f"| {self.delivered} | "
            f"{self.duplicated} | {self.lost} | {self.stuck} | {self.seconds:.1f} s |"
        )


HEADER = (
    "| front end | backend | rounds | readers killed | notices posted | delivered | duplicated | "
    "lost | claims stuck | time |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def build_agent(front_end: str, checkpointer: Any, *, inbox_root: Path | None, backend: Any) -> Any:
    """Return the front end's graph over ``checkpointer``, reading each thread's inbox from
    ``inbox_root`` or ``backend``."""
    tools = [make_sized_tool("fetch", sizes=200)]
    if front_end == "middleware":
        from langchain.agents import create_agent

        from langchain_promptstrat.adapters.middleware import PromptStrategyMiddleware

        middleware = PromptStrategyMiddleware(inbox_root=inbox_root, backend=backend)
        return create_agent(LoopModel(), tools, middleware=[middleware], checkpointer=checkpointer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        hook = pre_model_hook(inbox_root=inbox_root, backend=backend)
        return create_react_agent(
            LoopModel(), tools, pre_model_hook=hook, checkpointer=checkpointer
        )


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 50}


def _reader(
    front_end: str,
    db: Path,
    thread: str,
    inboxes: Callable[[], tuple[Path | None, Any]],
    ready: int,
) -> None:
    root, backend = inboxes()
    conn = sqlite3.connect(db, check_same_thread=False)
    app = build_agent(front_end, SqliteSaver(conn), inbox_root=root, backend=backend)
    os.write(ready, b".")  # built and connected: the kill clock starts now
    while True:
        app.invoke({"messages": [HumanMessage("go on")]}, _config(thread))


def stored_conversation(db: Path, thread: str) -> list[BaseMessage]:
    """Return the thread's messages in its latest checkpoint, read from the SQLite file by a new
    saver."""
    with sqlite3.connect(db, check_same_thread=False) as conn:
        stored = SqliteSaver(conn).get_tuple(
            {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        )
    return (
        list(stored.checkpoint["channel_values"].get("messages") or [])
        if stored is not None
        else []
    )


def run_graph_kills(
    front_end: str,
    backend: str,
    *,
    workdir: str | os.PathLike[str],
    rounds: int = 60,
    threads: int = 4,
    max_delay: float = 0.25,
    post_every: float = 0.03,
    dsn: str | None = None,
    schema: str | None = None,
    seed: int = 0,
) -> Figures:
    """Kill ``rounds`` readers of ``front_end`` on ``backend`` at random moments, resume every
    thread, count."""
    if front_end not in FRONT_ENDS or backend not in BACKENDS:
        raise ValueError(f"front_end must be one of {FRONT_ENDS} and backend one of {BACKENDS}")
    rng = random.Random(seed)
    work = Path(workdir) / f"{front_end}-{backend}"
    work.mkdir(parents=True)
    db = work / "checkpoints.sqlite"
    run = secrets.token_hex(3)
    names = [f"{front_end}-{run}-{i}" for i in range(threads)]

    def inboxes() -> tuple[
        Path | None, Any
    ]:  # built after the fork: each reader its own connections
        if backend == "directory":
            return work, None
        from langchain_promptstrat.inbox.postgres import PostgresInboxes

        return None, PostgresInboxes(str(dsn), schema=schema)

    def store(thread: str) -> Any:
        root, provider = inboxes()
        return (
            DirectoryInbox.for_thread(thread, root)
            if provider is None
            else provider.for_thread(thread)
        )

    if backend == "postgresql":
        inboxes()[1].setup()
    with sqlite3.connect(db, check_same_thread=False) as conn:
        SqliteSaver(conn).setup()
    posted: dict[str, list[str]] = {name: [] for name in names}

    def post(thread: str) -> None:
        text = f"notice {sum(map(len, posted.values()))} {secrets.token_hex(4)}"
        store(thread).post(text)
        posted[thread].append(text)

    started = time.monotonic()
    for _ in range(rounds):
        thread = rng.choice(names)
        for _ in range(rng.randint(1, 3)):
            post(thread)
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the reader
            try:
                os.close(ready_r)
                _reader(front_end, db, thread, inboxes, ready_w)
            finally:
                os._exit(0)
        os.close(ready_w)
        select.select([ready_r], [], [], 30)
        os.close(ready_r)
        kill_at = time.monotonic() + rng.uniform(0, max_delay)
        # more notices arrive mid-run, so most pickups take one and the kill may land in any of them
        while True:
            gap = rng.expovariate(1 / post_every)
            if time.monotonic() + gap >= kill_at:
                break
            time.sleep(gap)
            post(thread)
        time.sleep(max(kill_at - time.monotonic(), 0))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    # one healthy reader resumes every thread: it recovers the dead readers' claims
    with sqlite3.connect(db, check_same_thread=False) as conn:
        root, provider = inboxes()
        app = build_agent(front_end, SqliteSaver(conn), inbox_root=root, backend=provider)
        for thread in names:
            for _ in range(5):
                app.invoke({"messages": [HumanMessage("resume")]}, _config(thread))
                wait_settled(10.0)
                if not store(thread).pending() and not store(thread).in_flight():
                    break
    delivered = duplicated = lost = stuck = 0
    for thread in names:
        messages = stored_conversation(db, thread)
        ids = notice_ids(messages)
        held = Counter(str(m.content) for m in messages if m.id in ids)
        for text in posted[thread]:
            delivered += held[text] > 0
            duplicated += max(held[text] - 1, 0)
            lost += held[text] == 0
        stuck += len(store(thread).in_flight()) + len(store(thread).pending())
    return Figures(
        front_end=front_end,
        backend=backend,
        rounds=rounds,
        killed=rounds,
        posted=sum(map(len, posted.values())),
        delivered=delivered,
        duplicated=duplicated,
        lost=lost,
        stuck=stuck,
        seconds=time.monotonic() - started,
    )


def main() -> None:
    """Print the kill figures of both front ends on the directory backend, and on PostgreSQL when a
    DSN is set."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=60, help="readers killed per front end and backend"
    )
    args = parser.parse_args()
    dsn = os.environ.get("PROMPTSTRAT_TEST_DSN")
    print(HEADER)
    with tempfile.TemporaryDirectory() as workdir:
        for backend in BACKENDS:
            if backend == "postgresql" and not dsn:
                print("(PostgreSQL skipped: set PROMPTSTRAT_TEST_DSN)", file=sys.stderr)
                continue
            for front_end in FRONT_ENDS:
                figures = run_graph_kills(
                    front_end, backend, workdir=workdir, rounds=args.rounds, dsn=dsn
                )
                print(figures.row(), flush=True)


if __name__ == "__main__":
    main()
