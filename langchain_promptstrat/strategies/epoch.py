"""shorten_tools_epoch and shorten_tools_epoch_increment: compaction frozen for an epoch.

Providers cache the longest prompt prefix they have seen. ``shorten_tools`` moves its
boundary with every new call, so the prefix changes every turn and the cache never hits.
These strategies freeze the boundary for a window of calls (an epoch): within an epoch the
compacted prefix is byte-identical from one model call to the next.

The rule, in the reference's terms. ``T`` is the number of tool outputs; a call shares the
position of its output, 1 = newest. Once ``T`` passes ``epoch_tool_call_threshold`` the
boundary is pinned at ``pinned_total`` and only moves when an epoch is full::

    new_calls   = T - pinned_total
    keep_full   = new_calls + epoch_full_tool_calls     positions 1..keep_full stay whole
    truncate_to = keep_full + compacted_window          then shortened (args 200, output 400)
                                                        older positions are dropped

Counted from the oldest output instead (the *forward* position, which never changes as the
conversation grows), the same rule reads: forward positions ``<= pinned_total - full`` are
frozen (shortened, the oldest of them dropped) and everything after stays whole. Only
``pinned_total`` and the compacted window decide the frozen regions, which is why the
prefix holds still until one of them moves.

``shorten_tools_epoch`` uses fixed epochs and a fixed compacted window;
``shorten_tools_epoch_increment`` (the default) grows both as the conversation gets longer,
and more when an epoch holds repeated calls. In both, the most recent occurrence of a call
made two or more times stays whole, and when anything was shortened or dropped one notice
tells the model so.
"""

from __future__ import annotations

import bisect
import math
import operator
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, NoReturn, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_promptstrat._memo import SizedCache
from langchain_promptstrat.strategy import PromptStrategy
from langchain_promptstrat.messages import (
    Fate,
    ToolCallRecord,
    ToolIndex,
    apply_fates,
    index_tool_calls,
    is_real_user_message,
    leading_system_count,
    mark,
    mark_of,
    message_chars,
    tool_call_ids,
)
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings, settings_with_options

__all__ = [
    "NOTICE_KIND",
    "CompletedCall",
    "Decisions",
    "EpochState",
    "ShortenToolsEpoch",
    "ShortenToolsEpochIncrement",
    "apply_frozen",
    "clear_caches",
    "compacted_window",
    "compaction_notice",
    "compaction_notice_text",
    "completed_calls",
    "decide",
    "epoch_boundary",
    "increment_schedule",
    "is_compaction_notice",
    "notice_index",
    "prefix_change",
    "previous_total",
    "protected_calls",
    "region_fate",
    "repeat_positions",
    "shorten_tools_epoch",
    "shorten_tools_epoch_increment",
]

NOTICE_KIND = "compaction_notice"
"""The ``kind`` of this module's mark on the compaction notice."""


# --------------------------------------------------------------------------- where the boundary is


@dataclass(frozen=True)
class EpochState:
    """Where the boundary sits for ``total`` tool outputs: the epoch, its size, its windows.

    Positions (``keep_full``, ``truncate_to``) count from the newest output, as the
    reference does; edges (``frozen_edge``, ``drop_edge``) count from the oldest and stay
    put for the whole epoch (in the growing schedule a repeat may widen the window once).
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

    ``base + round((size - initial) * ratio)``, capped at the larger of the configured
    maximum and the base, so a bigger epoch (whose prefix is held longer) keeps more
    shortened history. ``round`` is half away from zero, as in the reference.
    """
    base = settings.epoch_compacted_tool_calls
    cap = max(settings.epoch_increment_max_compacted_tool_calls, base)
    extra = (size - settings.epoch_size) * settings.epoch_increment_compacted_growth_ratio
    rounded = math.floor(extra + 0.5) if extra >= 0 else -math.floor(-extra + 0.5)
    return min(base + rounded, cap)


