"""Real LangGraph Servers broken for real: restarted mid-run, and two of them on one PostgreSQL
inbox.

Each test starts its own ``langgraph dev`` processes (they are killed and restarted, or there
are two) and counts every notice it posts over HTTP: found once in a stored conversation
(delivered), more than once (duplicated), or nowhere (lost). ``-s`` prints the tallies.
"""

from __future__ import annotations

import shutil
import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from langgraph_server import (
    Deployment,
    Gates,
    LangGraphServer,
    own_server,
    post_notice,
    settled_listing,
    stored_texts,
    wait_for,
)

GRAPHS = ["agent", "hook"]
TASK = {"messages": [{"role": "user", "content": "Pass the three gates."}]}


@dataclass
class Tally:
    """What happened to the notices a test posted over HTTP."""

    posted: int = 0
    delivered: int = 0
    duplicated: int = 0
    lost: int = 0
    restarts: int = 0

    def count(self, posted: list[str], conversations: list[list[str]]) -> None:
        """Count each of ``posted`` by how often it occurs in ``conversations`` (the stored message
        texts) together."""
        for content in posted:
            seen = sum(texts.count(content) for texts in conversations)
            self.posted += 1
            self.delivered += seen >= 1
            self.duplicated += max(0, seen - 1)
            self.lost += seen == 0

    def __str__(self) -> str:
        return (
            f"{self.posted} notices posted over HTTP, {self.delivered} delivered, "
            f"{self.duplicated} duplicated, "
            f"{self.lost} lost; {self.restarts} server restarts"
        )


def wait_until_written(server: LangGraphServer, since: float) -> None:
    """Wait for the in-memory runtime to write its threads, runs and checkpoints to disk after
    ``since``.

    It keeps everything in memory and writes ``.langgraph_api/*.pckl`` every 10 seconds
    (and on a clean shutdown): a process killed before that write loses what the runs did
    since the last one.
    """
    files = [server.data / ".langgraph_ops.pckl", server.data / ".langgraph_checkpoint.1.pckl"]
    wait_for(
        lambda: all(f.exists() and f.stat().st_mtime > since for f in files),
        "the runtime's periodic write",
        30,
        0.1,
    )
    time.sleep(0.5)  # let the write in progress finish: the files are rewritten one after the other


def run_through_a_restart(server: LangGraphServer, how: signal.Signals, tally: Tally) -> None:
    """Hold one run per front end in its second tool call, a notice delivered; stop the server with
    ``how``; restart; finish."""
    client = Deployment(server.url, server.gates, server).client()
    threads = {graph: str(client.threads.create()["thread_id"]) for graph in GRAPHS}
    gates = {graph: Gates(server.gates, thread).hold() for graph, thread in threads.items()}
    posted: dict[str, list[str]] = {graph: [] for graph in GRAPHS}
    for graph, thread in threads.items():
        client.runs.create(thread, graph, input=TASK)
    for graph, thread in threads.items():
        gates[graph].wait_entered(1)
        posted[graph].append(f"before the {how.name} ({graph})")
        post_notice(server.url, thread, posted[graph][-1])
        gates[graph].open(1)
    for graph in GRAPHS:
        gates[graph].wait_entered(2)  # the notice is in the conversation and acknowledged
    if how == signal.SIGKILL:
        wait_until_written(server, time.time())
    for graph in GRAPHS:
        gates[graph].forget_entries()
    server.restart(how)
    tally.restarts += 1
    for graph, thread in threads.items():
        gates[graph].wait_entered(
            2
        )  # the runtime ran the interrupted run again from its last stored checkpoint
        assert stored_texts(client, thread).count(posted[graph][0]) == 1
        posted[graph].append(f"after the {how.name} ({graph})")
        post_notice(server.url, thread, posted[graph][-1])
        gates[graph].open(2)
        gates[graph].release()
    for graph, thread in threads.items():
        wait_for(
            lambda thread=thread: client.threads.get(thread)["status"] == "idle",
            f"thread {thread} to finish",
            60,
            0.05,
        )
        texts = stored_texts(client, thread)
        tally.count(posted[graph], [texts])
        assert texts[-1] == "done", texts
        assert sorted(
            e["preview"] for e in settled_listing(server.url, thread)["delivered"]
        ) == sorted(posted[graph])
        ids = [m["id"] for m in client.threads.get_state(thread)["values"]["messages"]]
        assert len(ids) == len(set(ids))


