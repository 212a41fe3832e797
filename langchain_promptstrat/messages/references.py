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
no walk reaches (a cut stub), or itself cut by a stub's marker, stands for lines that cannot be
named, so it is rewritten as not shown, with the handle of its own output. Must not know any
strategy.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.history_memo import (
    IdentityMemo,
    caches_enabled,
    memoized,
    register_cache,
)
from langchain_promptstrat.messages.read_back import READ_BACK_TOOL
from langchain_promptstrat.messages.recorded_calls import content_text, recorded_calls

_POINTER = re.compile(r"\[(\d+) lines? as in the output of ((?:(?!<\.\.\.\d)[^\]\n])+?) above\]")
"""A reference; what it names never holds a stub's marker (``<...554 - e1562...>``): it was cut."""
_NOT_SHOWN = re.compile(rf"\[(\d+) lines? not shown(?:: {READ_BACK_TOOL}\(call=(\d+)\))?\]")
_CUT = re.compile(
    r"\[(\d+) lines? as in the output of ()[^\]\n]*?(?=<\.\.\.\d+ - [0-9a-f]{5}\.\.\.>)"
)
"""The start of a reference cut by a stub's marker (``[2 lines as in the output of cal<...554 -
e1562...>``)."""
_CUT_END = re.compile(r"(?<=\.\.\.>)()()[^\[\]\n]*? above\]")
"""The end of a reference cut by a stub's marker (``<...588 - fa8be...>s in the output of call_22
(bash) above]``)."""
_HANDLE = re.compile(rf"\[whole: {READ_BACK_TOOL}\(call=[^)\n]*\)\]")
_WORDS = (" as in the output of ", " not shown", " above]")
"""Words every reference, or what is left of one, holds: an output without them is not read on."""


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
    held: bool = False
    """Whether the stored output holds these very words (see :func:`references`)."""