def increment_schedule(total: int, repeats: Sequence[int], settings: Settings) -> EpochState | None:
    """Return the growing epoch ``total`` outputs fall in, or None when nothing is compacted.

    ``repeats`` are the forward positions of repeated calls, ascending
    (:func:`repeat_positions`). The schedule is walked from the first epoch: each epoch's
    nominal size grows by ``size_increase`` every ``epochs_per_increase`` epochs and by
    ``repeat_increase`` for every earlier epoch that held a repeat, capped at ``max_size``.
    A repeat inside an epoch's nominal part extends that epoch once by ``repeat_increase``:
    an agent that repeats itself is losing context it needs, so it gets a longer-lived,
    wider window. Only the nominal part counts, so a call arriving after an epoch's old end
    never moves a boundary already seen.
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


# --------------------------------------------------------------------------- repeated calls


class CompletedCall(NamedTuple):
    """A call that has its output: its number in the index, forward position and repeat key."""

    number: int
    forward: int
    """1-based from the oldest output; unlike the position it never changes as the list grows."""
    key: str


_FORWARD = operator.itemgetter(1)


def completed_calls(index: ToolIndex) -> list[CompletedCall]:
    """Return the completed calls of ``index``, oldest output first."""
    total = index.total_outputs
    out = [
        CompletedCall(number, total - record.position + 1, _repeat_key(record))
        for number, record in enumerate(index.calls)
        if record.position is not None
    ]
    out.sort(key=_FORWARD)  # outputs may answer a step's calls in any order
    return out


def repeat_positions(calls: Sequence[CompletedCall]) -> list[int]:
    """Return the forward position of every occurrence of a key after its first, ascending."""
    seen: set[str] = set()
    positions: list[int] = []
    for call in calls:
        if call.key in seen:
            positions.append(call.forward)
        else:
            seen.add(call.key)
    return positions


def protected_calls(calls: Sequence[CompletedCall]) -> frozenset[int]:
    """Return the numbers of the calls that stay whole: the newest occurrence of each repeated key.

    An agent that calls the same tool with the same arguments again is telling us it needs
    that result; keeping its newest occurrence whole stops it from asking a third time.
    """
    newest: dict[str, int] = {}
    count: dict[str, int] = {}
    for call in calls:
        newest[call.key] = call.number
        count[call.key] = count.get(call.key, 0) + 1
    return frozenset(newest[k] for k, n in count.items() if n >= 2)


# --------------------------------------------------------------------------- decisions


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


def decide(calls: Sequence[CompletedCall], state: EpochState | None) -> Decisions:
    """Return the fate of each of ``calls`` (oldest output first) under ``state``."""
    if state is None:
        return Decisions(None, {}, frozenset(), 0, 0)
    protect = protected_calls(calls)
    frozen_edge, drop_edge = state.frozen_edge, state.drop_edge
    fates: dict[int, Fate] = {}
    rescued: set[int] = set()
    shortened = dropped = 0
    for number, forward, _ in calls:
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
    calls: Sequence[CompletedCall], before: Decisions, after: Decisions, *, before_total: int
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


def _pinned(state: EpochState | None) -> int | None:
    return state.pinned_total if state is not None else None


# --------------------------------------------------------------------------- the notice


def _calls(n: int) -> str:
    return f"{n} older tool call and its result" if n == 1 else f"{n} older tool calls and their results"


def compaction_notice_text(shortened: int, dropped: int) -> str:
    """Return the notice's words for ``shortened`` and ``dropped`` calls; the same counts give the same text."""
    return (
        "[Context compacted] This conversation is long, so older tool activity was compacted before "
        f"this request: {_calls(shortened)} {'was' if shortened == 1 else 'were'} shortened (a cut value "
        f"shows its original length and an md5 prefix), and {_calls(dropped)} "
        f"{'was' if dropped == 1 else 'were'} removed. A result that is missing or cut short here does "
        "not mean the tool never ran: it ran, and its result was seen at the time. Do not repeat a call "
        "only because an older occurrence is no longer visible; call a tool again only when you need "
        "its result now."
    )


def compaction_notice(shortened: int, dropped: int, *, strategy: str) -> HumanMessage:
    """Return the marked user-role notice telling the model what compaction did.

    It is a user message because every provider accepts one after tool results, and it is
    marked as a notice so no strategy ever takes it for something a person wrote.
    """
    message = HumanMessage(compaction_notice_text(shortened, dropped))
    return mark(message, NOTICE_KIND, notice=True, strategy=strategy, shortened=shortened, dropped=dropped)


