"""The deployment on a real LangGraph Server, driven with langgraph-sdk as a deployer's client
drives it.

Both front ends are served: ``agent`` (``create_agent`` + ``PromptStrategyMiddleware``) and
``hook`` (``create_react_agent`` + ``pre_model_hook``), each with the scripted model and the
``gate`` tool of ``tests/server/deployment/``; notices and aborts go through the package's
HTTP routes mounted as the server's ``http.app``. One server serves the whole module (the
suite's, under ``.ci/run``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_server import (
    Deployment,
    Gates,
    post_notice,
    settled_listing,
    shared_deployment,
    stored_texts,
)

GRAPHS = ["agent", "hook"]
TASK = {"messages": [{"role": "user", "content": "Pass the three gates."}]}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    yield from shared_deployment(tmp_path_factory)


@pytest.fixture
def client(deployment: Deployment) -> Iterator[Any]:
    """The SDK's client; at the end every gate the test held is let go, so a failed test leaves no
    run waiting."""
    yield deployment.client()
    for hold in deployment.gates.glob("*.hold"):
        hold.unlink(missing_ok=True)


def new_thread(client: Any) -> str:
    return str(client.threads.create()["thread_id"])


@pytest.mark.parametrize("graph", GRAPHS)
def test_a_run_passes_every_gate_and_the_state_keeps_each_output(
    deployment: Deployment, client: Any, graph: str
) -> None:
    """A run started over the API finishes with the scripted answer, every tool call paired with its
    output."""
    thread = new_thread(client)
    final = client.runs.wait(thread, graph, input=TASK)
    stored = client.threads.get_state(thread)["values"]["messages"]
    assert final["messages"][-1]["content"] == "done"
    assert [m["content"] for m in stored if m["type"] == "tool"] == [
        "gate 1 passed",
        "gate 2 passed",
        "gate 3 passed",
    ]
    calls = [c["id"] for m in stored if m["type"] == "ai" for c in m.get("tool_calls") or []]
    assert calls == [m["tool_call_id"] for m in stored if m["type"] == "tool"]


@pytest.mark.parametrize("graph", GRAPHS)
def test_a_notice_posted_over_http_mid_run_reaches_the_next_model_call_once_and_stays(
    deployment: Deployment, client: Any, graph: str
) -> None:
    """The run is held in its first tool call while the notice is posted: it must join the
    conversation right there, once."""
    thread = new_thread(client)
    gates = Gates(deployment.gates, thread).hold()
    run = client.runs.create(thread, graph, input=TASK)
    gates.wait_entered(1)
    name = post_notice(deployment.url, thread, "Use the staging database.")
    gates.open(1)
    gates.release()
    client.runs.join(thread, run["run_id"])
    stored = stored_texts(client, thread)
    assert stored.count("Use the staging database.") == 1
    assert stored.index("Use the staging database.") == stored.index("gate 1 passed") + 1
    listing = settled_listing(deployment.url, thread)
    assert [entry["name"] for entry in listing["delivered"]] == [name]


@pytest.mark.parametrize("graph", GRAPHS)
def test_an_abort_over_http_interrupts_the_thread_and_a_resume_finishes_it(
    deployment: Deployment, client: Any, graph: str
) -> None:
    """POST /abort stops the run before its next model call; the client sees why, without server
    paths, and resumes."""
    thread = new_thread(client)
    gates = Gates(deployment.gates, thread).hold()
    run = client.runs.create(thread, graph, input=TASK)
    gates.wait_entered(1)
    answer = httpx.post(
        f"{deployment.url}/threads/{thread}/abort", json={"reason": "wait for review"}, timeout=30
    )
    assert answer.status_code == 201, answer.text
    gates.open(1)
    gates.release()
    client.runs.join(thread, run["run_id"])
    assert client.threads.get(thread)["status"] == "interrupted"
    (interrupt,) = client.threads.get_state(thread)["interrupts"]
    assert interrupt["value"] == {
        "type": "inbox_abort",
        "thread_id": thread,
        "reason": "wait for review",
        "abort": "abort",
        "notices": [],
    }
    assert stored_texts(client, thread)[-1] == "gate 1 passed"
    final = client.runs.wait(thread, graph, command={"resume": True})
    assert (
        final["messages"][-1]["content"] == "done"
        and client.threads.get(thread)["status"] == "idle"
    )
    assert stored_texts(client, thread).count("gate 2 passed") == 1


@pytest.mark.parametrize("graph", GRAPHS)
def test_reports_arrive_on_the_custom_stream_small_enough_for_every_call(
    deployment: Deployment, client: Any, graph: str
) -> None:
    """stream_mode="custom" is the SDK's way to see the strategies' reports: each model call sends
    small ones there."""
    thread = new_thread(client)
    chunks = list(client.runs.stream(thread, graph, input=TASK, stream_mode="custom"))
    reports = [
        c.data["promptstrat"] for c in chunks if c.event == "custom" and "promptstrat" in c.data
    ]
    assert [c.event for c in chunks if c.event not in ("custom", "metadata")] == []
    strategies = {r["strategy"] for r in reports}
    assert (
        len(reports) == 4 * len(strategies) and len(strategies) >= 2
    )  # four model calls, each reporting every strategy
    assert max(len(json.dumps(r)) for r in reports) < 2000


def test_two_threads_at_once_keep_their_own_notices_and_scripts(
    deployment: Deployment, client: Any
) -> None:
    """Two runs in flight on one server, one per front end: each gets its own notice and its whole
    script, nothing of the other's."""
    threads = {graph: new_thread(client) for graph in GRAPHS}
    gates = {graph: Gates(deployment.gates, thread).hold() for graph, thread in threads.items()}
    runs = {
        graph: client.runs.create(thread, graph, input=TASK) for graph, thread in threads.items()
    }
    for graph in GRAPHS:
        gates[graph].wait_entered(1)
        post_notice(deployment.url, threads[graph], f"note for {graph}")
    for graph in GRAPHS:
        gates[graph].open(1)
        gates[graph].release()
    for graph in GRAPHS:  # both run on the server at once; the client only waits for each in turn
        client.runs.join(threads[graph], runs[graph]["run_id"])
    for graph, other in zip(GRAPHS, reversed(GRAPHS), strict=False):
        stored = stored_texts(client, threads[graph])
        assert stored.count(f"note for {graph}") == 1 and f"note for {other}" not in stored
        assert [s for s in stored if s.startswith("gate")] == [
            "gate 1 passed",
            "gate 2 passed",
            "gate 3 passed",
        ]
        assert stored[-1] == "done"


def test_an_agent_on_the_server_reads_a_handle_from_its_prompt_and_gets_the_checkpointed_output(
    client: Any,
) -> None:
    """read_back answers from the thread's checkpoint: the original output of the call the handle
    named, byte for byte."""
    thread = new_thread(client)
    final = client.runs.wait(
        thread,
        "readback",
        input={"messages": [{"role": "user", "content": "Read the pages."}]},
        config={"recursion_limit": 200},
    )
    stored = client.threads.get_state(thread)["values"]["messages"]
    calls = [c for m in stored if m["type"] == "ai" for c in m.get("tool_calls") or []]
    read = next(c for c in calls if c["name"] == "read_back")
    answer = next(m for m in stored if m["type"] == "tool" and m["tool_call_id"] == read["id"])
    original = next(
        m
        for m in stored
        if m["type"] == "tool" and m["tool_call_id"] == calls[read["args"]["call"] - 1]["id"]
    )
    assert (
        final["messages"][-1]["content"] == "done"
        and answer["content"] == original["content"]
        and "def function_" in answer["content"]
    )