def references(text: str, stored: str) -> list[Reference]:
    """Return the references in ``text``, an output's text in a prompt whose stored text is
    ``stored``.

    A reference the stored text holds itself is ``held``: the apply path that wrote it (a
    strategy applied as a ``Runnable`` before this one, whose answer is this one's conversation)
    made it true there, or the tool printed those words.
    """
    if not any(words in text for words in _WORDS):
        return []
    found = [
        (m.start(), m.end(), int(m.group(1) or 0), m.group(2) or "", shown)
        for pattern, shown in (
            (_POINTER, True),
            (_NOT_SHOWN, False),
            (_CUT, True),
            (_CUT_END, True),
        )
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
        held = stands_for is None and text[start:end] in stored
        if held and not shown:
            continue  # lines said not shown: nothing to keep true
        out.append(Reference(start, end, count, names, shown, stands_for, held))
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


_found: IdentityMemo[list[tuple[int | None, list[Reference]]]] = IdentityMemo(50_000)
"""The references of an output's text in a prompt, by message object (strategies reuse them)."""
_lines: IdentityMemo[frozenset[str]] = IdentityMemo(50_000)
"""The whole lines of an output's text, by message object."""
_calls: IdentityMemo[Sequence[tuple[str, str, object]]] = IdentityMemo(50_000)
"""The calls an assistant message records, by message object."""


@dataclass
class _Conversation:
    """What the rule reads of a stored conversation: each output's text, each call's number and
    tool (numbered as :func:`~langchain_promptstrat.messages.read_back.read_back` reads them)."""

    length: int = 0
    stored: dict[str, str] = field(default_factory=dict)
    calls: dict[str, tuple[int, str]] = field(default_factory=dict)
    counted: int = 0

    def extended(self, source: Sequence[BaseMessage]) -> _Conversation:
        """Return this conversation read on to the end of ``source``, which continues it."""
        more = _Conversation(len(source), dict(self.stored), dict(self.calls), self.counted)
        for m in source[self.length :]:
            if isinstance(m, ToolMessage) and isinstance(m.content, str):
                more.stored.setdefault(m.tool_call_id, m.content)
            elif isinstance(m, AIMessage):
                for call_id, name, _ in _recorded(m):
                    more.counted += 1
                    more.calls.setdefault(call_id, (more.counted, name))
        return more


@memoized(256)
def _lines_of_text(text: str) -> frozenset[str]:
    """Return the whole lines of a stored output's text (a few are asked again and again)."""
    return frozenset(text.split("\n"))


def _recorded(message: AIMessage) -> Sequence[tuple[str, str, object]]:
    found = _calls.get(message, message.content, message.tool_calls, message.additional_kwargs)
    if found is None:
        found = recorded_calls(message)
        _calls.put(message, found, message.content, message.tool_calls, message.additional_kwargs)
    return found


class _Prompt:
    """What the rule reads of one prompt: its outputs, and the stored conversation it is for."""

    def __init__(
        self,
        conversation: _Conversation,
        prompt: Sequence[BaseMessage],
        handles: bool = True,
        earlier: list[frozenset[str]] = [],  # noqa: B006 -- read only
    ) -> None:
        self.prompt, self.handles = prompt, handles
        self.stored, self.calls = conversation.stored, conversation.calls
        self.outputs = [i for i, m in enumerate(prompt) if isinstance(m, ToolMessage)]
        self.place: dict[str, int] = {}
        for i in self.outputs:
            self.place.setdefault(prompt[i].tool_call_id, i)  # type: ignore[attr-defined]
        self.shown = list(earlier)
        """The whole lines of each output's text, in the order of :attr:`outputs` (read on
        demand)."""

    def lines_of(self, i: int) -> frozenset[str]:
        """Return the whole lines of the text of the prompt's ``i``-th message, an output."""
        k = bisect.bisect_left(self.outputs, i)
        while len(self.shown) <= k:
            message = self.prompt[self.outputs[len(self.shown)]]
            found = _lines.get(message, message.content)
            if found is None:
                found = frozenset(content_text(message.content).split("\n"))
                _lines.put(message, found, message.content)
            self.shown.append(found)
        return self.shown[k]

    def shows(self, i: int, lines: Sequence[str]) -> bool:
        """Return whether each of ``lines`` is a whole line of the text of the prompt's ``i``-th."""
        shown = self.lines_of(i)
        return all(line in shown for line in lines)

    def newest_showing(self, lines: Sequence[str], before: int) -> int | None:
        """Return the newest output before message ``before`` whose text shows all ``lines``."""
        k = bisect.bisect_left(self.outputs, before)
        if not lines or not k:
            return None
        self.lines_of(self.outputs[k - 1])
        first, shown = lines[0], self.shown
        return next(
            (
                self.outputs[j]
                for j in range(k - 1, -1, -1)
                if first in shown[j] and self.shows(self.outputs[j], lines)
            ),
            None,
        )

    def call(self, call_id: str) -> tuple[int, str] | None:
        """Return the number (1 = first) and tool of call ``call_id`` in the stored conversation."""
        return self.calls.get(call_id)

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
        """Return whether ``ref`` (in the output at ``at``) names an earlier output showing it all.

        A held reference is taken as its stored text's: it resolves while the output it names is
        sent as stored, or when it names no call of this conversation (a tool's words).
        """
        named = self.named(ref.names)
        i = self.place.get(named or "")
        if ref.held:
            return named is None or (i is not None and i < at and self.as_stored(i))
        return ref.lines is not None and i is not None and i < at and self.shows(i, ref.lines)

    def as_stored(self, i: int) -> bool:
        """Return whether the prompt's ``i``-th message is its output as stored."""
        message = self.prompt[i]
        call_id: str = message.tool_call_id  # type: ignore[attr-defined]
        return message.content == self.stored.get(call_id)

    def rewritten(self, ref: Reference, at: int) -> str | None:
        """Return what ``ref``, in the output at ``at``, becomes by the rule (None: it stays)."""
        if not ref.shown or self.resolves(ref, at):
            return None
        own = self.call(self.prompt[at].tool_call_id)  # type: ignore[attr-defined]
        if ref.held:  # true where it was written; its output is changed here
            return self.not_shown(ref, self.call(self.named(ref.names) or ""))
        if ref.lines is None:
            return self.not_shown(ref, own)
        newest = self.newest_showing(ref.lines, at)
        if newest is not None:
            call_id: str = self.prompt[newest].tool_call_id  # type: ignore[attr-defined]
            called = self.call(call_id)
            return reference_text(ref.count, call_id, called[1] if called else "")
        named = self.named(ref.names)
        stored = _lines_of_text(self.stored[named]) if named is not None else frozenset()
        holder = self.call(named) if named and all(line in stored for line in ref.lines) else own
        return self.not_shown(ref, holder)

    def not_shown(self, ref: Reference, holder: tuple[int, str] | None) -> str | None:
        """Return ``ref`` said not shown, with the handle of ``holder`` (without any when handles
        are off); the end of a cut reference, whose count was cut, ends the same way."""
        if self.handles and holder is None:
            return None
        said = not_shown_text(ref.count, holder[0] if self.handles and holder else None)
        return said if ref.count else said[said.index("not shown") :]

    def references(
        self, start: int = 0
    ) -> list[tuple[int, list[tuple[int | None, list[Reference]]]]]:
        """Return each output of the prompt from ``start`` on that holds references: its place, and
        by text (the string, None, or a text block's index) the references there."""
        found = []
        for i in self.outputs[bisect.bisect_left(self.outputs, start) :]:
            message: ToolMessage = self.prompt[i]  # type: ignore[assignment]
            stored = self.stored.get(message.tool_call_id)
            if stored is None:
                continue
            refs = _found.get(message, message.content, stored)
            if refs is None:
                refs = [
                    (k, r) for k, text in _texts(message.content) if (r := references(text, stored))
                ]
                _found.put(message, refs, message.content, stored)
            if refs:
                found.append((i, refs))
        return found


def _texts(content: Any) -> list[tuple[int | None, str]]:
    """Return the texts of an output's content: the string (None), or each text block by index.

    A block keeps the text it had as a string when a strategy marks it (``cache_control``).
    """
    if isinstance(content, str):
        return [(None, content)]
    if not isinstance(content, list):
        return []
    return [
        (k, b["text"])
        for k, b in enumerate(content)
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _may_refer(prompt: Sequence[BaseMessage]) -> bool:
    """Return whether any output of ``prompt`` holds the words of a reference (most hold none)."""
    for m in prompt:
        if isinstance(m, ToolMessage):
            text = m.content if isinstance(m.content, str) else content_text(m.content)
            if any(words in text for words in _WORDS):
                return True
    return False


def unresolved_references(source: Sequence[BaseMessage], prompt: Sequence[BaseMessage]) -> int:
    """Return how many references of ``prompt`` point at lines it does not show where they say.

    ``source`` is the stored conversation ``prompt`` was sent for. A reference resolves when each
    line it stands for is a whole line of the text, in the prompt, of the output it names, which
    stands before it. One that says its lines are not shown names a handle instead and always
    counts as resolved; one whose lines cannot be named (inside a cut text) does not resolve.
    """
    if not _may_refer(prompt):
        return 0
    context = _Prompt(_Conversation().extended(source), prompt)
    return sum(
        1
        for at, texts in context.references()
        for _, refs in texts
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
    conversation = earlier.conversation.extended(source)
    outputs_before = sum(1 for m in prompt[: earlier.shared] if isinstance(m, ToolMessage))
    context = _Prompt(conversation, prompt, handles, earlier.shown[:outputs_before])
    out = list(prompt)
    copies = {at: copy for at, copy in earlier.copies.items() if at < earlier.shared}
    for at, copy in copies.items():
        out[at] = copy
    for at, texts in context.references(earlier.shared):
        content: Any = prompt[at].content
        for block, refs in texts:
            text: str = content if block is None else content[block]["text"]
            new = _rewritten_text(text, refs, context, at)
            if new is None:
                continue
            if block is None:
                content = new
            else:
                content = [*content[:block], {**content[block], "text": new}, *content[block + 1 :]]
        if content is not prompt[at].content:
            out[at] = copies[at] = prompt[at].model_copy(update={"content": content})
    _recent.remember(earlier, source, prompt, copies, handles, conversation, context.shown)
    return out


def _rewritten_text(text: str, refs: list[Reference], context: _Prompt, at: int) -> str | None:
    """Return ``text`` with each of its references ``refs`` rewritten by the rule (None: none
    is)."""
    parts, done = [], 0
    for ref in refs:
        new = context.rewritten(ref, at)
        if new is not None:
            parts += [text[done : ref.start], new]
            done = ref.end
    return "".join([*parts, text[done:]]) if parts else None


@dataclass
class _Rewrites:
    """The rewrites of one prompt: the objects of its stored conversation and its messages (held
    weakly), and the copies the rule made, by position."""

    source: list[weakref.ref[BaseMessage]]
    prompt: list[weakref.ref[BaseMessage]]
    copies: dict[int, BaseMessage]
    handles: bool = True
    conversation: _Conversation = field(default_factory=_Conversation)
    """What the rule read of the stored conversation (a new one continues it)."""
    shown: list[frozenset[str]] = field(default_factory=list)
    """The whole lines of the first outputs of the prompt, as :attr:`_Prompt.shown`."""
    shared: int = 0
    """How many leading messages a new prompt shares with this one (set by :meth:`_Recent.find`)."""


class _Recent:
    """The rewrites of the last few prompts, found again by the objects a new prompt starts with."""

    size = 8

    def __init__(self) -> None:
        self._entries: list[_Rewrites] = []
        self._lock = threading.Lock()
        register_cache(self)

    def __len__(self) -> int:
        return len(self._entries)

    def find(
        self, source: Sequence[BaseMessage], prompt: Sequence[BaseMessage], handles: bool
    ) -> _Rewrites:
        """Return the remembered rewrites sharing the most leading messages with ``prompt``, made
        for a conversation ``source`` continues (an empty one when there is none)."""
        with self._lock:
            entries = list(self._entries) if caches_enabled() else []
        best, best_shared = _Rewrites([], [], {}), -1
        for entry in entries:
            if entry.handles != handles or len(entry.source) > len(source):
                continue
            if not _same(entry.source, source):
                continue
            shared = next(
                (
                    i
                    for i, (r, m) in enumerate(zip(entry.prompt, prompt, strict=False))
                    if r() is not m
                ),
                min(len(entry.prompt), len(prompt)),
            )
            if shared > best_shared:
                best, best_shared = replace(entry, shared=shared), shared
        return best

    def remember(
        self,
        earlier: _Rewrites,
        source: Sequence[BaseMessage],
        prompt: Sequence[BaseMessage],
        copies: dict[int, BaseMessage],
        handles: bool,
        conversation: _Conversation,
        shown: list[frozenset[str]],
    ) -> None:
        """Remember the rewrites of ``prompt``, in place of the ``earlier`` ones it continues."""
        if not caches_enabled():
            return
        try:
            refs = earlier.prompt[: earlier.shared] + [
                weakref.ref(m) for m in prompt[earlier.shared :]
            ]
            known = len(earlier.source)
            stored = earlier.source + [weakref.ref(m) for m in source[known:]]
        except TypeError:  # a message that cannot be referenced weakly: nothing remembered
            return
        entry = _Rewrites(stored, refs, copies, handles, conversation, shown)
        with self._lock:
            kept = [e for e in self._entries if e.prompt is not earlier.prompt]
            self._entries = [*kept[-(self.size - 1) :], entry]

    def clear(self) -> None:
        with self._lock:
            self._entries = []


def _same(refs: Sequence[weakref.ref[BaseMessage]], messages: Sequence[BaseMessage]) -> bool:
    """Return whether ``refs`` reference the first messages of ``messages``, one by one."""
    if refs and (refs[0]() is not messages[0] or refs[-1]() is not messages[len(refs) - 1]):
        return False
    return all(r() is m for r, m in zip(refs, messages, strict=False))


_recent = _Recent()
