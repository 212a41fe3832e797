"""Debris removal: the assistant messages whose calls are all dropped, and the loose messages of a dropped span.

A dropped step takes its assistant message's narration with it, and a ceiling-driven
front drop takes the user turns and plain assistant text between the kept head and the
drop edge (never the task nor the newest user message). :func:`without_debris` returns the
reduced list with its tool-call index shifted and the fates carried over by call.

Must not decide which calls are dropped (``stable_prompt`` does).
"""

from __future__ import annotations

import bisect

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langchain_promptstrat.messages import Fate, ToolCallRecord, ToolIndex

__all__ = ["count_completed", "without_debris"]


def _completed_in(index: ToolIndex, ai_index: int) -> int:
    counts: dict[int, int] = index.completed_per_ai  # type: ignore[attr-defined]
    return counts.get(ai_index, 0)


def without_debris(
    source: list[BaseMessage], index: ToolIndex, fates: dict[int, Fate], drop_end: int, keep: set[int], head_end: int = 0
) -> tuple[list[BaseMessage], ToolIndex, dict[int, Fate]]:
    """Return ``source`` without the assistant messages whose calls are all dropped (their narration goes with them) and the loose messages from ``head_end`` to ``drop_end``.

    ``keep`` holds indices never removed (the task, the newest user message). Fates are
    carried over to the new list's index by call id.
    """
    dropped_by_ai: dict[int, int] = {}
    for number, fate in fates.items():
        if fate is Fate.DROP:
            ai = index.calls[number].ai_index
            dropped_by_ai[ai] = dropped_by_ai.get(ai, 0) + 1
    gone = [ai for ai, n in dropped_by_ai.items() if n == _completed_in(index, ai) and len(_calls_of(index, ai)) == n]
    remove = set(gone)
    for ai in gone:
        remove.update(r.output_index for r in _calls_of(index, ai) if r.output_index is not None)
    for i in range(head_end, drop_end):
        m = source[i]
        if i in keep or i in remove or isinstance(m, (SystemMessage, ToolMessage)):
            continue
        if isinstance(m, AIMessage) and _completed_in(index, i):
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
    count_completed(new_index)
    return reduced, new_index, new_fates


def _calls_of(index: ToolIndex, ai_index: int) -> list[ToolCallRecord]:
    return index.calls_per_ai.get(ai_index, [])  # type: ignore[attr-defined, no-any-return]


def count_completed(index: ToolIndex) -> ToolIndex:
    per_ai: dict[int, int] = {}
    calls_per_ai: dict[int, list[ToolCallRecord]] = {}
    for record in index.calls:
        calls_per_ai.setdefault(record.ai_index, []).append(record)
        if record.output_index is not None:
            per_ai[record.ai_index] = per_ai.get(record.ai_index, 0) + 1
    index.completed_per_ai = per_ai  # type: ignore[attr-defined]
    index.calls_per_ai = calls_per_ai  # type: ignore[attr-defined]
    return index