def is_compaction_notice(message: BaseMessage) -> bool:
    """Return whether ``message`` is a compaction notice written by an epoch strategy."""
    if not isinstance(message, HumanMessage):
        return False
    m = mark_of(message)
    return m is not None and m.get("kind") == NOTICE_KIND


def notice_index(messages: Sequence[BaseMessage]) -> int:
    """Return where the notice goes in a compacted list: right after the first step that still calls a tool.

    After that step's last output the notice never separates a call from its output, it is
    normally followed by an assistant turn (as strict-alternation chat templates want), and
    it sits in the frozen part of the prompt, so it moves only when the frozen regions do.
    Without such a step: after the system block and the first user message.
    """
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage) and tool_call_ids(message):
            j = i + 1
            while j < len(messages) and isinstance(messages[j], ToolMessage):
                j += 1
            return j
    i = leading_system_count(messages)
    if i < len(messages) and is_real_user_message(messages[i]):
        i += 1
    return i


# --------------------------------------------------------------------------- caches
#
# Every call of an epoch takes the same decisions about the same old messages, so that
# work is remembered: the repeat key of each arguments object, and the compacted head of
# each conversation. Both caches are keyed by object identity and check it on a hit; they
# rely on messages not being edited in place, which this package assumes throughout
# (LangChain and LangGraph replace messages, they do not mutate them). Both are bounded
# (the key cache by the size of what it holds) and thread-safe, the head cache holds the input messages only weakly (a finished
# conversation is not kept alive), and neither changes a result: a miss recomputes
# exactly what a hit returns. The shortened strings themselves are cached by content in
# ``truncate_string``, so even a miss (new message objects with the same content, as after
# reloading a checkpoint) does not hash or cut the same text twice.

_KEY_CACHE_CHARS = 2_000_000
_key_cache: SizedCache[int, tuple[Any, str, str]] = SizedCache(_KEY_CACHE_CHARS)


def _repeat_key(record: ToolCallRecord) -> str:
    """Return ``record.key``, serialising each arguments object once instead of on every call.

    The entry holds the arguments object (so its id cannot be reused while it is cached);
    the cache is bounded by the characters of the keys, which measure those arguments, so
    it cannot pin more than a few megabytes of a finished conversation.
    """
    args = record.args
    if not isinstance(args, (dict, list)):
        return record.key
    hit = _key_cache.get(id(args))
    if hit is not None and hit[0] is args and hit[1] == record.name:
        return hit[2]  # type: ignore[no-any-return]
    key = record.key
    _key_cache.put(id(args), (args, record.name, key), len(key) + 64)
    return key


class _Head(NamedTuple):
    sources: list[weakref.ref[BaseMessage]]
    fates: dict[int, Fate]
    output: list[BaseMessage | int]
    """The compacted head: edited copies, and the input index of each message passed through."""
    chars: int
    """Characters of the edited copies the entry holds (what it costs to keep)."""


_HEAD_CACHE_SIZE = 64
_HEAD_CACHE_CHARS = 16_000_000
"""At most this many characters of edited copies are kept, whatever the number of heads: a
server holding many long conversations keeps a bounded amount of memory."""
_head_cache: OrderedDict[tuple[int, int], _Head] = OrderedDict()
_head_cache_chars = 0
_head_lock = threading.Lock()


def _copies_chars(encoded: Sequence[BaseMessage | int]) -> int:
    """Return the characters of the edited copies in an encoded head (messages passed through cost nothing)."""
    return sum(message_chars(m) for m in encoded if not isinstance(m, int))


