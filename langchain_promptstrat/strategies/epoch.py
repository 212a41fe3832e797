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
stays whole, and one notice says what was shortened or dropped. The boundary and the fates
are computed in :mod:`langchain_promptstrat.strategies.epoch_machinery.frozen_region`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from langchain_promptstrat.messages import (
    Fate,
    ToolCallRecord,
    index_tool_calls,
    shorten_tool_output,
    shortens_arguments,
)
from langchain_promptstrat.options import EpochIncrementOptions, EpochOptions
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.frozen_region import (
    Decisions,
    EpochState,
    _pinned,
    apply_frozen,
    decide,
    epoch_boundary,
    increment_schedule,
    prefix_change,
    previous_total,
    repeat_positions,
)
from langchain_promptstrat.strategies.epoch_machinery.notice import (
    compaction_notice,
    is_compaction_notice,
    notice_index,
)
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
        return Decisions(state, now.fates, now.protected, now.shortened, now.dropped)
    return decide([call for call in calls if call.forward <= before_total], state)


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
        below: dict[str, Any] = dict.fromkeys(STATE_FIELDS)
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
    handles = settings.read_back_handles
    out = apply_frozen(source, index, now.fates, handles)
    shortened = (
        0  # the calls the shorten fate really changed: an already short call keeps every byte
    )
    for number, fate in now.fates.items():
        record = index.calls[number]
        output = source[record.output_index] if record.output_index is not None else None
        if fate is Fate.SHORTEN and (
            (
                isinstance(output, ToolMessage)
                and shorten_tool_output(
                    output, as_token_counter(None), call=number + 1 if handles else None
                )
                is not output
            )
            or shortens_arguments(
                source[record.ai_index],  # type: ignore[arg-type]
                record.id,
                as_token_counter(None),
                number + 1 if handles else None,
            )
        ):
            shortened += 1
    notice = bool(shortened or now.dropped)
    if notice:
        out.insert(
            notice_index(out),
            compaction_notice(
                shortened, now.dropped, strategy=name, fates=now.fates, handles=handles
            ),
        )
    return Compacted(
        out,
        make_report(
            name,
            messages,
            out,
            shortened=shortened,
            dropped=now.dropped,
            protected=len(now.protected),
            **{field: getattr(state, field) for field in STATE_FIELDS},
            repeats=len(repeats),
            boundary_moved=_pinned(before.state) != state.pinned_total,
            prefix_change=prefix_change(calls, before, now, before_total=before_total),
            notice=notice,
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
