"""The remembered front of a stable prompt: the compacted head (:class:`Frozen`) a replay reuses between events.

Between ceiling events and epoch advances the edges do not move, and the prompt is the
same compacted head followed by the history's newest messages; remembering the head
(as indices into the history plus its own edited copies) saves deciding every frozen
call again at every model call. :class:`Head` is a head as just built, :func:`remembered`
turns it into a :class:`Frozen`.

Must not decide a call's fate nor hold a caller's message: it reuses what
``stable_prompt`` built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage

from langchain_promptstrat.messages import message_chars
from langchain_promptstrat.strategies.epoch_machinery.token_costs import Costs

__all__ = ["Frozen", "Head", "remembered"]


@dataclass
class Frozen:
    """The compacted head of a prompt: the frozen part of ``source[:at]`` as sent, with its notice and counts.

    Between ceiling events and epoch advances the edges do not move, and the prompt is the
    same head followed by the history's newest messages, unchanged: ``head + [notice] +
    source[at:]``, ``at`` being the end of the step of the compaction edge. The head is a
    function of the messages before ``at`` and of the edges (:func:`_frozen_key`): every
    decision reads only calls at or below the compaction edge and, for repeats, calls up
    to the replay's horizon, which the key fixes; the notice's counts are counted over the
    same calls; the loose messages dropped lie before the drop edge's step end. So a
    replay that resumes from one whose history starts the new one (same message objects,
    checked by the memo) and has the same key reuses its head instead of deciding every
    call again. It holds no message of the caller: the messages passed through are indices
    into ``source``; the edited copies (which, like every edited copy, share their unchanged
    fields with the originals) and the notice are its own, bounded by :data:`_FROZEN_CHARS`.
    Reusing the same copies and notice objects also lets the report measure only the new
    messages of a prompt that extends the previous one.
    """

    key: tuple[Any, ...]
    at: int
    picks: list[int]
    """The head: ``(source[:at] + copies)[pick]`` for each pick."""
    copies: list[BaseMessage]
    notice: BaseMessage | None
    shortened: int
    dropped: int
    protected: int
    chars: int
    """Characters of the copies and the notice (what remembering this head costs)."""
    _tokens: tuple[Costs, int] | None = None

    def head(self, source: list[BaseMessage]) -> list[BaseMessage]:
        """Return the compacted head for ``source`` (whose first ``at`` messages are those it was built from)."""
        pool = source[: self.at]
        pool += self.copies
        return list(map(pool.__getitem__, self.picks))

    def prompt(self, source: list[BaseMessage]) -> list[BaseMessage]:
        out = self.head(source)
        if self.notice is not None:
            out.append(self.notice)
        out += source[self.at:]
        return out

    def tokens(self, costs: Costs, source: list[BaseMessage]) -> int:
        """Return the tokens of the head and the notice (remembered for the last counter asked)."""
        known = self._tokens
        if known is not None and known[0] is costs:
            return known[1]
        tokens = costs(self.head(source)) + (costs.whole(self.notice) if self.notice is not None else 0)
        self._tokens = (costs, tokens)
        return tokens


class Head(NamedTuple):
    messages: list[BaseMessage]
    """The frozen part of ``source[:at]`` as sent (before the notice)."""
    notice: BaseMessage | None
    shortened: int
    dropped: int
    protected: int


def remembered(source: list[BaseMessage], at: int, head: Head, key: tuple[Any, ...]) -> Frozen:
    """Return ``head`` as a :class:`Frozen`: the messages passed through as indices into ``source``, the copies held."""
    position = {id(m): i for i, m in enumerate(source[:at])}
    picks: list[int] = []
    copies: list[BaseMessage] = []
    for m in head.messages:
        i = position.get(id(m))
        if i is None or source[i] is not m:
            i = at + len(copies)
            copies.append(m)
        picks.append(i)
    chars = sum(map(message_chars, copies)) + (message_chars(head.notice) if head.notice is not None else 0)
    return Frozen(key, at, picks, copies, head.notice, head.shortened, head.dropped, head.protected, chars)
