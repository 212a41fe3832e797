"""References to lines another tool output shows, and the rule that keeps each one true in a prompt.

``dedupe_outputs`` replaces a run of lines that earlier outputs already showed by one line,
``[12 lines as in the output of call_ab12 (bash) above]``. A strategy applied after it may
shorten or drop that output, or the output may show the lines only as a reference to an older
one: the model would be told the lines are above when they are not. :func:`resolve_references`,
run by ``apply_in_order`` on every prompt whatever the strategies, keeps each reference true:

1. it stays when every line it stands for is a whole line of the named output's text in the
   prompt;
2. else it names the newest output before it whose text in the prompt shows them all;
3. else it says the lines are not shown and gives a handle, ``[12 lines not shown:
   read_back(call=7)]``: the named output's when its stored text holds them all, else the
   handle of the output the reference stands in, whose stored text holds them where it stood.

A rewrite reads nothing after the output it is in, so it changes no byte earlier than the
change that caused it (the named output shortened, say): the prompt cache keeps what it had.
It is about as long as the reference it replaces (a handle is shorter; a reference named again
differs in its call id only), so the ceiling the strategies counted the prompt against holds.

The lines a reference stands for come from the stored conversation: an output's text in the
prompt is its stored text with runs of lines replaced by references and, once shortened, cut;
the two are walked side by side from the first line and from the last. A reference inside text
no walk reaches (a cut stub) stands for lines that cannot be named, so it is rewritten as not
shown, with the handle of its own output. Must not know any strategy.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.history_memo import IdentityMemo
from langchain_promptstrat.messages.read_back import READ_BACK_TOOL
from langchain_promptstrat.messages.recorded_calls import recorded_calls

_POINTER = re.compile(r"\[(\d+) lines? as in the output of (.+?) above\]")
_NOT_SHOWN = re.compile(rf"\[(\d+) lines? not shown(?:: {READ_BACK_TOOL}\(call=(\d+)\))?\]")
_HANDLE = re.compile(rf"\[whole: {READ_BACK_TOOL}\(call=[^)\n]*\)\]")
_PHRASE = " as in the output of "
_NOT_SHOWN_WORDS = " not shown"
"""Words every reference holds: an output without them is not read further."""


def reference_text(lines: int, call_id: str, tool: str) -> str:
    """Return the line that stands for ``lines`` lines the output of ``call_id`` shows."""
    name = f" ({tool})" if tool else ""
    return f"[{lines} line{'s' if lines != 1 else ''} as in the output of {call_id}{name} above]"


def not_shown_text(lines: int, call: int | None) -> str:
    """Return the line that stands for ``lines`` lines not shown, which call ``call``'s output
    holds.

    Without ``call`` (the ``read_back_handles`` setting off) it names no handle.
    """
    handle = f": {READ_BACK_TOOL}(call={call})" if call is not None else ""
    return f"[{lines} line{'s' if lines != 1 else ''} not shown{handle}]"


@dataclass(frozen=True)
class Reference:
    """One reference in an output's text in a prompt."""

    start: int
    end: int
    """Where it stands in the text (characters)."""
    count: int
    """How many lines it stands for."""
    names: str
    """What it names: a call id (``as in the output of``), or a call number (``not shown``)."""
    shown: bool
    """True for a reference to lines shown above, False for one that says they are not shown."""
    lines: tuple[str, ...] | None
    """The lines it stands for, from the stored output; None where no walk reaches it."""


def references(text: str, stored: str) -> list[Reference]:
    """Return the references a strategy wrote in ``text``, an output's text in a prompt.

    ``stored`` is the output's stored text: text it holds itself is never a reference, however it
    reads.
    """
    if text == stored or (_PHRASE not in text and _NOT_SHOWN_WORDS not in text):
        return []
    found = [
        (m.start(), m.end(), int(m.group(1)), m.group(2) or "", shown)
        for pattern, shown in ((_POINTER, True), (_NOT_SHOWN, False))
        for m in pattern.finditer(text)
    ]
    if not found:
        return []
    lines = text.split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    reached = _walk(lines, stored.split("\n"))
    out = []
    for start, end, count, names, shown in sorted(found):
        row = bisect.bisect_right(starts, start) - 1
        whole_line = start == starts[row] and end == starts[row] + len(lines[row])
        stands_for = reached.get(row) if whole_line else None
        if stands_for is None and text[start:end] in stored:
            continue  # the stored output's own words
        out.append(Reference(start, end, count, names, shown, stands_for))
    return out


