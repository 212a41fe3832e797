"""dedupe_outputs: a tool output's lines that an earlier output already showed become one pointer to it.

Agents read the same file twice, run the same tests again, grep what they just printed: in
real runs about 30% of tool-output characters are lines an earlier output of the same run
already held. The model pays for them on every later call and learns nothing from the second
copy. This strategy keeps the first copy whole and, in each later output, replaces every run
of lines already shown (each longer than ``dedupe_min_line_chars``) by one line naming the
output that holds them: ``[12 lines as in the output of call_ab12 (bash) above]``. A run is
replaced only when the pointer is shorter than the lines it stands for.

Why the newer copy and not the older one: the older output sits in the provider's cached
prefix, the newer one at the uncached tail. Editing only the output as it arrives leaves every
earlier message byte for byte as it was, so the prompt stays a growing prefix and the cache
keeps hitting; each output's form depends only on the outputs before it, so the prompt is a
pure function of the history. What the pointer stands for stays in the prompt, in the older
output's own words, so nothing the agent could use is lost (``benchmarks/recall.py``). The
first ``dedupe_tool_call_threshold`` outputs are never edited: a short conversation comes
back as it was. Outputs whose content is not a string (blocks) are left as they are.

Run before a strategy that shortens or drops old outputs (the default list does): that
strategy then counts and cuts the deduplicated history.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from typing_extensions import Unpack

from langchain_promptstrat.messages.recorded_calls import recorded_calls
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import SettingKey, Settings, settings_with_options
from langchain_promptstrat.messages.history_memo import HistoryKey, ReplayMemo, history_key
from langchain_promptstrat.strategy import PromptStrategy

__all__ = ["DedupeOutputs", "DedupeOutputsOptions", "dedupe_outputs", "pointer_text"]


def pointer_text(lines: int, call_id: str, tool: str) -> str:
    """Return the line that stands for ``lines`` repeated lines of the output of ``call_id``."""
    name = f" ({tool})" if tool else ""
    return f"[{lines} line{'s' if lines != 1 else ''} as in the output of {call_id}{name} above]"


@dataclass
class _Progress:
    """How far one history has been read: the line -> newest holder table and each message's result."""

    seen: dict[str, str] = field(default_factory=dict)
    """A line longer than the minimum -> the call id of the newest earlier output holding it."""
    tools: dict[str, str] = field(default_factory=dict)
    """Call id -> the name of its tool, for the pointer's words."""
    outputs: int = 0
    results: list[BaseMessage | None] = field(default_factory=list)
    """Per message read: its edited copy, or None when it is sent as it is."""
    edited: int = 0
    lines_pointed: int = 0


def _dedupe_one(message: ToolMessage, progress: _Progress, settings: Settings) -> ToolMessage | None:
    """Return ``message`` with its repeated runs pointed back (None when nothing changes), and record its lines."""
    content = message.content
    if not isinstance(content, str):
        return None
    minimum = settings.dedupe_min_line_chars
    lines = content.split("\n")
    active = progress.outputs > settings.dedupe_tool_call_threshold
    out: list[str] = []
    changed = 0
    i = 0
    while active and i < len(lines):
        holder = progress.seen.get(lines[i]) if len(lines[i]) > minimum else None
        if holder is None:
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and len(lines[j]) > minimum and lines[j] in progress.seen:
            j += 1
        pointer = pointer_text(j - i, holder, progress.tools.get(holder, ""))
        if len(pointer) < sum(len(line) + 1 for line in lines[i:j]):
            out.append(pointer)
            changed += j - i
        else:
            out.extend(lines[i:j])
        i = j
    for line in lines:
        if len(line) > minimum:
            progress.seen[line] = message.tool_call_id
    if not changed:
        return None
    progress.edited += 1
    progress.lines_pointed += changed
    return message.model_copy(update={"content": "\n".join(out)})


