"""The stable prompt under a ceiling: each frozen call's fate from a replay's edges, the compacted head, the notice, the report's details.

:func:`frozen_prompt` applies a :class:`~langchain_promptstrat.strategies.epoch_machinery.bounded_replay.Bounded`
replay's edges to the history: it decides each frozen call (the newest occurrence of a
repeat protected as decided when it was frozen), removes the debris, shortens or drops,
places the compaction notice at the boundary, and reuses the head the replay remembers
when the edges are those it was built for.

Must not move an edge (``bounded_replay`` and ``stable_regions`` do).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from langchain_promptstrat.messages import (
    CompletedCallEntry,
    Fate,
    GrowingToolIndex,
    ToolIndex,
    is_real_user_message,
    shorten_arguments,
    shorten_tool_output,
    task_index,
)
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.bounded_replay import Bounded
from langchain_promptstrat.strategies.epoch_machinery.caches import apply_frozen
from langchain_promptstrat.strategies.epoch_machinery.debris import count_completed, without_debris
from langchain_promptstrat.strategies.epoch_machinery.frozen_head import Frozen, Head, remembered
from langchain_promptstrat.strategies.epoch_machinery.notice import compaction_notice
from langchain_promptstrat.strategies.epoch_machinery.stable_regions import stable_boundary, step_end
from langchain_promptstrat.truncation import DEFAULT_OUTPUT_SIZE, shorten_string

__all__ = ["STRATEGY_NAME", "frozen_prompt"]


STRATEGY_NAME = "shorten_tools_epoch_stable"


def _bounded_decisions(calls: Sequence[CompletedCallEntry], replay: Bounded) -> tuple[dict[int, Fate], frozenset[int]]:
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


_FROZEN_CHARS = 1_000_000
"""A compacted head whose edited copies hold more characters than this is not remembered (it is rebuilt at each call):
this bounds what each replay in a strategy's memo holds besides indices and counts."""


def _frozen_key(replay: Bounded) -> tuple[Any, ...] | None:
    """Return what the compacted head depends on besides the messages before it, or None when it also depends on the total.

    :meth:`Bounded.decided_at` reads the total only for a call above every segment's edge;
    the last segment is where the compaction edge moved to, so that never happens for a
    frozen call, and the guard only keeps that reasoning checked.
    """
    segments = tuple(replay.segments)
    if replay.compaction_edge and (not segments or max(edge for edge, _ in segments) < replay.compaction_edge):
        return None
    return (replay.compaction_edge, replay.drop_edge, replay.token_drop_edge, replay.head, replay.front_total, segments)


def _freeze(source: list[BaseMessage], index: GrowingToolIndex, replay: Bounded, at: int) -> Head:
    """Return the compacted head of ``source`` under the replay's edges: decide each frozen call, drop the debris, apply the fates."""
    fates, rescued = _bounded_decisions(index.completed, replay)
    view = count_completed(index.tool_index())
    dropped = sum(1 for f in fates.values() if f is Fate.DROP)
    shortened = _really_shortened(source, view, fates)
    # loose messages (user turns, harness messages, plain assistant text) go only with a ceiling-driven front drop;
    # the task and the newest user message of the dropped span stay (a function of the drop edge, so stable between drops)
    outputs = index.outputs
    drop_end = step_end(source, outputs, replay.token_drop_edge) if replay.token_drop_edge else 0
    head_end = step_end(source, outputs, replay.head) if replay.head and drop_end else 0
    task, anchor = task_index(source), _newest_user(source[:drop_end])
    keep = {i for i in (task, anchor) if i is not None}
    reduced, reduced_index, reduced_fates = without_debris(source, view, fates, drop_end, keep, head_end)
    out = apply_frozen(reduced, reduced_index, reduced_fates)
    removed = len(source) - len(out)  # everything removed sits before ``at``
    notice = compaction_notice(shortened, dropped, strategy=STRATEGY_NAME) if shortened > 0 or dropped > 0 else None
    return Head(out[: at - removed], notice, shortened, dropped, len(rescued))


def frozen_prompt(source: list[BaseMessage], replay: Bounded, settings: Settings, remember: bool) -> tuple[list[BaseMessage], dict[str, Any], Frozen | None]:
    """Return the prompt with the replay's edges applied, the notice placed, the report details and the remembered head.

    The head is the one the replay remembers when the edges are those it was built for
    (see :class:`Frozen`), else it is built, and remembered when ``remember`` (the replay
    is in a strategy's memo) and it is small enough; the third value is None when not.
    """
    index = replay.index
    at = step_end(source, index.outputs, replay.compaction_edge) if replay.compaction_edge else 0
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
        frozen = remembered(source, at, head, key) if remember and key is not None else None
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


def _newest_user(messages: Sequence[BaseMessage]) -> int | None:
    return next((i for i in range(len(messages) - 1, -1, -1) if is_real_user_message(messages[i])), None)
