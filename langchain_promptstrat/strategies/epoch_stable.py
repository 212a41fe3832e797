"""shorten_tools_epoch_stable, the default strategy: its rule top to bottom, then the strategy that
applies it.

A provider's prefix cache re-sends everything after the first message that changed, so the
rule changes the front of the prompt rarely. In forward positions (1 = oldest tool output; a
call shares its output's position) a history's ``T`` outputs fall in four regions::

    1 .. head                   shortened   the kept head: fixed at the first drop under a ceiling
    head+1 .. drop_edge         dropped     grows only at a front drop
    drop_edge+1 .. compaction   shortened   only ever appended to
    compaction+1 .. T           whole       the newest calls

The edges (:class:`Edges`) only move forward, at the history's model calls (:func:`advance`),
so the prompt is a function of the history alone.

**How many recent calls stay whole?** By count, whatever the ceiling: past
``stable_tool_call_threshold`` (120) the compaction edge moves every ``stable_epoch_size`` (80)
calls to ``stable_full_tool_calls`` (20) before the newest (``edge = max(epoch.frozen_edge, 0)``
in :func:`stable_boundary`), so the newest 21 to 100 calls stay whole. When the prompt would
cross the ceiling (``if steps.estimate(edges.compaction_edge, edges.drop_edge, edges.head) >
budget - budget // 100:`` in :func:`advance`) the edge moves early (:func:`whole_from`): the
newest step stays whole, an older one only while ``whole[t] - whole[ends[k]] <= whole_budget and
t - ends[k] <= settings.stable_full_tool_calls``; with ``stable_whole_ratio`` 0.0, none.

**When does the front move?** Only at a front drop: by count when more than
``stable_max_compacted_tool_calls`` (240) calls would be shortened, in chunks of
``stable_front_drop_chunk`` (``return min(chunk * -(-(compaction_edge - bound) // chunk),
compaction_edge)``: once every 120 calls); under a ceiling when the prompt, its edge advanced,
is still above ``stable_low_ratio`` of the budget (``if steps.estimate(c, edges.drop_edge, head)
<= int(budget * settings.stable_low_ratio):`` returns without a drop).

**What goes first?** The oldest shortened steps after the kept head (``fates[number] = Fate.DROP
if head < forward <= drop else Fate.SHORTEN`` in :func:`call_fates`), down to
``stable_front_ratio`` of the budget; the first drop under a ceiling fixes the head (the oldest
steps within ``stable_head_ratio``), so the system block, the task and the head stay cached. A
dropped step takes its narration with it and, under a ceiling, the loose messages of its span,
never the task nor the newest user message (:func:`left_out`). The newest occurrence of a
repeated call stays whole.

A shortened call keeps a form fitted to its kind (:class:`ShortenedForm`); the compaction notice
(:mod:`~langchain_promptstrat.strategies.epoch_machinery.notice`) follows the step of the newest
shortened call. The rule's state is the replay of the history's model calls (:class:`Replay`),
resumed from the memo of :mod:`~langchain_promptstrat.messages.history_memo` or from the
:class:`CarriedReplay` a front end keeps with the conversation.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import importlib.metadata
import json
import re
import shlex
import warnings
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langchain_promptstrat.ceiling import Ceiling, MaxTokens, check_max_tokens, resolve_ceiling
from langchain_promptstrat.errors import ContextWindowError
from langchain_promptstrat.messages import (
    CountTokens,
    Fate,
    ToolCallRecord,
    ToolIndex,
    apply_fates,
    edit_ai_message,
    index_tool_calls,
    is_real_user_message,
    leading_system_count,
    recorded_calls,
    shorten_lines,
    shorten_text,
    shorten_tool_output,
    shortens_arguments,
    task_index,
    with_handle,
)
from langchain_promptstrat.messages.history_memo import (
    EMPTY_HISTORY,
    Head,
    HistoryKey,
    IdentityMemo,
    ReplayMemo,
    call_points,
    chain_digest,
    describes,
    encode_head,
    history_key,
    is_call_point,
    recall_head,
    remember_head,
)
from langchain_promptstrat.options import StableOptions
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.frozen_region import (
    EpochState,
    previous_length,
    previous_total,
)
from langchain_promptstrat.strategies.epoch_machinery.notice import (
    compaction_notice,
    is_compaction_notice,
)
from langchain_promptstrat.strategies.ladder_machinery.rungs import (
    LadderPass,
    ladder_pass,
    message_counter,
    run_plan,
)
from langchain_promptstrat.strategies.sliding_window import SlidingWindow
from langchain_promptstrat.strategies.tool_results import ToolResults
from langchain_promptstrat.strategy import NO_REQUEST, PromptRequest, PromptStrategy, argument
from langchain_promptstrat.tokens import (
    TokenCounter,
    as_token_counter,
    missing_call_id_tokens,
    tool_schema_tokens,
)
from langchain_promptstrat.tokens.usage import Calibration, calibration_for

STRATEGY_NAME = "shorten_tools_epoch_stable"


# ---- the regions by count ---------------------------------------------------------------


@dataclass(frozen=True)
class StableState:
    """Where the regions sit by count for ``epoch.total`` tool outputs, in forward positions (1 =
    oldest)."""

    epoch: EpochState
    compaction_edge: int
    """Forward positions at or below this are shortened or dropped; the rest are whole."""
    drop_edge: int
    """Forward positions at or below this are dropped."""
    front_total: int
    """``pinned_total`` of the first epoch with this drop edge: the front has not changed since."""


def front_drop_edge(compaction_edge: int, settings: Settings) -> int:
    """Return the drop edge for ``compaction_edge``: 0, or the smallest multiple of the chunk that
    leaves at most the maximum shortened.

    With the defaults (240, 120) the shortened region holds 121..240 calls once it is full,
    and the front changes once every 120 calls. Never past the compaction edge.
    """
    bound, chunk = settings.stable_max_compacted_tool_calls, settings.stable_front_drop_chunk
    if compaction_edge <= bound:
        return 0
    return min(chunk * -(-(compaction_edge - bound) // chunk), compaction_edge)


def stable_boundary(total: int, settings: Settings) -> StableState | None:
    """Return the regions ``total`` outputs fall in by count, or None when nothing is shortened.

    Nothing is at or below ``stable_tool_call_threshold``, with ``stable_epoch_size`` 0, or with
    both ``stable_full_tool_calls`` and ``stable_max_compacted_tool_calls`` 0. Past the
    threshold calls ``threshold+1 .. threshold+size`` all see ``pinned_total = threshold`` and
    a compaction edge of ``threshold - full``; the edge moves every ``stable_epoch_size`` calls.
    """
    threshold, size, full = (
        settings.stable_tool_call_threshold,
        settings.stable_epoch_size,
        settings.stable_full_tool_calls,
    )
    bound = settings.stable_max_compacted_tool_calls
    if total <= threshold or (full == 0 and bound == 0) or size <= 0:
        return None
    index = (total - threshold - 1) // size
    epoch = EpochState(total, index, threshold + index * size, size, bound, full)
    edge = max(epoch.frozen_edge, 0)
    drop = front_drop_edge(edge, settings)
    first = index  # the first epoch with this drop edge
    while (
        first > 0
        and front_drop_edge(max(epoch.frozen_edge - (index - first + 1) * size, 0), settings)
        == drop
    ):
        first -= 1
    return StableState(epoch, edge, drop, epoch.pinned_total - (index - first) * size)


# ---- the edges and one model call ---------------------------------------------------------


@dataclass(frozen=True)
class Edges:
    """Where the regions sit after a model call (forward positions; see the module docstring): the
    rule's whole state."""

    compaction_edge: int = 0
    prior_edge: int = 0
    """The compaction edge before its last move."""
    drop_edge: int = 0
    token_drop_edge: int = 0
    """The drop edge as far as a drop removed the loose messages too (the count rule drops calls
    only)."""
    head: int = 0
    """Forward positions at or below this are the kept head: set at the first drop under a ceiling,
    never changed after."""
    segments: tuple[tuple[int, int], ...] = ()
    """``(edge, decided_at)``: calls up to ``edge`` (after the previous segment's) were frozen when
    the history had ``decided_at`` outputs."""
    front_total: int = 0
    """How many outputs the history had at the last front drop."""
    events: int = 0
    """Ceiling events so far."""
    last_event: int | None = None
    event_here: bool = False
    """Whether the call just replayed was a ceiling event."""

    def decided_at(self, forward: int, total: int) -> int:
        """Return how many outputs the history had when the repeat protection of the frozen call at
        ``forward`` was decided."""
        return max(
            next((decided for edge, decided in self.segments if forward <= edge), total),
            self.front_total,
        )

    def latest_decision(self) -> int:
        """Return the newest history length any frozen call's protection was decided at (calls after
        it are never read)."""
        return max([self.front_total, *(d for _, d in self.segments)])


