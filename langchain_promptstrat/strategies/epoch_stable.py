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
never the task nor the newest user message (``left_out`` in
:mod:`~langchain_promptstrat.strategies.epoch_machinery.frozen_prompt`). The newest occurrence of a
repeated call stays whole.

The machinery that applies the rule knows no strategy
(:mod:`~langchain_promptstrat.strategies.epoch_machinery`); it asks this module what only the rule
knows (:func:`_compact`), and keeps the replay a front end carries (:class:`CarriedReplay`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from langchain_core.messages import BaseMessage

from langchain_promptstrat.ceiling import Ceiling, MaxTokens, check_max_tokens, resolve_ceiling
from langchain_promptstrat.errors import warn_renamed
from langchain_promptstrat.messages import Fate, ToolCallRecord
from langchain_promptstrat.messages.history_memo import ReplayMemo
from langchain_promptstrat.options import StableOptions
from langchain_promptstrat.report import Compacted
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.apply_rule import Bound, apply_rule
from langchain_promptstrat.strategies.epoch_machinery.costs import Costs, StepCosts
from langchain_promptstrat.strategies.epoch_machinery.frozen_prompt import FatesOf, latest_decision
from langchain_promptstrat.strategies.epoch_machinery.frozen_region import EpochState, epoch_figures
from langchain_promptstrat.strategies.epoch_machinery.history_replay import AdvanceAt, Replay
from langchain_promptstrat.strategies.epoch_machinery.history_replay import (
    CarriedReplay as CarriedReplay,  # the value a front end carries for this strategy
)
from langchain_promptstrat.strategy import NO_REQUEST, PromptRequest, PromptStrategy, argument
from langchain_promptstrat.tokens import as_token_counter, tool_schema_tokens

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
    :func:`~.frozen_prompt.latest_decision` is read, so the fates hold until the edges move.
    """
    edge, head = edges.compaction_edge, edges.head
    drop, token_drop = edges.drop_edge, edges.token_drop_edge
    latest = latest_decision(edges)
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
    ``messages``, the bound tools' schemas) stays under the ceiling minus ``stable_token_margin``
    (the fallback and the report: :func:`~.epoch_machinery.apply_rule.apply_rule`). The report's
    epoch is ``epoch_index``, ``pinned_total``, ``new_calls``, ``epoch_size``, ``keep_full``.
    """
    bound = Bound(max_tokens, extra_tokens, ceiling_source) if max_tokens is not None else None
    return _compact(messages, settings, Costs(as_token_counter(token_counter)), bound)


def _compact(
    messages: Sequence[BaseMessage],
    settings: Settings,
    costs: Costs,
    bound: Bound | None,
    memo: ReplayMemo[Replay[Edges]] | None = None,
) -> Compacted:
    """Return ``messages`` compacted by the machinery (:func:`.apply_rule`) under ``bound``, each
    question it asks answered by the rule above: it never calls back into this module."""
    questions = apply_rule(
        messages, settings, costs, bound, first=Edges(), strategy=STRATEGY_NAME, memo=memo
    )
    try:
        while True:
            question = next(questions)
            if isinstance(question, AdvanceAt):  # the edges at a model call of the history
                question.answer = advance(question.edges, question.steps, question.budget, settings)
            elif isinstance(question, FatesOf):  # a head to build: each frozen call's fate
                question.answer = call_fates(question.calls, question.edges, question.total)
            else:  # by count alone, and the epoch for the report
                state = stable_boundary(question.total, settings)
                epoch = state.epoch if state is not None else None
                question.answer = count_edges(state), epoch_figures(epoch, EPOCH_FIELDS)
    except StopIteration as finished:
        return cast(Compacted, finished.value)


EPOCH_FIELDS = ("epoch_index", "pinned_total", "new_calls", "epoch_size", "keep_full")
"""The epoch's figures the report carries (None below the threshold)."""


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
        self._memo: ReplayMemo[Replay[Edges]] = ReplayMemo(8)
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
        carried = cast("CarriedReplay | None", request.carried)
        bound = Bound(ceiling.tokens, extra, ceiling.source, model, carried)
        return _compact(messages, self.settings, self._costs, bound, self._memo)

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
        warn_renamed(
            "compact_for_request(messages, **fields)", "apply(messages, PromptRequest(**fields))"
        )
        request = PromptRequest(
            model=model,
            tools=tools,
            system=system,
            max_tokens=check_max_tokens(max_tokens),
            carried=carried,
        )
        return self.apply(list(messages), request)
