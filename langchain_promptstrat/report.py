"""What a strategy call did: a small report returned next to the messages (:class:`Compacted`), for
the caller to log, dispatch or print."""

from __future__ import annotations

import logging
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, ToolMessage

from langchain_promptstrat.messages.history_memo import running_chars

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
    chars_before = running_chars(before)
    unchanged = len(before) == len(after) and all(map(operator.is_, before, after))
    chars_after = chars_before if unchanged else running_chars(after)
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