def count_edges(state: StableState | None) -> Edges:
    """Return the edges of the count rule alone (no ceiling) for ``state``: each epoch's calls
    decided at its pinned total."""
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
    """Return where the whole region starts after a ceiling event: the newest step, and older ones
    within ``stable_full_tool_calls`` and ``stable_whole_ratio``."""
    t, ends, whole = steps.total, steps.end_edges(), steps.whole
    whole_budget = int(budget * settings.stable_whole_ratio)
    newest = len(ends) - 2
    edge = ends[newest] if newest >= 0 else 0
    k = newest - 1
    while (
        k >= 0
        and whole[t] - whole[ends[k]] <= whole_budget
        and t - ends[k] <= settings.stable_full_tool_calls
    ):
        edge = ends[k]
        k -= 1
    return edge


def ceiling_event(edges: Edges, steps: StepCosts, budget: int, settings: Settings) -> Edges:
    """Return ``edges`` brought under the ceiling: an early advance, then a front drop in one chunk
    to the low watermark."""
    t = steps.total
    edge = whole_from(steps, budget, settings)
    if edge > edges.compaction_edge:  # advance as far as the whole region allows, never back
        edges = replace(
            edges,
            segments=(*edges.segments, (edge, t)),
            prior_edge=edges.compaction_edge,
            compaction_edge=edge,
        )
    c, head = edges.compaction_edge, edges.head
    if steps.estimate(c, edges.drop_edge, head) <= int(budget * settings.stable_low_ratio):
        return edges
    ends = steps.end_edges()
    if edges.drop_edge == 0 and settings.stable_head_ratio > 0:
        # the first drop: the oldest steps within stable_head_ratio of the budget stay for good,
        # so every later drop removes steps after them and their cache entry survives
        limit = int(budget * settings.stable_head_ratio)
        for e in ends:
            if e >= c or steps.short[e] + steps.loose_before[e] > limit:
                break
            head = e
    front = int(budget * settings.stable_front_ratio)
    chosen = next(
        (
            e
            for e in ends
            if max(edges.drop_edge, head) < e <= c and steps.estimate(c, e, head) <= front
        ),
        c,
    )
    if chosen > max(edges.drop_edge, head):
        edges = replace(edges, head=head, drop_edge=chosen, token_drop_edge=chosen, front_total=t)
    return edges


def advance(edges: Edges, steps: StepCosts, budget: int, settings: Settings) -> Edges:
    """Return the edges at the model call ``steps`` has just reached (``steps.total`` outputs), from
    those of the previous one."""
    t = steps.total
    if edges.event_here:
        edges = replace(edges, event_here=False)
    state = stable_boundary(t, settings)
    if state is not None:
        if state.compaction_edge > edges.compaction_edge:
            edges = replace(
                edges,
                segments=(*edges.segments, (state.compaction_edge, state.epoch.pinned_total)),
                prior_edge=edges.compaction_edge,
                compaction_edge=state.compaction_edge,
            )
        if state.drop_edge > max(edges.drop_edge, edges.head):
            # under a ceiling a dropped call is dropped, repeat or not: the estimate counts it as
            # gone
            edges = replace(
                edges,
                drop_edge=state.drop_edge,
                token_drop_edge=state.drop_edge,
                front_total=max(edges.front_total, state.front_total),
            )
    # the estimate splits each assistant message evenly over its calls: act 1% early so the real
    # count fits
    if steps.estimate(edges.compaction_edge, edges.drop_edge, edges.head) > budget - budget // 100:
        edges = replace(
            ceiling_event(edges, steps, budget, settings),
            events=edges.events + 1,
            last_event=t,
            event_here=True,
        )
    return edges


# ---- each frozen call's fate, and its shortened form ------------------------------------------


def call_fates(
    calls: Sequence[ToolCallRecord], edges: Edges, total: int
) -> tuple[dict[int, Fate], frozenset[int]]:
    """Return the fate of each frozen call (by call number; absent: whole) and the calls kept whole
    as a repeat's newest occurrence.

    ``calls`` are the completed calls, oldest output first; no call after the edges'
    :meth:`~Edges.latest_decision` is read, so the fates hold until the edges move.
    """
    edge, head, drop, token_drop = (
        edges.compaction_edge,
        edges.head,
        edges.drop_edge,
        edges.token_drop_edge,
    )
    latest = edges.latest_decision()
    occurrences: dict[str, list[int]] = {}
    for call in calls:
        if call.forward > latest:
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


READ_COMMANDS = frozenset({"cat", "nl", "head", "tail", "less", "more", "sed"})
"""Shell commands that print a file (``sed`` only without ``-i``, which edits in place)."""
READ_TOOL_WORDS = ("read", "view", "open", "cat", "show")
"""A tool whose name holds one of these words (``read_file``, ``view``, ``open_file``) reads a
file."""
_LEADING_COMMENTS = re.compile(r"^(?:\s*#[^\n]*\n)+")
_CD_PREFIX = re.compile(r"^\s*cd\s+[^;&|]+(?:&&|;)\s*")


