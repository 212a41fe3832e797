"""shorten_tools_epoch and shorten_tools_epoch_increment: compaction frozen for an epoch, so the
provider's prefix cache hits.

``T`` is the number of tool outputs; a call shares the position of its output, 1 = newest.
Once ``T`` passes ``epoch_tool_call_threshold`` the boundary is pinned at ``pinned_total``
and moves only when an epoch is full::

    new_calls   = T - pinned_total
    keep_full   = new_calls + epoch_full_tool_calls     positions 1..keep_full stay whole
    truncate_to = keep_full + compacted_window          then shortened (args 200, output 400)
                                                        older positions are dropped

Counted from the oldest output (the *forward* position, which never changes), forward
positions ``<= pinned_total - full`` are frozen and the rest stays whole, so within an epoch
the compacted prefix is byte-identical from one model call to the next. The two strategies
share one body and differ in their schedule: fixed epochs and window, or both growing with
the conversation and with repeated calls. In both the newest occurrence of a repeated call
stays whole, and one notice says what was shortened or dropped. The boundary is computed in
:mod:`langchain_promptstrat.strategies.epoch_machinery.frozen_region`; each frozen call's fate by
the default's rule (:func:`~langchain_promptstrat.strategies.epoch_stable.call_fates`) and the
compacted head by the default's prompt building
(:mod:`~langchain_promptstrat.strategies.epoch_machinery.frozen_prompt`), with the plain stub.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from langchain_promptstrat.messages import Fate, ToolCallRecord, ToolIndex, index_tool_calls
from langchain_promptstrat.messages.history_memo import Head, recall_head, remember_head
from langchain_promptstrat.options import EpochIncrementOptions, EpochOptions
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.frozen_prompt import (
    compacted_head,
    step_end,
)
from langchain_promptstrat.strategies.epoch_machinery.frozen_region import (
    EpochState,
    epoch_boundary,
    epoch_figures,
    increment_schedule,
    previous_total,
    repeat_positions,
)
from langchain_promptstrat.strategies.epoch_machinery.notice import (
    is_compaction_notice,
    notice_index,
)
from langchain_promptstrat.strategies.epoch_machinery.shortened_form import ShortenedForm
from langchain_promptstrat.strategies.epoch_stable import Edges, call_fates
from langchain_promptstrat.strategy import NO_REQUEST, PromptRequest, PromptStrategy
from langchain_promptstrat.tokens import as_token_counter

Schedule = Callable[[int, Sequence[int], Settings], "EpochState | None"]
STATE_FIELDS = (
    "epoch_index",
    "pinned_total",
    "new_calls",
    "epoch_size",
    "compacted_window",
    "keep_full",
    "truncate_to",
)
"""The :class:`EpochState` figures the report carries (None below the threshold)."""


@dataclass(frozen=True)
class Decisions:
    """What happens to every completed call for one state of the conversation."""

    state: EpochState | None
    fates: Mapping[int, Fate]
    """Call number -> SHORTEN or DROP (a call and its output share it); absent means whole."""
    protected: frozenset[int]
    """Calls kept whole by repeat protection although their region would shorten or drop them."""

    def count(self, fate: Fate) -> int:
        """Return how many calls have ``fate``."""
        return sum(1 for f in self.fates.values() if f is fate)


def decide(calls: Sequence[ToolCallRecord], state: EpochState | None) -> Decisions:
    """Return the fate of each of ``calls`` (oldest output first) under ``state``: the default's
    frozen-region rule (:func:`~.epoch_stable.call_fates`) with the epoch's edges, each call's
    repeat protection decided now."""
    if state is None:
        return Decisions(None, {}, frozenset())
    edges = Edges(state.frozen_edge, drop_edge=state.drop_edge, front_total=state.total)
    return Decisions(state, *call_fates(calls, edges, state.total))


def _decisions_before(
    calls: Sequence[ToolCallRecord],
    now: Decisions,
    repeats: Sequence[int],
    before_total: int,
    schedule: Schedule,
    settings: Settings,
) -> Decisions:
    """Return the decisions for the history that had ``before_total`` outputs: ``now``'s fates when
    no region moved and no repeat is new.

    They only fill the report's ``boundary_moved`` and ``prefix_change``, so the rule runs a second
    time only when the previous call's regions differ.
    """
    assert now.state is not None
    if before_total == now.state.total:
        return now
    state = schedule(before_total, repeats, settings)
    same_regions = state is not None and (state.frozen_edge, state.drop_edge) == (
        now.state.frozen_edge,
        now.state.drop_edge,
    )
    if same_regions and not (repeats and repeats[-1] > before_total):
        return Decisions(state, now.fates, now.protected)
    return decide(calls, state)


def region_fate(forward: int, state: EpochState) -> Fate:
    """Return what the regions do to the call at ``forward``: keep, shorten or drop."""
    if forward > state.frozen_edge:
        return Fate.KEEP
    if forward > state.drop_edge:
        return Fate.SHORTEN
    return Fate.DROP


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
    counts_before = (before.count(Fate.SHORTEN), before.count(Fate.DROP))
    if (
        not causes
        and any(counts_before)
        and counts_before
        != (
            after.count(Fate.SHORTEN),
            after.count(Fate.DROP),
        )
    ):
        # new calls froze at once: only the notice's counts moved
        causes.add("boundary" if moved else "repeat")
    return "+".join(sorted(causes)) if causes else None


def _pinned(state: EpochState | None) -> int | None:
    return state.pinned_total if state is not None else None


def frozen_epoch_prompt(
    source: list[BaseMessage], index: ToolIndex, now: Decisions, settings: Settings, name: str
) -> tuple[list[BaseMessage], Head | None]:
    """Return ``source`` with ``now``'s fates applied and the notice placed, and the compacted head
    (None when no call is frozen).

    The head is the default's (:func:`~.frozen_prompt.compacted_head`) with the plain stub and the
    narration kept, found again in the head cache by its fates: every call of an epoch compacts
    the same head, once.
    """
    if not now.fates:
        return list(source), None
    assert now.state is not None
    at = step_end(source, index.outputs, now.state.frozen_edge)
    form = ShortenedForm(0, as_token_counter(None), handles=settings.read_back_handles)
    fates = (dict(now.fates), now.protected)
    key = (name, at, form)
    head = recall_head(source, at, key, fates)
    if head is None:
        head = compacted_head(source, index, fates, at, form, strategy=name)
        remember_head(source, at, key, head, fates)
    out = head.messages(source) + source[at:]
    if head.notice is not None:
        out.insert(notice_index(out), head.notice)
    return out, head


def epoch_compact(
    messages: Sequence[BaseMessage], /, *, settings: Settings, name: str
) -> Compacted:
    """Return ``messages`` with old tool calls shortened and dropped behind the boundary strategy
    ``name``'s schedule pins, and the report.

    The report adds the :data:`STATE_FIELDS`, ``repeats``, ``notice`` and, against the
    previous model call (the newest ``AIMessage``, read off the history), ``boundary_moved``
    and ``prefix_change`` (None, ``boundary``, ``repeat`` or ``boundary+repeat``). A
    compaction notice already in the input (a stored compacted prompt) is left out first: its
    counts describe another state.
    """
    schedule = SCHEDULES[name]
    source = [m for m in messages if not is_compaction_notice(m)]
    index = index_tool_calls(source)
    calls = index.completed
    repeats = repeat_positions(calls)
    state = schedule(index.total_outputs, repeats, settings)
    if state is None:
        out = list(source)
        below = epoch_figures(None, STATE_FIELDS)
        return Compacted(
            out,
            make_report(
                name,
                messages,
                out,
                **below,
                repeats=None,
                boundary_moved=False,
                prefix_change=None,
                notice=False,
            ),
        )
    now = decide(calls, state)
    before_total = previous_total(source, state.total)
    before = _decisions_before(calls, now, repeats, before_total, schedule, settings)
    out, head = frozen_epoch_prompt(source, index, now, settings, name)
    return Compacted(
        out,
        make_report(
            name,
            messages,
            out,
            shortened=head.shortened if head else 0,
            dropped=now.count(Fate.DROP),
            protected=len(now.protected),
            **epoch_figures(state, STATE_FIELDS),
            repeats=len(repeats),
            boundary_moved=_pinned(before.state) != state.pinned_total,
            prefix_change=prefix_change(calls, before, now, before_total=before_total),
            notice=head is not None and head.notice is not None,
        ),
    )


SCHEDULES: dict[str, Schedule] = {
    "shorten_tools_epoch": lambda total, repeats, settings: epoch_boundary(total, settings),
    "shorten_tools_epoch_increment": increment_schedule,
}
"""Each strategy's epochs: fixed-size (:func:`epoch_boundary`), or growing with the conversation and
its repeats (:func:`increment_schedule`)."""


def shorten_tools_epoch(messages: Sequence[BaseMessage], /, *, settings: Settings) -> Compacted:
    """Return :func:`epoch_compact` of ``messages`` with fixed-size epochs."""
    return epoch_compact(messages, settings=settings, name="shorten_tools_epoch")


def shorten_tools_epoch_increment(
    messages: Sequence[BaseMessage], /, *, settings: Settings
) -> Compacted:
    """Return :func:`epoch_compact` of ``messages`` with epochs and window that grow."""
    return epoch_compact(messages, settings=settings, name="shorten_tools_epoch_increment")


class ShortenToolsEpoch(PromptStrategy, EpochOptions):
    """``shorten_tools_epoch``: cache-friendly compaction with fixed epochs.

    ``ShortenToolsEpoch(epoch_tool_call_threshold=50, epoch_size=20)``; each option is the
    reference's ``epoch_*`` setting (option > ``settings`` > environment > default). Stateless.
    """

    strategy_name = "shorten_tools_epoch"

    def apply(self, messages: list[BaseMessage], request: PromptRequest = NO_REQUEST) -> Compacted:
        """Return :func:`epoch_compact` of ``messages`` with this strategy's settings and
        schedule."""
        return epoch_compact(messages, settings=self.settings, name=self.strategy_name)


class ShortenToolsEpochIncrement(ShortenToolsEpoch, EpochIncrementOptions):
    """``shorten_tools_epoch_increment`` (the reference default): epochs and compacted window that
    grow.

    ``ShortenToolsEpochIncrement(epoch_size=20, epoch_increment_max_size=60)``: the options of
    ``shorten_tools_epoch`` (``epoch_size`` is the initial size) plus the growth's
    ``epoch_increment_*``. Stateless.
    """

    strategy_name = "shorten_tools_epoch_increment"
