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

This module holds the two strategies: their options, and how one call runs
(:func:`_compact`). The machinery they share with ``shorten_tools_epoch_stable`` (where the
boundary is, repeated calls, each call's fate, the notice, the caches) lives in
:mod:`langchain_promptstrat.strategies.epoch_machinery`, and its public names are
re-exported here. Must not grow machinery another epoch strategy needs: that belongs there.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, TypedDict

from typing_extensions import Unpack

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from langchain_promptstrat.strategy import PromptStrategy
from langchain_promptstrat.messages import Fate, ToolCallRecord, ToolIndex, index_tool_calls, shorten_arguments, shorten_tool_output
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import SettingKey, Settings, settings_with_options
from langchain_promptstrat.strategies.epoch_machinery.boundary import (
    EpochState,
    _inactive,
    _pinned,
    compacted_window,
    epoch_boundary,
    increment_schedule,
)
from langchain_promptstrat.strategies.epoch_machinery.caches import apply_frozen, clear_caches
from langchain_promptstrat.strategies.epoch_machinery.decisions import (
    Decisions,
    decide,
    prefix_change,
    previous_total,
    region_fate,
)
from langchain_promptstrat.strategies.epoch_machinery.notice import (
    NOTICE_KIND,
    compaction_notice,
    compaction_notice_text,
    is_compaction_notice,
    notice_index,
)
from langchain_promptstrat.strategies.epoch_machinery.repeats import protected_calls, repeat_positions

__all__ = [
    "NOTICE_KIND",
    "Decisions",
    "EpochState",
    "ShortenToolsEpoch",
    "ShortenToolsEpochIncrement",
    "ShortenToolsEpochIncrementOptions",
    "ShortenToolsEpochOptions",
    "apply_frozen",
    "clear_caches",
    "compacted_window",
    "compaction_notice",
    "compaction_notice_text",
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


Schedule = Callable[[int, Sequence[int], Settings], "EpochState | None"]


def _decisions_before(
    calls: Sequence[ToolCallRecord],
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


def _changed_by_shortening(source: Sequence[BaseMessage], index: ToolIndex, fates: Mapping[int, Fate]) -> int:
    """Return how many calls given the shorten fate really changed: an output or an argument longer than the cut.

    A call whose output and arguments are already short keeps every byte, so the notice
    neither counts it nor appears for it alone.
    """
    changed = 0
    for number, fate in fates.items():
        if fate is not Fate.SHORTEN:
            continue
        record = index.calls[number]
        output = source[record.output_index] if record.output_index is not None else None
        output_changes = isinstance(output, ToolMessage) and shorten_tool_output(output, call=number + 1) is not output
        if output_changes or shorten_arguments(record.args) is not record.args:
            changed += 1
    return changed


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

    calls = index.completed
    repeats = repeat_positions(calls)
    state = schedule(total, repeats, settings)
    now = decide(calls, state)

    before_total = previous_total(source, total)
    before = _decisions_before(calls, now, repeats, before_total, schedule, settings)

    out = apply_frozen(source, index, now.fates)
    shortened = _changed_by_shortening(source, index, now.fates)
    notice = bool(shortened or now.dropped)
    if notice:
        out.insert(notice_index(out), compaction_notice(shortened, now.dropped, strategy=name, fates=now.fates))

    assert state is not None
    return Compacted(out, make_report(
        name, messages, out,
        shortened=shortened,
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


class ShortenToolsEpochOptions(TypedDict, total=False):
    """The options of :class:`ShortenToolsEpoch`, each the reference's ``epoch_*`` setting."""

    tool_call_threshold: Annotated[int | None, SettingKey("epoch_tool_call_threshold")]
    full_tool_calls: Annotated[int | None, SettingKey("epoch_full_tool_calls")]
    compacted_tool_calls: Annotated[int | None, SettingKey("epoch_compacted_tool_calls")]
    epoch_size: Annotated[int | None, SettingKey("epoch_size")]


class ShortenToolsEpochIncrementOptions(ShortenToolsEpochOptions, total=False):
    """The options of :class:`ShortenToolsEpochIncrement`: those of ``shorten_tools_epoch`` and the growth's."""

    epochs_per_increase: Annotated[int | None, SettingKey("epoch_increment_epochs_per_increase")]
    size_increase: Annotated[int | None, SettingKey("epoch_increment_size_increase")]
    repeat_increase: Annotated[int | None, SettingKey("epoch_increment_repeat_increase")]
    max_size: Annotated[int | None, SettingKey("epoch_increment_max_size")]
    compacted_growth_ratio: Annotated[float | None, SettingKey("epoch_increment_compacted_growth_ratio")]
    max_compacted_tool_calls: Annotated[int | None, SettingKey("epoch_increment_max_compacted_tool_calls")]


class ShortenToolsEpoch(PromptStrategy):
    """``shorten_tools_epoch``: cache-friendly compaction with fixed epochs.

    ``ShortenToolsEpoch(tool_call_threshold=50, epoch_size=20)``. Each option is the
    reference's ``epoch_*`` setting (environment variable ``EPOCH_SIZE`` or
    ``PROMPTSTRAT_EPOCH_SIZE``, ...): an option given here wins over ``settings``, which
    wins over the environment, which wins over the default. Stateless: one object serves
    any number of conversations at once.
    """

    strategy_name = "shorten_tools_epoch"
    options = ShortenToolsEpochOptions

    def __init__(self, settings: Settings | None = None, **options: Unpack[ShortenToolsEpochOptions]) -> None:
        """Build the strategy; an option left at None comes from ``settings``, else the environment, else its default.

        Args:
            settings: Thresholds shared with other strategies (default: read from the
                environment now); the options below win over it.

        Raises:
            ConfigError: A value is out of range, or a keyword is not one of these options.
        """
        super().__init__(settings_with_options(type(self), settings, options))

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
    options = ShortenToolsEpochIncrementOptions

    def __init__(self, settings: Settings | None = None, **options: Unpack[ShortenToolsEpochIncrementOptions]) -> None:
        """Build the strategy; an option left at None comes from ``settings``, else the environment, else its default.

        Args:
            settings: Thresholds shared with other strategies (default: read from the
                environment now); the options below win over it.

        Raises:
            ConfigError: A value is out of range, or a keyword is not one of these options.
        """
        super().__init__(settings_with_options(type(self), settings, options))

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return :func:`shorten_tools_epoch_increment` of ``messages`` with this strategy's settings."""
        return shorten_tools_epoch_increment(messages, settings=self.settings)