def apply_frozen(messages: list[BaseMessage], index: ToolIndex, fates: Mapping[int, Fate]) -> list[BaseMessage]:
    """Return ``messages`` with ``fates`` applied, reusing the compacted head of an earlier call.

    Only the head of the list, up to the last shortened or dropped output, changes; within
    an epoch it gets the same fates every call, so it is compacted once and then reused
    while its input messages are the same objects.
    """
    if not fates:
        return list(messages)
    end = max(cast(int, index.calls[number].output_index) for number in fates) + 1  # fates name answered calls only
    head_in = messages[:end]
    key = (id(messages[0]), end)
    with _head_lock:
        head = _head_cache.get(key)
        if head is not None:
            _head_cache.move_to_end(key)
    if head is not None and head.fates == fates and all(ref() is m for ref, m in zip(head.sources, head_in)):
        return [head_in[x] if isinstance(x, int) else x for x in head.output] + messages[end:]
    head_out = apply_fates(head_in, index, {number: (fate, fate) for number, fate in fates.items()})
    position = {id(m): i for i, m in enumerate(head_in)}
    encoded: list[BaseMessage | int] = [position.get(id(m), m) for m in head_out]
    chars = _copies_chars(encoded)
    if chars <= _HEAD_CACHE_CHARS:
        global _head_cache_chars
        with _head_lock:
            replaced = _head_cache.pop(key, None)
            if replaced is not None:
                _head_cache_chars -= replaced.chars
            _head_cache[key] = _Head([weakref.ref(m) for m in head_in], dict(fates), encoded, chars)
            _head_cache_chars += chars
            while len(_head_cache) > _HEAD_CACHE_SIZE or _head_cache_chars > _HEAD_CACHE_CHARS:
                _head_cache_chars -= _head_cache.popitem(last=False)[1].chars
    return head_out + messages[end:]


def clear_caches() -> None:
    """Forget every remembered key and compacted head (for measurements; results never depend on them)."""
    global _head_cache_chars
    _key_cache.clear()
    with _head_lock:
        _head_cache.clear()
        _head_cache_chars = 0


# --------------------------------------------------------------------------- the strategies


Schedule = Callable[[int, Sequence[int], Settings], "EpochState | None"]


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


def _decisions_before(
    calls: Sequence[CompletedCall],
    now: Decisions,
    repeats: Sequence[int],
    before_total: int,
    schedule: Schedule,
    settings: Settings,
) -> Decisions:
    """Return the decisions for the history that had ``before_total`` outputs.

    They are ``now``'s when the frozen regions are where they were and the newest calls
    repeat nothing: then no older call changed region or protection.
    """
    assert now.state is not None
    if before_total == now.state.total:
        return now
    state = schedule(before_total, repeats, settings)
    same_regions = state is not None and (state.frozen_edge, state.drop_edge) == (now.state.frozen_edge, now.state.drop_edge)
    if same_regions and not (repeats and repeats[-1] > before_total):
        return Decisions(state, now.fates, now.protected, now.shortened, now.dropped)
    return decide(calls[: bisect.bisect_right([c.forward for c in calls], before_total)], state)


def _compact(messages: Sequence[BaseMessage], settings: Settings, schedule: Schedule, name: str) -> Compacted:
    """Return the compacted messages and the report, with epochs from ``schedule``.

    A compaction notice already in the input (a compacted prompt that was stored) is left
    out first: its counts describe another state, and a fresh one is added when due.
    """
    source = [m for m in messages if not (isinstance(m, HumanMessage) and is_compaction_notice(m))]
    index = index_tool_calls(source)
    total = index.total_outputs
    if _inactive(total, settings):
        out = list(source)
        return Compacted(out, make_report(
            name, messages, out, epoch_index=None, pinned_total=None, new_calls=None, epoch_size=None,
            compacted_window=None, keep_full=None, truncate_to=None, repeats=None,
            boundary_moved=False, prefix_change=None, notice=False,
        ))

    calls = completed_calls(index)
    repeats = repeat_positions(calls)
    state = schedule(total, repeats, settings)
    now = decide(calls, state)

    before_total = previous_total(source, total)
    before = _decisions_before(calls, now, repeats, before_total, schedule, settings)

    out = apply_frozen(source, index, now.fates)
    notice = bool(now.shortened or now.dropped)
    if notice:
        out.insert(notice_index(out), compaction_notice(now.shortened, now.dropped, strategy=name))

    assert state is not None
    return Compacted(out, make_report(
        name, messages, out,
        shortened=now.shortened,
        dropped=now.dropped,
        protected=len(now.protected),
        epoch_index=state.epoch_index,
        pinned_total=state.pinned_total,
        new_calls=state.new_calls,
        epoch_size=state.epoch_size,
        compacted_window=state.compacted_window,
        keep_full=state.keep_full,
        truncate_to=state.truncate_to,
        repeats=len(repeats),
        boundary_moved=_pinned(before.state) != state.pinned_total,
        prefix_change=prefix_change(calls, before, now, before_total=before_total),
        notice=notice,
    ))


def _fixed(total: int, repeats: Sequence[int], settings: Settings) -> EpochState | None:
    return epoch_boundary(total, settings)


