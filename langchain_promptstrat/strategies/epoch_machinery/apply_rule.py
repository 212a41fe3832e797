"""A rule over frozen regions applied to one request: its state (by count, or replayed under a
ceiling), the prompt with the regions applied, the fallback under the ceiling, and the report.

Knows no strategy: what only the rule knows it asks as it goes (:data:`Question`: the state at
each model call, each frozen call's fate, the state by count), answered by the strategy's module,
which runs :func:`apply_rule` and so is never called back; the ceiling of the request comes in as
a :class:`Bound`.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from langchain_core.messages import BaseMessage

from langchain_promptstrat.messages import ToolIndex, index_tool_calls
from langchain_promptstrat.messages.history_memo import Head, ReplayMemo
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.costs import Costs
from langchain_promptstrat.strategies.epoch_machinery.fallback import floor_error, under_ceiling
from langchain_promptstrat.strategies.epoch_machinery.frozen_prompt import (
    FatesOf,
    frozen_prompt,
    prefix_change,
)
from langchain_promptstrat.strategies.epoch_machinery.frozen_region import (
    previous_length,
    previous_total,
)
from langchain_promptstrat.strategies.epoch_machinery.history_replay import (
    AdvanceAt,
    CarriedReplay,
    Replay,
    State,
    resume_replay,
)
from langchain_promptstrat.strategies.epoch_machinery.notice import is_compaction_notice
from langchain_promptstrat.strategies.epoch_machinery.shortened_form import ShortenedForm
from langchain_promptstrat.tokens.usage import calibration_for


@dataclass
class ByCount(Generic[State]):
    """A question to the rule: its state by count alone (no ceiling) for a history of ``total``
    outputs, and the report's figures of the epoch they fall in (each None below it)."""

    total: int
    answer: tuple[State, dict[str, Any]] | None = None
    """The rule's answer, set by whoever runs :func:`apply_rule`."""

    def answered(self) -> tuple[State, dict[str, Any]]:
        """Return the answer (asserting there is one)."""
        assert self.answer is not None, "a question of the rule went unanswered"
        return self.answer


Question = AdvanceAt[State] | FatesOf[State] | ByCount[State]
"""What :func:`apply_rule` asks the rule as it goes."""


@dataclass(frozen=True)
class Bound:
    """The ceiling of one request, and what the request sends beside the messages."""

    ceiling: int
    """The context ceiling in tokens."""
    extra_tokens: int = 0
    """The system prompt kept outside the messages and the bound tools' schemas."""
    ceiling_source: str | None = None
    """Where the ceiling came from, for the report."""
    model: Any = None
    """The chat model that answers: the family whose count calibrates the estimate."""
    carried: CarriedReplay | None = None
    """The replay a front end keeps with the conversation, resumed from and updated."""


