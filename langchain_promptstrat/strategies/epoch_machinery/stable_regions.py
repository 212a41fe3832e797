"""Where the stable strategy's regions sit for ``T`` tool outputs, and each frozen call's fate, counted in calls.

``shorten_tools_epoch_stable`` splits the outputs, in forward positions (1 = oldest), into
a dropped front, a shortened middle that is only ever appended to, and the newest calls
kept whole (:class:`StableState`). The compaction edge moves with fixed epochs
(:func:`~langchain_promptstrat.strategies.epoch_machinery.boundary.epoch_boundary` on the
``stable_*`` settings); the drop edge is a coarse function of it (:func:`front_drop_edge`);
:func:`stable_decisions` gives each frozen call its fate, the newest occurrence of a
repeat protected as decided when it was frozen.

Must not count tokens: the ceiling's replay (``bounded_replay``) moves these edges further
by tokens.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, ToolMessage

from langchain_promptstrat.messages import Fate
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.boundary import EpochState, epoch_boundary
from langchain_promptstrat.strategies.epoch_machinery.decisions import Decisions
from langchain_promptstrat.strategies.epoch_machinery.repeats import CompletedCall

__all__ = [
    "StableState",
    "count_segments",
    "front_drop_edge",
    "stable_boundary",
    "stable_decisions",
    "step_end",
]


@dataclass(frozen=True)
class StableState:
    """Where the regions sit for ``epoch.total`` tool outputs, in forward positions (1 = oldest)."""

    epoch: EpochState
    """The fixed-size epoch, as :func:`~langchain_promptstrat.strategies.epoch.epoch_boundary` computes it."""
    compaction_edge: int
    """Forward positions at or below this are frozen (shortened or dropped); the rest are whole."""
    drop_edge: int
    """Forward positions at or below this are dropped."""
    front_total: int
    """``pinned_total`` of the first epoch with this drop edge: the front has not changed since."""

    def frozen_at(self, forward: int) -> int:
        """Return the ``pinned_total`` of the epoch that froze the call at ``forward`` (``<= compaction_edge``)."""
        e = self.epoch
        first_edge = e.frozen_edge - e.epoch_index * e.epoch_size
        index = max(0, -(-(forward - first_edge) // e.epoch_size))
        return e.pinned_total - (e.epoch_index - index) * e.epoch_size

    def decided_at(self, forward: int) -> int:
        """Return how many outputs the history had when the protection of the call at ``forward`` was decided.

        The later of the epoch that froze it and the last front drop: a decision taken
        then never changes until the next front drop.
        """
        return max(self.frozen_at(forward), self.front_total)


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
    """Return the regions ``total`` outputs fall in, or None when nothing is compacted.

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


def count_segments(state: StableState) -> list[tuple[int, int]]:
    """Return the freeze segments of the count-only design: each epoch's calls were decided at its pinned total."""
    e = state.epoch
    segments = []
    for back in range(e.epoch_index, -1, -1):
        edge = state.compaction_edge - back * e.epoch_size
        if edge > 0:
            segments.append((edge, e.pinned_total - back * e.epoch_size))
    return segments


def stable_decisions(calls: Sequence[CompletedCall], state: StableState) -> Decisions:
    """Return the fate of each of ``calls`` (oldest output first) under ``state``.

    A frozen call is kept whole when it repeats an older call and, in the history of
    ``state.decided_at(forward)`` outputs, no newer call repeats it; otherwise it is
    shortened or dropped by its region. No call newer than the pinned total is read, so the
    decisions hold for the whole epoch.
    """
    edge, drop, pinned = state.compaction_edge, state.drop_edge, state.epoch.pinned_total
    occurrences: dict[str, list[int]] = {}
    for call in calls:
        if call.forward > pinned:
            break
        occurrences.setdefault(call.key, []).append(call.forward)
    fates: dict[int, Fate] = {}
    rescued: set[int] = set()
    shortened = dropped = 0
    for number, forward, key in calls:
        if forward > edge:
            break  # oldest first: everything after is whole
        seen = occurrences[key]
        if seen[0] < forward:
            later = bisect.bisect_right(seen, forward)
            if later == len(seen) or seen[later] > state.decided_at(forward):
                rescued.add(number)
                continue
        if forward > drop:
            fates[number] = Fate.SHORTEN
            shortened += 1
        else:
            fates[number] = Fate.DROP
            dropped += 1
    return Decisions(state.epoch, fates, frozenset(rescued), shortened, dropped)


def step_end(messages: Sequence[BaseMessage], outputs: Sequence[int], forward: int) -> int:
    """Return the index right after the step holding output ``forward``: after its last ToolMessage."""
    j = outputs[forward - 1] + 1
    while j < len(messages) and isinstance(messages[j], ToolMessage):
        j += 1
    return j