def reads_a_file(name: str, args: Any) -> bool:
    """Return whether the call ``name(args)`` prints a file: a reading tool, or a shell command that
    starts by reading one.

    ``nl -ba app.py | sed -n '40,80p'`` reads (after leading comments and a ``cd DIR &&``);
    ``python -m pytest`` and ``sed -i 's/a/b/' app.py`` do not.
    """
    if isinstance(args, dict):
        args = next(
            (args[key] for key in ("command", "cmd") if isinstance(args.get(key), str)), None
        )
    return _reads(name, args if isinstance(args, str) else None)


@functools.lru_cache(maxsize=4096)
def _reads(name: str, command: str | None) -> bool:
    if any(word in name.lower() for word in READ_TOOL_WORDS):
        return True
    if command is None:
        return False
    first_stage = (
        _CD_PREFIX.sub("", _LEADING_COMMENTS.sub("", command), count=1).lstrip().split("|", 1)[0]
    )
    try:
        words = shlex.split(first_stage, comments=False)
    except ValueError:  # an unbalanced quote: read the words plainly
        words = first_stage.split()
    if not words or words[0] not in READ_COMMANDS:
        return False
    return not (words[0] == "sed" and any(w.startswith(("-i", "--in-place")) for w in words[1:]))


@dataclass(frozen=True)
class ShortenedForm:
    """What a frozen call looks like: its output by the kind of call, its message's narration (equal
    forms shorten alike).

    An agent works from the files it read (it edits the lines it saw, quotes their numbers),
    while the logs of programs it ran hold little beyond their last lines: a call that reads a
    file keeps whole lines of its head and tail, any other output the usual hash-stamped stub.
    Under a ceiling old narration is what fills the prompt next, so it is stubbed the same way.
    The form depends on the call alone, so the same call always gets the same bytes.
    """

    read_chars: int
    """What a call that reads a file keeps, in characters of whole lines
    (``stable_read_output_chars``; 0: the usual stub)."""
    count: CountTokens
    """The strategy's token counter: a shortened form is used only when it has fewer tokens than the
    whole."""
    narration_chars: int = 0
    """What the text of an assistant message whose calls are all frozen keeps
    (``stable_narration_chars``; 0: all of it)."""
    handles: bool = True
    """Whether a shortened output or call ends with its handle (``read_back_handles``)."""

    @classmethod
    def of(cls, settings: Settings, count: CountTokens) -> ShortenedForm:
        """Return the form ``settings`` ask for, judged by ``count``."""
        return cls(
            settings.stable_read_output_chars,
            count,
            settings.stable_narration_chars,
            settings.read_back_handles,
        )

    def narration(self, message: AIMessage) -> AIMessage:
        """Return ``message`` with its text shortened to ``narration_chars``, hash-stamped."""
        return shorten_text(message, self.narration_chars) if self.narration_chars > 0 else message

    def calls(self, message: AIMessage, numbers: Mapping[str, int]) -> AIMessage | None:
        """Return ``message`` with every call shortened (``numbers``: call id -> the call's number,
        for its handle) and its narration."""
        short = edit_ai_message(
            message,
            shorten=[call_id for call_id, _, _ in recorded_calls(message)],
            count=self.count,
            handles=numbers if self.handles else None,
        )
        return self.narration(short) if short is not None else None

    def __call__(self, message: ToolMessage, record: ToolCallRecord) -> ToolMessage:
        """Return ``message``, the output of ``record``, shortened, ending with the handle that
        reads it back."""
        call = record.number + 1 if self.handles else None
        if (
            self.read_chars > 0
            and isinstance(message.content, str)
            and reads_a_file(record.name, record.args)
        ):
            return with_handle(message, shorten_lines, self.read_chars, call, self.count)
        return shorten_tool_output(message, self.count, call=call)


# ---- what the rule reads: each call's tokens, as prefix sums -------------------------------


class Costs:
    """Per-message tokens for one counter, whole and shortened, remembered weakly by message object
    (never changing a result)."""

    limit = 200_000

    def __init__(self, counter: CountTokens) -> None:
        self.counter = counter
        self.count_one = message_counter(counter)
        self._seen: IdentityMemo[int] = IdentityMemo(self.limit)
        self._short: IdentityMemo[int] = IdentityMemo(self.limit)

    def whole(self, message: BaseMessage) -> int:
        tokens = self._seen.get(message)
        if tokens is None:
            tokens = self.count_one(message) + missing_call_id_tokens(message, self.counter)
            self._seen.put(message, tokens)
        return tokens

    def shortened(
        self,
        message: BaseMessage,
        form: ShortenedForm,
        record: ToolCallRecord | None = None,
        numbers: Mapping[str, int] | None = None,
    ) -> int:
        """Return the tokens of ``message`` shortened by ``form``: a tool output (``record`` is its
        call), or an assistant message with every call shortened (``numbers``: their ids ->
        numbers)."""
        tokens = self._short.get(message)
        if tokens is not None:
            return tokens
        short: BaseMessage | None
        if isinstance(message, ToolMessage):
            short = form(message, record) if record is not None else message
        else:
            short = form.calls(message, numbers or {})  # type: ignore[arg-type]
        tokens = self.whole(short) if short is not None else 0
        self._short.put(message, tokens)
        return tokens

    def __call__(self, messages: Sequence[BaseMessage], /) -> int:
        return sum(map(self.whole, messages))

    def notice(self, handles: bool) -> int:
        """Return what the estimate reserves for the compaction notice: the most a notice costs.

        That is the notice of :data:`NOTICE_CALLS` calls (handles or not, as ``handles`` says).
        """
        return max(map(self.whole, _largest_notices(handles)))


NOTICE_CALLS = 99_999
"""The most calls whose notice the reserve is sure to cover (each count at most five digits)."""


@functools.lru_cache(maxsize=2)
def _largest_notices(handles: bool) -> tuple[BaseMessage, ...]:
    """Return the notices with the longest counts, each one call or :data:`NOTICE_CALLS`.

    The same objects every time, so a :class:`Costs` counts them once.
    """
    last = {NOTICE_CALLS - 1: Fate.DROP}  # calls NOTICE_CALLS-NOTICE_CALLS dropped
    return tuple(
        compaction_notice(shortened, dropped, strategy=STRATEGY_NAME, fates=last, handles=handles)
        for shortened in (1, NOTICE_CALLS)
        for dropped in (1, NOTICE_CALLS)
    )


