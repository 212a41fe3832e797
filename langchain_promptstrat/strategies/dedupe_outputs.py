"""dedupe_outputs: a tool output's lines that an earlier output already showed become one pointer to
it.

In real runs about 30% of tool-output characters repeat lines an earlier output held (a
file read twice, tests run again). The first copy stays whole; in each later output, every
run of already-shown lines (each longer than ``dedupe_min_line_chars``) becomes one line,
``[12 lines as in the output of call_ab12 (bash) above]``, when that is shorter. The newer
copy is edited because it is at the uncached tail: every earlier message keeps its bytes,
so the prefix cache keeps hitting, and each output's form depends only on the outputs
before it. The first ``dedupe_tool_call_threshold`` outputs are never edited; non-string
contents are left alone. Run it before a strategy that shortens old outputs: where that one
shortens or drops the output a pointer names, the apply path names another output that shows
the lines, or the read-back handle (:mod:`~langchain_promptstrat.messages.references`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.history_memo import (
    EMPTY_HISTORY,
    HistoryKey,
    ReplayMemo,
    history_key,
)
from langchain_promptstrat.messages.recorded_calls import recorded_calls
from langchain_promptstrat.messages.references import reference_text
from langchain_promptstrat.options import DedupeOptions
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategy import NO_REQUEST, PromptRequest, PromptStrategy


@dataclass
class _Reading:
    """How far one history has been read (the state the replay engine's memo keeps).

    ``seen``: each line longer than the minimum -> the call id of the newest output holding
    it; ``tools``: call id -> tool name; ``results``: per message read, its edited copy or None.
    """

    history: HistoryKey = EMPTY_HISTORY
    seen: dict[str, str] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)
    outputs: int = 0
    results: list[BaseMessage | None] = field(default_factory=list)
    edited: int = 0
    lines_pointed: int = 0


def _dedupe_one(message: ToolMessage, reading: _Reading, settings: Settings) -> ToolMessage | None:
    """Return ``message`` with its repeated runs pointed back (None when nothing changes), and
    record its lines."""
    content = message.content
    if not isinstance(content, str):
        return None
    minimum = settings.dedupe_min_line_chars
    lines = content.split("\n")
    active = reading.outputs > settings.dedupe_tool_call_threshold
    out: list[str] = []
    changed = 0
    i = 0
    while active and i < len(lines):
        holder = reading.seen.get(lines[i]) if len(lines[i]) > minimum else None
        if holder is None:
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and len(lines[j]) > minimum and lines[j] in reading.seen:
            j += 1
        pointer = reference_text(j - i, holder, reading.tools.get(holder, ""))
        if len(pointer) < sum(len(line) + 1 for line in lines[i:j]):
            out.append(pointer)
            changed += j - i
        else:
            out.extend(lines[i:j])
        i = j
    for line in lines:
        if len(line) > minimum:
            reading.seen[line] = message.tool_call_id
    if not changed:
        return None
    reading.edited += 1
    reading.lines_pointed += changed
    return message.model_copy(update={"content": "\n".join(out)})


def _read_on(messages: Sequence[BaseMessage], reading: _Reading, settings: Settings) -> Compacted:
    """Return the result for ``messages``, extending ``reading`` over the messages it has not read
    yet."""
    for message in messages[len(reading.results) :]:
        result: BaseMessage | None = None
        if isinstance(message, AIMessage):
            for call_id, name, _ in recorded_calls(message):
                reading.tools[call_id] = name
        elif isinstance(message, ToolMessage):
            reading.outputs += 1
            result = _dedupe_one(message, reading, settings)
        reading.results.append(result)
    out = [r if r is not None else m for m, r in zip(messages, reading.results, strict=False)]
    return Compacted(
        out,
        make_report(
            "dedupe_outputs",
            messages,
            out,
            shortened=reading.edited,
            outputs_edited=reading.edited,
            lines_pointed_back=reading.lines_pointed,
        ),
    )


def dedupe_outputs(messages: Sequence[BaseMessage], /, *, settings: Settings) -> Compacted:
    """Return ``messages`` with each tool output's already-shown lines pointed back to the earlier
    output; the report adds ``outputs_edited`` and ``lines_pointed_back``."""
    return _read_on(messages, _Reading(), settings)


class DedupeOutputs(PromptStrategy, DedupeOptions):
    """``dedupe_outputs``: lines a tool output repeats from an earlier one become one pointer to it.

    ``DedupeOutputs(dedupe_tool_call_threshold=5)``. Its reading of the last few conversations is
    resumed from the replay engine's memo, so a growing or reloaded conversation reads only
    what was added and gets the same edited copies as before.
    """

    strategy_name = "dedupe_outputs"
    memo_size = 8
    """Conversations remembered per strategy object (never changes a result)."""

    def __post_init__(self) -> None:
        self._memo: ReplayMemo[_Reading] = ReplayMemo(self.memo_size)

    def apply(self, messages: list[BaseMessage], request: PromptRequest = NO_REQUEST) -> Compacted:
        """Return :func:`dedupe_outputs` of ``messages``, resuming the remembered reading of an
        earlier call."""
        reading = (
            self._memo.take(messages) or _Reading()
        )  # taken out: it is extended in place, for the longer history
        result = _read_on(messages, reading, self.settings)
        reading.history = history_key(messages, reading.history)
        self._memo.remember(reading)
        return result
