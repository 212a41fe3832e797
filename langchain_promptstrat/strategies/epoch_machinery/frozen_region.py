"""The frozen region the epoch strategies share: where the boundary is, each call's fate, and the one head cache.

``shorten_tools_epoch``, ``shorten_tools_epoch_increment`` (:mod:`langchain_promptstrat.strategies.epoch`, where the rule is
stated) and ``shorten_tools_epoch_stable`` freeze old tool calls behind a boundary that moves
once per epoch:

* the boundary for ``T`` tool outputs (:class:`EpochState`): :func:`epoch_boundary` (fixed
  epochs), :func:`increment_schedule` and :func:`compacted_window` (growing ones);
* repeated calls (:func:`repeat_positions`, :func:`protected_calls`: the newest occurrence of
  a repeated call stays whole);
* each completed call's fate (:func:`decide`) and why the prefix changed since the previous
  model call (:func:`previous_total`, :func:`prefix_change`), read off the history itself;
* the head cache: a compacted head (:class:`Head`) remembered by what its messages are (the
  same objects, or equal ones: a conversation loaded again is the same conversation),
  holding none of the caller's messages, bounded by entries and characters, thread-safe;
  a miss recomputes exactly what a hit returns (:func:`clear_caches` forgets all).

Calls are read from the one tool-call index, :class:`~langchain_promptstrat.messages.ToolIndex`.
"""

from __future__ import annotations

import bisect
import math
import operator
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages import Fate, ToolCallRecord, ToolIndex, apply_fates, message_chars
from langchain_promptstrat.messages.history_memo import HistoryKey, history_key
from langchain_promptstrat.messages.keys import message_key
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


# --------------------------------------------------------------------------- repeated calls


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
    newest: dict[str, int] = {}
    count: dict[str, int] = {}
    for call in calls:
        newest[call.key] = call.number
        count[call.key] = count.get(call.key, 0) + 1
    return frozenset(newest[k] for k, n in count.items() if n >= 2)


# --------------------------------------------------------------------------- fates


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


# --------------------------------------------------------------------------- the head cache


@dataclass
class Head:
    """A compacted head: ``(source[:at] + copies)[pick]`` for each pick, with the notice that follows it and its counts.

    A hit hands back the same copy and notice objects.
    """

    at: int
    """How many input messages the picks index (the copies come after them)."""
    picks: list[int]
    copies: list[BaseMessage]
    notice: BaseMessage | None = None
    shortened: int = 0
    dropped: int = 0
    protected: int = 0
    chars: int = 0
    """Characters of the copies and the notice (what remembering this head costs)."""
    counted: tuple[weakref.ref[Any], int] | None = None
    """The tokens of the head and its notice for the last counter that counted them, weakly (the strategy counts them
    once and writes them here, so a conversation loaded again, which finds its head, does not count its head again)."""

    def messages(self, source: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Return the compacted head for ``source`` (whose first ``at`` messages are those it was built from)."""
        pool = list(source[: self.at])
        pool += self.copies
        return list(map(pool.__getitem__, self.picks))


def encode_head(
    source: Sequence[BaseMessage], at: int, messages: Sequence[BaseMessage], notice: BaseMessage | None = None,
    shortened: int = 0, dropped: int = 0, protected: int = 0,
) -> Head:
    """Return ``messages`` (a compacted ``source[:at]``) as a :class:`Head`: the messages passed through as indices, the others copies."""
    position = {id(m): i for i, m in enumerate(source[:at])}
    picks: list[int] = []
    copies: list[BaseMessage] = []
    for m in messages:
        i = position.get(id(m))
        if i is None:
            i = at + len(copies)
            copies.append(m)
        picks.append(i)
    chars = sum(map(message_chars, copies)) + (message_chars(notice) if notice is not None else 0)
    return Head(at, picks, copies, notice, shortened, dropped, protected, chars)


@dataclass
class _Entry:
    check: Any
    history: HistoryKey
    head: Head


_SIZE = 64
_CHARS = 16_000_000
"""At most this many characters of edited copies are kept, whatever the number of heads."""
_heads: OrderedDict[Hashable, _Entry] = OrderedDict()
_heads_chars = 0
_lock = threading.Lock()
_DEREF = weakref.ref.__call__


def _slot(messages: Sequence[BaseMessage], length: int, key: Hashable) -> Hashable:
    return (key, length, message_key(messages[0]), message_key(messages[length - 1]))


def recall_head(messages: Sequence[BaseMessage], length: int, key: Hashable, check: Any = None) -> Head | None:
    """Return the head remembered under ``key`` (and an equal ``check``) for a history starting with ``messages[:length]``, else None."""
    if length == 0:
        return None
    slot = _slot(messages, length, key)
    with _lock:
        entry = _heads.get(slot)
        if entry is not None:
            _heads.move_to_end(slot)
    if entry is None or entry.check != check:
        return None
    if all(map(operator.is_, map(_DEREF, entry.history.refs), messages[:length])):
        return entry.head
    history = history_key(messages[:length])
    if history.keys != entry.history.keys:
        return None
    entry.history = history  # equal objects: found by identity next time
    return entry.head


def remember_head(messages: Sequence[BaseMessage], length: int, key: Hashable, head: Head, check: Any = None) -> None:
    """Remember ``head``, built from ``messages[:length]``, under ``key`` and ``check``, unless it holds too many characters."""
    global _heads_chars
    if length == 0 or head.chars > _CHARS:
        return
    slot = _slot(messages, length, key)
    entry = _Entry(check, history_key(messages[:length]), head)
    with _lock:
        replaced = _heads.pop(slot, None)
        if replaced is not None:
            _heads_chars -= replaced.head.chars
        _heads[slot] = entry
        _heads_chars += head.chars
        while len(_heads) > _SIZE or _heads_chars > _CHARS:
            _heads_chars -= _heads.popitem(last=False)[1].head.chars


def apply_frozen(messages: list[BaseMessage], index: ToolIndex, fates: Mapping[int, Fate]) -> list[BaseMessage]:
    """Return ``messages`` with ``fates`` applied (a call and its output share one), reusing the compacted head of an earlier call.

    Only the head up to the last shortened or dropped output changes, the same way every
    call of an epoch, so it is compacted once and reused.
    """
    if not fates:
        return list(messages)
    end = max(index.calls[number].output_index or 0 for number in fates) + 1  # fates name answered calls only
    key = "apply_frozen"
    head = recall_head(messages, end, key, fates)
    if head is None:
        head_in = messages[:end]
        head_out = apply_fates(head_in, index, {number: (fate, fate) for number, fate in fates.items()})
        remember_head(messages, end, key, encode_head(head_in, end, head_out), dict(fates))
        return head_out + messages[end:]
    return head.messages(messages) + messages[end:]


def clear_caches() -> None:
    """Forget every remembered head (for measurements; results never depend on them)."""
    global _heads_chars
    with _lock:
        _heads.clear()
        _heads_chars = 0
