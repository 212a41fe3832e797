"""What a strategy call did: a small report returned next to the messages.

Strategies return their report instead of logging and forgetting it; the adapters decide
whether to log it, dispatch it as a callback event, or print it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, ToolMessage

from langchain_promptstrat._memo import IdentityMemo
from langchain_promptstrat.messages import message_chars

__all__ = ["Compacted", "StrategyReport", "logger", "make_report"]

logger = logging.getLogger("langchain_promptstrat")
"""The package logger; every strategy call's report is logged here at DEBUG."""


@dataclass
class StrategyReport:
    """Counts of what one strategy call changed; ``details`` holds strategy-specific figures."""

    strategy: str
    messages_in: int
    messages_out: int
    tool_calls: int
    shortened: int = 0
    dropped: int = 0
    protected: int = 0
    chars_before: int = 0
    chars_after: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """Whether the call changed anything the model sees."""
        return bool(self.shortened or self.dropped or self.messages_in != self.messages_out or self.chars_before != self.chars_after)

    def as_dict(self) -> dict[str, Any]:
        """Return the report as one flat, JSON-friendly dict (details merged in)."""
        data = {k: v for k, v in self.__dict__.items() if k != "details"}
        data.update(self.details)
        return data


class Compacted(NamedTuple):
    """A strategy's result: the messages the model will see, and the report of what changed."""

    messages: list[BaseMessage]
    report: StrategyReport


def make_report(
    strategy: str,
    before: Sequence[BaseMessage],
    after: Sequence[BaseMessage],
    *,
    shortened: int = 0,
    dropped: int = 0,
    protected: int = 0,
    **details: Any,
) -> StrategyReport:
    """Return a report for a call that turned ``before`` into ``after``.

    Characters are counted only when the lists differ; an untouched list reports the same
    figure twice without walking it a second time.
    """
    chars_before = sum(map(_chars, before))
    chars_after = chars_before if _same(before, after) else _chars_after(before, after, chars_before)
    return StrategyReport(
        strategy=strategy,
        messages_in=len(before),
        messages_out=len(after),
        tool_calls=sum(1 for m in before if isinstance(m, ToolMessage)),
        shortened=shortened,
        dropped=dropped,
        protected=protected,
        chars_before=chars_before,
        chars_after=chars_after,
        details=details,
    )


_CHARS_MEMO_SIZE = 100_000
_chars_memo: IdentityMemo[int] = IdentityMemo(_CHARS_MEMO_SIZE)


def _chars(message: BaseMessage) -> int:
    """Return message_chars(message), remembered per live message object.

    Strategies run before every model call on a conversation that only grows, so the same
    message objects are measured again and again. The memo holds each message weakly (a
    finished conversation is freed, not pinned) and checks the content and calls objects,
    so a replaced field is a miss.
    """
    fields = message.__dict__  # a field read, not getattr: a missing attribute costs pydantic an exception
    calls = fields.get("tool_calls")
    content = message.content
    n = _chars_memo.get(message, content, calls)
    if n is None:
        n = message_chars(message)
        _chars_memo.put(message, n, content, calls)
    return n


def _chars_after(before: Sequence[BaseMessage], after: Sequence[BaseMessage], chars_before: int) -> int:
    """Return the characters of ``after`` from those of ``before``: only the messages one list has and the other lacks are measured.

    A strategy keeps most message objects as they are, so the difference is small; the
    identity sets are built in C, where measuring every message again costs a memo lookup each.
    """
    ids_before, ids_after = set(map(id, before)), set(map(id, after))
    if len(ids_before) != len(before) or len(ids_after) != len(after):  # a repeated object: count plainly
        return sum(map(_chars, after))
    gone = sum(_chars(m) for m in before if id(m) not in ids_after)
    new = sum(_chars(m) for m in after if id(m) not in ids_before)
    return chars_before - gone + new


def _same(a: Sequence[BaseMessage], b: Sequence[BaseMessage]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