def shorten_tools_epoch(messages: Sequence[BaseMessage], /, *, settings: Settings) -> Compacted:
    """Return ``messages`` with old tool calls shortened and dropped behind a boundary frozen per epoch.

    Freezing the boundary keeps the compacted prefix byte-identical between model calls,
    which is what lets the provider's prompt cache hit. Epochs have a fixed size
    (``epoch_size``) and the compacted window is ``epoch_compacted_tool_calls``; see
    :func:`epoch_boundary`. The newest occurrence of a repeated call stays whole, and a
    marked notice follows the first kept step when anything was shortened or dropped.

    The report adds ``epoch_index``, ``pinned_total``, ``new_calls``, ``epoch_size``,
    ``compacted_window``, ``keep_full``, ``truncate_to``, ``repeats`` (repeated
    occurrences), ``protected``, ``notice``, and, compared with the prompt that produced the
    newest ``AIMessage`` (the previous model call of an agent loop), ``boundary_moved`` and
    ``prefix_change`` (None, ``boundary``, ``repeat`` or ``boundary+repeat``). Both are
    computed from the history itself, so the strategy keeps no memory between calls. When
    a user message is appended straight after tool outputs, with no model call in between,
    the comparison reaches one call further back and may repeat an earlier announcement;
    it never misses a change. Below the threshold the epoch figures and ``repeats`` are
    None (nothing was computed).
    """
    return _compact(messages, settings, _fixed, "shorten_tools_epoch")


def shorten_tools_epoch_increment(messages: Sequence[BaseMessage], /, *, settings: Settings) -> Compacted:
    """Return ``messages`` compacted like :func:`shorten_tools_epoch`, with epochs and window that grow.

    Long conversations keep more shortened history and move their boundary less often:
    the epoch grows every ``epoch_increment_epochs_per_increase`` epochs and when an epoch
    holds a repeated call, and the compacted window grows with it (see
    :func:`increment_schedule` and :func:`compacted_window`). The report is the same.
    """
    return _compact(messages, settings, increment_schedule, "shorten_tools_epoch_increment")


class ShortenToolsEpoch(PromptStrategy):
    """``shorten_tools_epoch``: cache-friendly compaction with fixed epochs.

    ``ShortenToolsEpoch(tool_call_threshold=50, epoch_size=20)``. Each option is the
    reference's ``epoch_*`` setting (environment variable ``EPOCH_SIZE`` or
    ``PROMPTSTRAT_EPOCH_SIZE``, ...): an option given here wins over ``settings``, which
    wins over the environment, which wins over the default. Stateless: one object serves
    any number of conversations at once.
    """

    strategy_name = "shorten_tools_epoch"
    option_keys: ClassVar[Mapping[str, str]] = {
        "tool_call_threshold": "epoch_tool_call_threshold",
        "full_tool_calls": "epoch_full_tool_calls",
        "compacted_tool_calls": "epoch_compacted_tool_calls",
        "epoch_size": "epoch_size",
    }
    """Option name -> settings key, for each option that is a setting."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        tool_call_threshold: int | None = None,
        full_tool_calls: int | None = None,
        compacted_tool_calls: int | None = None,
        epoch_size: int | None = None,
        **unknown: NoReturn,
    ) -> None:
        """Build the strategy; an option left at None comes from ``settings``, else the environment, else its default.

        Args:
            settings: Thresholds shared with other strategies (default: read from the
                environment now); the options below win over it.
            tool_call_threshold: No compaction at or below this many tool calls. Setting
                ``epoch_tool_call_threshold``, default 50.
            full_tool_calls: The most recent tool calls kept whole. Setting
                ``epoch_full_tool_calls``, default 20.
            compacted_tool_calls: Tool calls shortened before the whole ones; older ones are
                dropped. Setting ``epoch_compacted_tool_calls``, default 80.
            epoch_size: New tool calls before the boundary advances. Setting ``epoch_size``,
                default 20.

        Raises:
            ConfigError: A value is out of range, or a keyword is not one of these options.
        """
        super().__init__(settings_with_options(
            type(self), settings, self.option_keys, unknown,
            tool_call_threshold=tool_call_threshold, full_tool_calls=full_tool_calls,
            compacted_tool_calls=compacted_tool_calls, epoch_size=epoch_size,
        ))

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return :func:`shorten_tools_epoch` of ``messages`` with this strategy's settings."""
        return shorten_tools_epoch(messages, settings=self.settings)


