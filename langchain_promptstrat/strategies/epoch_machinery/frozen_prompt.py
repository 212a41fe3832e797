"""The prompt with frozen regions applied: each frozen call's fate, what a dropped step takes with
it, and the compaction notice after the head.

Knows no strategy: where the regions sit comes in as a value (:class:`Regions`), each call's fate
is asked of the rule (:class:`FatesOf`, answered by the strategy's module), the shortened form and
the notice's strategy name come in as arguments. :func:`compacted_head` builds the compacted head
from the fates; :func:`frozen_prompt` finds it again in the head cache of
:mod:`~langchain_promptstrat.messages.history_memo` under the regions, so the fates are asked only
when the regions move.
"""

from __future__ import annotations

from collections.abc import Collection, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langchain_promptstrat.messages import (
    Fate,
    ToolCallRecord,
    ToolIndex,
    apply_fates,
    is_real_user_message,
    shortens_arguments,
    task_index,
)
from langchain_promptstrat.messages.history_memo import (
    Head,
    encode_head,
    recall_head,
    remember_head,
)
from langchain_promptstrat.strategies.epoch_machinery.notice import compaction_notice
from langchain_promptstrat.strategies.epoch_machinery.shortened_form import ShortenedForm

Fates = tuple[dict[int, Fate], frozenset[int]]
"""Each frozen call's fate (by call number; absent: whole), and the calls kept whole as a repeat's
newest occurrence."""


class Regions(Protocol):
    """Where the frozen regions sit after a model call, in forward positions (1 = oldest output)."""

    @property
    def compaction_edge(self) -> int: ...
    @property
    def drop_edge(self) -> int: ...
    @property
    def token_drop_edge(self) -> int: ...
    @property
    def head(self) -> int: ...
    @property
    def front_total(self) -> int: ...
    @property
    def segments(self) -> tuple[tuple[int, int], ...]: ...


R = TypeVar("R", bound=Regions)


def latest_decision(edges: Regions) -> int:
    """Return the newest history length any frozen call's protection was decided at under
    ``edges``: the last front drop, or a segment's freezing (calls after it are never read)."""
    return max([edges.front_total, *(d for _, d in edges.segments)])


@dataclass
class FatesOf(Generic[R]):
    """A question to the rule: the fate of each frozen call under ``edges`` (``calls``: the
    completed calls, oldest output first; ``total``: the history's outputs)."""

    calls: Sequence[ToolCallRecord]
    edges: R
    total: int
    answer: Fates | None = None
    """The rule's answer, set by whoever builds the prompt."""

    def answered(self) -> Fates:
        """Return the answer (asserting there is one)."""
        assert self.answer is not None, "a question of the prompt went unanswered"
        return self.answer


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


def really_shortened(
    source: Sequence[BaseMessage],
    index: ToolIndex,
    fates: Mapping[int, Fate],
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

    def changes(number: int) -> bool:
        record = index.calls[number]
        output, ai = record.output_index, source[record.ai_index]
        handle = record.number + 1 if form.handles else None
        return (
            (output is not None and short_outputs[output] is not source[output])
            or (isinstance(ai, AIMessage) and shortens_arguments(ai, record.id, form.count, handle))
            or record.ai_index in narrated
        )

    return sum(1 for number, fate in fates.items() if fate is Fate.SHORTEN and changes(number))


def compacted_head(
    source: list[BaseMessage],
    index: ToolIndex,
    fates: Fates,
    at: int,
    form: ShortenedForm,
    *,
    strategy: str,
    leave_out: Collection[int] = (),
) -> Head:
    """Return the compacted ``source[:at]``: each frozen call's fate applied, ``leave_out`` left
    out, and the notice of ``strategy`` when a call was shortened or dropped."""
    fates_by_number, rescued = fates
    dropped = sum(1 for f in fates_by_number.values() if f is Fate.DROP)
    calls = index.calls
    short_outputs = {  # each shortened output once: for the notice's count and for the head
        i: form(source[i], record)  # type: ignore[arg-type]
        for number, fate in fates_by_number.items()
        if fate is Fate.SHORTEN and (i := (record := calls[number]).output_index) is not None
    }
    shortened = really_shortened(source, index, fates_by_number, form, short_outputs)
    head = apply_fates(
        source[:at],
        index,
        {number: (fate, fate) for number, fate in fates_by_number.items()},
        count=form.count,
        handles=form.handles,
        shortened_outputs=short_outputs,
        narration_chars=form.narration_chars,
        leave_out=leave_out,
    )
    notice = (
        compaction_notice(
            shortened, dropped, strategy=strategy, fates=fates_by_number, handles=form.handles
        )
        if shortened > 0 or dropped > 0
        else None
    )
    return encode_head(source, at, head, notice, shortened, dropped, len(rescued))


def _freeze(
    source: list[BaseMessage],
    index: ToolIndex,
    edges: R,
    fates: Fates,
    at: int,
    form: ShortenedForm,
    strategy: str,
) -> Head:
    """Return the compacted head of ``source`` under ``edges``: each frozen call's fate applied,
    what dropped steps take with them left out, the notice."""
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
    leave_out = left_out(source, index, fates[0], drop_end, keep, head_end)
    return compacted_head(source, index, fates, at, form, strategy=strategy, leave_out=leave_out)


def frozen_prompt(
    source: list[BaseMessage],
    index: ToolIndex,
    edges: R,
    total: int,
    form: ShortenedForm,
    *,
    strategy: str,
) -> Generator[FatesOf[R], None, tuple[list[BaseMessage], Head | None]]:
    """Return the prompt with ``edges`` applied and the notice placed after the head, and the
    compacted head (None while nothing is frozen), the fates asked of the rule (:class:`FatesOf`)
    when the head is not remembered.

    The head reads no message after the edges' latest decision, so the head cache finds it again
    under the edges: for a later call of the conversation, or the conversation loaded again.
    """
    if edges.compaction_edge == 0 and edges.drop_edge == 0:
        return list(source), None
    outputs = index.outputs
    at = step_end(source, outputs, edges.compaction_edge) if edges.compaction_edge else 0
    segments = edges.segments
    # decided_at reads the total only for a call above every segment's edge, never a frozen one: the
    # guard keeps that checked
    known = not edges.compaction_edge or bool(
        segments and max(edge for edge, _ in segments) >= edges.compaction_edge
    )
    latest = latest_decision(edges)
    reads = max(at, outputs[latest - 1] + 1 if latest else 0)
    key = (
        strategy,
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
        question = FatesOf(index.completed, edges, total)
        yield question
        head = _freeze(source, index, edges, question.answered(), at, form, strategy)
        if known:
            remember_head(source, reads, key, head)
    out = head.messages(source)
    if head.notice is not None:
        out.append(head.notice)
    out += source[at:]
    return out, head


def prefix_change(before: tuple[int, int], after: tuple[int, int]) -> tuple[str | None, str | None]:
    """Return where the prompt's prefix changed when the compaction and drop edges went from
    ``before`` to ``after`` (None, ``front`` or ``middle``), and why (``compaction_started``,
    ``front_drop`` or ``advance``)."""
    (before_c, before_d), (after_c, after_d) = before, after
    if before_c == after_c and before_d == after_d:
        return None, None
    if before_c == 0:
        return "front", "compaction_started"
    if before_d != after_d:
        return "front", "front_drop"
    return "middle", "advance"