def _walk(lines: list[str], stored: list[str]) -> dict[int, tuple[str, ...]]:
    """Return the stored lines each reference of ``lines`` a walk reaches stands for, by line.

    From the first line: a line equal to the stored one is itself; a reference stands for the
    next ``N`` stored lines. The same from the last line (after the handle a shortened text ends
    with), to reach the tail of a text cut in its middle. A walk stops at a line it cannot read.
    """
    reached: dict[int, tuple[str, ...]] = {}
    p = q = 0
    while p < len(lines):
        if q < len(stored) and lines[p] == stored[q]:
            p, q = p + 1, q + 1
            continue
        count = _count(lines[p])
        if count is None or q + count > len(stored):
            break
        reached[p] = tuple(stored[q : q + count])
        p, q = p + 1, q + count
    if p == len(lines):
        return reached
    front = p
    p, q = len(lines) - 1, len(stored) - 1
    if p > front and (q < 0 or lines[p] != stored[q]) and _HANDLE.fullmatch(lines[p]):
        p -= 1
    while p > front:
        if q >= 0 and lines[p] == stored[q]:
            p, q = p - 1, q - 1
            continue
        count = _count(lines[p])
        if count is None or q + 1 - count < 0:
            break
        reached[p] = tuple(stored[q + 1 - count : q + 1])
        p, q = p - 1, q - count
    return reached


def _count(line: str) -> int | None:
    """Return how many lines ``line`` stands for when it is one reference, else None."""
    m = _POINTER.fullmatch(line) or _NOT_SHOWN.fullmatch(line)
    return int(m.group(1)) if m else None


_found: IdentityMemo[list[Reference]] = IdentityMemo(50_000)
"""The references of an output's text in a prompt, by message object (strategies reuse them)."""
_lines: IdentityMemo[frozenset[str]] = IdentityMemo(50_000)
"""The whole lines of an output's text, by message object."""
_calls: IdentityMemo[Sequence[tuple[str, str, object]]] = IdentityMemo(50_000)
"""The calls an assistant message records, by message object."""


