"""Where the epochs' boundary is for ``T`` outputs, repeated calls, and where the previous model
call's history ends.

``shorten_tools_epoch`` and ``shorten_tools_epoch_increment``
(:mod:`langchain_promptstrat.strategies.epoch`, where their rule is stated) freeze old tool calls
behind a boundary that moves once per epoch: :func:`epoch_boundary` (fixed epochs),
:func:`increment_schedule` (growing ones, also by :func:`repeat_positions`). Each frozen call's fate
is the default's frozen-region rule for every strategy. The default reads :class:`EpochState`;
every epoch strategy reads :func:`previous_length` and :func:`previous_total`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages import ToolCallRecord
from langchain_promptstrat.settings import Settings


@dataclass(frozen=True)
class EpochState:
    """Where the boundary sits for ``total`` tool outputs: the epoch, its size, its windows.

    Positions (``keep_full``, ``truncate_to``) count from the newest output, as the
    reference does; edges (``frozen_edge``, ``drop_edge``) count from the oldest and stay
    put for the epoch.
    """

    total: int
    epoch_index: int
    pinned_total: int
    epoch_size: int
    compacted_window: int
    full: int

    @property
    def new_calls(self) -> int:
        """Calls that arrived since the boundary was pinned (always >= 1)."""
        return self.total - self.pinned_total

    @property
    def keep_full(self) -> int:
        """Positions ``1..keep_full`` (newest first) stay whole."""
        return self.new_calls + self.full

    @property
    def truncate_to(self) -> int:
        """Positions ``keep_full+1..truncate_to`` are shortened; older ones are dropped."""
        return self.keep_full + self.compacted_window

    @property
    def frozen_edge(self) -> int:
        """Forward positions (1 = oldest) at or below this are shortened or dropped."""
        return self.pinned_total - self.full

    @property
    def drop_edge(self) -> int:
        """Forward positions at or below this are dropped."""
        return self.frozen_edge - self.compacted_window


def epoch_figures(state: EpochState | None, fields: Sequence[str]) -> dict[str, Any]:
    """Return the report's ``fields`` of ``state`` (each None without one)."""
    return {name: getattr(state, name) if state else None for name in fields}


def _inactive(total: int, settings: Settings) -> bool:
    return (
        total <= settings.epoch_tool_call_threshold
        or (settings.epoch_full_tool_calls == 0 and settings.epoch_compacted_tool_calls == 0)
        or settings.epoch_size <= 0
    )


def epoch_boundary(total: int, settings: Settings) -> EpochState | None:
    """Return the fixed-size epoch ``total`` outputs fall in, or None when nothing is compacted.

    Nothing is compacted at or below ``epoch_tool_call_threshold``, when both windows are 0,
    or when ``epoch_size`` is 0. Past the threshold the boundary moves in steps of
    ``epoch_size``: ``pinned_total = threshold + ((T - threshold - 1) // epoch_size) * epoch_size``,
    so calls ``threshold+1 .. threshold+epoch_size`` all see ``pinned_total = threshold``.
    """
    if _inactive(total, settings):
        return None
    threshold, size = settings.epoch_tool_call_threshold, settings.epoch_size
    epoch_index = (total - threshold - 1) // size
    return EpochState(
        total=total,
        epoch_index=epoch_index,
        pinned_total=threshold + epoch_index * size,
        epoch_size=size,
        compacted_window=settings.epoch_compacted_tool_calls,
        full=settings.epoch_full_tool_calls,
    )


def compacted_window(size: int, settings: Settings) -> int:
    """Return the compacted window of an epoch of ``size`` calls in the growing schedule.

    ``base + round((size - initial) * ratio)`` (half away from zero, as in the reference),
    capped at the larger of the configured maximum and the base.
    """
    base = settings.epoch_compacted_tool_calls
    cap = max(settings.epoch_increment_max_compacted_tool_calls, base)
    extra = (size - settings.epoch_size) * settings.epoch_increment_compacted_growth_ratio
    rounded = math.floor(extra + 0.5) if extra >= 0 else -math.floor(-extra + 0.5)
    return min(base + rounded, cap)


def increment_schedule(total: int, repeats: Sequence[int], settings: Settings) -> EpochState | None:
    """Return the growing epoch ``total`` outputs fall in, or None when nothing is compacted.

    ``repeats``: forward positions of repeated calls, ascending. Walked from the first
    epoch: the nominal size grows by ``size_increase`` every ``epochs_per_increase`` epochs
    and by ``repeat_increase`` per earlier epoch that held a repeat, capped at ``max_size``;
    a repeat in an epoch's nominal part extends it once by ``repeat_increase`` (an agent
    that repeats itself lacks context). Only the nominal part counts, so a later call never
    moves a boundary already seen.
    """
    if _inactive(total, settings):
        return None
    initial = settings.epoch_size
    per_increase = settings.epoch_increment_epochs_per_increase
    size_increase = settings.epoch_increment_size_increase
    repeat_increase = settings.epoch_increment_repeat_increase
    max_size = max(settings.epoch_increment_max_size, initial)

    pinned, epoch_index, repeat_epochs = settings.epoch_tool_call_threshold, 0, 0
    while True:
        nominal = initial + repeat_epochs * repeat_increase
        if per_increase > 0:
            nominal += (epoch_index // per_increase) * size_increase
        nominal = min(nominal, max_size)
        last = min(pinned + nominal, total)
        repeat_in_epoch = bisect.bisect_right(repeats, last) > bisect.bisect_right(repeats, pinned)
        size = min(nominal + repeat_increase, max_size) if repeat_in_epoch else nominal
        if total <= pinned + size:
            break
        pinned += size
        repeat_epochs += repeat_in_epoch
        epoch_index += 1
    return EpochState(
        total=total,
        epoch_index=epoch_index,
        pinned_total=pinned,
        epoch_size=size,
        compacted_window=compacted_window(size, settings),
        full=settings.epoch_full_tool_calls,
    )


# ---- repeated calls


def repeat_positions(calls: Sequence[ToolCallRecord]) -> list[int]:
    """Return the forward position of every occurrence of a key after its first, ascending."""
    seen: set[str] = set()
    positions: list[int] = []
    for call in calls:
        if call.key in seen:
            positions.append(call.forward)
        else:
            seen.add(call.key)
    return positions


def previous_length(messages: Sequence[BaseMessage]) -> int:
    """Return the length of the previous model call's history: everything before the newest
    assistant message."""
    return next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), 0
    )


def previous_total(messages: Sequence[BaseMessage], total: int) -> int:
    """Return T for the prompt that produced the newest AIMessage (the previous model call)."""
    return total - sum(isinstance(m, ToolMessage) for m in messages[previous_length(messages) :])
