"""What an epoch strategy does to each completed call, and how that differs from the previous model call.

:func:`decide` gives each call's fate (whole, shortened or dropped) from its forward
position and the :class:`~langchain_promptstrat.strategies.epoch_machinery.boundary.EpochState`,
repeat protection included; :func:`previous_total` finds the history of the previous model
call and :func:`prefix_change` says why the compacted prefix changed since (``boundary``,
``repeat`` or both), computed from the history itself so no strategy keeps memory between
calls.

Decisions only: must not edit messages (``caches.apply_frozen`` applies the fates) nor
write the notice (``notice``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages import Fate, ToolCallRecord
from langchain_promptstrat.strategies.epoch_machinery.boundary import EpochState, _pinned
from langchain_promptstrat.strategies.epoch_machinery.repeats import protected_calls

__all__ = ["Decisions", "decide", "prefix_change", "previous_total", "region_fate"]


def region_fate(forward: int, state: EpochState) -> Fate:
    """Return what the regions do to the call at ``forward``: keep, shorten or drop."""
    if forward > state.frozen_edge:
        return Fate.KEEP
    if forward > state.drop_edge:
        return Fate.SHORTEN
    return Fate.DROP


@dataclass(frozen=True)
class Decisions:
    """What happens to every completed call for one state of the conversation."""

    state: EpochState | None
    fates: Mapping[int, Fate]
    """Call number -> SHORTEN or DROP (a call and its output share it); absent means whole."""
    protected: frozenset[int]
    """Calls kept whole by repeat protection although their region would shorten or drop them."""
    shortened: int
    dropped: int


def decide(calls: Sequence[ToolCallRecord], state: EpochState | None) -> Decisions:
    """Return the fate of each of ``calls`` (oldest output first) under ``state``."""
    if state is None:
        return Decisions(None, {}, frozenset(), 0, 0)
    protect = protected_calls(calls)
    frozen_edge, drop_edge = state.frozen_edge, state.drop_edge
    fates: dict[int, Fate] = {}
    rescued: set[int] = set()
    shortened = dropped = 0
    for call in calls:
        number, forward = call.number, call.forward
        if forward > frozen_edge:
            break  # oldest first: everything after is whole
        if number in protect:
            rescued.add(number)
        elif forward > drop_edge:
            fates[number] = Fate.SHORTEN
            shortened += 1
        else:
            fates[number] = Fate.DROP
            dropped += 1
    return Decisions(state, fates, frozenset(rescued), shortened, dropped)


def prefix_change(
    calls: Sequence[ToolCallRecord], before: Decisions, after: Decisions, *, before_total: int
) -> str | None:
    """Return why the compacted prefix changed between two calls: None, ``boundary``, ``repeat`` or both.

    ``before`` holds the decisions for the history one step shorter (its ``before_total``
    outputs). A changed fate of a call both saw is a ``boundary`` change when the epoch
    moved and a ``repeat`` change when the same epoch's window grew (a repeat extended it)
    or protection moved to a newer occurrence. Calls only the newer history holds change no
    prefix, except through the text of a notice the shorter history already had.

    It reports changed decisions: a value short enough that shortening leaves it as it was
    may keep its bytes although its fate changed.
    """
    if before.fates == after.fates and before.protected == after.protected:
        return None  # the usual case within an epoch
    causes: set[str] = set()
    moved = _pinned(before.state) != _pinned(after.state)
    for call in calls:
        if call.forward > before_total:
            break
        old = before.fates.get(call.number, Fate.KEEP)
        new = after.fates.get(call.number, Fate.KEEP)
        if old is new:
            continue
        region_old = region_fate(call.forward, before.state) if before.state else Fate.KEEP
        region_new = region_fate(call.forward, after.state) if after.state else Fate.KEEP
        if region_old is not region_new:
            causes.add("boundary" if moved else "repeat")
        else:
            causes.add("repeat")
    if not causes and (before.shortened or before.dropped) and (before.shortened, before.dropped) != (after.shortened, after.dropped):
        causes.add("boundary" if moved else "repeat")  # new calls froze at once: only the notice's counts moved
    return "+".join(sorted(causes)) if causes else None


def previous_total(messages: Sequence[BaseMessage], total: int) -> int:
    """Return T for the prompt that produced the newest AIMessage (the previous model call)."""
    trailing = 0
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, AIMessage):
            return total - trailing
        if isinstance(message, ToolMessage):
            trailing += 1
    return total - trailing
