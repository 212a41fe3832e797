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

**Under a context ceiling** (what :class:`ShortenToolsEpochStable` always applies, see
:mod:`langchain_promptstrat.ceiling`) the call count is not enough: a few large outputs fill
any window long before the threshold. The model calls of the history are replayed (the
ladder's :func:`~langchain_promptstrat.strategies.ladder.call_points`, memoised per strategy
object), and at each one the estimated prompt (prefix sums of each call's cost whole and
shortened) is compared with the ceiling. Crossing it is an *event*: the compaction edge
advances early to the end of the step before the newest one (only what follows the old edge
is re-sent), and if the prompt is still above ``stable_low_ratio`` of the ceiling steps are
dropped in one chunk down to ``stable_front_ratio``, so the front changes rarely.
The edges only ever move forward, so the prompt is still a function of the history alone.

A drop does not start at the oldest step. The first one fixes a *kept head*: the oldest
(shortened) steps that fit in ``stable_head_ratio`` of the ceiling. Every drop removes a
chunk right after the head, so the system block, the task and the head stay the cached
prefix of every later prompt; a drop re-sends only what follows the head, which is what
makes a low watermark of 60% affordable (with the whole prompt re-sent at each drop, 40%
was the most the price allowed). In forward positions, with a ceiling::

    1 .. head_edge                    shortened   the kept head: fixed at the first drop
    head_edge+1 .. drop_edge          dropped     grows at each drop, by a chunk
    drop_edge+1 .. compaction_edge    shortened
    compaction_edge+1 .. T            whole
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import operator
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, NoReturn

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat._memo import IdentityMemo
from langchain_promptstrat.strategy import PromptStrategy
from langchain_promptstrat.ceiling import Ceiling, MaxTokens, check_max_tokens, resolve_ceiling
from langchain_promptstrat.errors import ContextWindowError
from langchain_promptstrat.messages import (
    CompletedCallEntry,
    Fate,
    GrowingToolIndex,
    ToolCallRecord,
    ToolIndex,
    edit_ai_message,
    grow_tool_index,
    index_tool_calls,
    is_real_user_message,
    leading_system_count,
    message_chars,
    shorten_arguments,
    shorten_tool_output,
    task_index,
)
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings, settings_with_options
from langchain_promptstrat.strategies.ladder import CountTokens, LadderPass, ladder_pass, message_counter, run_plan
from langchain_promptstrat.tokens import as_token_counter, missing_call_id_tokens, tool_schema_tokens
from langchain_promptstrat.truncation import DEFAULT_OUTPUT_SIZE, shorten_string
from langchain_promptstrat.strategies.epoch import (
    CompletedCall,
    Decisions,
    EpochState,
    apply_frozen,
    previous_total,
    compaction_notice,
    epoch_boundary,
    is_compaction_notice,
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


# --------------------------------------------------------------------------- the ceiling


NOTICE_TOKENS = 90
"""What the estimate reserves for the compaction notice (its text is about 80 tokens)."""


class _Costs:
    """Per-message token costs for one counter: content, tool calls and call ids, remembered by message object.

    The memos hold messages weakly and at most ``limit`` of them (a strategy object lives as
    long as the hook or middleware that holds it, so it must never keep a finished
    conversation alive); they never change a result, only how fast it comes.
    """

    limit = 200_000

    def __init__(self, counter: CountTokens) -> None:
        self.counter = counter
        self.count_one = message_counter(counter)
        self._seen: IdentityMemo[int] = IdentityMemo(self.limit)
        self._short: IdentityMemo[int] = IdentityMemo(self.limit)
        self.lock = threading.Lock()

    def whole(self, message: BaseMessage) -> int:
        tokens = self._seen.get(message)
        if tokens is None:
            tokens = self.count_one(message) + missing_call_id_tokens(message, self.counter)
            self._seen.put(message, tokens)
        return tokens

    def shortened(self, message: BaseMessage) -> int:
        """Return the tokens of ``message`` once shortened: a tool output, or an assistant message with every call shortened."""
        tokens = self._short.get(message)
        if tokens is not None:
            return tokens
        if isinstance(message, ToolMessage):
            short: BaseMessage | None = shorten_tool_output(message)
        else:
            short = edit_ai_message(message, shorten=[c.id for c in index_tool_calls([message]).calls])  # type: ignore[arg-type]
        tokens = self.whole(short) if short is not None else 0
        self._short.put(message, tokens)
        return tokens

    def __call__(self, messages: Sequence[BaseMessage], /) -> int:
        return sum(map(self.whole, messages))


@dataclass
class _Bounded:
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
    """The tool-call index of ``history``: a replay that resumes extends it by the new messages (see :func:`_replay`)."""
    frozen: _Frozen | None = None
    """The compacted head of the last prompt built from this replay (see :class:`_Frozen`); it never changes a result."""
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

    def copy(self) -> _Bounded:
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


def _grow(replay: _Bounded, messages: Sequence[BaseMessage], start: int, stop: int, index: GrowingToolIndex, costs: _Costs, task: int | None, system: int) -> None:
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


def _completed_in(index: ToolIndex, ai_index: int) -> int:
    counts: dict[int, int] = index.completed_per_ai  # type: ignore[attr-defined]
    return counts.get(ai_index, 0)


def _end_edges(replay: _Bounded) -> list[int]:
    """Return every step end, the newest output included."""
    t = replay.total
    return replay.ends + [t] if t and (not replay.ends or replay.ends[-1] != t) else list(replay.ends)


def _event(replay: _Bounded, settings: Settings) -> None:
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


def _replay_point(replay: _Bounded, settings: Settings) -> None:
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


def _bounded_decisions(calls: Sequence[CompletedCallEntry], replay: _Bounded) -> tuple[dict[int, Fate], frozenset[int]]:
    """Return the fate of each frozen call and the calls rescued as the newest occurrence of a repeat."""
    edge, head, drop, token_drop = replay.compaction_edge, replay.head, replay.drop_edge, replay.token_drop_edge
    horizon = replay.horizon()
    occurrences: dict[str, list[int]] = {}
    for call in calls:
        if call.forward > horizon:
            break
        occurrences.setdefault(call.key, []).append(call.forward)
    fates: dict[int, Fate] = {}
    rescued: set[int] = set()
    for number, forward, key in calls:
        if forward > edge:
            break
        seen = occurrences.get(key)
        if seen and seen[0] < forward and not head < forward <= token_drop:
            later = bisect.bisect_right(seen, forward)
            if later == len(seen) or seen[later] > replay.decided_at(forward):
                rescued.add(number)
                continue
        fates[number] = Fate.DROP if head < forward <= drop else Fate.SHORTEN
    return fates, frozenset(rescued)


def _really_shortened(source: Sequence[BaseMessage], index: ToolIndex, fates: dict[int, Fate]) -> int:
    """Return how many calls marked SHORTEN change when shortened (output or arguments): the notice counts only those."""
    changed = 0
    for number, fate in fates.items():
        if fate is not Fate.SHORTEN:
            continue
        record = index.calls[number]
        output = source[record.output_index]  # type: ignore[index]
        content = output.content
        if isinstance(content, str):  # the common case, without building the shortened copy
            if shorten_string(content, DEFAULT_OUTPUT_SIZE) is not content:
                changed += 1
                continue
        elif shorten_tool_output(output) is not output:  # type: ignore[arg-type]
            changed += 1
            continue
        if shorten_arguments(record.args) is not record.args:
            changed += 1
    return changed


def _without_debris(
    source: list[BaseMessage], index: ToolIndex, fates: dict[int, Fate], drop_end: int, keep: set[int], head_end: int = 0
) -> tuple[list[BaseMessage], ToolIndex, dict[int, Fate]]:
    """Return ``source`` without the assistant messages whose calls are all dropped (their narration goes with them) and the loose messages from ``head_end`` to ``drop_end``.

    ``keep`` holds indices never removed (the task, the newest user message). Fates are
    carried over to the new list's index by call id.
    """
    dropped_by_ai: dict[int, int] = {}
    for number, fate in fates.items():
        if fate is Fate.DROP:
            ai = index.calls[number].ai_index
            dropped_by_ai[ai] = dropped_by_ai.get(ai, 0) + 1
    gone = [ai for ai, n in dropped_by_ai.items() if n == _completed_in(index, ai) and len(_calls_of(index, ai)) == n]
    remove = set(gone)
    for ai in gone:
        remove.update(r.output_index for r in _calls_of(index, ai) if r.output_index is not None)
    for i in range(head_end, drop_end):
        m = source[i]
        if i in keep or i in remove or isinstance(m, (SystemMessage, ToolMessage)):
            continue
        if isinstance(m, AIMessage) and _completed_in(index, i):
            continue
        remove.add(i)
    if not remove:
        return source, index, fates
    reduced = [m for i, m in enumerate(source) if i not in remove]
    # the index of the reduced list, by shifting: indices move down by what was removed before them
    gone_sorted = sorted(remove)
    new_index = ToolIndex()
    new_fates: dict[int, Fate] = {}
    for number, record in enumerate(index.calls):
        if record.ai_index in remove:
            continue
        output = record.output_index
        if output is not None and output in remove:  # pragma: no cover - a kept call's output is never removed
            continue
        shifted = ToolCallRecord(  # built directly: dataclasses.replace is the slow part for a thousand calls
            record.id, record.name, record.args,
            record.ai_index - bisect.bisect_left(gone_sorted, record.ai_index),
            None if output is None else output - bisect.bisect_left(gone_sorted, output),
            record.position,
        )
        if number in fates:
            new_fates[len(new_index.calls)] = fates[number]
        new_index.calls.append(shifted)
        if shifted.output_index is not None:
            new_index.by_output_index[shifted.output_index] = shifted
    new_index.total_outputs = index.total_outputs - sum(1 for i in remove if isinstance(source[i], ToolMessage))
    _count_completed(new_index)
    return reduced, new_index, new_fates


def _calls_of(index: ToolIndex, ai_index: int) -> list[ToolCallRecord]:
    return index.calls_per_ai.get(ai_index, [])  # type: ignore[attr-defined, no-any-return]


def _count_completed(index: ToolIndex) -> ToolIndex:
    per_ai: dict[int, int] = {}
    calls_per_ai: dict[int, list[ToolCallRecord]] = {}
    for record in index.calls:
        calls_per_ai.setdefault(record.ai_index, []).append(record)
        if record.output_index is not None:
            per_ai[record.ai_index] = per_ai.get(record.ai_index, 0) + 1
    index.completed_per_ai = per_ai  # type: ignore[attr-defined]
    index.calls_per_ai = calls_per_ai  # type: ignore[attr-defined]
    return index


_DEREF = weakref.ref.__call__
"""Dereference a weak reference, as a C function ``map`` can call without a Python frame."""


class _BoundedMemo:
    """The recent replays of one strategy object (never changes a result; lets a growing conversation resume)."""

    size = 8

    def __init__(self) -> None:
        self._items: list[_Bounded] = []
        self._lock = threading.Lock()
        self.costs: _Costs | None = None
        """Per-message token costs for the counter last used (a cache: never changes a result)."""

    def recall(self, messages: Sequence[BaseMessage], budget: int) -> _Bounded | None:
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

    def remember(self, replay: _Bounded) -> None:
        with self._lock:
            self._items = [*self._items[-(self.size - 1):], replay]


def _replay(source: list[BaseMessage], budget: int, settings: Settings, costs: _Costs, memo: _BoundedMemo | None) -> _Bounded:
    """Return the replay of ``source``'s call points under ``budget``: a pure function of the history.

    A replay remembered for a call point of ``source`` whose history is the start of
    ``source`` (same message objects) resumes: only the messages after it are indexed,
    counted and replayed. That is safe because every prefix of a history has the same call
    points up to its length and the replay of a call point reads nothing after it, so the
    resumed replay is the one a replay from the first message would reach.
    """
    start = memo.recall(source, budget) if memo is not None else None
    replay = start.copy() if start is not None else _Bounded((), budget)
    done = len(replay.history)
    index = replay.index = replay.index.extend(source)
    task = task_index(source)
    system = leading_system_count(source)
    for point in _call_points_after(source, done):
        _grow(replay, source, done, point, index, costs, task, system)
        done = point
        _replay_point(replay, settings)
        replay.recent = [*replay.recent[-(_RECENT_POINTS - 1):], (point, replay.compaction_edge, replay.drop_edge)]
    replay.previous_edges = _edges_before(replay, _previous_length(source))
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


def _history_length(replay: _Bounded) -> int:
    return len(replay.history)


_RECENT_POINTS = 16


def _edges_before(replay: _Bounded, previous: int) -> tuple[int, int]:
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


def _floor_error(source: Sequence[BaseMessage], costs: _Costs, budget: int, extra: int, ceiling: int) -> ContextWindowError:
    system = leading_system_count(source)
    task = task_index(source)
    system_tokens = costs(source[:system]) + extra
    task_tokens = costs([source[task]]) if task is not None else 0
    return ContextWindowError(
        f"the system prompt ({system_tokens:,} tokens, bound tools included) and the task ({task_tokens:,} tokens) "
        f"alone exceed the context ceiling of {ceiling:,} tokens ({budget + extra:,} after the counter's margin); "
        "raise max_tokens or shorten the system prompt"
    )


def _last_resort(prompt: list[BaseMessage], budget: int, costs: _Costs) -> list[BaseMessage]:
    """Return ``prompt`` with the tool outputs still over budget shortened, largest first (one giant output)."""
    order = sorted((i for i, m in enumerate(prompt) if isinstance(m, ToolMessage)), key=lambda i: -costs.whole(prompt[i]))
    out = list(prompt)
    tokens = costs(out)
    for i in order:
        if tokens <= budget:
            break
        short = shorten_tool_output(out[i])  # type: ignore[arg-type]
        tokens += costs.whole(short) - costs.whole(out[i])
        out[i] = short
    return out


# --------------------------------------------------------------------------- the strategy


def _inactive_details() -> dict[str, Any]:
    return dict(
        epoch_index=None, pinned_total=None, new_calls=None, epoch_size=None, keep_full=None,
        compaction_edge=None, drop_edge=None, head_edge=None, front_total=None, repeats=None,
        boundary_moved=False, front_moved=False, prefix_change=None, prefix_change_reason=None, notice=False,
    )


def shorten_tools_epoch_stable(
    messages: Sequence[BaseMessage],
    /,
    *,
    settings: Settings,
    max_tokens: int | None = None,
    extra_tokens: int = 0,
    token_counter: Any = None,
    ceiling_source: str | None = None,
    _memo: _BoundedMemo | None = None,
    _compare: bool = True,
) -> Compacted:
    """Return ``messages`` compacted in front-stable epochs, and under ``max_tokens`` when a ceiling is given.

    Without a ceiling, the call-count design described in the module docstring. With
    ``max_tokens``, the prompt plus ``extra_tokens`` (what the provider also receives: the
    system prompt kept outside ``messages``, the bound tools' schemas) stays under the
    ceiling minus ``stable_token_margin`` for the counter's error. The model calls of the
    history are replayed (:func:`~langchain_promptstrat.strategies.ladder.call_points`); when a
    call's prompt would cross the ceiling, the compaction edge advances early, down to the
    newest calls that fit in ``stable_whole_ratio`` of the ceiling (at most
    ``stable_full_tool_calls``, always the newest step), and, if the prompt is still above
    ``stable_low_ratio`` of the ceiling, frozen steps are dropped in one chunk down to
    ``stable_front_ratio``: the steps right after the kept head (the oldest steps within
    ``stable_head_ratio`` of the ceiling, fixed at the first drop), so the head stays cached.
    Between these events the front of the prompt does not change.
    A dropped step takes its assistant message's narration with it; the run's task (the first
    real user message) and the newest user message are never dropped. Where the edges cannot
    fit (a giant output among the newest calls), the ladder's ``tool_results`` and
    ``sliding_window`` rungs run on the prompt, then the largest outputs are shortened;
    :class:`ContextWindowError` is raised when the system prompt and the task alone are over.

    The report adds ``epoch_index``, ``pinned_total``, ``new_calls``, ``epoch_size``,
    ``keep_full``, ``compaction_edge``, ``drop_edge``, ``head_edge`` (with a ceiling: the kept
    head's last forward position, 0 before the first drop), ``front_total`` (the pinned total since
    which the front is unchanged), ``repeats``, ``protected``, ``notice``, and, compared with
    the prompt of the previous model call, ``boundary_moved`` (compaction edge),
    ``front_moved`` (drop edge), ``prefix_change`` (None, ``front`` or ``middle``) and
    ``prefix_change_reason`` (None, ``compaction_started``, ``front_drop`` or ``advance``);
    with a ceiling also ``ceiling``, ``ceiling_source``, ``budget``, ``tokens_after``
    (estimated as sent, margin not included), ``met``, ``ceiling_events``, ``ceiling_event``
    (this call) and ``fallback``. Stateless: everything is computed from the history.
    """
    source = _without_notices(messages)
    if max_tokens is None:
        budget = 1 << 62
        counter: CountTokens = as_token_counter(token_counter)
    else:
        budget = int(max_tokens * (1 - settings.stable_token_margin)) - extra_tokens
        counter = as_token_counter(token_counter)
    costs = _Costs(counter) if _memo is None else _memo_costs(_memo, counter)
    if max_tokens is not None and budget <= 0:
        raise _floor_error(source, costs, max(budget, 0), extra_tokens, max_tokens)

    if max_tokens is None:
        index = grow_tool_index(source)
        total = index.total_outputs
        replay = _Bounded((), budget, index)
        state = stable_boundary(total, settings)
        if state is not None:
            replay.compaction_edge, replay.drop_edge, replay.front_total = state.compaction_edge, state.drop_edge, state.front_total
            replay.segments = _count_segments(state)
            before_state = stable_boundary(previous_total(source, total), settings)
            replay.previous_edges = (before_state.compaction_edge, before_state.drop_edge) if before_state else (0, 0)
        replay.whole = [0] * (total + 1)
    else:
        replay = _replay(source, budget, settings, costs, _memo)

    ceiling_details: dict[str, Any] = {}
    details: dict[str, Any]
    frozen: _Frozen | None = None
    if replay.compaction_edge == 0 and replay.drop_edge == 0:
        out = list(source)
        details = _inactive_details()
    else:
        out, details, frozen = _frozen_prompt(source, replay, settings, remember=_memo is not None)
        if _compare and (details["boundary_moved"] or details["front_moved"]):
            # edges that moved over calls whose fate stays the same change nothing: say so only when bytes changed
            before = _previous_history(source)
            previous = shorten_tools_epoch_stable(
                before, settings=settings, max_tokens=max_tokens, extra_tokens=extra_tokens,
                token_counter=token_counter, ceiling_source=ceiling_source, _memo=_memo, _compare=False,
            ).messages
            if len(previous) <= len(out) and all(a is b or a == b for a, b in zip(previous, out)):
                details["prefix_change"] = details["prefix_change_reason"] = None
    if max_tokens is not None:
        if frozen is not None:  # the head's tokens are remembered with it: count only the messages after it
            tokens = frozen.tokens(costs, source) + sum(map(costs.whole, source[frozen.at:])) + extra_tokens
        else:
            tokens = costs(out) + extra_tokens
        fallback = None
        if tokens - extra_tokens > budget:
            out, fallback = _fallback(source, out, budget, costs, extra_tokens, max_tokens, settings)
            tokens = costs(out) + extra_tokens
        ceiling_details = dict(
            previous_compaction_edge=replay.prior_edge,
            ceiling=max_tokens, ceiling_source=ceiling_source or "max_tokens argument", budget=budget + extra_tokens,
            extra_tokens=extra_tokens, tokens_after=tokens, met=tokens <= budget + extra_tokens,
            ceiling_events=replay.events, ceiling_event=replay.event_here, fallback=fallback,
        )
    return Compacted(out, make_report(STRATEGY_NAME, messages, out, **details, **ceiling_details))


def _memo_costs(memo: _BoundedMemo, counter: CountTokens) -> _Costs:
    costs = memo.costs
    if costs is None or costs.counter is not counter:
        costs = memo.costs = _Costs(counter)
    return costs


def _count_segments(state: StableState) -> list[tuple[int, int]]:
    """Return the freeze segments of the count-only design: each epoch's calls were decided at its pinned total."""
    e = state.epoch
    segments = []
    for back in range(e.epoch_index, -1, -1):
        edge = state.compaction_edge - back * e.epoch_size
        if edge > 0:
            segments.append((edge, e.pinned_total - back * e.epoch_size))
    return segments


_FROZEN_CHARS = 1_000_000
"""A compacted head whose edited copies hold more characters than this is not remembered (it is rebuilt at each call):
this bounds what each replay in a strategy's memo holds besides indices and counts."""


@dataclass
class _Frozen:
    """The compacted head of a prompt: the frozen part of ``source[:at]`` as sent, with its notice and counts.

    Between ceiling events and epoch advances the edges do not move, and the prompt is the
    same head followed by the history's newest messages, unchanged: ``head + [notice] +
    source[at:]``, ``at`` being the end of the step of the compaction edge. The head is a
    function of the messages before ``at`` and of the edges (:func:`_frozen_key`): every
    decision reads only calls at or below the compaction edge and, for repeats, calls up
    to the replay's horizon, which the key fixes; the notice's counts are counted over the
    same calls; the loose messages dropped lie before the drop edge's step end. So a
    replay that resumes from one whose history starts the new one (same message objects,
    checked by the memo) and has the same key reuses its head instead of deciding every
    call again. It holds no message of the caller: the messages passed through are indices
    into ``source``; the edited copies (which, like every edited copy, share their unchanged
    fields with the originals) and the notice are its own, bounded by :data:`_FROZEN_CHARS`.
    Reusing the same copies and notice objects also lets the report measure only the new
    messages of a prompt that extends the previous one.
    """

    key: tuple[Any, ...]
    at: int
    picks: list[int]
    """The head: ``(source[:at] + copies)[pick]`` for each pick."""
    copies: list[BaseMessage]
    notice: BaseMessage | None
    shortened: int
    dropped: int
    protected: int
    chars: int
    """Characters of the copies and the notice (what remembering this head costs)."""
    _tokens: tuple[_Costs, int] | None = None

    def head(self, source: list[BaseMessage]) -> list[BaseMessage]:
        """Return the compacted head for ``source`` (whose first ``at`` messages are those it was built from)."""
        pool = source[: self.at]
        pool += self.copies
        return list(map(pool.__getitem__, self.picks))

    def prompt(self, source: list[BaseMessage]) -> list[BaseMessage]:
        out = self.head(source)
        if self.notice is not None:
            out.append(self.notice)
        out += source[self.at:]
        return out

    def tokens(self, costs: _Costs, source: list[BaseMessage]) -> int:
        """Return the tokens of the head and the notice (remembered for the last counter asked)."""
        known = self._tokens
        if known is not None and known[0] is costs:
            return known[1]
        tokens = costs(self.head(source)) + (costs.whole(self.notice) if self.notice is not None else 0)
        self._tokens = (costs, tokens)
        return tokens


def _frozen_key(replay: _Bounded) -> tuple[Any, ...] | None:
    """Return what the compacted head depends on besides the messages before it, or None when it also depends on the total.

    :meth:`_Bounded.decided_at` reads the total only for a call above every segment's edge;
    the last segment is where the compaction edge moved to, so that never happens for a
    frozen call, and the guard only keeps that reasoning checked.
    """
    segments = tuple(replay.segments)
    if replay.compaction_edge and (not segments or max(edge for edge, _ in segments) < replay.compaction_edge):
        return None
    return (replay.compaction_edge, replay.drop_edge, replay.token_drop_edge, replay.head, replay.front_total, segments)


class _Head(NamedTuple):
    messages: list[BaseMessage]
    """The frozen part of ``source[:at]`` as sent (before the notice)."""
    notice: BaseMessage | None
    shortened: int
    dropped: int
    protected: int


def _freeze(source: list[BaseMessage], index: GrowingToolIndex, replay: _Bounded, at: int) -> _Head:
    """Return the compacted head of ``source`` under the replay's edges: decide each frozen call, drop the debris, apply the fates."""
    fates, rescued = _bounded_decisions(index.completed, replay)
    view = _count_completed(index.tool_index())
    dropped = sum(1 for f in fates.values() if f is Fate.DROP)
    shortened = _really_shortened(source, view, fates)
    # loose messages (user turns, harness messages, plain assistant text) go only with a ceiling-driven front drop;
    # the task and the newest user message of the dropped span stay (a function of the drop edge, so stable between drops)
    outputs = index.outputs
    drop_end = _step_end(source, outputs, replay.token_drop_edge) if replay.token_drop_edge else 0
    head_end = _step_end(source, outputs, replay.head) if replay.head and drop_end else 0
    task, anchor = task_index(source), _newest_user(source[:drop_end])
    keep = {i for i in (task, anchor) if i is not None}
    reduced, reduced_index, reduced_fates = _without_debris(source, view, fates, drop_end, keep, head_end)
    out = apply_frozen(reduced, reduced_index, reduced_fates)
    removed = len(source) - len(out)  # everything removed sits before ``at``
    notice = compaction_notice(shortened, dropped, strategy=STRATEGY_NAME) if shortened > 0 or dropped > 0 else None
    return _Head(out[: at - removed], notice, shortened, dropped, len(rescued))


def _remembered(source: list[BaseMessage], at: int, head: _Head, key: tuple[Any, ...]) -> _Frozen:
    """Return ``head`` as a :class:`_Frozen`: the messages passed through as indices into ``source``, the copies held."""
    position = {id(m): i for i, m in enumerate(source[:at])}
    picks: list[int] = []
    copies: list[BaseMessage] = []
    for m in head.messages:
        i = position.get(id(m))
        if i is None or source[i] is not m:
            i = at + len(copies)
            copies.append(m)
        picks.append(i)
    chars = sum(map(message_chars, copies)) + (message_chars(head.notice) if head.notice is not None else 0)
    return _Frozen(key, at, picks, copies, head.notice, head.shortened, head.dropped, head.protected, chars)


def _frozen_prompt(source: list[BaseMessage], replay: _Bounded, settings: Settings, remember: bool) -> tuple[list[BaseMessage], dict[str, Any], _Frozen | None]:
    """Return the prompt with the replay's edges applied, the notice placed, the report details and the remembered head.

    The head is the one the replay remembers when the edges are those it was built for
    (see :class:`_Frozen`), else it is built, and remembered when ``remember`` (the replay
    is in a strategy's memo) and it is small enough; the third value is None when not.
    """
    index = replay.index
    at = _step_end(source, index.outputs, replay.compaction_edge) if replay.compaction_edge else 0
    key = _frozen_key(replay)
    frozen = replay.frozen
    if frozen is not None and key is not None and frozen.key == key and frozen.at == at:
        out = frozen.prompt(source)
        counts = frozen.shortened, frozen.dropped, frozen.protected
        notice = frozen.notice is not None
    else:
        head = _freeze(source, index, replay, at)
        out = head.messages + [head.notice] + source[at:] if head.notice is not None else head.messages + source[at:]
        counts = head.shortened, head.dropped, head.protected
        notice = head.notice is not None
        frozen = _remembered(source, at, head, key) if remember and key is not None else None
        if frozen is not None and frozen.chars > _FROZEN_CHARS:
            frozen = None
        replay.frozen = frozen
    state = stable_boundary(index.total_outputs, settings)
    epoch = state.epoch if state is not None else None
    before_c, before_d = replay.previous_edges
    moved_c, moved_d = before_c != replay.compaction_edge, before_d != replay.drop_edge
    if not (moved_c or moved_d):
        region, reason = None, None
    elif before_c == 0:
        region, reason = "front", "compaction_started"
    elif moved_d:
        region, reason = "front", "front_drop"
    else:
        region, reason = "middle", "advance"
    details: dict[str, Any] = dict(
        shortened=counts[0],
        dropped=counts[1],
        protected=counts[2],
        epoch_index=epoch.epoch_index if epoch else None,
        pinned_total=epoch.pinned_total if epoch else None,
        new_calls=epoch.new_calls if epoch else None,
        epoch_size=epoch.epoch_size if epoch else None,
        keep_full=epoch.keep_full if epoch else None,
        compaction_edge=replay.compaction_edge,
        drop_edge=replay.drop_edge,
        head_edge=replay.head,
        front_total=replay.front_total,
        repeats=index.repeats,
        boundary_moved=moved_c,
        front_moved=moved_d,
        prefix_change=region,
        prefix_change_reason=reason,
        notice=notice,
    )
    return out, details, frozen


def _without_notices(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return ``messages`` without the compaction notices of earlier calls (a new list).

    Only user messages can be notices, and a conversation holds few of them: their classes
    are found among the distinct message classes and their places by ``list.index``, in C,
    instead of testing every message in Python before every model call.
    """
    classes = list(map(type, messages))
    found: list[int] = []
    for cls in set(classes):
        if not issubclass(cls, HumanMessage):
            continue
        i = -1
        try:
            while True:
                i = classes.index(cls, i + 1)
                if is_compaction_notice(messages[i]):
                    found.append(i)
        except ValueError:
            pass
    if not found:
        return list(messages)
    gone = set(found)
    return [m for i, m in enumerate(messages) if i not in gone]


def _previous_history(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return the history the previous model call saw: everything before the newest assistant message."""
    return list(messages[:_previous_length(messages)])


def _previous_length(messages: Sequence[BaseMessage]) -> int:
    """Return the length of :func:`_previous_history` without copying it."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], AIMessage):
            return i
    return 0


def _newest_user(messages: Sequence[BaseMessage]) -> int | None:
    return next((i for i in range(len(messages) - 1, -1, -1) if is_real_user_message(messages[i])), None)


def _fallback(
    source: list[BaseMessage], prompt: list[BaseMessage], budget: int, costs: _Costs, extra: int, ceiling: int, settings: Settings
) -> tuple[list[BaseMessage], str]:
    """Return ``prompt`` brought under ``budget`` by the ladder's rungs, then by shortening the largest outputs."""
    from langchain_promptstrat.strategies.sliding_window import SlidingWindow
    from langchain_promptstrat.strategies.tool_results import ToolResults

    system = leading_system_count(source)
    task = task_index(source)
    floor = costs(source[:system]) + (costs([source[task]]) if task is not None else 0)
    if floor > budget:
        raise _floor_error(source, costs, budget, extra, ceiling)
    rungs = [ToolResults(settings), SlidingWindow(settings)]
    done_pass: LadderPass = run_plan(ladder_pass(prompt, rungs, target=budget, counter=costs))
    out, how = done_pass.messages, "+".join(t["strategy"] for t in done_pass.taken) or "none"
    if costs(out) > budget:
        out = _last_resort(out, budget, costs)
        how += "+shortened_outputs"
    return out, how


class ShortenToolsEpochStable(PromptStrategy):
    """``shorten_tools_epoch_stable``: cache-first epochs that keep the front of the prompt unchanged, under a context ceiling.

    ``ShortenToolsEpochStable(max_tokens=100_000, epoch_size=40)``; ``max_tokens`` also
    takes ``("fraction", 0.8)`` of ``model``'s input window; without it the ceiling is the
    ``max_context_tokens`` setting (``PROMPTSTRAT_MAX_TOKENS``), else ``model``'s window from
    its profile minus room for the reply, else 111,616 tokens (see
    :mod:`langchain_promptstrat.ceiling`).

    The other options are settings (``stable_*``; environment variable
    ``STABLE_EPOCH_SIZE`` or ``PROMPTSTRAT_STABLE_EPOCH_SIZE``, ...): an option given here
    wins over ``settings``, which wins over the environment, which wins over the default.
    Stateless: one object serves any number of conversations at once (a small memo of
    recent replays only makes it faster).
    """

    strategy_name = STRATEGY_NAME
    option_keys: ClassVar[Mapping[str, str]] = {
        "tool_call_threshold": "stable_tool_call_threshold",
        "full_tool_calls": "stable_full_tool_calls",
        "epoch_size": "stable_epoch_size",
        "max_compacted_tool_calls": "stable_max_compacted_tool_calls",
        "front_drop_chunk": "stable_front_drop_chunk",
        "token_margin": "stable_token_margin",
        "low_ratio": "stable_low_ratio",
        "front_ratio": "stable_front_ratio",
        "head_ratio": "stable_head_ratio",
        "whole_ratio": "stable_whole_ratio",
    }
    """Option name -> settings key, for each option that is a setting."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        max_tokens: MaxTokens = None,
        model: Any = None,
        tools: Sequence[Any] | None = None,
        token_counter: Any = None,
        tool_call_threshold: int | None = None,
        full_tool_calls: int | None = None,
        epoch_size: int | None = None,
        max_compacted_tool_calls: int | None = None,
        front_drop_chunk: int | None = None,
        token_margin: float | None = None,
        low_ratio: float | None = None,
        front_ratio: float | None = None,
        head_ratio: float | None = None,
        whole_ratio: float | None = None,
        **unknown: NoReturn,
    ) -> None:
        """Build the strategy; a settings option left at None comes from ``settings``, else the environment, else its default.

        Args:
            settings: Thresholds shared with other strategies (default: read from the
                environment now); the options below win over it.
            max_tokens: The context ceiling in tokens, or ``("fraction", share)`` of
                ``model``'s input window. Default: setting ``max_context_tokens``
                (``PROMPTSTRAT_MAX_TOKENS``), else ``model``'s window, else 111,616.
            model: The chat model that answers, whose profile gives the window when no
                ceiling is set.
            tools: The tools bound to the model; their schemas count against the ceiling.
            token_counter: None (cl100k_base), a ``TokenCounter``, a chat model or any
                ``messages -> int`` callable.
            tool_call_threshold: No compaction at or below this many tool calls. Setting
                ``stable_tool_call_threshold``, default 120.
            full_tool_calls: The most recent tool calls kept whole. Setting
                ``stable_full_tool_calls``, default 20.
            epoch_size: New tool calls before the whole ones graduate to shortened. Setting
                ``stable_epoch_size``, default 80.
            max_compacted_tool_calls: The shortened region holds at most this many calls
                before a front drop. Setting ``stable_max_compacted_tool_calls``, default 240.
            front_drop_chunk: The oldest calls are dropped in multiples of this many at
                once. Setting ``stable_front_drop_chunk``, default 120.
            token_margin: Share of the ceiling kept free for the token counter's error.
                Setting ``stable_token_margin``, default 0.02.
            low_ratio: A ceiling-driven epoch advance aims at or below this share of the
                ceiling. Setting ``stable_low_ratio``, default 0.9.
            front_ratio: A ceiling-driven front drop removes steps after the kept head down
                to this share of the ceiling. Setting ``stable_front_ratio``, default 0.6.
            head_ratio: A ceiling-driven front drop keeps the oldest steps within this share
                of the ceiling (the cached head). Setting ``stable_head_ratio``, default 0.2.
            whole_ratio: After a ceiling-driven advance the newest whole calls take at most
                this share of the ceiling (the newest step always stays whole). Setting
                ``stable_whole_ratio``, default 0.0.

        Raises:
            ConfigError: A value is out of range, or a keyword is not one of these options.
        """
        super().__init__(settings_with_options(
            type(self), settings, self.option_keys, unknown, reads=("max_context_tokens",),
            tool_call_threshold=tool_call_threshold, full_tool_calls=full_tool_calls, epoch_size=epoch_size,
            max_compacted_tool_calls=max_compacted_tool_calls, front_drop_chunk=front_drop_chunk,
            token_margin=token_margin, low_ratio=low_ratio, front_ratio=front_ratio, head_ratio=head_ratio,
            whole_ratio=whole_ratio,
        ))
        self.max_tokens = check_max_tokens(max_tokens)
        self.model = model
        self.tools = list(tools) if tools else []
        self.token_counter = as_token_counter(token_counter)
        self._memo = _BoundedMemo()

    def ceiling(self, model: Any = None) -> Ceiling:
        """Return the ceiling for a call to ``model`` (default: this strategy's model) and where it came from."""
        return resolve_ceiling(self.max_tokens, model=model if model is not None else self.model, settings=self.settings)

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return :func:`shorten_tools_epoch_stable` of ``messages`` under this strategy's ceiling."""
        return self.compact_for_request(messages)

    def compact_for_request(
        self,
        messages: Sequence[BaseMessage],
        *,
        model: Any = None,
        tools: Sequence[Any] | None = None,
        system: Sequence[BaseMessage] = (),
        max_tokens: MaxTokens = None,
    ) -> Compacted:
        """Return ``messages`` compacted for one model request.

        ``max_tokens`` (the adapter's) wins over this strategy's; ``model`` decides the
        ceiling when neither is given; ``tools`` and ``system`` (sent outside ``messages``)
        count against it.
        """
        given = check_max_tokens(max_tokens) if max_tokens is not None else self.max_tokens
        ceiling = resolve_ceiling(given, model=model if model is not None else self.model, settings=self.settings)
        extra = tool_schema_tokens(tools if tools is not None else self.tools, self.token_counter)
        if system:
            extra += _Costs(self.token_counter)(system)
        return shorten_tools_epoch_stable(
            messages, settings=self.settings, max_tokens=ceiling.tokens, extra_tokens=extra,
            token_counter=self.token_counter, ceiling_source=ceiling.source, _memo=self._memo,
        )