def apply_rule(
    messages: Sequence[BaseMessage],
    settings: Settings,
    costs: Costs,
    bound: Bound | None,
    *,
    first: State,
    strategy: str,
    memo: ReplayMemo[Replay[State]] | None = None,
) -> Generator[Question[State], None, Compacted]:
    """Return ``messages`` compacted by the rule of ``strategy`` (whose state before any call is
    ``first``): by count alone without a ``bound``, else under it, the replay resumed from ``memo``
    (a strategy object's) when given.

    Under a ``bound``, where the edges cannot fit (a giant output among the newest calls), the
    ladder's ``tool_results`` and ``sliding_window`` rungs run on the prompt, then the largest
    outputs are shortened; :class:`~langchain_promptstrat.errors.ContextWindowError` is raised
    when the system prompt and the task alone are over.

    The report adds the rule's epoch, the edges (``compaction_edge``, ``drop_edge``,
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
    source = [m for m in messages if not is_compaction_notice(m)]  # the notices of earlier calls
    replay: Replay[State] | None = None  # under a bound: the replay, and the budget it calibrated
    budget = 0
    if bound is None:
        index = index_tool_calls(source)
        total = index.total_outputs
        before_total = previous_total(source, total)
        edges, _ = yield from _by_count(total)
        previous = ((yield from _by_count(before_total))[0], before_total)
    else:
        replay, budget = yield from _replayed(source, settings, costs, bound, memo, first, strategy)
        index, edges, total = replay.index, replay.edges, replay.steps.total
        previous = replay.previous
    form = ShortenedForm.of(settings, costs.counter)
    out, head = yield from frozen_prompt(source, index, edges, total, form, strategy=strategy)
    _, epoch = yield from _by_count(index.total_outputs)
    details = _details(epoch, index, edges, previous[0], head)
    if details["boundary_moved"] or details["front_moved"]:
        # edges that moved over calls whose fate stays the same change nothing: say so only when
        # bytes changed
        before_history = source[: previous_length(source)]
        prompt_before, head_before = yield from frozen_prompt(
            before_history, index, *previous, form, strategy=strategy
        )
        if bound is not None:
            prompt_before = under_ceiling(
                before_history,
                prompt_before,
                head_before,
                costs,
                budget,
                bound.extra_tokens,
                bound.ceiling,
                settings,
            )[0]
        if len(prompt_before) <= len(out) and all(
            a is b or a == b for a, b in zip(prompt_before, out, strict=False)
        ):
            details["prefix_change"] = details["prefix_change_reason"] = None
    if bound is not None and replay is not None:
        extra = bound.extra_tokens
        out, tokens, fallback = under_ceiling(
            source, out, head, costs, budget, extra, bound.ceiling, settings
        )
        details.update(
            previous_compaction_edge=edges.prior_edge,
            ceiling=bound.ceiling,
            ceiling_source=bound.ceiling_source or "max_tokens argument",
            budget=budget + extra,
            extra_tokens=extra,
            tokens_after=tokens,
            met=tokens <= budget + extra,
            ceiling_events=edges.events,
            ceiling_event=edges.event_here,
            fallback=fallback,
            **replay.calibration.report(memo if memo is not None else apply_rule),
        )
        if not details["met"]:  # the fallback shortened all it may: what is left is the floor
            details["floor_over_ceiling"] = True
    return Compacted(
        out,
        make_report(
            strategy,
            messages,
            out,
            shortened=head.shortened if head else 0,
            dropped=head.dropped if head else 0,
            protected=head.protected if head else 0,
            **details,
        ),
    )


def _by_count(total: int) -> Generator[ByCount[Any], None, tuple[Any, dict[str, Any]]]:
    """Return the rule's answer to :class:`ByCount` for ``total`` outputs."""
    question: ByCount[Any] = ByCount(total)
    yield question
    return question.answered()


def _replayed(
    source: list[BaseMessage],
    settings: Settings,
    costs: Costs,
    bound: Bound,
    memo: ReplayMemo[Replay[State]] | None,
    first: State,
    strategy: str,
) -> Generator[AdvanceAt[State], None, tuple[Replay[State], int]]:
    """Return the replay of ``source``'s model calls under ``bound``, and the budget of the newest
    call: what the messages may take, calibrated to the provider's count."""
    budget = int(bound.ceiling * (1 - settings.stable_token_margin)) - bound.extra_tokens
    if budget <= 0:
        raise floor_error(source, costs, max(budget, 0), bound.extra_tokens, bound.ceiling)
    replay = yield from resume_replay(
        source,
        budget,
        settings,
        costs,
        first=first,
        strategy=strategy,
        memo=memo,
        calibration=calibration_for(bound.model, source),
        extra=bound.extra_tokens,
        carried=bound.carried,
    )
    return replay, replay.calibration.budget(budget, bound.extra_tokens)


_EDGE_FIELDS = ("compaction_edge", "drop_edge", "head_edge", "front_total", "repeats")


def _details(
    epoch: dict[str, Any], index: ToolIndex, edges: State, before: State, head: Head | None
) -> dict[str, Any]:
    """Return the report's ``epoch``, edges, and how the edges moved since ``before`` (the previous
    model call's)."""
    if head is None:  # nothing frozen
        details: dict[str, Any] = dict.fromkeys((*epoch, *_EDGE_FIELDS))
        details.update(
            boundary_moved=False,
            front_moved=False,
            prefix_change=None,
            prefix_change_reason=None,
            notice=False,
        )
        return details
    moved = (before.compaction_edge, before.drop_edge), (edges.compaction_edge, edges.drop_edge)
    region, reason = prefix_change(*moved)
    return {
        **epoch,
        "compaction_edge": edges.compaction_edge,
        "drop_edge": edges.drop_edge,
        "head_edge": edges.head,
        "front_total": edges.front_total,
        "repeats": index.repeats,
        "boundary_moved": before.compaction_edge != edges.compaction_edge,
        "front_moved": before.drop_edge != edges.drop_edge,
        "prefix_change": region,
        "prefix_change_reason": reason,
        "notice": head.notice is not None,
    }
