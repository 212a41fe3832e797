"""Where a tool call is recorded: reading a message's calls from ``tool_calls``, OpenAI's ``additional_kwargs``, call blocks and ``invalid_tool_calls``.

A real conversation may carry the same call in several places (:data:`CALL_BLOCK_TYPES` for
the content blocks); a call whose arguments did not parse lives in ``invalid_tool_calls``.
:func:`recorded_calls` reads each call once from all of them; :func:`repeat_key` says when
two calls make the same request. Must not change a message (``edits`` does) nor know any strategy.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage


def openai_calls(message: BaseMessage) -> list[dict[str, Any]]:
    """Return the calls ``message`` records in OpenAI's ``additional_kwargs["tool_calls"]`` (a list, maybe empty)."""
    calls = message.additional_kwargs.get("tool_calls") if message.additional_kwargs else None
    return calls if isinstance(calls, list) else []


CALL_BLOCK_TYPES: dict[str, tuple[str, str]] = {
    "tool_use": ("id", "input"),  # Anthropic
    "tool_call": ("id", "args"),  # LangChain's v1 standard content blocks
    "function_call": ("call_id", "arguments"),  # OpenAI Responses API (arguments as JSON text)
}
"""Content block types that record a call: ``type -> (key of the call id, key of its arguments)``."""


def call_block_id(block: Any) -> str | None:
    """Return the call id a content block records, or None when it records no call."""
    if isinstance(block, dict):
        keys = CALL_BLOCK_TYPES.get(block.get("type"))  # type: ignore[arg-type]
        if keys is not None:
            value = block.get(keys[0])
            return value if isinstance(value, str) and value else None
    return None


def call_blocks(content: Any) -> Iterable[dict[str, Any]]:
    """Yield the content blocks of ``content`` that record a call (see :data:`CALL_BLOCK_TYPES`)."""
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") in CALL_BLOCK_TYPES:
                yield block


def _block_args(block: dict[str, Any]) -> Any:
    raw = block.get(CALL_BLOCK_TYPES[block["type"]][1])
    if block["type"] == "function_call" and isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def tool_call_ids(message: BaseMessage) -> list[str]:
    """Return the ids of the calls ``message`` records, in order, each once, from all three places."""
    if not isinstance(message, AIMessage):
        return []
    ids: list[str] = []
    seen: set[str] = set()

    def add(call_id: Any) -> None:
        if isinstance(call_id, str) and call_id and call_id not in seen:
            seen.add(call_id)
            ids.append(call_id)

    call: Mapping[str, Any]  # a LangChain ToolCall, then an OpenAI call dict
    for call in message.tool_calls:
        add(call.get("id"))
    for call in openai_calls(message):
        if isinstance(call, dict):
            add(call.get("id"))
    for block in call_blocks(message.content):
        add(call_block_id(block))
    for invalid in message.invalid_tool_calls:
        add(invalid.get("id"))
    return ids


def _call_name_and_args(message: AIMessage, call_id: str) -> tuple[str, Any]:
    call: Mapping[str, Any]  # a LangChain ToolCall, then an OpenAI call dict
    for call in message.tool_calls:
        if call.get("id") == call_id:
            return call.get("name") or "", call.get("args")
    for call in openai_calls(message):
        if isinstance(call, dict) and call.get("id") == call_id:
            function = call.get("function") or {}
            raw = function.get("arguments")
            try:
                args = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError:
                args = raw
            return function.get("name") or "", args
    for block in call_blocks(message.content):
        if call_block_id(block) == call_id:
            return block.get("name") or "", _block_args(block)
    for invalid in message.invalid_tool_calls:
        if invalid.get("id") == call_id:
            return invalid.get("name") or "", invalid.get("args")
    return "", None


def recorded_calls(message: AIMessage) -> Sequence[tuple[str, str, Any]]:
    """Return ``(id, name, args)`` of each call ``message`` records, in order, each once."""
    if not openai_calls(message) and not isinstance(message.content, list) and not message.invalid_tool_calls:
        out: list[tuple[str, str, Any]] = []
        seen: set[str] = set()
        for call in message.tool_calls:
            call_id = call.get("id")
            if isinstance(call_id, str) and call_id and call_id not in seen:
                seen.add(call_id)
                out.append((call_id, call.get("name") or "", call.get("args")))
        return out
    return [(call_id, *_call_name_and_args(message, call_id)) for call_id in tool_call_ids(message)]


def repeat_key(name: str, args: Any) -> str:
    """Return the identity of a call for repeat detection: tool name plus canonical JSON args (no call id)."""
    return name + "\x00" + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def keyed_calls(message: AIMessage) -> tuple[tuple[str, str, Any, str], ...]:
    """Return ``(id, name, args, repeat key)`` of each call ``message`` records (:func:`recorded_calls` with keys)."""
    return tuple((call_id, name, args, repeat_key(name, args)) for call_id, name, args in recorded_calls(message))
