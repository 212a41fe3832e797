"""Pair checks: every way a message list breaks the call/output pairing providers require.

A violation is an output that answers no call of its step, a call without an output, or
a second output for the same call; each makes OpenAI and Anthropic reject the request.
Outputs are ``ToolMessage``s or Anthropic ``tool_result`` blocks in a user message.

Must not repair a list (``floor`` does) nor know any strategy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_promptstrat.messages.coercion import coerce_messages, is_tool_result_block
from langchain_promptstrat.messages.recorded_calls import tool_call_ids


@dataclass(frozen=True)
class ToolPairViolation:
    """One way a message list breaks the call/output pairing providers require."""

    kind: str
    """``orphan_output``, ``missing_output`` or ``duplicate_output``."""
    call_id: str
    index: int

    def __str__(self) -> str:
        if self.kind == "orphan_output":
            return f"message {self.index} (tool): output for call {self.call_id!r} answers no call of its step"
        if self.kind == "duplicate_output":
            return f"message {self.index} (tool): duplicate output for call {self.call_id!r}"
        return f"message {self.index} (ai): call {self.call_id!r} has no output"


def find_tool_pair_violations(messages: Sequence[BaseMessage]) -> list[ToolPairViolation]:
    """Return every pairing violation of ``messages`` as structured records, in message order."""
    violations: list[ToolPairViolation] = []
    step_index: int | None = None
    pending: dict[str, None] = {}
    answered: set[str] = set()

    def close() -> None:
        for call_id in pending:
            violations.append(ToolPairViolation("missing_output", call_id, step_index or 0))

    for i, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            answers = [message.tool_call_id]
        elif isinstance(message, HumanMessage) and isinstance(message.content, list):
            answers = [b["tool_use_id"] for b in message.content if isinstance(b, dict) and is_tool_result_block(b)]
        else:
            answers = []
        for call_id in answers:  # a ToolMessage, or Anthropic tool_result blocks in a user message
            if call_id in answered:
                violations.append(ToolPairViolation("duplicate_output", call_id, i))
            elif call_id in pending:
                del pending[call_id]
                answered.add(call_id)
            else:
                violations.append(ToolPairViolation("orphan_output", call_id, i))
        if isinstance(message, ToolMessage) or (answers and len(answers) == len(message.content)):
            continue
        close()
        pending, answered, step_index = {}, set(), None
        if isinstance(message, AIMessage):
            step_index = i
            pending = dict.fromkeys(tool_call_ids(message))
    close()
    violations.sort(key=lambda v: v.index)
    return violations


def check_tool_pairs(messages: Sequence[BaseMessage] | Any) -> list[str]:
    """Return one readable line per tool call/output pairing violation (see :class:`ToolPairViolation`); empty when valid."""
    return [str(v) for v in find_tool_pair_violations(coerce_messages(messages))]
