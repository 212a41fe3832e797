"""Following a message list from ``prepare_prompt`` to the model crosses each module of the package
at most once.

What is counted: every Python call made while ``prepare_prompt`` runs, traced with
``sys.setprofile``. A call goes *from* the module of the nearest calling frame that is in
the package *to* the module of the called function, when they differ (calls inside one
module, and into LangChain or the standard library, are not edges). The call path crosses
each module at most once when these edges form no cycle: no module calls, directly or
through others, back into a module that called it (a callback such as a ``lambda`` handed
down, or a helper module reaching up into a strategy). Returns are not calls.
"""

from __future__ import annotations

import gc
import graphlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

import langchain_promptstrat
from langchain_promptstrat import prepare_prompt
from langchain_promptstrat.registry import resolve_strategies
from langchain_promptstrat.testing import iter_agent_run

PACKAGE_DIR = Path(langchain_promptstrat.__file__).resolve().parent


def module_of(frame: FrameType) -> str | None:
    """Return the package-relative file of ``frame``'s code, or None outside the package."""
    path = Path(frame.f_code.co_filename)
    try:
        return path.resolve().relative_to(PACKAGE_DIR).as_posix()
    except ValueError:
        return None


def call_edges(run: Callable[[], Any]) -> set[tuple[str, str]]:
    """Return the (caller module, called module) pairs of every call between two package modules
    while ``run()`` runs."""
    edges: set[tuple[str, str]] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or (callee := module_of(frame)) is None:
            return
        caller = frame.f_back
        while caller is not None and module_of(caller) is None:
            caller = caller.f_back
        if caller is not None and (name := module_of(caller)) != callee and name is not None:
            edges.add((name, callee))

    gc.collect()
    # a collection mid-run calls weakref callbacks (a memo forgetting an entry) from whatever frame
    # is running
    gc.disable()
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        gc.enable()
    return edges


def cycle_of(edges: set[tuple[str, str]]) -> list[str] | None:
    """Return a cycle of the call edges (a module entered again after it was left), or None."""
    graph: dict[str, set[str]] = {}
    for caller, callee in edges:
        graph.setdefault(callee, set()).add(caller)
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


@pytest.fixture(scope="module")
def history() -> list[BaseMessage]:
    """A seeded 300-call agent run: long enough that a 14k ceiling moves the default's edges several
    times."""
    last: list[BaseMessage] = []
    for snapshot in iter_agent_run(n_tool_calls=300, seed=0):
        last = snapshot
    return list(last)


@pytest.mark.parametrize("max_tokens", [14_000, None])
@pytest.mark.parametrize(
    "spec",
    [
        "dedupe_outputs,shorten_tools_epoch_stable,inbox",
        "shorten_tools_epoch_stable",
        "shorten_tools_epoch",
        "shorten_tools_epoch_increment",
        "shorten_tools",
    ],
)
def test_a_message_list_crosses_each_module_at_most_once(spec, max_tokens, history):
    """Cold (a new strategy object) and then warm (the next call of the same conversation, resumed
    from the memo), the calls between the package's modules form no cycle, for the default list and
    each tool-shortening strategy."""
    strategies = resolve_strategies(spec)
    cold = call_edges(lambda: prepare_prompt(history[:-2], strategies, max_tokens=max_tokens))
    warm = call_edges(lambda: prepare_prompt(history, strategies, max_tokens=max_tokens))
    assert cycle_of(cold) is None
    assert cycle_of(warm) is None
    entered = {callee for _, callee in cold}
    assert {
        Path(inspect.getfile(type(s))).relative_to(PACKAGE_DIR).as_posix() for s in strategies
    } <= entered  # each one ran


def test_the_trace_sees_a_module_called_back_the_ladder_calling_its_rungs(history):
    """The tracer can fail: a ladder's pass (``strategies/ladder_machinery/rungs.py``) calls each
    rung, whose step reads the pass's helpers again, so its call edges hold a cycle (a ladder runs
    the strategies it is given; it is not the default)."""
    strategies = resolve_strategies("tool_results,sliding_window")
    cycle = cycle_of(call_edges(lambda: prepare_prompt(history, strategies, max_tokens=14_000)))
    assert cycle is not None and "strategies/ladder_machinery/rungs.py" in cycle


def test_the_cycle_finder_reports_exactly_the_closed_paths():
    """cycle_of returns None for a chain and a closed path for a callback edge."""
    assert cycle_of({("a.py", "b.py"), ("b.py", "c.py")}) is None
    found = cycle_of({("a.py", "b.py"), ("b.py", "a.py")})
    assert found is not None and set(found) == {"a.py", "b.py"}
