"""What a provider encodes of one message: its role, name, call ids, tool calls and content parts.

:func:`_sent_parts` turns a message into the texts a provider encodes and its fixed extra
tokens (per-message overhead, name, images), following the counting rules of
:mod:`langchain_promptstrat.tokens`; a count is a function of exactly that pair, which is
why :class:`~langchain_promptstrat.tokens.counter.TokenCounter` caches under it. Which
calls a message holds, wherever they are recorded, is asked of
:mod:`langchain_promptstrat.messages`.

Must not encode or count (no tokenizer here) nor hold any state.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_promptstrat.messages import call_block_id, content_text, recorded_calls

__all__ = ["TOKENS_PER_IMAGE", "TOKENS_PER_MESSAGE", "TOKENS_PER_NAME"]

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_IMAGE = 85

_IMAGE_BLOCKS = frozenset({"image", "image_url", "input_image"})


def _role(message: BaseMessage) -> str:
    if isinstance(message, ChatMessage):
        return message.role
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, SystemMessage):
        role = message.additional_kwargs.get("__openai_role__")  # "developer" for o-series
        return role if isinstance(role, str) else "system"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, FunctionMessage):
        return "function"
    return message.type


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _call_ids_text(message: BaseMessage) -> str:
    """Return the call ids ``message`` sends as one text: its calls' ids joined by spaces, or a tool output's ``tool_call_id``."""
    if isinstance(message, ToolMessage):
        return message.tool_call_id or ""
    if isinstance(message, AIMessage):
        return " ".join(call_id for call_id, _, _ in recorded_calls(message) if call_id)
    return ""


def _sent_parts(message: BaseMessage, call_ids: bool = True) -> tuple[tuple[str, ...], int]:
    """Return the texts a provider encodes for ``message`` and its fixed extra tokens.

    The count is a function of exactly this pair, which is why the pair is the cache key.
    ``call_ids``: whether the call ids are among the texts (:func:`_call_ids_text`).
    """
    texts = [_role(message)]
    fixed = TOKENS_PER_MESSAGE
    if message.name and not isinstance(message, ToolMessage):
        texts.append(message.name)
        fixed += TOKENS_PER_NAME
    if call_ids:
        texts.append(_call_ids_text(message))

    counted_calls: set[str] = set()
    if isinstance(message, AIMessage):
        invalid_ids = {bad.get("id") for bad in message.invalid_tool_calls}
        for call_id, name, args in recorded_calls(message):
            counted_calls.add(call_id)
            if call_id not in invalid_ids:  # an invalid call's OpenAI mirror is counted below
                texts += (name, _json(args))
        for tool_call in message.tool_calls:
            if not tool_call.get("id"):  # no id, so no mirror to match: counted from tool_calls alone
                texts += (tool_call.get("name") or "", _json(tool_call.get("args")))
        for bad in message.invalid_tool_calls:
            texts += (bad.get("name") or "", bad.get("args") or "")

    content = message.content
    texts.append(content_text(content))
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                continue  # in content_text
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                continue  # in content_text
            if kind in _IMAGE_BLOCKS:
                fixed += TOKENS_PER_IMAGE
            elif call_block_id(block) in counted_calls:
                continue  # counted above as a call
            else:
                texts.append(_json(block))
    return tuple(t for t in texts if t), fixed