@contextmanager
def replica_of(
    first: LangGraphServer, home: Path, threads: list[str], **env: str
) -> Iterator[LangGraphServer]:
    """Yield a second server sharing ``first``'s threads (``threads`` created there); both started.

    Replicas share one thread store, where a thread is created once. The in-memory runtime
    keeps its own, so the replica starts from a copy of ``first``'s, written by a clean stop.
    """
    client = Deployment(first.url, first.gates, first).client()
    for thread in threads:
        client.threads.create(thread_id=thread)
    first.stop()
    second = LangGraphServer.prepare(home, PROMPTSTRAT_INBOX_ROOT=str(home / "inboxes"), **env)
    shutil.copytree(first.data, second.data)
    first.start()
    try:
        yield second.start()
    finally:
        second.stop(signal.SIGKILL)


def test_a_server_stopped_mid_run_and_restarted_neither_loses_nor_doubles_a_notice(
    tmp_path: Path,
) -> None:
    """Kill -9 (once the runtime has written its files) and a clean stop, each with both front ends
    mid-run."""
    tally = Tally()
    with own_server(tmp_path) as server:
        run_through_a_restart(server, signal.SIGKILL, tally)
        run_through_a_restart(server, signal.SIGTERM, tally)
    print(f"\nrestarts: {tally}")
    assert (tally.posted, tally.delivered, tally.duplicated, tally.lost, tally.restarts) == (
        8,
        8,
        0,
        0,
        2,
    )


def test_two_servers_on_one_postgresql_inbox_deliver_each_notice_exactly_once(
    tmp_path: Path,
    postgres_dsn: str,
    postgres_schema: str,  # noqa: F811
) -> None:
    """Two replicas serve the same thread ids from one database: their runs race for each notice and
    one of them gets it."""
    sep = "&" if "?" in postgres_dsn else "?"
    dsn = f"{postgres_dsn}{sep}options=-csearch_path%3D{postgres_schema}"
    gates_folder = tmp_path / "gates"
    gates_folder.mkdir()
    shared = {"PROMPTSTRAT_INBOX_DSN": dsn, "PROMPTSTRAT_TEST_GATES": str(gates_folder)}
    tally = Tally()
    first_home, second_home = tmp_path / "replica-1", tmp_path / "replica-2"
    first_home.mkdir()
    second_home.mkdir()
    threads = {graph: str(uuid.uuid4()) for graph in GRAPHS}  # the server takes UUIDs only
    with (
        own_server(first_home, **shared) as first,
        replica_of(first, second_home, list(threads.values()), **shared) as second,
    ):
        servers = [first, second]
        clients = [Deployment(s.url, gates_folder, s).client() for s in servers]
        posted: dict[str, list[str]] = {graph: [] for graph in GRAPHS}
        for graph, thread in threads.items():
            gates = Gates(gates_folder, thread).hold()
            for client in clients:
                client.runs.create(thread, graph, input=TASK)
            for step in (1, 2):
                gates.wait_entered(step, runs=2)
                for i in range(3):
                    posted[graph].append(f"notice {step}.{i} for {graph}")
                    post_notice(servers[i % 2].url, thread, posted[graph][-1])
                gates.open(step)  # both replicas' runs go on together and race for the notices
            gates.release()
        for graph, thread in threads.items():
            for client in clients:
                wait_for(
                    lambda c=client, t=thread: c.threads.get(t)["status"] == "idle",
                    f"{thread} to finish",
                    60,
                    0.05,
                )
            conversations = [stored_texts(client, thread) for client in clients]
            tally.count(posted[graph], conversations)
            shares = [
                sum(texts.count(content) for content in posted[graph]) for texts in conversations
            ]
            print(
                f"\n{graph}: the replicas delivered {shares[0]} and {shares[1]} of "
                f"{len(posted[graph])}",
                end="",
            )
            assert sorted(
                e["preview"] for e in settled_listing(first.url, thread)["delivered"]
            ) == sorted(posted[graph])
            assert all(texts[-1] == "done" for texts in conversations)
    print(f"\ntwo replicas: {tally}")
    assert (tally.posted, tally.delivered, tally.duplicated, tally.lost) == (12, 12, 0, 0)
