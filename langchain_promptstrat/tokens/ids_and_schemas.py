"""Tokens beyond a counter's count of the messages: call ids and the bound tools' schemas.

Every request carries the call ids of its messages and the schemas of the tools bound to
the model. A :class:`~langchain_promptstrat.tokens.counter.TokenCounter` counts the ids
(unless built with ``call_ids=False``), another counter may not: these functions say what
the ids cost, whether a counter already counts them, and what the schemas cost, so a
ceiling on what the provider receives counts each once whatever the counter.

Must not change how a message is counted (that is ``counter`` and ``message_parts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_promptstrat.tokens.counter import TokenCounter, as_token_counter
from langchain_promptstrat.tokens.message_parts import TOKENS_PER_MESSAGE, _call_ids_text, _json

__all__ = ["call_id_tokens", "counts_call_ids", "missing_call_id_tokens", "tool_schema_tokens"]


def _text_tokens(counter: Any, text: str) -> int:
    """Return the tokens of ``text`` with ``counter``'s encoding (about four characters a token when it has none)."""
    encoding = counter.encoding if isinstance(counter, TokenCounter) else None
    return len(encoding.encode_ordinary(text)) if encoding is not None else -(-len(text) // 4)


def call_id_tokens(message: BaseMessage, counter: Any = None) -> int:
    """Return the tokens of the call ids ``message`` sends: its tool calls' ids, or a tool output's ``tool_call_id``.

    Exactly what :meth:`TokenCounter.count_message` adds for them (see the counting rules of
    :mod:`langchain_promptstrat.tokens`); :func:`missing_call_id_tokens` is what a counter leaves out.
    """
    counter = as_token_counter(counter)
    text = _call_ids_text(message)
    return _text_tokens(counter, text) if text else 0


def counts_call_ids(counter: Any) -> bool:
    """Return whether ``counter``'s count of a message already includes its call ids.

    True for a :class:`TokenCounter` (unless built with ``call_ids=False``; its
    approximation without an encoding always includes them) and for
    ``count_tokens_approximately`` (the ``repr`` of the calls and the ``tool_call_id``);
    False for anything else, whose rules are unknown.
    """
    if isinstance(counter, TokenCounter):
        return counter.call_ids or counter.encoding is None
    return counter is count_tokens_approximately


def missing_call_id_tokens(message: BaseMessage, counter: Any = None) -> int:
    """Return the call-id tokens of ``message`` that ``counter`` leaves out: 0 when it counts them (:func:`counts_call_ids`).

    What a ceiling on what the provider receives adds to a count, so ids are counted once
    whatever the counter.
    """
    counter = as_token_counter(counter)
    return 0 if counts_call_ids(counter) else call_id_tokens(message, counter)


def tool_schema_tokens(tools: Sequence[Any] | None, counter: Any = None) -> int:
    """Return the tokens of the bound tools' schemas as a provider receives them (OpenAI function JSON).

    Each tool (a LangChain tool, a function, a pydantic model or a dict) is converted with
    ``langchain_core.utils.function_calling.convert_to_openai_tool``; a tool that cannot be
    converted is counted by its ``repr``. Providers wrap these in their own framing, which
    the ceiling's margin covers.
    """
    if not tools:
        return 0
    counter = as_token_counter(counter)
    total = 0
    for tool in tools:
        try:
            text = _json(convert_to_openai_tool(tool))
        except Exception:  # noqa: BLE001 -- a schema we cannot render is still sent: count something
            text = repr(tool)
        total += _text_tokens(counter, text) + TOKENS_PER_MESSAGE
    return total
