"""The stable prompt: the rule's edges applied to a history, as each call's fate, then the fates applied, with one remembered head.

:func:`frozen_prompt` reads "edges -> each call's fate -> apply the fates": the fates come
from the rule (:func:`~langchain_promptstrat.strategies.epoch_machinery.stable_rule.call_fates`);
applying them removes the debris of dropped steps (an assistant message whose calls are
all dropped takes its narration with it; a ceiling-driven drop takes the loose messages of
the dropped span, never the task nor the newest user message), shortens or drops each
call, and places the compaction notice at the boundary. Between moves of the edges the
compacted head is the same, so it is remembered (:class:`Frozen`) and reused.

Must not move an edge (``stable_rule`` does).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langchain_promptstrat.messages import (
    Fate,
    GrowingToolIndex,
    ToolCallRecord,
    ToolIndex,
    is_real_user_message,
    message_chars,
    shorten_arguments,
    shorten_tool_output,
    task_index,
)
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.caches import apply_frozen
from langchain_promptstrat.strategies.epoch_machinery.notice import compaction_notice
from langchain_promptstrat.strategies.epoch_machinery.shortened_form import ShortenedForm, reads_a_file
from langchain_promptstrat.strategies.epoch_machinery.stable_rule import Edges, call_fates, stable_boundary
from langchain_promptstrat.strategies.epoch_machinery.token_costs import Costs
from langchain_promptstrat.truncation import DEFAULT_OUTPUT_SIZE, shorten_string

__all__ = ["STRATEGY_NAME", "Frozen", "frozen_prompt", "step_end"]


STRATEGY_NAME = "shorten_tools_epoch_stable"


def step_end(messages: Sequence[BaseMessage], outputs: Sequence[int], forward: int) -> int:
    """Return the index right after the step holding output ``forward``: after its last ToolMessage."""
    j = outputs[forward - 1] + 1
    while j < len(messages) and isinstance(messages[j], ToolMessage):
        j += 1
    return j


@dataclass
class Frozen:
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
    _tokens: tuple[Costs, int] | None = None

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

    def tokens(self, costs: Costs, source: list[BaseMessage]) -> int:
        """Return the tokens of the head and the notice (remembered for the last counter asked)."""
        known = self._tokens
        if known is not None and known[0] is costs:
            return known[1]
        tokens = costs(self.head(source)) + (costs.whole(self.notice) if self.notice is not None else 0)
        self._tokens = (costs, tokens)
        return tokens


class Head(NamedTuple):
    messages: list[BaseMessage]
    """The frozen part of ``source[:at]`` as sent (before the notice)."""
    notice: BaseMessage | None
    shortened: int
    dropped: int
    protected: int


def _remembered(source: list[BaseMessage], at: int, head: Head, key: tuple[Any, ...]) -> Frozen:
    """Return ``head`` as a :class:`Frozen`: the messages passed through as indices into ``source``, the copies held."""
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
    return Frozen(key, at, picks, copies, head.notice, head.shortened, head.dropped, head.protected, chars)


def _without_debris(
    source: list[BaseMessage], growing: GrowingToolIndex, index: ToolIndex, fates: dict[int, Fate], drop_end: int, keep: set[int], head_end: int
) -> tuple[list[BaseMessage], ToolIndex, dict[int, Fate]]:
    """Return ``source`` without the assistant messages whose calls are all dropped (their narration goes with them) and the loose messages from ``head_end`` to ``drop_end``.

    ``keep`` holds indices never removed (the task, the newest user message). Fates are
    carried over to the new list's index by call id. ``index`` is ``growing``'s positional view.
    """
    completed_per_ai, calls_per_ai = growing.completed_per_ai, growing.calls_per_ai
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
    return reduced, new_index, new_fates




def _really_shortened(source: Sequence[BaseMessage], index: ToolIndex, fates: dict[int, Fate], form: ShortenedForm) -> int:
    """Return how many calls marked SHORTEN change when shortened (output, arguments or narration): the notice counts only those."""
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
        output = source[record.output_index]  # type: ignore[index]
        content = output.content
        if form.read_chars and isinstance(output, ToolMessage) and reads_a_file(record.name, record.args):
            if form(output, record) is not output:
                changed += 1
                continue
        elif isinstance(content, str):  # the common case, without building the shortened copy
            if shorten_string(content, DEFAULT_OUTPUT_SIZE) is not content:
                changed += 1
                continue
        elif shorten_tool_output(output) is not output:  # type: ignore[arg-type]
            changed += 1
            continue
        if shorten_arguments(record.args) is not record.args or narration_of.get(record.ai_index, False):
            changed += 1
    return changed


_FROZEN_CHARS = 1_000_000
"""A compacted head whose edited copies hold more characters than this is not remembered (it is rebuilt at each call):
this bounds what each replay in a strategy's memo holds besides indices and counts."""


