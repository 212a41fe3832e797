"""Reading input as messages: :func:`coerce_messages`, and Anthropic ``tool_result`` blocks as ``ToolMessage``s so every strategy sees the pair.

Must not edit a message's calls (``edits`` does) nor know any strategy.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage, convert_to_messages
from langchain_core.prompt_values import PromptValue

from langchain_promptstrat.errors import InvalidMessagesError


_QUOTED_CHARS = 60
"""Longest stretch of unreadable arguments quoted in an error (they can be a whole file)."""


def coerce_messages(value: Any) -> list[BaseMessage]:
    """Return ``value`` (a ``PromptValue``, messages, dicts or tuples) as a new list of messages.

    Raises:
        InvalidMessagesError: Naming the position of the first item that is not a message.
    """
    if isinstance(value, PromptValue):
        return list(value.to_messages())
    if isinstance(value, (BaseMessage, Mapping)):  # a dict would iterate over its keys
        raise InvalidMessagesError(
            f"expected a list of messages or a PromptValue, got a single {type(value).__name__}; wrap it in a list"
        )
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidMessagesError(
            f"expected a list of messages or a PromptValue, got {type(value).__name__}"
        )
    items = list(value)
    if all(isinstance(m, BaseMessage) for m in items):
        return tool_results_as_tool_messages(items)
    out: list[BaseMessage] = []
    for i, item in enumerate(items):
        if isinstance(item, BaseMessage):
            out.append(item)
            continue
        problem = tool_arguments_problem(item)
        if problem is not None:
            role = item.get("role", item.get("type"))
            raise InvalidMessagesError(f"message {i}: {f'{role} message: ' if isinstance(role, str) else ''}{problem}")
        try:  # AttributeError: a malformed field such as "tool_calls": "oops"
            out.extend(convert_to_messages([item]))
        except (ValueError, TypeError, KeyError, AttributeError, NotImplementedError) as exc:
            raise InvalidMessagesError(f"message {i}: cannot read as a chat message: {exc}") from None
    return tool_results_as_tool_messages(out)


def tool_arguments_problem(message: Any) -> str | None:
    """Return what is wrong with a role dict's tool-call arguments, naming the field and quoting what arrived; None when nothing is.

    ``convert_to_messages``'s own error names neither the call nor the field.
    """
    calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    if not isinstance(calls, list):
        return None  # not OpenAI's form: convert_to_messages says what it makes of it
    for i, call in enumerate(calls):
        function = call.get("function") if isinstance(call, Mapping) else None
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        if not isinstance(arguments, str):
            continue
        field = f"tool_calls[{i}].function.arguments"
        try:
            parsed = json.loads(arguments, strict=False)  # as convert_to_messages reads them
        except json.JSONDecodeError as exc:
            return f"{field} is not JSON ({exc.msg} at char {exc.pos}): {_quoted(arguments)}"
        except RecursionError:
            return f"{field} is JSON nested too deeply to read: {_quoted(arguments)}"
        if not isinstance(parsed, dict):
            return f"{field} is JSON but not an object of arguments: {_quoted(arguments)}"
    return None


def _quoted(text: str) -> str:
    return repr(text) if len(text) <= _QUOTED_CHARS else repr(text[:_QUOTED_CHARS]) + f"... ({len(text):,} characters)"


def is_tool_result_block(block: Any) -> bool:
    """Return whether ``block`` is an Anthropic ``tool_result`` content block answering a call by its ``tool_use_id``."""
    return isinstance(block, dict) and block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str)


def tool_results_as_tool_messages(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Return ``messages`` with each Anthropic ``tool_result`` block of a user message as a ``ToolMessage``.

    The results come first, in order, then a user message with the remaining blocks, if any;
    ``messages`` itself when there is none (langchain-anthropic sends them back as blocks).
    """
    if not any(
        isinstance(m, HumanMessage) and isinstance(m.content, list) and any(is_tool_result_block(b) for b in m.content)
        for m in messages
    ):
        return messages
    out: list[BaseMessage] = []
    for message in messages:
        content = message.content
        if not (isinstance(message, HumanMessage) and isinstance(content, list)):
            out.append(message)
            continue
        results: list[dict[str, Any]] = [b for b in content if isinstance(b, dict) and is_tool_result_block(b)]
        if not results:
            out.append(message)
            continue
        for k, block in enumerate(results):
            body = block.get("content", "")
            out.append(ToolMessage(
                content=body if isinstance(body, (str, list)) else json.dumps(body, default=str),
                tool_call_id=block["tool_use_id"],
                status="error" if block.get("is_error") else "success",
                id=f"{message.id}-tool_result-{k}" if message.id else None,
            ))
        rest = [b for b in content if not is_tool_result_block(b)]
        if rest:
            out.append(message.model_copy(update={"content": rest}))
    return out
