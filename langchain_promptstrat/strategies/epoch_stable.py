"""shorten_tools_epoch_stable: epochs that keep the front of the prompt byte-identical.

A provider's prefix cache re-sends everything after the first message that changed. The
reference epoch strategies change the *oldest* kept messages at every epoch advance (new
drops at the front, and the notice with its new counts right after the first kept step),
so every advance re-sends the whole prompt. This strategy keeps the epoch idea and orders
its changes by what they cost the cache. In forward positions (1 = oldest output; a call
shares its output's position), ``T`` outputs are split in three regions::

    1 .. drop_edge                    dropped     the front: changes only at a front drop
    drop_edge+1 .. compaction_edge    shortened   only ever appended to, at its end
    compaction_edge+1 .. T            whole       the newest full calls and the epoch's new calls

* The compaction edge is the reference's frozen edge with fixed epochs
  (``pinned_total - full``, see :func:`~langchain_promptstrat.strategies.epoch.epoch_boundary`):
  every ``stable_epoch_size`` calls, the calls that were whole become shortened. The prompt
  changes from where the shortened region ended, so the system block, the task and every
  call shortened before are still served from the cache.
* The drop edge is a coarse function of the compaction edge alone
  (:func:`front_drop_edge`): 0 while the shortened region holds at most
  ``stable_max_compacted_tool_calls`` calls, then the smallest multiple of
  ``stable_front_drop_chunk`` that brings it back under that bound. The front changes
  rarely, by a large chunk at once, and only together with an advance.
* The notice sits at the boundary, right after the step holding the last shortened call:
  it moves and its counts change only when the boundary moves, where the prompt changes
  anyway.
* The newest occurrence of a repeated call stays whole, as in the reference, but whether a
  frozen call is protected is decided against the history as it was when the call was
  frozen, or at the last front drop if that came later (:meth:`StableState.decided_at`).
  A newer occurrence takes the protection away at the next front drop, so repeated calls
  never change the front in between.

Everything is a pure function of the message list: the edges depend on ``T`` alone, the
protection on the repeat keys of calls no newer than the current epoch's pinned total.
"""

from __future__ import annotations

import bisect
import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from langchain_promptstrat.adapters.runnable import PromptStrategy
from langchain_promptstrat.messages import Fate, index_tool_calls
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch import (
    CompletedCall,
    Decisions,
    EpochState,
    apply_frozen,
    previous_total,
    compaction_notice,
    completed_calls,
    epoch_boundary,
    is_compaction_notice,
    repeat_positions,
)

__all__ = [
    "STRATEGY_NAME",
    "ShortenToolsEpochStable",
    "StableState",
    "front_drop_edge",
    "shorten_tools_epoch_stable",
    "stable_boundary",
    "stable_decisions",
]

STRATEGY_NAME = "shorten_tools_epoch_stable"


# --------------------------------------------------------------------------- where the regions are


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


# --------------------------------------------------------------------------- decisions


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


def _step_end(messages: Sequence[BaseMessage], outputs: Sequence[int], forward: int) -> int:
    """Return the index right after the step holding output ``forward``: after its last ToolMessage."""
    j = outputs[forward - 1] + 1
    while j < len(messages) and isinstance(messages[j], ToolMessage):
        j += 1
    return j


def _notice_key(decisions: Decisions, state: StableState | None, messages: Sequence[BaseMessage], outputs: Sequence[int]) -> tuple[int, int, int] | None:
    """Return what the notice looks like and where it goes (counts, index in ``messages``), or None without one."""
    if state is None or not (decisions.shortened or decisions.dropped):
        return None
    return decisions.shortened, decisions.dropped, _step_end(messages, outputs, state.compaction_edge)


def _prefix_change(
    before_state: StableState | None,
    before: Decisions,
    before_notice: tuple[int, int, int] | None,
    state: StableState,
    now: Decisions,
    notice: tuple[int, int, int] | None,
) -> tuple[str | None, str | None]:
    """Return the region whose bytes changed since the previous call and why: ``(None, None)`` when none did.

    ``front`` (the first frozen messages may differ; everything after them is re-sent) when
    compaction started or the drop edge moved; ``middle`` (the front and every call frozen
    before are unchanged, the change starts at the step after the old boundary) when only
    the compaction edge moved.
    """
    if before.fates == now.fates and before_notice == notice:
        return None, None
    if before_state is None or before_state.compaction_edge == 0:
        return "front", "compaction_started"
    if before_state.drop_edge != state.drop_edge:
        return "front", "front_drop"
    return "middle", "advance"


# --------------------------------------------------------------------------- the strategy