def _frozen_key(edges: Edges) -> tuple[Any, ...] | None:
    """Return what the compacted head depends on besides the messages before it, or None when it also depends on the total.

    :meth:`Edges.decided_at` reads the total only for a call above every segment's edge;
    the last segment is where the compaction edge moved to, so that never happens for a
    frozen call, and the guard only keeps that reasoning checked.
    """
    segments = edges.segments
    if edges.compaction_edge and (not segments or max(edge for edge, _ in segments) < edges.compaction_edge):
        return None
    return (edges.compaction_edge, edges.drop_edge, edges.token_drop_edge, edges.head, edges.front_total, segments)


def _freeze(source: list[BaseMessage], index: GrowingToolIndex, edges: Edges, total: int, at: int, form: ShortenedForm) -> Head:
    """Return the compacted head of ``source`` under ``edges``: decide each frozen call, drop the debris, apply the fates."""
    fates, rescued = call_fates(index.completed, edges, total)
    view = index.tool_index()
    dropped = sum(1 for f in fates.values() if f is Fate.DROP)
    shortened = _really_shortened(source, view, fates, form)
    # loose messages (user turns, harness messages, plain assistant text) go only with a ceiling-driven front drop;
    # the task and the newest user message of the dropped span stay (a function of the drop edge, so stable between drops)
    outputs = index.outputs
    drop_end = step_end(source, outputs, edges.token_drop_edge) if edges.token_drop_edge else 0
    head_end = step_end(source, outputs, edges.head) if edges.head and drop_end else 0
    task, anchor = task_index(source), _newest_user(source[:drop_end])
    keep = {i for i in (task, anchor) if i is not None}
    reduced, reduced_index, reduced_fates = _without_debris(source, index, view, fates, drop_end, keep, head_end)
    out = apply_frozen(reduced, reduced_index, reduced_fates, form)
    removed = len(source) - len(out)  # everything removed sits before ``at``
    notice = compaction_notice(shortened, dropped, strategy=STRATEGY_NAME) if shortened > 0 or dropped > 0 else None
    return Head(out[: at - removed], notice, shortened, dropped, len(rescued))


def frozen_prompt(
    source: list[BaseMessage],
    index: GrowingToolIndex,
    edges: Edges,
    total: int,
    previous_edges: tuple[int, int],
    settings: Settings,
    known: Frozen | None,
    remember: bool,
) -> tuple[list[BaseMessage], dict[str, Any], Frozen | None]:
    """Return the prompt with ``edges`` applied, the notice placed, the report details and the head to remember.

    ``index`` is ``source``'s tool-call index, ``total`` the output count the rule counted,
    ``previous_edges`` the compaction and drop edges of the previous model call. The head
    is ``known`` when it was built for these edges (see :class:`Frozen`), else it is built,
    and returned to be remembered when ``remember`` (a strategy's memo holds it) and it is
    small enough; the third value is None when not.
    """
    at = step_end(source, index.outputs, edges.compaction_edge) if edges.compaction_edge else 0
    key = _frozen_key(edges)
    frozen = known
    if frozen is not None and key is not None and frozen.key == key and frozen.at == at:
        out = frozen.prompt(source)
        counts = frozen.shortened, frozen.dropped, frozen.protected
        notice = frozen.notice is not None
    else:
        head = _freeze(source, index, edges, total, at, ShortenedForm(settings.stable_read_output_chars, settings.stable_narration_chars))
        out = head.messages + [head.notice] + source[at:] if head.notice is not None else head.messages + source[at:]
        counts = head.shortened, head.dropped, head.protected
        notice = head.notice is not None
        frozen = _remembered(source, at, head, key) if remember and key is not None else None
        if frozen is not None and frozen.chars > _FROZEN_CHARS:
            frozen = None
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
    return out, details, frozen


def _newest_user(messages: Sequence[BaseMessage]) -> int | None:
    return next((i for i in range(len(messages) - 1, -1, -1) if is_real_user_message(messages[i])), None)