def _read(messages: Sequence[BaseMessage], progress: _Progress, start: int, settings: Settings) -> None:
    """Extend ``progress`` over ``messages[start:]``."""
    for message in messages[start:]:
        result: BaseMessage | None = None
        if isinstance(message, AIMessage):
            for call_id, name, _ in recorded_calls(message):
                progress.tools[call_id] = name
        elif isinstance(message, ToolMessage):
            progress.outputs += 1
            result = _dedupe_one(message, progress, settings)
        progress.results.append(result)


def _compacted(messages: Sequence[BaseMessage], progress: _Progress) -> Compacted:
    out = [r if r is not None else m for m, r in zip(messages, progress.results)]
    report = make_report(
        "dedupe_outputs", messages, out, shortened=progress.edited,
        outputs_edited=progress.edited, lines_pointed_back=progress.lines_pointed,
    )
    return Compacted(out, report)


def dedupe_outputs(messages: Sequence[BaseMessage], /, *, settings: Settings) -> Compacted:
    """Return ``messages`` with each tool output's already-shown lines pointed back to the earlier output, and a report.

    The report adds ``outputs_edited`` and ``lines_pointed_back``.
    """
    progress = _Progress()
    _read(messages, progress, 0, settings)
    return _compacted(messages, progress)


class DedupeOutputsOptions(TypedDict, total=False):
    """The options of :class:`DedupeOutputs`; each is the setting of the same key."""

    tool_call_threshold: Annotated[int | None, SettingKey("dedupe_tool_call_threshold")]
    min_line_chars: Annotated[int | None, SettingKey("dedupe_min_line_chars")]


@dataclass
class _Reading:
    """A reading remembered in the replay engine's memo: the history it covers and how far it got."""

    history: HistoryKey
    progress: _Progress


class DedupeOutputs(PromptStrategy):
    """``dedupe_outputs``: lines a tool output repeats from an earlier one become one pointer to it.

    ``DedupeOutputs(tool_call_threshold=5)``. Each option is also a setting of the same key
    (``DEDUPE_TOOL_CALL_THRESHOLD`` or ``PROMPTSTRAT_DEDUPE_TOOL_CALL_THRESHOLD``, ...).
    It remembers how far it read the last few conversations in the replay engine's memo
    (:class:`~langchain_promptstrat.messages.history_memo.ReplayMemo`: messages
    held weakly, found by what they are), so the next call of a growing conversation, or the
    same conversation loaded again from a checkpoint, reads only what was added and returns
    the same edited copies as before: the strategy after it sees the same objects every call.
    """

    strategy_name = "dedupe_outputs"
    options = DedupeOutputsOptions
    memo_size = 8
    """Conversations remembered per strategy object (never changes a result)."""

    def __init__(self, settings: Settings | None = None, **options: Unpack[DedupeOutputsOptions]) -> None:
        """Build the strategy; an option left at None comes from ``settings``, else the environment, else its default.

        Args:
            settings: Thresholds shared with other strategies (default: read from the
                environment now); the options below win over it.

        Raises:
            ConfigError: A value is out of range, or a keyword is not one of these options.
        """
        super().__init__(settings_with_options(type(self), settings, options))
        self._memo: ReplayMemo[_Reading] = ReplayMemo(self.memo_size)

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return :func:`dedupe_outputs` of ``messages``, resuming the remembered reading of an earlier call.

        A reading is resumed when the remembered messages are the same objects, or equal in
        content (a conversation loaded again from a checkpoint); then the edited copies are
        the remembered ones, so the strategy after this one sees the objects it saw before.
        """
        best = self._memo.take(messages)  # taken out: its reading is extended in place, for the longer history
        progress = best.progress if best is not None else _Progress()
        _read(messages, progress, best.history.length if best is not None else 0, self.settings)
        self._memo.remember(_Reading(history_key(messages, best.history if best is not None else None), progress))
        return _compacted(messages, progress)