@dataclass
class StepCosts:
    """The history's calls as prefix sums by forward position: what the rule's estimate reads.

    ``whole``/``short``: each call's cost kept whole or shortened (its output plus its share of
    the assistant message); ``loose_before[f]``: the messages outside any step (user messages,
    plain assistant text) before output ``f``; ``fixed``: the system block and the task.
    """

    fixed: int = 0
    whole: list[int] = field(default_factory=lambda: [0])
    short: list[int] = field(default_factory=lambda: [0])
    loose_before: list[int] = field(default_factory=lambda: [0])
    loose_after: int = 0
    """Loose tokens after the newest output, not yet closed by a later output."""
    ends: list[int] = field(default_factory=list)
    """Forward positions that end a step, ascending."""
    keys: set[str] = field(default_factory=set)
    """Repeat keys of the calls seen so far."""
    last_ai: int = -1
    notice: int = 0
    """What the compaction notice costs at most (:meth:`Costs.notice`): reserved once any is cut."""

    def copy(self) -> StepCosts:
        return StepCosts(
            self.fixed,
            list(self.whole),
            list(self.short),
            list(self.loose_before),
            self.loose_after,
            list(self.ends),
            set(self.keys),
            self.last_ai,
            self.notice,
        )

    @property
    def total(self) -> int:
        return len(self.whole) - 1

    def estimate(self, compaction: int, drop: int, head: int) -> int:
        """Return the estimated tokens of the prompt with these edges: ``head+1 .. drop`` dropped,
        ``.. compaction`` shortened, the notice if any."""
        t = self.total
        h = min(head, drop)
        loose = (
            self.loose_before[t] + self.loose_after - self.loose_before[drop] + self.loose_before[h]
        )
        notice = self.notice if compaction else 0
        kept_short = self.short[h] + self.short[compaction] - self.short[drop]
        return self.fixed + loose + notice + kept_short + self.whole[t] - self.whole[compaction]

    def end_edges(self) -> list[int]:
        """Return every step end, the newest output included."""
        t = self.total
        return self.ends + [t] if t and (not self.ends or self.ends[-1] != t) else list(self.ends)

    def add(
        self,
        messages: Sequence[BaseMessage],
        start: int,
        stop: int,
        index: ToolIndex,
        costs: Costs,
        task: int | None,
        system: int,
        form: ShortenedForm,
    ) -> None:
        """Add the costs of ``messages[start:stop]`` (``index`` is their tool-call index)."""
        completed_per_ai, call_of_output = index.completed_per_ai, index.call_of_output
        for i in range(start, stop):
            message = messages[i]
            if i < system or i == task:
                self.fixed += costs.whole(message)
                continue
            number = call_of_output.get(i) if isinstance(message, ToolMessage) else None
            if number is None:
                if isinstance(message, AIMessage) and completed_per_ai.get(i, 0):
                    continue  # its cost goes to its calls, as their outputs arrive
                self.loose_after += costs.whole(message)
                continue
            record = index.calls[number]
            ai = messages[record.ai_index]
            n = completed_per_ai.get(record.ai_index, 0)
            numbers = {index.calls[n].id: n + 1 for n in index.calls_per_ai[record.ai_index]}
            ai_whole, ai_short = costs.whole(ai), costs.shortened(ai, form, numbers=numbers)
            first = record.ai_index != self.last_ai
            share_whole = ai_whole // n + (ai_whole % n if first else 0)
            share_short = ai_short // n + (ai_short % n if first else 0)
            t = self.total
            if first and t and (not self.ends or self.ends[-1] != t):
                self.ends.append(t)
            self.last_ai = record.ai_index
            self.loose_before.append(self.loose_before[t] + self.loose_after)
            self.loose_after = 0
            whole = costs.whole(message) + share_whole
            key = record.key
            # a repeated call may stay whole in the shortened region (the newest occurrence is
            # protected): count it whole
            short = (
                whole if key in self.keys else costs.shortened(message, form, record) + share_short
            )
            self.keys.add(key)
            self.whole.append(self.whole[t] + whole)
            self.short.append(self.short[t] + short)


# ---- the replay: the history's model calls, each through the rule --------------------------


@dataclass
class Replay:
    """The rule's state after the call point ``len(history)``: its edges and what feeds them."""

    history: HistoryKey
    budget: int
    index: ToolIndex
    steps: StepCosts
    edges: Edges
    previous: tuple[Edges, int] = (Edges(), 0)
    """The edges and outputs counted at the previous model call (the history before the newest
    assistant message)."""
    digest: tuple[int, bytes] | None = None
    """``(length, chain_digest)`` of the first ``length`` messages, once a front end carried this
    replay."""
    calibration: Calibration = Calibration()
    """The provider's count over the estimate of each prompt sent, learned from the answers
    replayed: each call's budget is divided by it."""
    extra: int = 0
    sent: int = 0
    """The estimate of the prompt sent at the call point ``len(history)``, which the answer after it
    is read against."""


def replay_history(
    start: Replay | None,
    source: list[BaseMessage],
    budget: int,
    settings: Settings,
    costs: Costs,
    calibration: Calibration = Calibration(),
    extra: int = 0,
) -> Replay:
    """Return the replay of ``source``'s call points under ``budget``, advanced from ``start``: a
    pure function of the history.

    ``start`` (the replay of an earlier call of the same conversation) is used only when it
    describes the first messages of ``source`` under the same budget, else the replay starts
    from the first message; a replay of a call point reads nothing after it, so resuming
    reaches what a replay from the first message would. Each call's budget is divided by the
    calibration learned from the answers before it (``extra`` tokens are sent beside the messages).
    """
    if start is not None and (start.budget, start.extra, start.calibration.prior) != (
        budget,
        extra,
        calibration.prior,
    ):
        start = None
    if start is not None and describes(start.history, source) is None:
        start = None
    if start is None:
        replay = Replay(
            EMPTY_HISTORY,
            budget,
            ToolIndex(),
            StepCosts(),
            Edges(),
            calibration=calibration,
            extra=extra,
        )
    else:
        replay = replace(start, steps=start.steps.copy())
    done, start_index = replay.history.length, replay.index
    index = replay.index = start_index.extend(source)
    previous = previous_length(source)
    if (
        done == previous
    ):  # the start is the previous call; a start past it holds that call's edges already
        replay.previous = (replay.edges, replay.steps.total)
    task = task_index(source)
    system = leading_system_count(source)
    steps, edges = replay.steps, replay.edges
    form = ShortenedForm.of(settings, costs.counter)
    steps.notice = costs.notice(form.handles)
    calibration, sent = replay.calibration, replay.sent
    for point in call_points(source, after=done):
        if done:  # the answer to the previous call point
            calibration = calibration.observe(source[done], sent)
        if (
            done < previous < point
        ):  # two assistant messages in a row: the previous call's history ends inside this step
            before = steps.copy()
            before.add(
                source,
                done,
                previous,
                start_index.extend(source[:previous]),
                costs,
                task,
                system,
                form,
            )
            replay.previous = (
                advance(edges, before, calibration.budget(budget, extra), settings),
                before.total,
            )
        steps.add(source, done, point, index, costs, task, system, form)
        done = point
        edges = advance(edges, steps, calibration.budget(budget, extra), settings)
        if point == previous:
            replay.previous = edges, steps.total
        sent = steps.estimate(edges.compaction_edge, edges.drop_edge, edges.head) + extra
    replay.edges, replay.calibration, replay.sent = edges, calibration, sent
    replay.history = history_key(source, start.history if start is not None else None)
    return replay


