"""What a message records: its tool calls from every place they are kept, its text and sizes, and
this package's marks.

A call may be kept in ``tool_calls``, OpenAI's ``additional_kwargs["tool_calls"]``, content
blocks (:data:`CALL_BLOCK_TYPES`) and ``invalid_tool_calls``; :func:`recorded_calls` reads
each once, from the first place it is found. Must not change a message (``edits`` does).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

MARK_KEY = "promptstrat"
"""Key in ``additional_kwargs`` (which integrations do not send) under which this package marks the
messages it creates."""

CALL_BLOCK_TYPES: dict[str, tuple[str, str]] = {
    "tool_use": ("id", "input"),  # Anthropic
    "tool_call": ("id", "args"),  # LangChain's v1 standard content blocks
    "function_call": ("call_id", "arguments"),  # OpenAI Responses API (arguments as JSON text)
}
"""Content block types that record a call: ``type -> (key of the call id, key of its
arguments)``."""

_Message = TypeVar("_Message", bound=BaseMessage)


def openai_calls(message: BaseMessage) -> list[dict[str, Any]]:
    """Return the calls ``message`` records in OpenAI's ``additional_kwargs["tool_calls"]`` (a list,
    maybe empty)."""
    calls = message.additional_kwargs.get("tool_calls") if message.additional_kwargs else None
    return calls if isinstance(calls, list) else []


def call_block_id(block: Any) -> str | None:
    """Return the call id a content block records, or None when it records no call."""
    if isinstance(block, dict):
        keys = CALL_BLOCK_TYPES.get(block.get("type"))  # type: ignore[arg-type]
        if keys is not None:
            value = block.get(keys[0])
            return value if isinstance(value, str) and value else None
    return None


def call_blocks(content: Any) -> Iterable[dict[str, Any]]:
    """Yield the content blocks of ``content`` that record a call."""
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") in CALL_BLOCK_TYPES:
                yield block


def parsed_json(raw: Any) -> Any:
    """Return ``raw`` parsed when it is JSON text, else ``raw`` itself."""
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def _calls_in_every_place(message: AIMessage) -> Iterable[tuple[Any, Any, Any, bool]]:
    """Yield ``(id, name, args, args are JSON text)`` of each call entry, place by place, repeats
    included."""
    for call in message.tool_calls:
        yield call.get("id"), call.get("name"), call.get("args"), False
    for entry in openai_calls(message):
        function = (
            (entry.get("function") or {}) if isinstance(entry, dict) else None
        )  # the integration's, unchecked
        if isinstance(function, dict):
            yield entry.get("id"), function.get("name"), function.get("arguments"), True
    for block in call_blocks(message.content):
        id_key, args_key = CALL_BLOCK_TYPES[block["type"]]
        yield (
            block.get(id_key),
            block.get("name"),
            block.get(args_key),
            block["type"] == "function_call",
        )
    for invalid in message.invalid_tool_calls:
        yield invalid.get("id"), invalid.get("name"), invalid.get("args"), False


def recorded_calls(message: AIMessage) -> Sequence[tuple[str, str, Any]]:
    """Return ``(id, name, args)`` of each call ``message`` records, in order, each once (where
    first found)."""
    calls: dict[str, tuple[str, str, Any]] = {}
    for call_id, name, args, as_json in _calls_in_every_place(message):
        if isinstance(call_id, str) and call_id and call_id not in calls:
            calls[call_id] = (call_id, name or "", parsed_json(args) if as_json else args)
    return list(calls.values())


def tool_call_ids(message: BaseMessage) -> list[str]:
    """Return the ids of the calls ``message`` records, in order, each once, from every place."""
    return [call[0] for call in recorded_calls(message)] if isinstance(message, AIMessage) else []


def canonical_json(value: Any) -> str:
    """Return ``value`` as JSON with sorted keys, characters as they are, and ``str`` of what JSON
    cannot hold."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def repeat_key(name: str, args: Any) -> str:
    """Return the identity of a call for repeat detection: tool name plus canonical JSON args (no
    call id)."""
    return name + "\x00" + canonical_json(args)


def content_text(content: Any) -> str:
    """Return the text of a message content: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        block if isinstance(block, str) else block["text"]
        for block in content
        if isinstance(block, str)
        or (
            isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        )
    )


def value_chars(value: Any) -> int:
    """Return the characters of a value's strings, keys and scalars, walking containers with its own
    stack (no ``RecursionError``)."""
    total = 0
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            total += sum(len(str(k)) for k in item)
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
        elif item is not None:
            total += len(str(item))
    return total


def message_chars(message: BaseMessage) -> int:
    """Return the characters a message carries (not tokens): its text plus its calls' names and
    arguments."""
    n = len(content_text(message.content))
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            n += len(call.get("name") or "") + value_chars(call.get("args"))
    return n


def mark(message: _Message, kind: str, *, notice: bool, **meta: Any) -> _Message:
    """Return a copy of ``message`` marked as produced by this package; ``notice=True``: never a
    real user message."""
    kwargs = dict(message.additional_kwargs)
    kwargs[MARK_KEY] = {"kind": kind, "notice": notice, **meta}
    return message.model_copy(update={"additional_kwargs": kwargs})


def mark_of(message: BaseMessage) -> dict[str, Any] | None:
    """Return this package's mark on ``message`` (``{"kind": ..., ...}``), or None."""
    value = message.additional_kwargs.get(MARK_KEY) if message.additional_kwargs else None
    return value if isinstance(value, dict) else None


def is_real_user_message(message: BaseMessage) -> bool:
    """Return whether ``message`` is a user message a person wrote, not a strategy's notice."""
    if not isinstance(message, HumanMessage):
        return False
    m = mark_of(message)
    return not (m and m.get("notice"))


def task_index(messages: Sequence[BaseMessage]) -> int | None:
    """Return the index of the run's task: the first real user message (harnesses speak as the user
    too), or None."""
    return next((i for i, m in enumerate(messages) if is_real_user_message(m)), None)


def leading_system_count(messages: Sequence[BaseMessage]) -> int:
    """Return how many messages at the head are ``SystemMessage``s (the system block)."""
    return next(
        (i for i, m in enumerate(messages) if not isinstance(m, SystemMessage)), len(messages)
    )
