"""The stable strategy under a context ceiling: replaying the history's model calls to move the edges by tokens.

At each call point of the history (the ladder's call points) the estimated prompt, from
prefix sums of each call's cost whole and shortened, is compared with the ceiling;
crossing it is an *event*: an early advance of the compaction edge, then, if still above
the low watermark, a chunked front drop after the kept head. :class:`Bounded` is where a
replay stands; :func:`replay_history` replays a history, resuming from a replay the
strategy's :class:`BoundedMemo` remembers for a prefix of it (same message objects). The
edges only move forward, so the prompt is still a function of the history alone.

Must not build the prompt (``stable_prompt`` does) nor keep a conversation alive (the
history is held weakly).
"""

from __future__ import annotations

import dataclasses
import operator
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages import GrowingToolIndex, leading_system_count, task_index
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.frozen_head import Frozen
from langchain_promptstrat.strategies.epoch_machinery.stable_regions import stable_boundary
from langchain_promptstrat.strategies.epoch_machinery.token_costs import Costs
from langchain_promptstrat.strategies.ladder_machinery.vocabulary import CountTokens

__all__ = ["NOTICE_TOKENS", "Bounded", "BoundedMemo", "memo_costs", "previous_length", "replay_history"]


NOTICE_TOKENS = 90
"""What the estimate reserves for the compaction notice (its text is about 80 tokens)."""


@dataclass
class Bounded:
    """Where a replay of the ceiling stands after the call point ``len(history)``.

    Forward positions as in :class:`StableState` (1 = oldest output). ``whole``/``short``
    are prefix sums of each call's cost kept whole or shortened (its output plus its share
    of the assistant message), ``loose_before[f]`` the tokens of the messages that are not
    part of a step (user messages, plain assistant text) placed before output ``f``.
    """

    history: tuple[weakref.ref[BaseMessage], ...]
    """The history replayed so far, held weakly (compared by identity with the next call's messages)."""
    budget: int
    index: GrowingToolIndex = field(default_factory=GrowingToolIndex)
    """The tool-call index of ``history``: a replay that resumes extends it by the new messages (see :func:`replay_history`)."""
    frozen: Frozen | None = None
    """The compacted head of the last prompt built from this replay (see :class:`Frozen`); it never changes a result."""
    fixed: int = 0
    whole: list[int] = field(default_factory=lambda: [0])
    short: list[int] = field(default_factory=lambda: [0])
    loose_before: list[int] = field(default_factory=lambda: [0])
    loose_open: int = 0
    """Loose tokens after the newest output (position ``T``), not yet closed by a later output."""
    ends: list[int] = field(default_factory=list)
    """Forward positions that end a step, ascending."""
    keys: set[str] = field(default_factory=set)
    """Repeat keys of the calls seen so far."""
    last_ai: int = -1
    compaction_edge: int = 0
    prior_edge: int = 0
    """The compaction edge before its last move (where the cache entry of the last event's re-send starts)."""
    drop_edge: int = 0
    token_drop_edge: int = 0
    head: int = 0
    """Forward positions at or below this are the kept head: set at the first ceiling-driven drop, never changed after.

    A ceiling-driven drop removes the steps after the head, so the system block, the task
    and the head stay the cached prefix of every prompt after it (0: drops start at the oldest call).
    """
    segments: list[tuple[int, int]] = field(default_factory=list)
    """``(edge, decided_at)``: calls up to ``edge`` (after the previous segment's) were frozen when the history had ``decided_at`` outputs."""
    front_total: int = 0
    events: int = 0
    last_event: int | None = None
    event_here: bool = False
    previous_edges: tuple[int, int] = (0, 0)
    """The edges of the previous model call's prompt (see :func:`_edges_before`)."""
    recent: list[tuple[int, int, int]] = field(default_factory=list)
    """``(call point, compaction edge, drop edge)`` after each of the last call points replayed."""

    def copy(self) -> Bounded:
        return dataclasses.replace(
            self, whole=list(self.whole), short=list(self.short), loose_before=list(self.loose_before),
            ends=list(self.ends), segments=list(self.segments), keys=set(self.keys), recent=list(self.recent),
        )

    @property
    def total(self) -> int:
        return len(self.whole) - 1

    def estimate(self, compaction: int, drop: int, head: int | None = None) -> int:
        """Return the estimated tokens of the prompt with these edges (the notice included when anything is frozen).

        Positions ``head+1 .. drop`` are dropped (``head``: this replay's kept head unless given).
        """
        t = self.total
        h = min(self.head if head is None else head, drop)
        loose = self.loose_before[t] + self.loose_open - self.loose_before[drop] + self.loose_before[h]
        notice = NOTICE_TOKENS if compaction else 0
        kept_short = self.short[h] + self.short[compaction] - self.short[drop]
        return self.fixed + loose + notice + kept_short + self.whole[t] - self.whole[compaction]

    def decided_at(self, forward: int) -> int:
        """Return how many outputs the history had when the protection of the frozen call at ``forward`` was decided."""
        at = self.total
        for edge, decided in self.segments:
            if forward <= edge:
                at = decided
                break
        return max(at, self.front_total)

    def horizon(self) -> int:
        return max([self.front_total, *(d for _, d in self.segments)])


