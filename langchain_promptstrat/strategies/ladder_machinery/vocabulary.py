"""What the ladder and its rungs agree on: the kinds of their marks, and how they count tokens.

``tool_results``, ``sliding_window`` and ``summary`` mark what they write (:data:`NOTE_KIND`,
:data:`PLACEHOLDER_KIND`, :data:`SUMMARY_KIND`) so a later rung or call recognises it
(:func:`kind_of`, :func:`represented`); :func:`tally`, :func:`list_overhead` and
:func:`message_counter` turn any token counter into the per-message shares rungs decide
with.

Names and counts only: must not rewrite messages (the rungs do) nor run rungs (``rung``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.messages import BaseMessage

from langchain_promptstrat.messages import mark_of
from langchain_promptstrat.tokens import TokenCounter

__all__ = [
    "NOTE_KIND",
    "PLACEHOLDER_KIND",
    "SUMMARY_KIND",
    "CountTokens",
    "kind_of",
    "list_overhead",
    "message_counter",
    "represented",
    "tally",
]

NOTE_KIND = "ladder_note"
"""``kind`` of the mark on the note that stands where the sliding window dropped messages."""
PLACEHOLDER_KIND = "ladder_placeholder"
"""``kind`` of the mark on a tool output that ``tool_results`` replaced by a placeholder."""
SUMMARY_KIND = "summary"
"""``kind`` of the mark on a message written by ``summary``."""

CountTokens = Callable[[Sequence[BaseMessage]], int]


def kind_of(message: BaseMessage) -> str | None:
    """Return the ``kind`` of this package's mark on ``message``, or None for an unmarked message."""
    m = mark_of(message)
    return m.get("kind") if m else None


def represented(message: BaseMessage) -> int:
    """Return how many original messages ``message`` stands for: a note or summary counts what it replaced."""
    m = mark_of(message)
    if m and m.get("kind") == NOTE_KIND:
        return int(m.get("dropped", 1))
    if m and m.get("kind") == SUMMARY_KIND:
        return int(m.get("messages", 1))
    return 1


class _Tally:
    """A :class:`TokenCounter` that remembers each message object's count for one call.

    A ladder pass counts the same messages several times (before and after each rung);
    the counter's own cache still has to work out what each message sends, this one is a
    dictionary lookup. It holds the messages it counted, so an ``id`` is never reused
    while it lives.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._seen: dict[int, tuple[BaseMessage, int]] = {}

    def count_message(self, message: BaseMessage) -> int:
        hit = self._seen.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        tokens = self.counter.count_message(message)
        self._seen[id(message)] = (message, tokens)
        return tokens

    def __call__(self, messages: Sequence[BaseMessage], /) -> int:
        return sum(map(self.count_message, messages))


def tally(counter: CountTokens) -> CountTokens:
    """Return ``counter`` remembering per-message counts for one call when it is a sum of messages."""
    return _Tally(counter) if isinstance(counter, TokenCounter) else counter


def list_overhead(counter: CountTokens) -> int:
    """Return what ``counter`` counts for an empty list (0 for a :class:`TokenCounter`)."""
    return 0 if isinstance(counter, (TokenCounter, _Tally)) else counter([])


def message_counter(counter: CountTokens) -> Callable[[BaseMessage], int]:
    """Return a function giving one message's share of ``counter``'s count of a list.

    Rungs decide with these shares (prefix sums over thousands of messages); the ladder
    checks every decision with ``counter`` itself. A :class:`TokenCounter` is exactly the
    sum of its messages; another counter is taken as a fixed list overhead (its count of
    an empty list) plus per-message counts.
    """
    if isinstance(counter, (TokenCounter, _Tally)):
        return counter.count_message
    base = counter([])

    def count_one(message: BaseMessage) -> int:
        return counter([message]) - base

    return count_one
