"""Cheap sizes of messages for reports (not token counts): the text of a content, the characters of a value or a message.

Must not count tokens nor know any strategy.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage


def content_text(content: Any) -> str:
    """Return the text of a message content: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
    return "".join(parts)


def value_chars(value: Any) -> int:
    """Return the characters of a value's strings, keys and scalars, walking containers with its own stack (no ``RecursionError``)."""
    if isinstance(value, str):
        return len(value)
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
    """Return the characters a message carries: its text plus its calls' names and arguments."""
    n = len(content_text(message.content))
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            n += len(call.get("name") or "") + value_chars(call.get("args"))
    return n