def _replay(
    source: list[BaseMessage],
    budget: int,
    settings: Settings,
    costs: Costs,
    memo: ReplayMemo[Replay] | None,
    calibration: Calibration,
    extra: int,
    carried: CarriedReplay | None = None,
) -> Replay:
    """Return :func:`replay_history` of ``source``, resumed from ``memo``'s replay of its longest
    call point, else from ``carried`` (which it then updates)."""
    start = memo.recall(source, budget) if memo is not None else None
    fingerprint = (
        _fingerprint(settings, costs.counter, (budget, extra, calibration.prior))
        if carried is not None
        else None
    )
    if start is None and carried is not None and fingerprint is not None:
        start = _resumed(carried.value, source, budget, fingerprint, calibration, extra)
    replay = replay_history(start, source, budget, settings, costs, calibration, extra)
    if memo is not None:
        memo.remember(replay, budget=budget)
    if carried is not None and fingerprint is not None:
        carried.value = _carried_value(replay, source, fingerprint)
    return replay


# ---- the replay as a value a front end carries -----------------------------------------------


@dataclass
class CarriedReplay:
    """A conversation's replay as a front end carries it between model calls: in the graph state,
    checkpointed with it.

    ``value`` (plain JSON; None when nothing is carried) is read before a call and set after it. It
    is resumed from only when it describes the history given: the same messages by a digest that
    holds across processes (:func:`~langchain_promptstrat.messages.history_memo.chain_digest`), the
    same budget, settings, token counter and package version, and an intact checksum; anything else
    is replayed from the first message, never trusted.
    """

    value: dict[str, Any] | None = None


CARRY_FORMAT = 3
_CHECKED = (
    "format",
    "fingerprint",
    "length",
    "digest",
    "steps",
    "edges",
    "previous",
    "calibration",
)


def _fingerprint(
    settings: Settings, counter: CountTokens, budget: tuple[int, int, float]
) -> str | None:
    """Return what a carried replay was computed with, or None when it cannot be said (a counter
    that is not a :class:`TokenCounter`)."""
    return (
        _fingerprint_of(settings, repr(counter), counter.exact, budget)
        if isinstance(counter, TokenCounter)
        else None
    )


@functools.lru_cache(maxsize=64)
def _fingerprint_of(
    settings: Settings, counter: str, exact: bool, budget: tuple[int, int, float]
) -> str:
    try:
        version = importlib.metadata.version("langchain-promptstrat")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    what = [CARRY_FORMAT, version, counter, exact, budget, sorted(settings.as_dict().items())]
    return hashlib.blake2b(json.dumps(what, default=repr).encode(), digest_size=16).hexdigest()


def _check(value: dict[str, Any]) -> str:
    """Return the checksum of a carried value's fields: a value spoiled in storage is replayed, not
    trusted."""
    return hashlib.blake2b(
        json.dumps([value[k] for k in _CHECKED], separators=(",", ":")).encode(), digest_size=16
    ).hexdigest()


def _carried_value(
    replay: Replay, source: Sequence[BaseMessage], fingerprint: str
) -> dict[str, Any]:
    """Return ``replay`` as the plain value a front end carries (:class:`CarriedReplay`)."""
    length = replay.history.length
    done, digest = (
        replay.digest if replay.digest is not None and replay.digest[0] <= length else (0, b"")
    )
    replay.digest = (length, chain_digest(digest, source[done:length]))
    s, c = replay.steps, replay.calibration
    value: dict[str, Any] = {
        "format": CARRY_FORMAT,
        "fingerprint": fingerprint,
        "length": length,
        "digest": replay.digest[1].hex(),
        "steps": [s.fixed, s.whole, s.short, s.loose_before, s.loose_after, s.ends, s.last_ai],
        "edges": _edges_value(replay.edges),
        "previous": [_edges_value(replay.previous[0]), replay.previous[1]],
        "calibration": [list(c.ratios), c.answers, c.ignored, replay.sent],
    }
    value["check"] = _check(value)
    return value


def _edges_value(edges: Edges) -> list[Any]:
    return list(vars(edges).values())


def _edges_from(value: list[Any]) -> Edges:
    edges = Edges(*value)
    return replace(edges, segments=tuple((a, b) for a, b in edges.segments))


