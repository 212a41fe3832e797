"""The default's rule: where its edges sit (:class:`Edges`), how one model call moves them (:func:`advance`), each call's fate.

``shorten_tools_epoch_stable`` splits a history's tool outputs, in forward positions
(1 = oldest output; a call shares its output's position), into regions::

    1 .. head                   shortened   the kept head: fixed at the first ceiling-driven drop
    head+1 .. drop_edge         dropped     grows only at a front drop, by a chunk
    drop_edge+1 .. compaction   shortened   only ever appended to, at its end
    compaction+1 .. T           whole       the newest calls

The edges only move forward, and only at two kinds of moment:

* **by count** (:func:`stable_boundary`): every ``stable_epoch_size`` calls past
  ``stable_tool_call_threshold`` the compaction edge moves to ``pinned_total -
  stable_full_tool_calls``, and the drop edge is a coarse function of it
  (:func:`front_drop_edge`);
* **by tokens**, under a ceiling (:func:`advance`, at each of the history's model calls):
  when the estimated prompt would cross the ceiling, the compaction edge moves early
  (:func:`whole_from`), then, if still above ``stable_low_ratio``, the steps after the kept
  head are dropped in one chunk down to ``stable_front_ratio``.

**How many recent calls stay whole:** at most ``stable_full_tool_calls`` beyond the
current epoch's new calls; after a ceiling event also no more than ``stable_whole_ratio``
of the budget, the newest step always whole (:func:`whole_from` states both).

A frozen call's fate (:func:`call_fates`): dropped between the head and the drop edge,
else shortened, except the newest occurrence of a repeated call, kept whole as decided
when the call was frozen (or at the last front drop, if later): a newer occurrence takes
the protection away only when the front changes anyway.

Pure arithmetic on counts and prefix sums: must not look at a message nor keep a cache
(the replay, ``bounded_replay``, feeds it; ``stable_prompt`` applies the fates).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace

from langchain_promptstrat.messages import Fate, ToolCallRecord
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.boundary import EpochState, epoch_boundary
from langchain_promptstrat.strategies.epoch_machinery.token_costs import StepCosts

__all__ = ["Edges", "StableState", "advance", "call_fates", "count_edges", "front_drop_edge", "stable_boundary", "whole_from"]


# ---- by count ----------------------------------------------------------------------------


@dataclass(frozen=True)
class StableState:
    """Where the regions sit by count for ``epoch.total`` tool outputs, in forward positions (1 = oldest)."""

    epoch: EpochState
    """The fixed-size epoch, as :func:`~langchain_promptstrat.strategies.epoch.epoch_boundary` computes it."""
    compaction_edge: int
    """Forward positions at or below this are frozen (shortened or dropped); the rest are whole."""
    drop_edge: int
    """Forward positions at or below this are dropped."""
    front_total: int
    """``pinned_total`` of the first epoch with this drop edge: the front has not changed since."""


@functools.lru_cache(maxsize=32)
def _epoch_settings(settings: Settings) -> Settings:
    """Return ``settings`` with the epoch keys :func:`epoch_boundary` reads set to the stable ones."""
    return settings.replace(
        epoch_tool_call_threshold=settings.stable_tool_call_threshold,
        epoch_full_tool_calls=settings.stable_full_tool_calls,
        epoch_compacted_tool_calls=settings.stable_max_compacted_tool_calls,
        epoch_size=settings.stable_epoch_size,
    )


def front_drop_edge(compaction_edge: int, settings: Settings) -> int:
    """Return the drop edge for ``compaction_edge``: 0, or a multiple of the chunk that bounds the shortened region.

    While ``compaction_edge <= stable_max_compacted_tool_calls`` nothing is dropped. Past
    it, the oldest calls go in multiples of ``stable_front_drop_chunk``: the smallest
    multiple that leaves at most the maximum shortened. With the defaults (240, 120) the
    shortened region holds 121..240 calls once it is full, and the front changes once
    every 120 calls. Never past the compaction edge.
    """
    bound, chunk = settings.stable_max_compacted_tool_calls, settings.stable_front_drop_chunk
    if compaction_edge <= bound:
        return 0
    return min(chunk * -(-(compaction_edge - bound) // chunk), compaction_edge)


def stable_boundary(total: int, settings: Settings) -> StableState | None:
    """Return the regions ``total`` outputs fall in by count, or None when nothing is compacted.

    Nothing is compacted at or below ``stable_tool_call_threshold``, when
    ``stable_epoch_size`` is 0, or when both ``stable_full_tool_calls`` and
    ``stable_max_compacted_tool_calls`` are 0. Past the threshold the compaction edge moves
    every ``stable_epoch_size`` outputs: calls ``threshold+1 .. threshold+size`` all see
    ``pinned_total = threshold`` and a compaction edge of ``threshold - full``.
    """
    epoch = epoch_boundary(total, _epoch_settings(settings))
    if epoch is None:
        return None
    edge = max(epoch.frozen_edge, 0)
    drop = front_drop_edge(edge, settings)
    index = epoch.epoch_index
    while index > 0 and front_drop_edge(max(epoch.frozen_edge - (epoch.epoch_index - index + 1) * epoch.epoch_size, 0), settings) == drop:
        index -= 1
    front_total = epoch.pinned_total - (epoch.epoch_index - index) * epoch.epoch_size
    return StableState(epoch, edge, drop, front_total)


# ---- the edges and one model call ---------------------------------------------------------


@dataclass(frozen=True)
class Edges:
    """Where the regions sit after a model call (forward positions; see the module docstring): the rule's whole state."""

    compaction_edge: int = 0
    prior_edge: int = 0
    """The compaction edge before its last move (where the cache entry of the last event's re-send starts)."""
    drop_edge: int = 0
    token_drop_edge: int = 0
    """The drop edge as far as a drop removed the loose messages too (the count rule drops calls only)."""
    head: int = 0
    """Forward positions at or below this are the kept head: set at the first ceiling-driven drop, never changed after."""
    segments: tuple[tuple[int, int], ...] = ()
    """``(edge, decided_at)``: calls up to ``edge`` (after the previous segment's) were frozen when the history had ``decided_at`` outputs."""
    front_total: int = 0
    """How many outputs the history had at the last front drop."""
    events: int = 0
    """Ceiling events so far."""
    last_event: int | None = None
    event_here: bool = False
    """Whether the call just replayed was a ceiling event."""

    def decided_at(self, forward: int, total: int) -> int:
        """Return how many outputs the history had when the protection of the frozen call at ``forward`` was decided."""
        at = total
        for edge, decided in self.segments:
            if forward <= edge:
                at = decided
                break
        return max(at, self.front_total)

    def horizon(self) -> int:
        """Return the newest history length any frozen call's protection was decided at (calls after it are never read)."""
        return max([self.front_total, *(d for _, d in self.segments)])