class _Prompt:
    """What the rule reads of one prompt: its outputs, each call's stored text, number and tool."""

    def __init__(
        self, source: Sequence[BaseMessage], prompt: Sequence[BaseMessage], handles: bool = True
    ) -> None:
        self.source, self.prompt, self.handles = source, prompt, handles
        self.stored: dict[str, str] = {}
        for m in source:
            if isinstance(m, ToolMessage) and isinstance(m.content, str):
                self.stored.setdefault(m.tool_call_id, m.content)
        self.outputs = [i for i, m in enumerate(prompt) if isinstance(m, ToolMessage)]
        self.place: dict[str, int] = {}
        for i in self.outputs:
            self.place.setdefault(prompt[i].tool_call_id, i)  # type: ignore[attr-defined]
        self._showing: dict[str, list[int]] | None = None
        self._numbers: dict[str, tuple[int, str]] | None = None

    def lines_of(self, i: int) -> frozenset[str]:
        """Return the whole lines of the text of the prompt's ``i``-th message."""
        message = self.prompt[i]
        found = _lines.get(message, message.content)
        if found is None:
            content = message.content
            found = frozenset(content.split("\n")) if isinstance(content, str) else frozenset()
            _lines.put(message, found, content)
        return found

    def shows(self, i: int, lines: Sequence[str]) -> bool:
        """Return whether each of ``lines`` is a whole line of the text of the prompt's ``i``-th."""
        shown = self.lines_of(i)
        return all(line in shown for line in lines)

    def newest_showing(self, lines: Sequence[str], before: int) -> int | None:
        """Return the newest output before message ``before`` whose text shows all ``lines``."""
        if self._showing is None:
            self._showing = {}
            for i in self.outputs:
                for line in self.lines_of(i):
                    self._showing.setdefault(line, []).append(i)
        candidates = self._showing.get(lines[0], ()) if lines else ()
        return next((i for i in reversed(candidates) if i < before and self.shows(i, lines)), None)

    def call(self, call_id: str) -> tuple[int, str] | None:
        """Return the number (1 = first) and tool of call ``call_id`` in the stored conversation."""
        if self._numbers is None:
            self._numbers = {}
            for m in self.source:
                if isinstance(m, AIMessage):
                    calls = _calls.get(m, m.content, m.tool_calls, m.additional_kwargs)
                    if calls is None:
                        calls = recorded_calls(m)
                        _calls.put(m, calls, m.content, m.tool_calls, m.additional_kwargs)
                    for call_id_, name, _ in calls:
                        self._numbers.setdefault(call_id_, (len(self._numbers) + 1, name))
        return self._numbers.get(call_id)

    def named(self, names: str) -> str | None:
        """Return the call id a reference names (``call_ab12 (bash)``: ``call_ab12``), or None."""
        if names in self.stored:
            return names
        cut = names.rfind(" (")
        while cut > 0 and names.endswith(")"):
            if names[:cut] in self.stored:
                return names[:cut]
            cut = names.rfind(" (", 0, cut)
        return None

    def resolves(self, ref: Reference, at: int) -> bool:
        """Return whether ``ref`` (in the output at ``at``) names an earlier output showing it
        all."""
        if ref.lines is None:
            return False
        i = self.place.get(self.named(ref.names) or "")
        return i is not None and i < at and self.shows(i, ref.lines)

    def rewritten(self, ref: Reference, at: int) -> str | None:
        """Return what ``ref``, in the output at ``at``, becomes by the rule (None: it stays)."""
        if not ref.shown or self.resolves(ref, at):
            return None
        own = self.call(self.prompt[at].tool_call_id)  # type: ignore[attr-defined]
        if ref.lines is None:
            return self.not_shown(ref, own)
        newest = self.newest_showing(ref.lines, at)
        if newest is not None:
            call_id: str = self.prompt[newest].tool_call_id  # type: ignore[attr-defined]
            called = self.call(call_id)
            return reference_text(ref.count, call_id, called[1] if called else "")
        named = self.named(ref.names)
        stored = frozenset(self.stored[named].split("\n")) if named is not None else frozenset()
        holder = self.call(named) if named and all(line in stored for line in ref.lines) else own
        return self.not_shown(ref, holder)

    def not_shown(self, ref: Reference, holder: tuple[int, str] | None) -> str | None:
        """Return ``ref`` said not shown, with the handle of ``holder`` (without any when handles
        are off)."""
        if not self.handles:
            return not_shown_text(ref.count, None)
        return not_shown_text(ref.count, holder[0]) if holder is not None else None

    def references(self) -> list[tuple[int, list[Reference]]]:
        """Return each output of the prompt that holds references: its place and its references."""
        found = []
        for i in self.outputs:
            message: ToolMessage = self.prompt[i]  # type: ignore[assignment]
            stored = self.stored.get(message.tool_call_id)
            if stored is None or not isinstance(message.content, str):
                continue
            refs = _found.get(message, message.content, stored)
            if refs is None:
                refs = references(message.content, stored)
                _found.put(message, refs, message.content, stored)
            if refs:
                found.append((i, refs))
        return found


def _may_refer(prompt: Sequence[BaseMessage]) -> bool:
    """Return whether any output of ``prompt`` holds the words of a reference (most hold none)."""
    return any(
        isinstance(m, ToolMessage)
        and isinstance(m.content, str)
        and (_PHRASE in m.content or _NOT_SHOWN_WORDS in m.content)
        for m in prompt
    )


def unresolved_references(source: Sequence[BaseMessage], prompt: Sequence[BaseMessage]) -> int:
    """Return how many references of ``prompt`` point at lines it does not show where they say.

    ``source`` is the stored conversation ``prompt`` was sent for. A reference resolves when each
    line it stands for is a whole line of the text, in the prompt, of the output it names, which
    stands before it. One that says its lines are not shown names a handle instead and always
    counts as resolved; one whose lines cannot be named (inside a cut text) does not resolve.
    """
    if not _may_refer(prompt):
        return 0
    context = _Prompt(source, prompt)
    return sum(
        1
        for at, refs in context.references()
        for ref in refs
        if ref.shown and not context.resolves(ref, at)
    )