def _resumed(
    value: Any,
    source: list[BaseMessage],
    budget: int,
    fingerprint: str,
    prior: Calibration,
    extra: int,
) -> Replay | None:
    """Return the replay ``value`` carries when it describes the first messages of ``source``, else
    None (never raises).

    Its checksum stands for its types: a value that went through storage intact is as it was
    written.
    """
    try:
        if (
            value["format"] != CARRY_FORMAT
            or value["fingerprint"] != fingerprint
            or value["check"] != _check(value)
        ):
            return None
        length = value["length"]
        if not 0 < length <= len(source) or not is_call_point(source, length):
            # a replay resumes only at a call point: one ending before a call's outputs would skip
            # them
            return None
        digest = chain_digest(b"", source[:length])
        if digest.hex() != value["digest"]:
            return None
        fixed, whole, short, loose_before, loose_after, ends, last_ai = value["steps"]
        index = ToolIndex().extend(source[:length])
        keys = {record.key for record in index.completed[: len(whole) - 1]}
        ratios, answers, ignored, sent = value["calibration"]
        previous, total = value["previous"]
        steps = StepCosts(fixed, whole, short, loose_before, loose_after, ends, keys, last_ai)
        return Replay(
            history_key(source[:length]),
            budget,
            index,
            steps,
            _edges_from(value["edges"]),
            previous=(_edges_from(previous), total),
            digest=(length, digest),
            extra=extra,
            sent=sent,
            calibration=replace(prior, ratios=tuple(ratios), answers=answers, ignored=ignored),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


# ---- the prompt: the edges applied ---------------------------------------------------------


def step_end(messages: Sequence[BaseMessage], outputs: Sequence[int], forward: int) -> int:
    """Return the index right after the step holding output ``forward``: after its last
    ToolMessage."""
    j = outputs[forward - 1] + 1
    while j < len(messages) and isinstance(messages[j], ToolMessage):
        j += 1
    return j


def left_out(
    source: list[BaseMessage],
    index: ToolIndex,
    fates: dict[int, Fate],
    drop_end: int,
    keep: set[int],
    head_end: int,
) -> set[int]:
    """Return what a front drop removes besides the dropped calls: the assistant messages whose
    calls are all dropped, with their outputs, and the loose messages from ``head_end`` to
    ``drop_end``, except ``keep``."""
    completed_per_ai, calls_per_ai = index.completed_per_ai, index.calls_per_ai
    dropped_by_ai: dict[int, int] = {}
    for number, fate in fates.items():
        if fate is Fate.DROP:
            ai = index.calls[number].ai_index
            dropped_by_ai[ai] = dropped_by_ai.get(ai, 0) + 1
    gone = [
        ai
        for ai, n in dropped_by_ai.items()
        if n == completed_per_ai.get(ai, 0) and len(calls_per_ai.get(ai, ())) == n
    ]
    remove = set(gone)
    for ai in gone:
        remove.update(
            o
            for o in (index.calls[number].output_index for number in calls_per_ai[ai])
            if o is not None
        )
    for i in range(head_end, drop_end):
        m = source[i]
        if i in keep or i in remove or isinstance(m, (SystemMessage, ToolMessage)):
            continue
        if isinstance(m, AIMessage) and completed_per_ai.get(i, 0):
            continue
        remove.add(i)
    return remove


def _really_shortened(
    source: Sequence[BaseMessage],
    index: ToolIndex,
    fates: dict[int, Fate],
    form: ShortenedForm,
    short_outputs: Mapping[int, BaseMessage],
) -> int:
    """Return how many calls marked SHORTEN change when shortened (output, arguments or narration):
    the notice counts only those."""
    # assistant messages whose calls are all frozen and whose narration changes when shortened
    narrated = {
        ai
        for ai, numbers in index.calls_per_ai.items()
        if form.narration_chars
        and all(n in fates for n in numbers)
        and isinstance(m := source[ai], AIMessage)
        and form.narration(m) is not m
    }
    return len(
        [
            number
            for number, fate in fates.items()
            if fate is Fate.SHORTEN
            and (
                short_outputs[(record := index.calls[number]).output_index]  # type: ignore[index]
                is not source[record.output_index]  # type: ignore[index]
                or shortens_arguments(
                    source[record.ai_index],  # type: ignore[arg-type]
                    record.id,
                    form.count,
                    record.number + 1 if form.handles else None,
                )
                or record.ai_index in narrated
            )
        ]
    )


def _freeze(
    source: list[BaseMessage],
    index: ToolIndex,
    edges: Edges,
    total: int,
    at: int,
    form: ShortenedForm,
) -> Head:
    """Return the compacted head of ``source`` under ``edges``: each frozen call's fate applied,
    what dropped steps take with them left out, the notice."""
    fates, rescued = call_fates(index.completed, edges, total)
    dropped = sum(1 for f in fates.values() if f is Fate.DROP)
    calls = index.calls
    short_outputs = {  # each shortened output once: for the notice's count and for the head
        i: form(source[i], record)  # type: ignore[arg-type]
        for number, fate in fates.items()
        if fate is Fate.SHORTEN and (i := (record := calls[number]).output_index) is not None
    }
    shortened = _really_shortened(source, index, fates, form, short_outputs)
    # loose messages (user turns, harness messages, plain assistant text) go only with a front drop
    # under a ceiling; the task and the newest user message of the dropped span stay (a function of
    # the drop edge, so stable between drops)
    outputs = index.outputs
    drop_end = step_end(source, outputs, edges.token_drop_edge) if edges.token_drop_edge else 0
    head_end = step_end(source, outputs, edges.head) if edges.head and drop_end else 0
    newest_user = next(
        (i for i in range(drop_end - 1, -1, -1) if is_real_user_message(source[i])), None
    )
    keep = {i for i in (task_index(source), newest_user) if i is not None}
    head = apply_fates(
        source[:at],
        index,
        {number: (fate, fate) for number, fate in fates.items()},
        count=form.count,
        handles=form.handles,
        shortened_outputs=short_outputs,
        narration_chars=form.narration_chars,
        leave_out=left_out(source, index, fates, drop_end, keep, head_end),
    )
    notice = (
        compaction_notice(
            shortened, dropped, strategy=STRATEGY_NAME, fates=fates, handles=form.handles
        )
        if shortened > 0 or dropped > 0
        else None
    )
    return encode_head(source, at, head, notice, shortened, dropped, len(rescued))


def frozen_prompt(
    source: list[BaseMessage],
    index: ToolIndex,
    edges: Edges,
    total: int,
    previous_edges: tuple[int, int],
    settings: Settings,
    count: CountTokens,
) -> tuple[list[BaseMessage], dict[str, Any], Head | None]:
    """Return the prompt with ``edges`` applied and the notice placed, the report's details, and the
    compacted head (None while nothing is frozen).

    ``previous_edges`` are the compaction and drop edges of the previous model call. The head
    reads no message after the edges' latest decision, so the head cache finds it again under
    the edges: for a later call of the conversation, or the conversation loaded again.
    """
    if edges.compaction_edge == 0 and edges.drop_edge == 0:
        details: dict[str, Any] = dict.fromkeys((*_EPOCH_FIELDS, *_EDGE_FIELDS))
        details.update(
            boundary_moved=False,
            front_moved=False,
            prefix_change=None,
            prefix_change_reason=None,
            notice=False,
        )
        return list(source), details, None
    outputs = index.outputs
    at = step_end(source, outputs, edges.compaction_edge) if edges.compaction_edge else 0
    segments = edges.segments
    # decided_at reads the total only for a call above every segment's edge, never a frozen one: the
    # guard keeps that checked
    known = not edges.compaction_edge or bool(
        segments and max(edge for edge, _ in segments) >= edges.compaction_edge
    )
    form = ShortenedForm.of(settings, count)
    latest = edges.latest_decision()
    reads = max(at, outputs[latest - 1] + 1 if latest else 0)
    key = (
        STRATEGY_NAME,
        (
            edges.compaction_edge,
            edges.drop_edge,
            edges.token_drop_edge,
            edges.head,
            edges.front_total,
            segments,
        ),
        at,
        form,
    )
    head = recall_head(source, reads, key) if known else None
    if head is None:
        head = _freeze(source, index, edges, total, at, form)
        if known:
            remember_head(source, reads, key, head)
    out = head.messages(source)
    if head.notice is not None:
        out.append(head.notice)
    out += source[at:]
    state = stable_boundary(index.total_outputs, settings)
    epoch = state.epoch if state is not None else None
    details = {name: getattr(epoch, name) if epoch else None for name in _EPOCH_FIELDS}
    before_c, before_d = previous_edges
    moved_c, moved_d = before_c != edges.compaction_edge, before_d != edges.drop_edge
    if not (moved_c or moved_d):
        region, reason = None, None
    elif before_c == 0:
        region, reason = "front", "compaction_started"
    elif moved_d:
        region, reason = "front", "front_drop"
    else:
        region, reason = "middle", "advance"
    details.update(
        compaction_edge=edges.compaction_edge,
        drop_edge=edges.drop_edge,
        head_edge=edges.head,
        front_total=edges.front_total,
        repeats=index.repeats,
        boundary_moved=moved_c,
        front_moved=moved_d,
        prefix_change=region,
        prefix_change_reason=reason,
        notice=head.notice is not None,
    )
    return out, details, head


_EPOCH_FIELDS = ("epoch_index", "pinned_total", "new_calls", "epoch_size", "keep_full")
_EDGE_FIELDS = ("compaction_edge", "drop_edge", "head_edge", "front_total", "repeats")


# ---- the strategy ---------------------------------------------------------------------------


def shorten_tools_epoch_stable(
    messages: Sequence[BaseMessage],
    /,
    *,
    settings: Settings,
    max_tokens: int | None = None,
    extra_tokens: int = 0,
    token_counter: Any = None,
    ceiling_source: str | None = None,
) -> Compacted:
    """Return ``messages`` compacted by the rule of the module docstring: by count, and under
    ``max_tokens`` when a ceiling is given.

    With ``max_tokens`` the prompt plus ``extra_tokens`` (the system prompt kept outside
    ``messages``, the bound tools' schemas) stays under the ceiling minus ``stable_token_margin``.
    Where the edges cannot fit (a giant output among the newest calls), the ladder's
    ``tool_results`` and ``sliding_window`` rungs run on the prompt, then the largest outputs are
    shortened; :class:`ContextWindowError` is raised when the system prompt and the task alone
    are over.

    The report adds the epoch (``epoch_index``, ``pinned_total``, ``new_calls``,
    ``epoch_size``, ``keep_full``), the edges (``compaction_edge``, ``drop_edge``,
    ``head_edge``, ``front_total``), ``repeats``, ``protected``, ``notice``, and, against the
    previous model call's prompt, ``boundary_moved``, ``front_moved``, ``prefix_change`` (None,
    ``front`` or ``middle``: None when no byte changed) and ``prefix_change_reason``
    (``compaction_started``, ``front_drop`` or ``advance``); with a ceiling also ``ceiling``,
    ``ceiling_source``, ``budget``, ``tokens_after`` (as sent, margin not included), ``met``,
    ``ceiling_events``, ``ceiling_event`` (this call) and ``fallback``, and
    ``floor_over_ceiling: True`` when the prompt is over the budget even so: the system prompt,
    the task, the newest user message and the newest step (its outputs shortened) are all that
    is left, and ``tokens_after`` is their size.
    """
    costs = Costs(as_token_counter(token_counter))
    return _compact(messages, settings, max_tokens, extra_tokens, ceiling_source, None, costs)


def _compact(
    messages: Sequence[BaseMessage],
    settings: Settings,
    max_tokens: int | None,
    extra_tokens: int,
    ceiling_source: str | None,
    memo: ReplayMemo[Replay] | None,
    costs: Costs,
    carried: CarriedReplay | None = None,
    model: Any = None,
) -> Compacted:
    """Return :func:`shorten_tools_epoch_stable` of ``messages``, the replay resumed from ``memo``
    (a strategy object's) when given."""
    source = [m for m in messages if not is_compaction_notice(m)]  # the notices of earlier calls
    budget = (
        1 << 62
        if max_tokens is None
        else int(max_tokens * (1 - settings.stable_token_margin)) - extra_tokens
    )
    if max_tokens is not None and budget <= 0:
        raise _floor_error(source, costs, max(budget, 0), extra_tokens, max_tokens)

    calibration = prior = calibration_for(model, source)
    if max_tokens is None:  # by count alone
        index = index_tool_calls(source)
        total = index.total_outputs
        state = stable_boundary(total, settings)
        edges = count_edges(state)
        before_total = previous_total(source, total)
        before = stable_boundary(before_total, settings) if state is not None else None
        previous_edges = (
            (before.compaction_edge, before.drop_edge) if before is not None else (0, 0)
        )
        previous_state = (count_edges(before), before_total)
    else:
        replay = _replay(source, budget, settings, costs, memo, prior, extra_tokens, carried)
        index, edges, total = replay.index, replay.edges, replay.steps.total
        previous_state, calibration = replay.previous, replay.calibration
        previous_edges = (previous_state[0].compaction_edge, previous_state[0].drop_edge)
        budget = calibration.budget(budget, extra_tokens)

    out, details, head = frozen_prompt(
        source, index, edges, total, previous_edges, settings, costs.counter
    )
    if details["boundary_moved"] or details["front_moved"]:
        # edges that moved over calls whose fate stays the same change nothing: say so only when
        # bytes changed
        before_history = source[: previous_length(source)]
        prompt_before, _, head_before = frozen_prompt(
            before_history, index, *previous_state, (0, 0), settings, costs.counter
        )
        if max_tokens is not None:
            prompt_before = _under_ceiling(
                before_history,
                prompt_before,
                head_before,
                costs,
                budget,
                extra_tokens,
                max_tokens,
                settings,
            )[0]
        if len(prompt_before) <= len(out) and all(
            a is b or a == b for a, b in zip(prompt_before, out, strict=False)
        ):
            details["prefix_change"] = details["prefix_change_reason"] = None
    if max_tokens is not None:
        out, tokens, fallback = _under_ceiling(
            source, out, head, costs, budget, extra_tokens, max_tokens, settings
        )
        details.update(
            previous_compaction_edge=edges.prior_edge,
            ceiling=max_tokens,
            ceiling_source=ceiling_source or "max_tokens argument",
            budget=budget + extra_tokens,
            extra_tokens=extra_tokens,
            tokens_after=tokens,
            met=tokens <= budget + extra_tokens,
            ceiling_events=edges.events,
            ceiling_event=edges.event_here,
            fallback=fallback,
            **calibration.report(memo if memo is not None else _compact),
        )
        if not details["met"]:  # the fallback shortened all it may: what is left is the floor
            details["floor_over_ceiling"] = True
    return Compacted(
        out,
        make_report(
            STRATEGY_NAME,
            messages,
            out,
            shortened=head.shortened if head else 0,
            dropped=head.dropped if head else 0,
            protected=head.protected if head else 0,
            **details,
        ),
    )


def _under_ceiling(
    source: list[BaseMessage],
    prompt: list[BaseMessage],
    head: Head | None,
    costs: Costs,
    budget: int,
    extra: int,
    ceiling: int,
    settings: Settings,
) -> tuple[list[BaseMessage], int, str | None]:
    """Return ``prompt`` (brought under ``budget`` by the fallback if it is over), its tokens as
    sent, and how the fallback went."""
    if head is None:
        tokens = costs(prompt) + extra
    else:  # the head's tokens are remembered with it: count only the messages after it
        counted = head.counted
        if counted is None or counted[0]() is not costs:
            counted = head.counted = (
                weakref.ref(costs),
                costs(prompt[: len(head.picks) + (head.notice is not None)]),
            )
        tokens = counted[1] + sum(map(costs.whole, source[head.at :])) + extra
    if tokens - extra <= budget:
        return prompt, tokens, None
    system = leading_system_count(source)
    task = task_index(source)
    if costs(source[:system]) + (costs([source[task]]) if task is not None else 0) > budget:
        raise _floor_error(source, costs, budget, extra, ceiling)
    done_pass: LadderPass = run_plan(
        ladder_pass(
            prompt, [ToolResults(settings), SlidingWindow(settings)], target=budget, counter=costs
        )
    )
    out, how = list(done_pass.messages), "+".join(t["strategy"] for t in done_pass.taken) or "none"
    if (
        costs(out) > budget
    ):  # one giant output: shorten the outputs still over budget, largest first
        tokens = costs(out)
        for i in sorted(
            (i for i, m in enumerate(out) if isinstance(m, ToolMessage)),
            key=lambda i: -costs.whole(out[i]),
        ):
            if tokens <= budget:
                break
            handle = out[i].tool_call_id if settings.read_back_handles else None  # type: ignore[attr-defined]
            short = shorten_tool_output(out[i], costs.counter, call=handle)  # type: ignore[arg-type]
            tokens += costs.whole(short) - costs.whole(out[i])
            out[i] = short
        how += "+shortened_outputs"
    return out, costs(out) + extra, how


def _floor_error(
    source: Sequence[BaseMessage], costs: Costs, budget: int, extra: int, ceiling: int
) -> ContextWindowError:
    task = task_index(source)
    system_tokens = costs(source[: leading_system_count(source)]) + extra
    task_tokens = costs([source[task]]) if task is not None else 0
    return ContextWindowError(
        f"the system prompt ({system_tokens:,} tokens, bound tools included) and the task "
        f"({task_tokens:,} tokens) "
        f"alone exceed the context ceiling of {ceiling:,} tokens ({budget + extra:,} after the "
        "counter's margin); "
        "raise max_tokens or shorten the system prompt"
    )


class ShortenToolsEpochStable(PromptStrategy, StableOptions):
    """``shorten_tools_epoch_stable``: cache-first epochs that keep the front of the prompt
    unchanged, under a context ceiling.

    ``ShortenToolsEpochStable(max_tokens=100_000, stable_epoch_size=40)``; ``max_tokens`` also
    takes ``("fraction", 0.8)`` of ``model``'s input window; without it the ceiling is the
    ``max_tokens`` setting (``PROMPTSTRAT_MAX_TOKENS``), else ``model``'s window from its
    profile minus room for the reply, else 111,616 tokens (see
    :mod:`langchain_promptstrat.ceiling`).

    The other options are its ``stable_*`` settings (environment variable
    ``STABLE_EPOCH_SIZE`` or ``PROMPTSTRAT_STABLE_EPOCH_SIZE``, ...): an option given here
    wins over ``settings``, which wins over the environment, which wins over the default.
    Stateless: one object serves any number of conversations at once (a small memo of
    recent replays only makes it faster).
    """

    strategy_name = STRATEGY_NAME
    max_tokens: MaxTokens = argument(
        default=None,
        doc='The context ceiling in tokens, or ``("fraction", share)`` of ``model``\'s input '
        "window. Default: the ``max_tokens`` setting (``PROMPTSTRAT_MAX_TOKENS``), else "
        "``model``'s window, else 111,616.",
    )
    model: Any = argument(
        default=None,
        doc="The chat model that answers, whose profile gives the window when no ceiling is set.",
    )
    tools: Sequence[Any] | None = argument(
        default=None, doc="The tools bound to the model; their schemas count against the ceiling."
    )
    token_counter: Any = argument(
        default=None,
        doc="None (cl100k_base), a ``TokenCounter``, a chat model or any ``messages -> int`` "
        "callable.",
    )

    def __post_init__(self) -> None:
        self.max_tokens = check_max_tokens(self.max_tokens)
        self.tools = list(self.tools) if self.tools else []
        self.token_counter = as_token_counter(self.token_counter)
        self._memo: ReplayMemo[Replay] = ReplayMemo(8)
        self._costs = Costs(self.token_counter)

    def __copy__(self) -> ShortenToolsEpochStable:
        """Return a copy with memos of its own: a copy may be given other settings, and what these
        remember was computed with these."""
        copied = object.__new__(type(self))
        vars(copied).update(vars(self))
        copied._memo, copied._costs = ReplayMemo(8), Costs(self.token_counter)
        return copied

    def ceiling(self, model: Any = None) -> Ceiling:
        """Return the ceiling for a call to ``model`` (default: this strategy's model) and where it
        came from."""
        return resolve_ceiling(
            self.max_tokens,
            model=model if model is not None else self.model,
            settings=self.settings,
        )

    def apply(self, messages: list[BaseMessage], request: PromptRequest = NO_REQUEST) -> Compacted:
        """Return ``messages`` compacted for one model request.

        The request's ``max_tokens`` wins over this strategy's; its ``model`` decides the ceiling
        when neither is given; its ``tools`` and ``system`` (sent outside ``messages``) count
        against it. ``request.carried``: the replay a front end keeps with the conversation
        (:class:`CarriedReplay`), resumed from when it describes ``messages`` and updated.
        """
        given = request.max_tokens if request.max_tokens is not None else self.max_tokens
        model = request.model if request.model is not None else self.model
        ceiling = resolve_ceiling(given, model=model, settings=self.settings)
        tools = request.tools if request.tools is not None else self.tools
        extra = tool_schema_tokens(tools, self.token_counter)
        if self._costs.counter is not self.token_counter:
            self._costs = Costs(self.token_counter)
        extra += self._costs(request.system)
        return _compact(
            messages,
            self.settings,
            ceiling.tokens,
            extra,
            ceiling.source,
            self._memo,
            self._costs,
            cast("CarriedReplay | None", request.carried),
            model,
        )

    def compact_for_request(
        self,
        messages: Sequence[BaseMessage],
        *,
        model: Any = None,
        tools: Sequence[Any] | None = None,
        system: Sequence[BaseMessage] = (),
        max_tokens: MaxTokens = None,
        carried: CarriedReplay | None = None,
    ) -> Compacted:
        """Return :meth:`apply` of a request holding these fields (deprecated: pass a
        :class:`~langchain_promptstrat.strategy.PromptRequest` to :meth:`apply`)."""
        warnings.warn(
            "compact_for_request(messages, **fields) is deprecated; use "
            "apply(messages, PromptRequest(**fields))",
            DeprecationWarning,
            stacklevel=2,
        )
        request = PromptRequest(
            model=model,
            tools=tools,
            system=system,
            max_tokens=check_max_tokens(max_tokens),
            carried=carried,
        )
        return self.apply(list(messages), request)
