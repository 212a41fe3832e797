"""How the stable strategy shortens a frozen call: its output by the kind of call that produced it, and its narration.

An agent works from the files it read: it edits the lines it saw, calls the functions they
define, quotes their line numbers. In real runs the outputs of calls that print a file hold
most of what an agent's later commands use that no other message holds, while the logs of
programs it ran (test runs, scripts, installs) hold little of it beyond their last lines. So
a frozen call that *reads a file* (:func:`reads_a_file`) keeps whole lines from its head and
its tail within ``stable_read_output_chars`` (:func:`~langchain_promptstrat.truncation.shorten_by_lines`): whole lines, because
a line cut in the middle is neither code the model can edit from nor one it can quote. Any
other output keeps the usual 400-character hash-stamped head and tail.

The narration of an assistant message whose calls are all frozen (the agent's reasoning before
calls it made long ago) keeps the hash-stamped head and tail of ``stable_narration_chars``
(:meth:`ShortenedForm.narration`), as old outputs do: under a ceiling that narration is what
fills the prompt next (about a third of it on real runs), and the room a stub leaves keeps
more steps, with their outputs, from being dropped.

The form depends on the output's text and its call's name and arguments alone, so the same
call always gets the same bytes: the cached prefix stays the same between boundaries.

Must not decide a fate (the rule in ``epoch_stable`` does): it only says what a shortened call looks like.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from langchain_promptstrat.messages import ToolCallRecord, shorten_text, shorten_tool_output, with_handle
from langchain_promptstrat.truncation import shorten_by_lines

__all__ = ["READ_COMMANDS", "READ_TOOL_WORDS", "ShortenedForm", "reads_a_file", "shortened_output"]

READ_COMMANDS = frozenset({"cat", "nl", "head", "tail", "less", "more", "sed"})
"""Shell commands that print a file (``sed`` only without ``-i``, which edits in place instead)."""
READ_TOOL_WORDS = ("read", "view", "open", "cat", "show")
"""A tool whose name holds one of these words (``read_file``, ``view``, ``open_file``) reads a file."""

_LEADING_NOISE = re.compile(r"^(?:\s*#[^\n]*\n)+")
_CD_PREFIX = re.compile(r"^\s*cd\s+[^;&|]+(?:&&|;)\s*")


def _command_text(args: Any) -> str | None:
    """Return the shell command of a call's arguments: the ``command``/``cmd`` string, or a lone string value."""
    if isinstance(args, str):
        return args
    if not isinstance(args, dict):
        return None
    for key in ("command", "cmd"):
        if isinstance(args.get(key), str):
            return args[key]  # type: ignore[no-any-return]
    return None


def reads_a_file(name: str, args: Any) -> bool:
    """Return whether the call ``name(args)`` prints a file: a reading tool, or a shell command that starts by reading one.

    A tool whose name holds a reading word (:data:`READ_TOOL_WORDS`) reads. A shell call reads
    when its command, after leading comments and a ``cd DIR &&``, starts with one of
    :data:`READ_COMMANDS` (``sed`` only without ``-i``): ``nl -ba app.py | sed -n '40,80p'``
    reads, ``python -m pytest`` and ``sed -i 's/a/b/' app.py`` do not.
    """
    return _reads(name, _command_text(args))


@functools.lru_cache(maxsize=4096)
def _reads(name: str, command: str | None) -> bool:
    lowered = name.lower()
    if any(word in lowered for word in READ_TOOL_WORDS):
        return True
    if command is None:
        return False
    command = _CD_PREFIX.sub("", _LEADING_NOISE.sub("", command), count=1).lstrip()
    first_stage = command.split("|", 1)[0]
    try:
        words = shlex.split(first_stage, comments=False)
    except ValueError:  # an unbalanced quote: read the words plainly
        words = first_stage.split()
    if not words or words[0] not in READ_COMMANDS:
        return False
    return not (words[0] == "sed" and any(w == "-i" or w.startswith(("-i", "--in-place")) for w in words[1:]))


def shortened_output(message: ToolMessage, reads: bool, read_chars: int, call: int | None = None) -> ToolMessage:
    """Return ``message`` as a frozen call shortens it: by lines within ``read_chars`` when its call ``reads`` (and it is text), else the usual stub; with the handle of ``call``."""
    content = message.content
    if reads and read_chars > 0 and isinstance(content, str):
        short = shorten_by_lines(content, read_chars)
        return with_handle(message, message if short is content else message.model_copy(update={"content": short}), call)
    return shorten_tool_output(message, call=call)


@dataclass(frozen=True)
class ShortenedForm:
    """How the stable strategy shortens a frozen call: its output, and its message's narration (equal forms shorten alike: a cache compares them)."""

    read_chars: int
    """What a call that reads a file keeps, in characters of whole lines (``stable_read_output_chars``; 0: the usual stub)."""
    narration_chars: int = 0
    """What the text of an assistant message whose calls are all frozen keeps (``stable_narration_chars``; 0: all of it)."""

    def narration(self, message: AIMessage) -> AIMessage:
        """Return ``message`` with its text (a string, or each text block) shortened to ``narration_chars``, hash-stamped."""
        return shorten_text(message, self.narration_chars) if self.narration_chars > 0 else message

    def __call__(self, message: ToolMessage, record: ToolCallRecord) -> ToolMessage:
        """Return ``message``, the output of ``record``, shortened."""
        return shortened_output(message, self.read_chars > 0 and reads_a_file(record.name, record.args), self.read_chars, record.number + 1)
