"""Input read as messages (:func:`coerce_messages`) and the pair checks providers require of it
(:func:`check_tool_pairs`).

An output is a ``ToolMessage`` or an Anthropic ``tool_result`` block in a user message,
which :func:`tool_results_as_tool_messages` turns into the ``ToolMessage`` LangChain uses
(langchain-anthropic turns it back into the same block). A violation is an output that
answers no call of its step, a call without an output, or a second output for one call:
each makes OpenAI and Anthropic reject the request. Must not repair a list (``edits`` does).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.prompt_values import PromptValue

from langchain_promptstrat.errors import InvalidMessagesError
from langchain_promptstrat.messages.recorded_calls import tool_call_ids

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
            f"expected a list of messages or a PromptValue, got a single {type(value).__name__}; "
            "wrap it in a list"
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
            raise InvalidMessagesError(
                f"message {i}: {f'{role} message: ' if isinstance(role, str) else ''}{problem}"
            )
        try:  # AttributeError: a malformed field such as "tool_calls": "oops"
            out.extend(convert_to_messages([item]))
        except (ValueError, TypeError, KeyError, AttributeError, NotImplementedError) as exc:
            raise InvalidMessagesError(
                f"message {i}: cannot read as a chat message: {exc}"
            ) from None
    return tool_results_as_tool_messages(out)


def tool_arguments_problem(message: Any) -> str | None:
    """Return what is wrong with a role dict's tool-call arguments, naming the field and quoting
    what arrived; None when nothing is.

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
        quoted = (
            repr(arguments)
            if len(arguments) <= _QUOTED_CHARS
            else repr(arguments[:_QUOTED_CHARS]) + f"... ({len(arguments):,} characters)"
        )
        try:
            parsed = json.loads(arguments, strict=False)  # as convert_to_messages reads them
        except json.JSONDecodeError as exc:
            return f"{field} is not JSON ({exc.msg} at char {exc.pos}): {quoted}"
        except RecursionError:
            return f"{field} is JSON nested too deeply to read: {quoted}"
        if not isinstance(parsed, dict):
            return f"{field} is JSON but not an object of arguments: {quoted}"
    return None


def _is_tool_result(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "tool_result"
        and isinstance(block.get("tool_use_id"), str)
    )


def _tool_results(message: BaseMessage) -> list[dict[str, Any]]:
    """Return the Anthropic ``tool_result`` blocks (each answering a call by its ``tool_use_id``) of
    a user message."""
    if not (isinstance(message, HumanMessage) and isinstance(message.content, list)):
        return []
    return [b for b in message.content if _is_tool_result(b)]  # type: ignore[misc]


def tool_results_as_tool_messages(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Return ``messages`` with each ``tool_result`` block of a user message as a ``ToolMessage``,
    ``messages`` itself when there is none.

    The results come first, in order, then a user message with the remaining blocks, if any.
    """
    if not any(_tool_results(m) for m in messages):
        return messages
    out: list[BaseMessage] = []
    for message in messages:
        results = _tool_results(message)
        if not results:
            out.append(message)
            continue
        for k, block in enumerate(results):
            body = block.get("content", "")
            out.append(
                ToolMessage(
                    content=body
                    if isinstance(body, (str, list))
                    else json.dumps(body, default=str),
                    tool_call_id=block["tool_use_id"],
                    status="error" if block.get("is_error") else "success",
                    id=f"{message.id}-tool_result-{k}" if message.id else None,
                )
            )
        rest = [b for b in message.content if not _is_tool_result(b)]
        if rest:
            out.append(message.model_copy(update={"content": rest}))
    return out


@dataclass(frozen=True)
class ToolPairViolation:
    """One way a message list breaks the call/output pairing providers require."""

    kind: str
    """``orphan_output``, ``missing_output`` or ``duplicate_output``."""
    call_id: str
    index: int

    def __str__(self) -> str:
        if self.kind == "orphan_output":
            return (
                f"message {self.index} (tool): output for call {self.call_id!r} "
                "answers no call of its step"
            )
        if self.kind == "duplicate_output":
            return f"message {self.index} (tool): duplicate output for call {self.call_id!r}"
        return f"message {self.index} (ai): call {self.call_id!r} has no output"


def find_tool_pair_violations(messages: Sequence[BaseMessage]) -> list[ToolPairViolation]:
    """Return every pairing violation of ``messages`` as structured records, in message order."""
    violations: list[ToolPairViolation] = []
    step_index: int | None = None
    pending: dict[str, None] = {}
    answered: set[str] = set()
    for i, message in enumerate(messages):
        answers = (
            [message.tool_call_id]
            if isinstance(message, ToolMessage)
            else [b["tool_use_id"] for b in _tool_results(message)]
        )
        for call_id in answers:
            if call_id in answered:
                violations.append(ToolPairViolation("duplicate_output", call_id, i))
            elif call_id in pending:
                del pending[call_id]
                answered.add(call_id)
            else:
                violations.append(ToolPairViolation("orphan_output", call_id, i))
        if isinstance(message, ToolMessage) or (answers and len(answers) == len(message.content)):
            # a step's outputs: ToolMessages, or a user message holding only tool_result blocks
            continue
        violations += [
            ToolPairViolation("missing_output", call_id, step_index or 0) for call_id in pending
        ]
        pending, answered, step_index = {}, set(), None
        if isinstance(message, AIMessage):
            step_index = i
            pending = dict.fromkeys(tool_call_ids(message))
    violations += [
        ToolPairViolation("missing_output", call_id, step_index or 0) for call_id in pending
    ]
    violations.sort(key=lambda v: v.index)
    return violations


def check_tool_pairs(messages: Sequence[BaseMessage] | Any) -> list[str]:
    """Return one readable line per tool call/output pairing violation (see
    :class:`ToolPairViolation`); empty when valid."""
    return [str(v) for v in find_tool_pair_violations(coerce_messages(messages))]