def count_edges(state: StableState | None) -> Edges:
    """Return the edges of the count-only rule (no ceiling) for ``state``: each epoch's calls decided at its pinned total."""
    if state is None:
        return Edges()
    e = state.epoch
    segments = tuple(
        (state.compaction_edge - back * e.epoch_size, e.pinned_total - back * e.epoch_size)
        for back in range(e.epoch_index, -1, -1)
        if state.compaction_edge - back * e.epoch_size > 0
    )
    return Edges(state.compaction_edge, 0, state.drop_edge, 0, 0, segments, state.front_total)


def whole_from(steps: StepCosts, budget: int, settings: Settings) -> int:
    """Return where the whole region starts after a ceiling event: the oldest step end whose newer calls may all stay whole.

    The newest step always stays whole; older steps join it while the calls after them
    number at most ``stable_full_tool_calls`` and take at most ``stable_whole_ratio`` of
    the budget (the count rule keeps ``stable_full_tool_calls`` beyond the epoch's new calls).
    """
    t, ends, whole = steps.total, steps.end_edges(), steps.whole
    whole_budget = int(budget * settings.stable_whole_ratio)
    newest = len(ends) - 2
    edge = ends[newest] if newest >= 0 else 0
    k = newest - 1
    while k >= 0 and whole[t] - whole[ends[k]] <= whole_budget and t - ends[k] <= settings.stable_full_tool_calls:
        edge = ends[k]
        k -= 1
    return edge


