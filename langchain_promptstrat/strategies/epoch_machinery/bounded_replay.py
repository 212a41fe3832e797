"""The stable strategy's replay: the history's model calls, each run through the rule, resumed from a memo of earlier calls.

At each call point of the history (the ladder's call points) the calls added since are
priced (:class:`~langchain_promptstrat.strategies.epoch_machinery.token_costs.StepCosts`)
and the rule's :func:`~langchain_promptstrat.strategies.epoch_machinery.stable_rule.advance`
moves the edges. :class:`Replay` is where a replay stands; :func:`replay_history` replays a
history, resuming from a replay the strategy's :class:`BoundedMemo` remembers for a prefix
of it. The edges only move forward, so the prompt is still a function of the history alone.

Must not decide an edge (``stable_rule`` does) nor build the prompt (``stable_prompt``),
nor keep a conversation alive (the history is held weakly).
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages import GrowingToolIndex, leading_system_count, task_index
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.stable_prompt import Frozen
from langchain_promptstrat.strategies.epoch_machinery.stable_rule import Edges, advance
from langchain_promptstrat.strategies.epoch_machinery.token_costs import Costs, StepCosts
from langchain_promptstrat.strategies.ladder_machinery.vocabulary import CountTokens

__all__ = ["BoundedMemo", "Replay", "memo_costs", "previous_length", "replay_history"]


@dataclass
class Replay:
    """Where a replay of the ceiling stands after the call point ``len(history)``: the rule's edges and what feeds them."""

    history: tuple[weakref.ref[BaseMessage], ...]
    """The history replayed so far, held weakly (compared by identity with the next call's messages)."""
    budget: int
    index: GrowingToolIndex
    """The tool-call index of ``history``: a replay that resumes extends it by the new messages (see :func:`replay_history`)."""
    steps: StepCosts
    edges: Edges
    recent: list[tuple[int, int, int]] = field(default_factory=list)
    """``(call point, compaction edge, drop edge)`` after each of the last call points replayed."""
    previous_edges: tuple[int, int] = (0, 0)
    """The edges of the previous model call's prompt (see :func:`_edges_before`)."""
    frozen: Frozen | None = None
    """The compacted head of the last prompt built from this replay (see :class:`Frozen`); it never changes a result."""


_DEREF = weakref.ref.__call__
"""Dereference a weak reference, as a C function ``map`` can call without a Python frame."""


class BoundedMemo:
    """The recent replays of one strategy object (never changes a result; lets a growing conversation resume)."""

    size = 8

    def __init__(self) -> None:
        self._items: list[Replay] = []
        self._lock = threading.Lock()
        self.costs: Costs | None = None
        """Per-message token costs for the counter last used (a cache: never changes a result)."""

    def recall(self, messages: Sequence[BaseMessage], budget: int) -> Replay | None:
        """Return the longest replay of a call point of ``messages`` whose history is their first messages (by identity), else None.

        The longest candidates are checked first, so the usual hit (the previous call of the
        same conversation) costs one identity pass over the history, in C.
        """
        with self._lock:
            items = list(self._items)
        n = len(messages)
        items.sort(key=_history_length, reverse=True)
        for replay in items:
            length = len(replay.history)
            if replay.budget != budget or length > n or not _is_call_point(messages, length):
                continue
            if all(map(operator.is_, map(_DEREF, replay.history), messages)):
                return replay
        return None

    def remember(self, replay: Replay) -> None:
        with self._lock:
            self._items = [*self._items[-(self.size - 1):], replay]


def replay_history(source: list[BaseMessage], budget: int, settings: Settings, costs: Costs, memo: BoundedMemo | None) -> Replay:
    """Return the replay of ``source``'s call points under ``budget``: a pure function of the history.

    A replay remembered for a call point of ``source`` whose history is the start of
    ``source`` (same message objects) resumes: only the messages after it are indexed,
    counted and replayed. That is safe because every prefix of a history has the same call
    points up to its length and the replay of a call point reads nothing after it, so the
    resumed replay is the one a replay from the first message would reach.
    """
    start = memo.recall(source, budget) if memo is not None else None
    if start is None:
        replay = Replay((), budget, GrowingToolIndex(), StepCosts(), Edges())
    else:
        replay = Replay(start.history, budget, start.index, start.steps.copy(), start.edges, list(start.recent), start.previous_edges, start.frozen)
    done = len(replay.history)
    index = replay.index = replay.index.extend(source)
    task = task_index(source)
    system = leading_system_count(source)
    steps, edges = replay.steps, replay.edges
    for point in _call_points_after(source, done):
        steps.add(source, done, point, index, costs, task, system)
        done = point
        edges = advance(edges, steps, budget, settings)
        replay.recent = [*replay.recent[-(_RECENT_POINTS - 1):], (point, edges.compaction_edge, edges.drop_edge)]
    replay.edges = edges
    replay.previous_edges = _edges_before(replay, previous_length(source))
    # weakly: the memo must not keep a finished conversation alive; the resumed part's references are reused
    history = start.history if start is not None else ()
    replay.history = history + tuple(map(weakref.ref, source[len(history):]))
    if memo is not None:
        memo.remember(replay)
    return replay


def _is_call_point(messages: Sequence[BaseMessage], length: int) -> bool:
    """Return whether ``length`` is one of :func:`~langchain_promptstrat.strategies.ladder.call_points` of ``messages``, in O(1)."""
    n = len(messages)
    if length == n:
        return n > 0
    return 0 < length < n and not isinstance(messages[length], ToolMessage) and not isinstance(messages[length - 1], AIMessage)


def _call_points_after(messages: Sequence[BaseMessage], done: int) -> list[int]:
    """Return the call points of ``messages`` after ``done``: ``[p for p in call_points(messages) if p > done]``, reading only the messages after ``done``."""
    n = len(messages)
    points = [
        e for e in range(max(done + 1, 1), n)
        if not isinstance(messages[e], ToolMessage) and not isinstance(messages[e - 1], AIMessage)
    ]
    if n > done:
        points.append(n)
    return points


def _history_length(replay: Replay) -> int:
    return len(replay.history)


_RECENT_POINTS = 16


def _edges_before(replay: Replay, previous: int) -> tuple[int, int]:
    """Return the edges at the previous model call (the newest call point at or before ``previous`` messages).

    Not simply those of the call point before the last: a history may hold call points where
    no model was called (a user message right after the tool outputs), and an edge that moved
    there still changed the prompt since the previous one.
    """
    for point, compaction, drop in reversed(replay.recent):
        if point <= previous:
            return compaction, drop
    if len(replay.recent) < _RECENT_POINTS:  # every point was kept: the previous call came before any
        return 0, 0
    return replay.recent[0][1], replay.recent[0][2]  # older than what is kept: the oldest edges known


def previous_length(messages: Sequence[BaseMessage]) -> int:
    """Return the length of :func:`_previous_history` without copying it."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], AIMessage):
            return i
    return 0


def memo_costs(memo: BoundedMemo, counter: CountTokens) -> Costs:
    costs = memo.costs
    if costs is None or costs.counter is not counter:
        costs = memo.costs = Costs(counter)
    return costs
