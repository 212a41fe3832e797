"""What a strategy call did: a small report returned next to the messages (:class:`Compacted`), for
the caller to log, dispatch or print."""

from __future__ import annotations

import logging
import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, ToolMessage

from langchain_promptstrat.messages import message_chars
from langchain_promptstrat.messages.history_memo import message_keys

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
        return bool(
            self.shortened
            or self.dropped
            or self.messages_in != self.messages_out
            or self.chars_before != self.chars_after
        )

    def as_dict(self) -> dict[str, Any]:
        """Return the counts and the details as one flat dict (the ``promptstrat`` event's data)."""
        data = {k: v for k, v in self.__dict__.items() if k != "details"}
        data.update(self.details)
        return data


class Compacted(NamedTuple):
    """A strategy's result: the messages the model will see, and the report of what changed."""

    messages: list[BaseMessage]
    report: StrategyReport
    delivered: Sequence[BaseMessage] = ()
    """The messages this call added that join the conversation (the inbox's notices): the prompt
    floor keeps them as it keeps the stored ones."""


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
    """Return a report for a call that turned ``before`` into ``after`` (an untouched list is
    measured once)."""
    chars_before = _running_chars.total(before)
    unchanged = len(before) == len(after) and all(map(operator.is_, before, after))
    chars_after = chars_before if unchanged else _running_chars.total(after)
    return StrategyReport(
        strategy=strategy,
        messages_in=len(before),
        messages_out=len(after),
        tool_calls=sum(
            map(isinstance, before, repeat(ToolMessage))
        ),  # in C: this runs on the whole history at every call
        shortened=shortened,
        dropped=dropped,
        protected=protected,
        chars_before=chars_before,
        chars_after=chars_after,
        details=details,
    )


class _RunningChars:
    """The character totals of the last lists measured (their message keys, no message): a list
    extending one is measured only after it."""

    size = 8

    def __init__(self) -> None:
        self._items: list[tuple[list[int], int]] = []
        self._lock = threading.Lock()

    def total(self, messages: Sequence[BaseMessage]) -> int:
        """Return ``sum(map(message_chars, messages))``."""
        if not messages:
            return 0
        try:
            keys = message_keys(messages)
        except (TypeError, AttributeError):  # not a pydantic message: measured, not remembered
            return sum(map(message_chars, messages))
        with self._lock:
            items = sorted(
                self._items, key=lambda item: len(item[0]), reverse=True
            )  # the longest list it extends is the first that matches
        n = len(keys)
        best = next(
            (item for item in items if len(item[0]) <= n and item[0] == keys[: len(item[0])]), None
        )
        done = len(best[0]) if best is not None else 0
        total = (best[1] if best is not None else 0) + sum(map(message_chars, messages[done:]))
        with self._lock:
            self._items = [*self._items[-(self.size - 1) :], (keys, total)]
        return total


_running_chars = _RunningChars()
