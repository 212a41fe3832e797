"""Per-message token costs of one counter, whole and shortened, remembered by message object (:class:`Costs`).

The stable strategy's replay prices every call of the history kept whole and shortened
before every model call; remembering each message's cost (weakly, bounded) makes a
growing conversation cost only its new messages. A cache: it never changes a result.

Must not decide anything: it only counts.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, ToolMessage

from langchain_promptstrat._memo import IdentityMemo
from langchain_promptstrat.messages import edit_ai_message, index_tool_calls, shorten_tool_output
from langchain_promptstrat.strategies.ladder_machinery.vocabulary import CountTokens, message_counter
from langchain_promptstrat.tokens import missing_call_id_tokens

__all__ = ["Costs"]


class Costs:
    """Per-message token costs for one counter: content, tool calls and call ids, remembered by message object.

    The memos hold messages weakly and at most ``limit`` of them (a strategy object lives as
    long as the hook or middleware that holds it, so it must never keep a finished
    conversation alive); they never change a result, only how fast it comes.
    """

    limit = 200_000

    def __init__(self, counter: CountTokens) -> None:
        self.counter = counter
        self.count_one = message_counter(counter)
        self._seen: IdentityMemo[int] = IdentityMemo(self.limit)
        self._short: IdentityMemo[int] = IdentityMemo(self.limit)
        self.lock = threading.Lock()

    def whole(self, message: BaseMessage) -> int:
        tokens = self._seen.get(message)
        if tokens is None:
            tokens = self.count_one(message) + missing_call_id_tokens(message, self.counter)
            self._seen.put(message, tokens)
        return tokens

    def shortened(self, message: BaseMessage) -> int:
        """Return the tokens of ``message`` once shortened: a tool output, or an assistant message with every call shortened."""
        tokens = self._short.get(message)
        if tokens is not None:
            return tokens
        if isinstance(message, ToolMessage):
            short: BaseMessage | None = shorten_tool_output(message)
        else:
            short = edit_ai_message(message, shorten=[c.id for c in index_tool_calls([message]).calls])  # type: ignore[arg-type]
        tokens = self.whole(short) if short is not None else 0
        self._short.put(message, tokens)
        return tokens

    def __call__(self, messages: Sequence[BaseMessage], /) -> int:
        return sum(map(self.whole, messages))