def resolve_references(
    source: Sequence[BaseMessage], prompt: list[BaseMessage], *, handles: bool = True
) -> list[BaseMessage]:
    """Return ``prompt`` with every reference true, by the rule of the module docstring.

    ``source`` is the stored conversation ``prompt`` is sent for; without ``handles`` (the
    ``read_back_handles`` setting off) lines not shown are said so without a handle. An output
    whose references change is a copy; every other message is the same object. A rewrite reads
    only the prompt before it and the stored conversation, so where a recent call of the same
    conversation sent the same message objects up to an output, it is rewritten as it was then.
    """
    if not _may_refer(prompt):
        return prompt
    earlier = _recent.find(source, prompt, handles)
    context = _Prompt(source, prompt, handles)
    out = list(prompt)
    copies: dict[int, BaseMessage] = {}
    for at, refs in context.references():
        if at < earlier.shared:
            if at in earlier.copies:
                out[at] = copies[at] = earlier.copies[at]
            continue
        text: str = prompt[at].content  # type: ignore[assignment]
        parts, done = [], 0
        for ref in refs:
            new = context.rewritten(ref, at)
            if new is not None:
                parts += [text[done : ref.start], new]
                done = ref.end
        if parts:
            copy = prompt[at].model_copy(update={"content": "".join([*parts, text[done:]])})
            out[at] = copies[at] = copy
    _recent.remember(earlier, source, prompt, copies, handles)
    return out


@dataclass
class _Rewrites:
    """The rewrites of one prompt: the objects of its stored conversation and its messages (held
    weakly), and the copies the rule made, by position."""

    source: list[weakref.ref[BaseMessage]]
    prompt: list[weakref.ref[BaseMessage]]
    copies: dict[int, BaseMessage]
    handles: bool = True
    shared: int = 0
    """How many leading messages a new prompt shares with this one (set by :meth:`_Recent.find`)."""


class _Recent:
    """The rewrites of the last few prompts, found again by the objects a new prompt starts with."""

    size = 8

    def __init__(self) -> None:
        self._entries: list[_Rewrites] = []
        self._lock = threading.Lock()

    def find(
        self, source: Sequence[BaseMessage], prompt: Sequence[BaseMessage], handles: bool
    ) -> _Rewrites:
        """Return the remembered rewrites sharing the most leading messages with ``prompt``, made
        for a conversation ``source`` continues (an empty one when there is none)."""
        with self._lock:
            entries = list(self._entries)
        best = _Rewrites([], [], {})
        for entry in entries:
            if entry.handles != handles or len(entry.source) > len(source):
                continue
            if not _same(entry.source, source):
                continue
            shared = next(
                (i for i, (r, m) in enumerate(zip(entry.prompt, prompt)) if r() is not m),
                min(len(entry.prompt), len(prompt)),
            )
            if shared > best.shared:
                best = _Rewrites(entry.source, entry.prompt, entry.copies, handles, shared)
        return best

    def remember(
        self,
        earlier: _Rewrites,
        source: Sequence[BaseMessage],
        prompt: Sequence[BaseMessage],
        copies: dict[int, BaseMessage],
        handles: bool,
    ) -> None:
        """Remember the rewrites of ``prompt``, in place of the ``earlier`` ones it continues."""
        try:
            refs = earlier.prompt[: earlier.shared] + [
                weakref.ref(m) for m in prompt[earlier.shared :]
            ]
            known = len(earlier.source) if earlier.shared else 0
            stored = earlier.source[:known] + [weakref.ref(m) for m in source[known:]]
        except TypeError:  # a message that cannot be referenced weakly: nothing remembered
            return
        entry = _Rewrites(stored, refs, copies, handles)
        with self._lock:
            kept = [e for e in self._entries if e.prompt is not earlier.prompt]
            self._entries = [*kept[-(self.size - 1) :], entry]


def _same(refs: Sequence[weakref.ref[BaseMessage]], messages: Sequence[BaseMessage]) -> bool:
    """Return whether ``refs`` reference the first messages of ``messages``, one by one."""
    if refs and (refs[0]() is not messages[0] or refs[-1]() is not messages[len(refs) - 1]):
        return False
    return all(r() is m for r, m in zip(refs, messages))


_recent = _Recent()