def _grow(replay: Bounded, messages: Sequence[BaseMessage], start: int, stop: int, index: GrowingToolIndex, costs: Costs, task: int | None, system: int) -> None:
    """Add the costs of ``messages[start:stop]`` to ``replay``."""
    completed_per_ai, call_of_output = index.completed_per_ai, index.call_of_output
    for i in range(start, stop):
        message = messages[i]
        if i < system or i == task:
            replay.fixed += costs.whole(message)
            continue
        number = call_of_output.get(i) if isinstance(message, ToolMessage) else None
        if number is None:
            if isinstance(message, AIMessage) and completed_per_ai.get(i, 0):
                continue  # its cost goes to its calls, as their outputs arrive
            replay.loose_open += costs.whole(message)
            continue
        record = index.calls[number]
        ai = messages[record.ai_index]
        n = completed_per_ai.get(record.ai_index, 0)
        ai_whole, ai_short = costs.whole(ai), costs.shortened(ai)
        first = record.ai_index != replay.last_ai
        share_whole = ai_whole // n + (ai_whole % n if first else 0)
        share_short = ai_short // n + (ai_short % n if first else 0)
        t = replay.total
        if first and t and (not replay.ends or replay.ends[-1] != t):
            replay.ends.append(t)
        replay.last_ai = record.ai_index
        replay.loose_before.append(replay.loose_before[t] + replay.loose_open)
        replay.loose_open = 0
        whole = costs.whole(message) + share_whole
        key = record.key
        # a repeated call may stay whole in the shortened region (the newest occurrence is protected): count it whole
        short = whole if key in replay.keys else costs.shortened(message) + share_short
        replay.keys.add(key)
        replay.whole.append(replay.whole[t] + whole)
        replay.short.append(replay.short[t] + short)


def _end_edges(replay: Bounded) -> list[int]:
    """Return every step end, the newest output included."""
    t = replay.total
    return replay.ends + [t] if t and (not replay.ends or replay.ends[-1] != t) else list(replay.ends)