def _event(edges: Edges, steps: StepCosts, budget: int, settings: Settings) -> Edges:
    """Return ``edges`` brought under the ceiling: an early advance, then a chunked front drop to the low watermark."""
    t = steps.total
    edge = whole_from(steps, budget, settings)
    if edge > edges.compaction_edge:  # advance as far as the whole region allows, never back
        edges = replace(edges, segments=(*edges.segments, (edge, t)), prior_edge=edges.compaction_edge, compaction_edge=edge)
    c, head = edges.compaction_edge, edges.head
    if steps.estimate(c, edges.drop_edge, head) <= int(budget * settings.stable_low_ratio):
        return edges
    ends = steps.end_edges()
    if edges.drop_edge == 0 and settings.stable_head_ratio > 0:
        # the first drop: the oldest steps that fit in stable_head_ratio of the budget stay for good,
        # so every later drop removes steps after them and their cache entry survives
        limit = int(budget * settings.stable_head_ratio)
        for e in ends:
            if e >= c or steps.short[e] + steps.loose_before[e] > limit:
                break
            head = e
    front = int(budget * settings.stable_front_ratio)
    chosen = next((e for e in ends if max(edges.drop_edge, head) < e <= c and steps.estimate(c, e, head) <= front), c)
    if chosen > max(edges.drop_edge, head):
        edges = replace(edges, head=head, drop_edge=chosen, token_drop_edge=chosen, front_total=t)
    return edges


def advance(edges: Edges, steps: StepCosts, budget: int, settings: Settings) -> Edges:
    """Return the edges at the model call ``steps`` has just reached (``steps.total`` outputs), from those of the previous one."""
    t = steps.total
    if edges.event_here:
        edges = replace(edges, event_here=False)
    state = stable_boundary(t, settings)
    if state is not None:
        if state.compaction_edge > edges.compaction_edge:
            edges = replace(
                edges, segments=(*edges.segments, (state.compaction_edge, state.epoch.pinned_total)),
                prior_edge=edges.compaction_edge, compaction_edge=state.compaction_edge,
            )
        if state.drop_edge > max(edges.drop_edge, edges.head):
            # under a ceiling a dropped call is dropped, repeat or not: the estimate counts it as gone
            edges = replace(edges, drop_edge=state.drop_edge, token_drop_edge=state.drop_edge, front_total=max(edges.front_total, state.front_total))
    # the estimate splits each assistant message evenly over its calls: act 1% early so the real count fits
    if steps.estimate(edges.compaction_edge, edges.drop_edge, edges.head) > budget - budget // 100:
        edges = replace(_event(edges, steps, budget, settings), events=edges.events + 1, last_event=t, event_here=True)
    return edges


# ---- each frozen call's fate -----------------------------------------------------------------


def call_fates(calls: Sequence[ToolCallRecord], edges: Edges, total: int) -> tuple[dict[int, Fate], frozenset[int]]:
    """Return the fate of each frozen call (by call number; absent: whole) and the calls kept whole as a repeat's newest occurrence.

    ``calls`` are the completed calls, oldest output first; no call after the edges'
    :meth:`~Edges.horizon` is read, so the fates hold until the edges move.
    """
    edge, head, drop, token_drop = edges.compaction_edge, edges.head, edges.drop_edge, edges.token_drop_edge
    horizon = edges.horizon()
    occurrences: dict[str, list[int]] = {}
    for call in calls:
        if call.forward > horizon:
            break
        occurrences.setdefault(call.key, []).append(call.forward)
    fates: dict[int, Fate] = {}
    rescued: set[int] = set()
    for call in calls:
        number, forward, key = call.number, call.forward, call.key
        if forward > edge:
            break
        seen = occurrences.get(key)
        if seen and seen[0] < forward and not head < forward <= token_drop:
            later = bisect.bisect_right(seen, forward)
            if later == len(seen) or seen[later] > edges.decided_at(forward, total):
                rescued.add(number)
                continue
        fates[number] = Fate.DROP if head < forward <= drop else Fate.SHORTEN
    return fates, frozenset(rescued)
