"""The stable prompt: the rule's edges applied to a history, as each call's fate, then the fates applied, through the one head cache.

:func:`frozen_prompt` reads "edges -> each call's fate -> apply the fates": the fates come
from the rule (:func:`~langchain_promptstrat.strategies.epoch_machinery.stable_rule.call_fates`);
applying them leaves out the debris of dropped steps (an assistant message whose calls are
all dropped takes its narration with it; a ceiling-driven drop takes the loose messages of
the dropped span, never the task nor the newest user message), shortens or drops each
call, and places the compaction notice at the boundary. Between moves of the edges the
compacted head is the same, so it is remembered in the epoch strategies' head cache
(:mod:`~langchain_promptstrat.strategies.epoch_machinery.caches`) and reused.

Must not move an edge (``stable_rule`` does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langchain_promptstrat.messages import (
    Fate,
    ToolIndex,
    apply_fates,
    is_real_user_message,
    shorten_arguments,
    task_index,
)
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.caches import Head, encode_head, recall_head, remember_head
from langchain_promptstrat.strategies.epoch_machinery.notice import compaction_notice
from langchain_promptstrat.strategies.epoch_machinery.shortened_form import ShortenedForm
from langchain_promptstrat.strategies.epoch_machinery.stable_rule import Edges, call_fates, stable_boundary

__all__ = ["STRATEGY_NAME", "frozen_prompt", "step_end"]


STRATEGY_NAME = "shorten_tools_epoch_stable"


def step_end(messages: Sequence[BaseMessage], outputs: Sequence[int], forward: int) -> int:
    """Return the index right after the step holding output ``forward``: after its last ToolMessage."""
    j = outputs[forward - 1] + 1
    while j < len(messages) and isinstance(messages[j], ToolMessage):
        j += 1
    return j


def _debris(source: list[BaseMessage], index: ToolIndex, fates: dict[int, Fate], drop_end: int, keep: set[int], head_end: int) -> set[int]:
    """Return the indices of the assistant messages whose calls are all dropped (their narration goes with them), their outputs, and the loose messages from ``head_end`` to ``drop_end``.

    ``keep`` holds indices never removed (the task, the newest user message).
    """
    completed_per_ai, calls_per_ai = index.completed_per_ai, index.calls_per_ai
    dropped_by_ai: dict[int, int] = {}
    for number, fate in fates.items():
        if fate is Fate.DROP:
            ai = index.calls[number].ai_index
            dropped_by_ai[ai] = dropped_by_ai.get(ai, 0) + 1
    gone = [ai for ai, n in dropped_by_ai.items() if n == completed_per_ai.get(ai, 0) and len(calls_per_ai.get(ai, ())) == n]
    remove = set(gone)
    for ai in gone:
        remove.update(o for o in (index.calls[number].output_index for number in calls_per_ai[ai]) if o is not None)
    for i in range(head_end, drop_end):
        m = source[i]
        if i in keep or i in remove or isinstance(m, (SystemMessage, ToolMessage)):
            continue
        if isinstance(m, AIMessage) and completed_per_ai.get(i, 0):
            continue
        remove.add(i)
    return remove


def _really_shortened(
    source: Sequence[BaseMessage], index: ToolIndex, fates: dict[int, Fate], form: ShortenedForm, short_outputs: Mapping[int, BaseMessage],
) -> int:
    """Return how many calls marked SHORTEN change when shortened (output, arguments or narration): the notice counts only those.

    ``short_outputs`` holds each such call's output as shortened, by message index.
    """
    changed = 0
    narration_of: dict[int, bool] = {}  # assistant message index -> whether its narration is shortened and changes
    if form.narration_chars:
        calls_of: dict[int, int] = {}
        frozen_of: dict[int, int] = {}
        for number, record in enumerate(index.calls):
            calls_of[record.ai_index] = calls_of.get(record.ai_index, 0) + 1
            if number in fates:
                frozen_of[record.ai_index] = frozen_of.get(record.ai_index, 0) + 1
        for ai, n in frozen_of.items():
            message = source[ai]
            narration_of[ai] = n == calls_of[ai] and isinstance(message, AIMessage) and form.narration(message) is not message
    for number, fate in fates.items():
        if fate is not Fate.SHORTEN:
            continue
        record = index.calls[number]
        output_index = record.output_index
        if (
            short_outputs[output_index] is not source[output_index]  # type: ignore[index]
            or shorten_arguments(record.args) is not record.args
            or narration_of.get(record.ai_index, False)
        ):
            changed += 1
    return changed


def _frozen_key(edges: Edges) -> tuple[Any, ...] | None:
    """Return what the compacted head depends on besides the messages it reads, or None when it also depends on the total.

    :meth:`Edges.decided_at` reads the total only for a call above every segment's edge;
    the last segment is where the compaction edge moved to, so that never happens for a
    frozen call, and the guard only keeps that reasoning checked.
    """
    segments = edges.segments
    if edges.compaction_edge and (not segments or max(edge for edge, _ in segments) < edges.compaction_edge):
        return None
    return (edges.compaction_edge, edges.drop_edge, edges.token_drop_edge, edges.head, edges.front_total, segments)


def _freeze(source: list[BaseMessage], index: ToolIndex, edges: Edges, total: int, at: int, form: ShortenedForm) -> Head:
    """Return the compacted head of ``source`` under ``edges``: decide each frozen call, leave out the debris, apply the fates."""
    fates, rescued = call_fates(index.completed, edges, total)
    dropped = sum(1 for f in fates.values() if f is Fate.DROP)
    calls = index.calls
    short_outputs = {  # each shortened output once: for the notice's count and for the head
        i: form(source[i], record)  # type: ignore[arg-type]
        for number, fate in fates.items()
        if fate is Fate.SHORTEN and (i := (record := calls[number]).output_index) is not None
    }
    shortened = _really_shortened(source, index, fates, form, short_outputs)
    # loose messages (user turns, harness messages, plain assistant text) go only with a ceiling-driven front drop;
    # the task and the newest user message of the dropped span stay (a function of the drop edge, so stable between drops)
    outputs = index.outputs
    drop_end = step_end(source, outputs, edges.token_drop_edge) if edges.token_drop_edge else 0
    head_end = step_end(source, outputs, edges.head) if edges.head and drop_end else 0
    task, anchor = task_index(source), _newest_user(source[:drop_end])
    keep = {i for i in (task, anchor) if i is not None}
    head = apply_fates(
        source[:at], index, {number: (fate, fate) for number, fate in fates.items()},
        shortened_outputs=short_outputs, narration_chars=form.narration_chars,
        leave_out=_debris(source, index, fates, drop_end, keep, head_end),
    )
    notice = compaction_notice(shortened, dropped, strategy=STRATEGY_NAME) if shortened > 0 or dropped > 0 else None
    return encode_head(source, at, head, notice, shortened, dropped, len(rescued))


def frozen_prompt(
    source: list[BaseMessage], index: ToolIndex, edges: Edges, total: int, previous_edges: tuple[int, int], settings: Settings,
) -> tuple[list[BaseMessage], dict[str, Any], Head]:
    """Return the prompt with ``edges`` applied and the notice placed, the report details, and the compacted head.

    ``index`` is ``source``'s tool-call index, ``total`` the output count the rule counted,
    ``previous_edges`` the compaction and drop edges of the previous model call. The head
    (``source[:head.at]`` compacted, then the notice) is a function of the messages up to
    the edges' horizon and of the edges (:func:`_frozen_key`): every decision reads only
    calls at or below the compaction edge and, for repeats, calls up to the horizon; the
    notice's counts are counted over the same calls; the loose messages dropped lie before
    the drop edge's step end. So it is remembered in the head cache under that key, and a
    later call of the same conversation (or of the same conversation loaded again) finds it
    instead of deciding every call again.
    """
    outputs = index.outputs
    at = step_end(source, outputs, edges.compaction_edge) if edges.compaction_edge else 0
    key = _frozen_key(edges)
    form = ShortenedForm(settings.stable_read_output_chars, settings.stable_narration_chars)
    horizon = edges.horizon()
    reads = max(at, outputs[horizon - 1] + 1 if horizon else 0)
    cache_key = (STRATEGY_NAME, key, at, form)
    head = recall_head(source, reads, cache_key) if key is not None else None
    if head is None:
        head = _freeze(source, index, edges, total, at, form)
        if key is not None:
            remember_head(source, reads, cache_key, head)
    out = head.messages(source)
    if head.notice is not None:
        out.append(head.notice)
    out += source[at:]
    counts = head.shortened, head.dropped, head.protected
    notice = head.notice is not None
    state = stable_boundary(index.total_outputs, settings)
    epoch = state.epoch if state is not None else None
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
    details: dict[str, Any] = dict(
        shortened=counts[0],
        dropped=counts[1],
        protected=counts[2],
        epoch_index=epoch.epoch_index if epoch else None,
        pinned_total=epoch.pinned_total if epoch else None,
        new_calls=epoch.new_calls if epoch else None,
        epoch_size=epoch.epoch_size if epoch else None,
        keep_full=epoch.keep_full if epoch else None,
        compaction_edge=edges.compaction_edge,
        drop_edge=edges.drop_edge,
        head_edge=edges.head,
        front_total=edges.front_total,
        repeats=index.repeats,
        boundary_moved=moved_c,
        front_moved=moved_d,
        prefix_change=region,
        prefix_change_reason=reason,
        notice=notice,
    )
    return out, details, head


def _newest_user(messages: Sequence[BaseMessage]) -> int | None:
    return next((i for i in range(len(messages) - 1, -1, -1) if is_real_user_message(messages[i])), None)