def _event(replay: Bounded, settings: Settings) -> None:
    """Bring the estimate under the ceiling: an early advance, then a chunked front drop to the low watermark."""
    t, budget = replay.total, replay.budget
    ends = _end_edges(replay)
    whole_budget = int(budget * settings.stable_whole_ratio)
    newest = len(ends) - 2  # the step end before the newest step: the newest step always stays whole
    edge = ends[newest] if newest >= 0 else 0
    k = newest - 1
    while k >= 0 and replay.whole[t] - replay.whole[ends[k]] <= whole_budget and t - ends[k] <= settings.stable_full_tool_calls:
        edge = ends[k]
        k -= 1
    # advance as far as the whole region allows, never back
    if edge > replay.compaction_edge:
        replay.segments.append((edge, t))
        replay.prior_edge, replay.compaction_edge = replay.compaction_edge, edge
    low = int(budget * settings.stable_low_ratio)
    if replay.estimate(replay.compaction_edge, replay.drop_edge) <= low:
        return
    front = int(budget * settings.stable_front_ratio)
    c = replay.compaction_edge
    head = replay.head
    if replay.drop_edge == 0 and settings.stable_head_ratio > 0:
        # the first drop: the oldest steps that fit in stable_head_ratio of the budget stay for good,
        # so every later drop removes steps after them and their cache entry survives
        limit = int(budget * settings.stable_head_ratio)
        for e in ends:
            if e >= c or replay.short[e] + replay.loose_before[e] > limit:
                break
            head = e
    candidates = [e for e in ends if max(replay.drop_edge, head) < e <= c]
    chosen = c
    for e in candidates:
        if replay.estimate(c, e, head) <= front:
            chosen = e
            break
    if chosen > max(replay.drop_edge, head):
        replay.head = head
        replay.drop_edge = replay.token_drop_edge = chosen
        replay.front_total = t


def _replay_point(replay: Bounded, settings: Settings) -> None:
    """Decide the edges at the call point the replay has just reached (``replay.total`` outputs)."""
    t = replay.total
    replay.previous_edges = (replay.compaction_edge, replay.drop_edge)
    replay.event_here = False
    state = stable_boundary(t, settings)
    if state is not None:
        if state.compaction_edge > replay.compaction_edge:
            replay.segments.append((state.compaction_edge, state.epoch.pinned_total))
            replay.prior_edge, replay.compaction_edge = replay.compaction_edge, state.compaction_edge
        if state.drop_edge > max(replay.drop_edge, replay.head):
            # under a ceiling a dropped call is dropped, repeat or not: the estimate counts it as gone
            replay.drop_edge = replay.token_drop_edge = state.drop_edge
            replay.front_total = max(replay.front_total, state.front_total)
    # the estimate splits each assistant message evenly over its calls: act 1% early so the real count fits
    if replay.estimate(replay.compaction_edge, replay.drop_edge) > replay.budget - replay.budget // 100:
        _event(replay, settings)
        replay.events += 1
        replay.last_event = t
        replay.event_here = True


_DEREF = weakref.ref.__call__
"""Dereference a weak reference, as a C function ``map`` can call without a Python frame."""


class BoundedMemo:
    """The recent replays of one strategy object (never changes a result; lets a growing conversation resume)."""

    size = 8

    def __init__(self) -> None:
        self._items: list[Bounded] = []
        self._lock = threading.Lock()
        self.costs: Costs | None = None
        """Per-message token costs for the counter last used (a cache: never changes a result)."""

    def recall(self, messages: Sequence[BaseMessage], budget: int) -> Bounded | None:
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

    def remember(self, replay: Bounded) -> None:
        with self._lock:
            self._items = [*self._items[-(self.size - 1):], replay]


def replay_history(source: list[BaseMessage], budget: int, settings: Settings, costs: Costs, memo: BoundedMemo | None) -> Bounded:
    """Return the replay of ``source``'s call points under ``budget``: a pure function of the history.

    A replay remembered for a call point of ``source`` whose history is the start of
    ``source`` (same message objects) resumes: only the messages after it are indexed,
    counted and replayed. That is safe because every prefix of a history has the same call
    points up to its length and the replay of a call point reads nothing after it, so the
    resumed replay is the one a replay from the first message would reach.
    """
    start = memo.recall(source, budget) if memo is not None else None
    replay = start.copy() if start is not None else Bounded((), budget)
    done = len(replay.history)
    index = replay.index = replay.index.extend(source)
    task = task_index(source)
    system = leading_system_count(source)
    for point in _call_points_after(source, done):
        _grow(replay, source, done, point, index, costs, task, system)
        done = point
        _replay_point(replay, settings)
        replay.recent = [*replay.recent[-(_RECENT_POINTS - 1):], (point, replay.compaction_edge, replay.drop_edge)]
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


def _history_length(replay: Bounded) -> int:
    return len(replay.history)


_RECENT_POINTS = 16


def _edges_before(replay: Bounded, previous: int) -> tuple[int, int]:
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
