"""Next-action recall: does the prompt a strategy sent still hold what the agent used next?

A replayed transcript records the model's next assistant message after every prompt. Its
references that came from earlier tool outputs are what the agent *used*; a strategy that
dropped or shortened them away made the model work without them.

Terms of a text
    Every maximal run of the characters ``A-Z a-z 0-9 _ . / -`` (leading and trailing
    ``.``, ``/`` and ``-`` stripped) is a *word*; a word's *pieces* are its parts between
    ``.`` and ``/``. The terms of a text are, for each word, every run of consecutive pieces
    with the separators between them: ``django/db/models/query.py`` holds the terms
    ``django/db/models/query.py``, ``models/query.py``, ``query.py``, ``query``, ``py``...
    A text *holds* a reference when the reference is one of its terms.

References of the next action
    The words of the next assistant message (its text and every tool call's arguments) that
    look like code: at least three characters and one of: an ``_``, a ``/``, a ``.`` between
    two characters, camelCase, letters and digits together, or all digits. Each counts once
    per call. Words the system prompt or the task (the first real user message) holds are
    left out: the model was told them, it did not find them.

Counted, old, outputs-only
    A reference *counts* when a tool output of the history (the prompt before the strategy)
    holds it. It is *old* when at least :data:`OLD_AFTER` tool outputs came after the newest
    output that holds it (what "keep the last 10 observations" hides), and *outputs-only*
    when it is old and no other message of the history holds it: nothing but the old output
    could have told the model.

Recalled
    A counted reference is *recalled* when the prompt sent holds it **inside text that came
    from an original message**: a message of the history sent unchanged, or the lines of an
    edited copy that are whole lines of the message it copies (a tool output matched by its
    ``tool_call_id``, another message by its ``id``, its tool calls or its text). Text a
    strategy wrote itself (a notice, a summary) recalls nothing, so no strategy can raise its
    figure by writing bare names. ``none`` scores exactly 1.0.

Recoverable
    An outputs-only reference the prompt lost is *recoverable* when the prompt names, in text
    a strategy wrote, a call whose output holds it: by its handle (``read_back(call=N)``) or
    within a range of calls (``calls 1-140``) that ``read_back`` reads
    (:func:`~langchain_promptstrat.messages.calls_named`). The peers name none.

Recall is the sum of recalled references over the sum of counted ones, over every call of
every replayed file (likewise old and outputs-only recall). A seeded synthetic run has no real
next action (its agent is scripted), so nothing is measured there. Pure functions of message
lists; the replay that calls them is :mod:`langchain_promptstrat.simulate`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langchain_promptstrat.messages import calls_named, content_text, task_index
from langchain_promptstrat.messages.recorded_calls import recorded_calls

OLD_AFTER = 10
"""A reference is old when at least this many tool outputs came after the newest one that holds
it."""

_WORD = re.compile(r"[A-Za-z0-9_./-]+")
_PIECE_SEPARATORS = re.compile(r"([./])")
_STRIP = "./-"


def message_text(message: BaseMessage) -> str:
    """Return the text a reference is looked for in: the content's text, then each tool call's
    arguments, one per line."""
    parts = [content_text(message.content)]
    if isinstance(message, AIMessage):
        for _, _, args in recorded_calls(message):
            parts.extend(_argument_texts(args))
    return "\n".join(p for p in parts if p)


def _argument_texts(args: Any) -> list[str]:
    if isinstance(args, str):
        return [args]
    if isinstance(args, dict):
        return [
            v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
            for v in args.values()
        ]
    return [json.dumps(args, ensure_ascii=False, default=str)] if args is not None else []


def _words(text: str) -> list[str]:
    return [w for w in (m.strip(_STRIP) for m in _WORD.findall(text)) if w]


def terms(text: str) -> frozenset[str]:
    """Return every term ``text`` holds (see the module's definition)."""
    found: set[str] = set()
    for word in _words(text):
        found.add(word)
        if "." not in word and "/" not in word:
            continue
        parts = _PIECE_SEPARATORS.split(word)  # piece, sep, piece, sep, ...
        pieces = parts[0::2]
        for start in range(len(pieces)):
            for end in range(start + 1, len(pieces) + 1):
                term = "".join(parts[2 * start : 2 * end - 1]).strip(_STRIP)
                if term:
                    found.add(term)
    return frozenset(found)


def _looks_like_code(word: str) -> bool:
    if len(word) < 3:
        return False
    if "_" in word or "/" in word or word.isdigit():
        return True
    if re.search(r"[A-Za-z0-9]\.[A-Za-z0-9]", word) or re.search(r"[a-z][A-Z]", word):
        return True
    return bool(re.search(r"[A-Za-z]", word) and re.search(r"[0-9]", word))


def code_references(text: str) -> list[str]:
    """Return the code-like words of ``text``, each once, in order of first appearance."""
    return list(dict.fromkeys(w for w in _words(text) if _looks_like_code(w)))


class TermIndex:
    """The text and terms of every message seen during one replay, read once per message object (the
    prompts of a run share them).

    It holds the messages while it lives, so their ``id()`` stays theirs.
    """

    def __init__(self) -> None:
        self._texts: dict[int, tuple[BaseMessage, str]] = {}
        self._terms: dict[int, frozenset[str]] = {}
        self._copies: dict[tuple[int, str], frozenset[str]] = {}

    def text(self, message: BaseMessage) -> str:
        """Return :func:`message_text` of ``message``."""
        found = self._texts.get(id(message))
        if found is None:
            found = self._texts[id(message)] = (message, message_text(message))
        return found[1]

    def copy_terms(self, original: BaseMessage, text: str) -> frozenset[str]:
        """Return the terms of the lines of ``text`` (a copy's) that are whole lines of
        ``original``, remembered per pair."""
        key = (id(original), text)
        found = self._copies.get(key)
        if found is None:
            source = self.text(original)
            if text == source:
                found = self.terms(original)
            else:
                lines = set(source.splitlines())
                found = terms("\n".join(line for line in text.splitlines() if line in lines))
            self._copies[key] = found
        return found

    def terms(self, message: BaseMessage) -> frozenset[str]:
        """Return the terms of ``message``."""
        found = self._terms.get(id(message))
        if found is None:
            found = self._terms[id(message)] = terms(self.text(message))
        return found


@dataclass
class CallTargets:
    """What one model call's next action used: its counted references, and which are old and
    outputs-only."""

    references: tuple[str, ...]
    old: frozenset[str]
    outputs_only: frozenset[str]
    _originals: _Originals | None = None

    def originals(self, history: Sequence[BaseMessage], index: TermIndex) -> _Originals:
        """Return the lookup of ``history``'s originals, built once per call however many strategies
        replay it."""
        if self._originals is None:
            self._originals = _Originals(history, index)
        return self._originals

    @classmethod
    def of(
        cls, history: Sequence[BaseMessage], next_action: BaseMessage, index: TermIndex
    ) -> CallTargets:
        """Return the targets of the call whose prompt was ``history`` and whose answer was
        ``next_action``."""
        told: set[str] = set()
        task = task_index(history)
        for i, message in enumerate(history):
            if isinstance(message, SystemMessage) or i == task:
                told |= index.terms(message)
        wanted = [r for r in code_references(index.text(next_action)) if r not in told]
        if not wanted:
            return cls((), frozenset(), frozenset())
        outputs = [m for m in history if isinstance(m, ToolMessage)]
        others = [m for m in history if not isinstance(m, ToolMessage)]
        counted: list[str] = []
        old: set[str] = set()
        only: set[str] = set()
        for ref in wanted:
            newest = next(
                (i for i in range(len(outputs) - 1, -1, -1) if ref in index.terms(outputs[i])), None
            )
            if newest is None:
                continue
            counted.append(ref)
            if len(outputs) - 1 - newest >= OLD_AFTER:
                old.add(ref)
                if not any(ref in index.terms(m) for m in others):
                    only.add(ref)
        return cls(tuple(counted), frozenset(old), frozenset(only))


@dataclass(frozen=True)
class RecallCounts:
    """One call's counts: references counted and recalled, in all, old, and outputs-only."""

    counted: int = 0
    recalled: int = 0
    old: int = 0
    old_recalled: int = 0
    outputs_only: int = 0
    outputs_only_recalled: int = 0
    recoverable: int = 0
    """Outputs-only references lost whose holder the prompt names by a handle or a range."""

    def as_list(self) -> list[int]:
        """Return the seven counts in field order (the JSON form of a call)."""
        return [
            self.counted,
            self.recalled,
            self.old,
            self.old_recalled,
            self.outputs_only,
            self.outputs_only_recalled,
            self.recoverable,
        ]


class _Originals:
    """Which message of a history a strategy's copy stands for: tool outputs by ``tool_call_id``,
    others by ``id``, tool calls or text."""

    def __init__(self, history: Sequence[BaseMessage], index: TermIndex) -> None:
        self.known = {id(m) for m in history}
        self.by_call_id: dict[str, BaseMessage] = {}
        self.caller: dict[str, BaseMessage] = {}
        self.by_id: dict[tuple[str, str], BaseMessage] = {}
        self.by_text: dict[tuple[str, str], BaseMessage] = {}
        for m in history:
            if isinstance(m, ToolMessage):
                self.by_call_id.setdefault(m.tool_call_id, m)
                continue
            if m.id:
                self.by_id.setdefault((m.type, m.id), m)
            if isinstance(m, AIMessage):
                for call_id, _, _ in recorded_calls(m):
                    self.caller.setdefault(call_id, m)
            self.by_text.setdefault((m.type, index.text(m)), m)

    def of(self, message: BaseMessage, text: str) -> BaseMessage | None:
        """Return the original ``message`` copies, or None for text a strategy wrote."""
        if isinstance(message, ToolMessage):
            return self.by_call_id.get(message.tool_call_id)
        if message.id and (message.type, message.id) in self.by_id:
            return self.by_id[(message.type, message.id)]
        if isinstance(message, AIMessage):
            for call_id, _, _ in recorded_calls(message):
                found = self.caller.get(call_id)
                if found is not None:
                    return found
        return self.by_text.get((message.type, text))


def _original_terms(
    message: BaseMessage, originals: _Originals, index: TermIndex
) -> frozenset[str]:
    """Return the terms of the text of ``message`` that came from an original message (see the
    module's definition)."""
    if id(message) in originals.known:
        return index.terms(message)
    text = message_text(message)
    original = originals.of(message, text)
    if original is None:
        return frozenset()
    return index.copy_terms(original, text)


def recalled_references(
    targets: CallTargets,
    history: Sequence[BaseMessage],
    sent: Sequence[BaseMessage],
    index: TermIndex,
) -> list[str]:
    """Return the counted references of ``targets`` that the prompt ``sent`` (a strategy's answer to
    ``history``) recalls, in their order."""
    if not targets.references:
        return []
    originals = targets.originals(history, index)
    missing = list(targets.references)
    for message in sent:
        if not missing:
            break
        held = _original_terms(message, originals, index)
        missing = [r for r in missing if r not in held]
    return [r for r in targets.references if r not in missing]


def recall_counts(
    targets: CallTargets,
    history: Sequence[BaseMessage],
    sent: Sequence[BaseMessage],
    index: TermIndex,
) -> RecallCounts:
    """Return how many of ``targets``' references the prompt ``sent`` (a strategy's answer to
    ``history``) recalls."""
    if not targets.references:
        return RecallCounts()
    recalled = recalled_references(targets, history, sent, index)
    return RecallCounts(
        counted=len(targets.references),
        recalled=len(recalled),
        old=len(targets.old),
        old_recalled=sum(1 for r in recalled if r in targets.old),
        outputs_only=len(targets.outputs_only),
        outputs_only_recalled=sum(1 for r in recalled if r in targets.outputs_only),
        recoverable=_recoverable(targets.outputs_only.difference(recalled), history, sent, index),
    )


def _recoverable(
    lost: frozenset[str],
    history: Sequence[BaseMessage],
    sent: Sequence[BaseMessage],
    index: TermIndex,
) -> int:
    """Return how many of the ``lost`` references an output of a call ``sent`` names holds (see the
    module's definition)."""
    if not lost:
        return 0
    known = {id(m) for m in history}
    handles: set[str] = set()
    ranges: list[tuple[int, int]] = []
    for message in sent:
        if id(message) not in known:
            found, spans = calls_named(content_text(message.content))
            handles |= found
            ranges += spans
    if not handles and not ranges:
        return 0
    numbers: dict[str, int] = {}
    for message in history:
        if isinstance(message, AIMessage):
            for call_id, _, _ in recorded_calls(message):
                numbers.setdefault(call_id, len(numbers) + 1)

    def named(output: ToolMessage) -> bool:
        n = numbers.get(output.tool_call_id)
        return n is not None and (
            str(n) in handles
            or repr(output.tool_call_id) in handles
            or any(a <= n <= b for a, b in ranges)
        )

    holders = [m for m in history if isinstance(m, ToolMessage) and named(m)]
    return sum(1 for ref in lost if any(ref in index.terms(m) for m in holders))
