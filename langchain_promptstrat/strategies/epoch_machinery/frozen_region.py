"""What the epoch strategies share: where the boundary is for ``T`` outputs, repeats, and each
call's fate.

``shorten_tools_epoch`` and ``shorten_tools_epoch_increment``
(:mod:`langchain_promptstrat.strategies.epoch`, where their rule is stated) freeze old tool calls
behind a boundary that moves once per epoch: :func:`epoch_boundary` (fixed epochs),
:func:`increment_schedule` (growing ones); the newest occurrence of a repeated call stays whole
(:func:`protected_calls`); :func:`decide` gives each call's fate and :func:`prefix_change` why it
changed since the previous model call. :func:`apply_frozen` applies the fates through the head cache
of :mod:`~langchain_promptstrat.messages.history_memo`. The default reads :class:`EpochState` and
:func:`previous_length`.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages import Fate, ToolCallRecord, ToolIndex, apply_fates
from langchain_promptstrat.messages.history_memo import encode_head, recall_head, remember_head
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.tokens import as_token_counter


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


def _pinned(state: EpochState | None) -> int | None:
    return state.pinned_total if state is not None else None


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


def protected_calls(calls: Sequence[ToolCallRecord]) -> frozenset[int]:
    """Return the numbers of the calls that stay whole: the newest occurrence of each repeated key.

    An agent that repeats a call needs its result; keeping it whole stops a third ask.
    """
    newest = {call.key: call.number for call in calls}
    count = Counter(call.key for call in calls)
    return frozenset(newest[k] for k, n in count.items() if n >= 2)


# ---- fates


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
    """Return why the compacted prefix changed between two calls: None, ``boundary``, ``repeat`` or
    both.

    ``before``: the decisions for the previous call's ``before_total`` outputs. A changed
    fate is a ``boundary`` change when the epoch moved, else a ``repeat`` change (the
    window grew or protection moved); calls only the newer history holds change no prefix
    except through the notice's counts. It reports decisions, not bytes.
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
    if (
        not causes
        and (before.shortened or before.dropped)
        and (before.shortened, before.dropped) != (after.shortened, after.dropped)
    ):
        causes.add(
            "boundary" if moved else "repeat"
        )  # new calls froze at once: only the notice's counts moved
    return "+".join(sorted(causes)) if causes else None


def previous_length(messages: Sequence[BaseMessage]) -> int:
    """Return the length of the previous model call's history: everything before the newest
    assistant message."""
    return next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), 0
    )


def previous_total(messages: Sequence[BaseMessage], total: int) -> int:
    """Return T for the prompt that produced the newest AIMessage (the previous model call)."""
    return total - sum(isinstance(m, ToolMessage) for m in messages[previous_length(messages) :])


def apply_frozen(
    messages: list[BaseMessage], index: ToolIndex, fates: Mapping[int, Fate], handles: bool = True
) -> list[BaseMessage]:
    """Return ``messages`` with ``fates`` applied (a call and its output share one; ``handles``:
    stubs name ``read_back``), reusing the compacted head of an earlier call.

    Only the head up to the last shortened or dropped output changes, the same way every
    call of an epoch, so it is compacted once and reused. A stub is used only when it has
    fewer tokens than the whole by the default counter (cl100k_base).
    """
    if not fates:
        return list(messages)
    end = (
        max(index.calls[number].output_index or 0 for number in fates) + 1
    )  # fates name answered calls only
    key = ("apply_frozen", handles)
    head = recall_head(messages, end, key, fates)
    if head is None:
        head_in = messages[:end]
        head_out = apply_fates(
            head_in,
            index,
            {number: (fate, fate) for number, fate in fates.items()},
            count=as_token_counter(None),
            handles=handles,
        )
        remember_head(messages, end, key, encode_head(head_in, end, head_out), dict(fates))
        return head_out + messages[end:]
    return head.messages(messages) + messages[end:]