class ShortenToolsEpochIncrement(PromptStrategy):
    """``shorten_tools_epoch_increment`` (the reference default): epochs and compacted window that grow.

    ``ShortenToolsEpochIncrement(epoch_size=20, max_size=60)``. The options of
    ``shorten_tools_epoch`` (``epoch_size`` is the initial size) plus those of the growth;
    each is the reference's setting (``epoch_*``, ``epoch_increment_*``; environment
    variable ``EPOCH_INCREMENT_MAX_SIZE`` or ``PROMPTSTRAT_EPOCH_INCREMENT_MAX_SIZE``, ...),
    with the same precedence: option > ``settings`` > environment > default. Stateless.
    """

    strategy_name = "shorten_tools_epoch_increment"
    option_keys: ClassVar[Mapping[str, str]] = {
        **ShortenToolsEpoch.option_keys,
        "epochs_per_increase": "epoch_increment_epochs_per_increase",
        "size_increase": "epoch_increment_size_increase",
        "repeat_increase": "epoch_increment_repeat_increase",
        "max_size": "epoch_increment_max_size",
        "compacted_growth_ratio": "epoch_increment_compacted_growth_ratio",
        "max_compacted_tool_calls": "epoch_increment_max_compacted_tool_calls",
    }
    """Option name -> settings key, for each option that is a setting."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        tool_call_threshold: int | None = None,
        full_tool_calls: int | None = None,
        compacted_tool_calls: int | None = None,
        epoch_size: int | None = None,
        epochs_per_increase: int | None = None,
        size_increase: int | None = None,
        repeat_increase: int | None = None,
        max_size: int | None = None,
        compacted_growth_ratio: float | None = None,
        max_compacted_tool_calls: int | None = None,
        **unknown: NoReturn,
    ) -> None:
        """Build the strategy; an option left at None comes from ``settings``, else the environment, else its default.

        Args:
            settings: Thresholds shared with other strategies (default: read from the
                environment now); the options below win over it.
            tool_call_threshold: No compaction at or below this many tool calls. Setting
                ``epoch_tool_call_threshold``, default 50.
            full_tool_calls: The most recent tool calls kept whole. Setting
                ``epoch_full_tool_calls``, default 20.
            compacted_tool_calls: Tool calls shortened before the whole ones at the first
                epoch size (the window then grows). Setting ``epoch_compacted_tool_calls``,
                default 80.
            epoch_size: The initial number of new tool calls before the boundary advances.
                Setting ``epoch_size``, default 20.
            epochs_per_increase: Completed epochs before the epoch grows (0: never).
                Setting ``epoch_increment_epochs_per_increase``, default 3.
            size_increase: Calls added to the epoch at each periodic increase. Setting
                ``epoch_increment_size_increase``, default 10.
            repeat_increase: Calls added to the epoch for each epoch that held a repeated
                call. Setting ``epoch_increment_repeat_increase``, default 10.
            max_size: Upper bound of the epoch's growth. Setting
                ``epoch_increment_max_size``, default 60.
            compacted_growth_ratio: Extra shortened calls kept per extra epoch call.
                Setting ``epoch_increment_compacted_growth_ratio``, default 2.0.
            max_compacted_tool_calls: Upper bound of the grown shortened window. Setting
                ``epoch_increment_max_compacted_tool_calls``, default 160.

        Raises:
            ConfigError: A value is out of range, or a keyword is not one of these options.
        """
        super().__init__(settings_with_options(
            type(self), settings, self.option_keys, unknown,
            tool_call_threshold=tool_call_threshold, full_tool_calls=full_tool_calls,
            compacted_tool_calls=compacted_tool_calls, epoch_size=epoch_size,
            epochs_per_increase=epochs_per_increase, size_increase=size_increase, repeat_increase=repeat_increase,
            max_size=max_size, compacted_growth_ratio=compacted_growth_ratio,
            max_compacted_tool_calls=max_compacted_tool_calls,
        ))

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return :func:`shorten_tools_epoch_increment` of ``messages`` with this strategy's settings."""
        return shorten_tools_epoch_increment(messages, settings=self.settings)