def _inactive_details() -> dict[str, Any]:
    return dict(
        epoch_index=None, pinned_total=None, new_calls=None, epoch_size=None, keep_full=None,
        compaction_edge=None, drop_edge=None, front_total=None, repeats=None,
        boundary_moved=False, front_moved=False, prefix_change=None, prefix_change_reason=None, notice=False,
    )


def shorten_tools_epoch_stable(messages: Sequence[BaseMessage], /, *, settings: Settings) -> Compacted:
    """Return ``messages`` compacted in epochs that leave the front of the prompt byte-identical between front drops.

    Old calls are shortened behind a compaction edge that advances every
    ``stable_epoch_size`` calls and dropped behind a drop edge that moves only in chunks of
    ``stable_front_drop_chunk`` (see :func:`stable_boundary`); the newest
    ``stable_full_tool_calls`` calls and the epoch's new ones stay whole. An advance changes
    the prompt only from the end of the shortened region on, so everything before it is
    still cached; only a front drop (or the first compaction) re-sends the whole prompt. The
    newest occurrence of a repeated call stays whole (decided as :func:`stable_decisions`
    says), and a marked notice after the last shortened step says what was shortened and
    removed.

    The report adds ``epoch_index``, ``pinned_total``, ``new_calls``, ``epoch_size``,
    ``keep_full``, ``compaction_edge``, ``drop_edge``, ``front_total`` (the pinned total since
    which the front is unchanged), ``repeats``, ``protected``, ``notice``, and, compared with
    the prompt that produced the newest ``AIMessage`` (the previous model call),
    ``boundary_moved`` (compaction edge), ``front_moved`` (drop edge), ``prefix_change``
    (None, ``front`` or ``middle``: where the bytes changed) and ``prefix_change_reason``
    (None, ``compaction_started``, ``front_drop`` or ``advance``). Stateless, like the
    reference epoch strategies: everything is computed from the history.
    """
    source = [m for m in messages if not (isinstance(m, HumanMessage) and is_compaction_notice(m))]
    index = index_tool_calls(source)
    total = index.total_outputs
    state = stable_boundary(total, settings)
    if state is None:
        out = list(source)
        return Compacted(out, make_report(STRATEGY_NAME, messages, out, **_inactive_details()))

    calls = completed_calls(index)
    now = stable_decisions(calls, state)
    outputs = [i for i, m in enumerate(source) if isinstance(m, ToolMessage)]
    notice = _notice_key(now, state, source, outputs)

    before_total = previous_total(source, total)
    before_state = state if before_total == total else stable_boundary(before_total, settings)
    if before_state is not None and (before_state.compaction_edge, before_state.drop_edge) == (state.compaction_edge, state.drop_edge):
        region, reason = None, None  # same epoch: no frozen decision reads a call newer than its pinned total
    else:
        before = stable_decisions(calls, before_state) if before_state is not None else Decisions(None, {}, frozenset(), 0, 0)
        region, reason = _prefix_change(before_state, before, _notice_key(before, before_state, source, outputs), state, now, notice)

    out = apply_frozen(source, index, now.fates)
    if notice is not None:
        removed = len(source) - len(out)  # only frozen messages, all before the notice, are ever removed
        out.insert(notice[2] - removed, compaction_notice(now.shortened, now.dropped, strategy=STRATEGY_NAME))

    epoch = state.epoch
    return Compacted(out, make_report(
        STRATEGY_NAME, messages, out,
        shortened=now.shortened,
        dropped=now.dropped,
        protected=len(now.protected),
        epoch_index=epoch.epoch_index,
        pinned_total=epoch.pinned_total,
        new_calls=epoch.new_calls,
        epoch_size=epoch.epoch_size,
        keep_full=epoch.keep_full,
        compaction_edge=state.compaction_edge,
        drop_edge=state.drop_edge,
        front_total=state.front_total,
        repeats=len(repeat_positions(calls)),
        boundary_moved=(before_state.compaction_edge if before_state is not None else 0) != state.compaction_edge,
        front_moved=before_state is not None and before_state.drop_edge != state.drop_edge,
        prefix_change=region,
        prefix_change_reason=reason,
        notice=notice is not None,
    ))


class ShortenToolsEpochStable(PromptStrategy):
    """``shorten_tools_epoch_stable``: cache-first epochs that keep the front of the prompt unchanged.

    Settings: ``stable_tool_call_threshold`` (120), ``stable_full_tool_calls`` (20),
    ``stable_epoch_size`` (80), ``stable_max_compacted_tool_calls`` (240),
    ``stable_front_drop_chunk`` (120). Stateless: one object serves any number of
    conversations at once.
    """

    strategy_name = STRATEGY_NAME

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return :func:`shorten_tools_epoch_stable` of ``messages`` with this strategy's settings."""
        return shorten_tools_epoch_stable(messages, settings=self.settings)
