"""The shortened form of a frozen call: its output by the kind of call (a file read keeps whole
lines of its head and tail, anything else the usual stub), its arguments and its narration.

Knows no strategy: the default builds one from its settings (:meth:`ShortenedForm.of`), the
epoch pair the plain stub (``read_chars`` 0, narration kept).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from langchain_promptstrat.messages import (
    CountTokens,
    ToolCallRecord,
    edit_ai_message,
    recorded_calls,
    shorten_lines,
    shorten_text,
    shorten_tool_output,
    with_handle,
)
from langchain_promptstrat.messages.history_memo import memoized
from langchain_promptstrat.settings import Settings

READ_COMMANDS = frozenset({"cat", "nl", "head", "tail", "less", "more", "sed"})
"""Shell commands that print a file (``sed`` only without ``-i``, which edits in place)."""
READ_TOOL_WORDS = ("read", "view", "open", "cat", "show")
"""A tool whose name holds one of these words (``read_file``, ``view``, ``open_file``) reads a
file."""
_LEADING_COMMENTS = re.compile(r"^(?:\s*#[^\n]*\n)+")
_CD_PREFIX = re.compile(r"^\s*cd\s+[^;&|]+(?:&&|;)\s*")


def reads_a_file(name: str, args: Any) -> bool:
    """Return whether the call ``name(args)`` prints a file: a reading tool, or a shell command that
    starts by reading one.

    ``nl -ba app.py | sed -n '40,80p'`` reads (after leading comments and a ``cd DIR &&``);
    ``python -m pytest`` and ``sed -i 's/a/b/' app.py`` do not.
    """
    if isinstance(args, dict):
        args = next(
            (args[key] for key in ("command", "cmd") if isinstance(args.get(key), str)), None
        )
    return _reads(name, args if isinstance(args, str) else None)


@memoized(4096)
def _reads(name: str, command: str | None) -> bool:
    if any(word in name.lower() for word in READ_TOOL_WORDS):
        return True
    if command is None:
        return False
    first_stage = (
        _CD_PREFIX.sub("", _LEADING_COMMENTS.sub("", command), count=1).lstrip().split("|", 1)[0]
    )
    try:
        words = shlex.split(first_stage, comments=False)
    except ValueError:  # an unbalanced quote: read the words plainly
        words = first_stage.split()
    if not words or words[0] not in READ_COMMANDS:
        return False
    return not (words[0] == "sed" and any(w.startswith(("-i", "--in-place")) for w in words[1:]))


@dataclass(frozen=True)
class ShortenedForm:
    """What a frozen call looks like: its output by the kind of call, its message's narration (equal
    forms shorten alike).

    An agent works from the files it read (it edits the lines it saw, quotes their numbers),
    while the logs of programs it ran hold little beyond their last lines: a call that reads a
    file keeps whole lines of its head and tail, any other output the usual hash-stamped stub.
    Under a ceiling old narration is what fills the prompt next, so it is stubbed the same way.
    The form depends on the call alone, so the same call always gets the same bytes.
    """

    read_chars: int
    """What a call that reads a file keeps, in characters of whole lines
    (``stable_read_output_chars``; 0: the usual stub)."""
    count: CountTokens
    """The strategy's token counter: a shortened form is used only when it has fewer tokens than the
    whole."""
    narration_chars: int = 0
    """What the text of an assistant message whose calls are all frozen keeps
    (``stable_narration_chars``; 0: all of it)."""
    handles: bool = True
    """Whether a shortened output or call ends with its handle (``read_back_handles``)."""

    @classmethod
    def of(cls, settings: Settings, count: CountTokens) -> ShortenedForm:
        """Return the form ``settings`` ask for, judged by ``count``."""
        return cls(
            settings.stable_read_output_chars,
            count,
            settings.stable_narration_chars,
            settings.read_back_handles,
        )

    def narration(self, message: AIMessage) -> AIMessage:
        """Return ``message`` with its text shortened to ``narration_chars``, hash-stamped."""
        return shorten_text(message, self.narration_chars) if self.narration_chars > 0 else message

    def calls(self, message: AIMessage, numbers: Mapping[str, int]) -> AIMessage | None:
        """Return ``message`` with every call shortened (``numbers``: call id -> the call's number,
        for its handle) and its narration."""
        short = edit_ai_message(
            message,
            shorten=[call_id for call_id, _, _ in recorded_calls(message)],
            count=self.count,
            handles=numbers if self.handles else None,
        )
        return self.narration(short) if short is not None else None

    def __call__(self, message: ToolMessage, record: ToolCallRecord) -> ToolMessage:
        """Return ``message``, the output of ``record``, shortened, ending with the handle that
        reads it back."""
        call = record.number + 1 if self.handles else None
        if (
            self.read_chars > 0
            and isinstance(message.content, str)
            and reads_a_file(record.name, record.args)
        ):
            return with_handle(message, shorten_lines, self.read_chars, call, self.count)
        return shorten_tool_output(message, self.count, call=call)
