"""Hypothesis strategies for agent conversations, shared by the property tests.

A generated conversation looks like a real agent run: an optional system message, a user
task, then steps (an ``AIMessage`` with one or several parallel calls and one
``ToolMessage`` per call), occasional new user messages, repeated calls (same tool and
arguments, new id), string or block content, and calls mirrored the way OpenAI and
Anthropic integrations record them.
"""

from __future__ import annotations

import copy
import json
from typing import Any, TypeVar

from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

TOOLS = ("search", "read_file", "run_shell")
TEXT_SIZES = (0, 8, 150, 420, 2500)
MIRRORS = ("plain", "openai", "anthropic", "both")


def _text(seed: int, size: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 .,:/{}\n"
    start = seed % len(alphabet)
    line = (alphabet[start:] + alphabet[:start]) * (size // len(alphabet) + 1)
    return line[:size]


def ai_step(
    call_specs: list[tuple[str, dict[str, Any]]], first_id: int, *, mirror: str, text: str = ""
) -> AIMessage:
    """Return an AIMessage carrying ``call_specs`` as calls, recorded the way ``mirror`` says."""
    calls = [
        {"name": name, "args": args, "id": f"call_{first_id + k}", "type": "tool_call"}
        for k, (name, args) in enumerate(call_specs)
    ]
    kwargs: dict[str, Any] = {}
    content: Any = text
    if mirror in ("openai", "both"):
        kwargs["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
            }
            for c in calls
        ]
    if mirror in ("anthropic", "both"):
        content = ([{"type": "text", "text": text}] if text else []) + [
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
            for c in calls
        ]
    return AIMessage(content=content, tool_calls=calls, additional_kwargs=kwargs)


@st.composite
def agent_conversations(
    draw: st.DrawFn, *, min_calls: int = 0, max_calls: int = 40
) -> list[BaseMessage]:
    """Draw a valid agent conversation ending after a step's outputs (ready for a model call)."""
    messages: list[BaseMessage] = []
    if draw(st.booleans()):
        messages.append(SystemMessage("You are an agent."))
    messages.append(HumanMessage("Do the task."))
    n_calls = draw(st.integers(min_calls, max_calls))
    made: list[tuple[str, dict[str, Any]]] = []
    next_id = 0
    while next_id < n_calls:
        width = min(draw(st.integers(1, 3)), n_calls - next_id)
        specs = []
        for _ in range(width):
            if made and draw(st.integers(0, 9)) == 0:
                specs.append(copy.deepcopy(draw(st.sampled_from(made))))
                continue
            name = draw(st.sampled_from(TOOLS))
            args: dict[str, Any] = {
                "query": _text(next_id + len(specs), draw(st.sampled_from(TEXT_SIZES)))
            }
            if draw(st.booleans()):
                args["limit"] = draw(st.integers(0, 100))
            if draw(st.booleans()):
                args["options"] = {"deep": [1, 2], "path": _text(next_id, 30)}
            specs.append((name, args))
            made.append((name, args))
        text = draw(st.sampled_from(["", "", "Let me look.", _text(next_id, 300)]))
        messages.append(ai_step(specs, next_id, mirror=draw(st.sampled_from(MIRRORS)), text=text))
        for k in range(width):
            size = draw(st.sampled_from(TEXT_SIZES))
            body = _text(next_id + k * 7, size)
            content: Any = body if draw(st.integers(0, 4)) else [{"type": "text", "text": body}]
            messages.append(
                ToolMessage(content=content, tool_call_id=f"call_{next_id + k}", name=specs[k][0])
            )
        next_id += width
        if next_id < n_calls and draw(st.integers(0, 7)) == 0:
            messages.append(HumanMessage(f"Also check item {next_id}."))
    return messages


def snapshot(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """Return a deep, comparable copy of every field of every message (to prove nothing was
    mutated)."""
    return [copy.deepcopy(m.model_dump()) for m in messages]


def as_ai(message: BaseMessage | None) -> AIMessage:
    """Return ``message``, which a test expects to be an assistant message (fails the test if
    not)."""
    assert isinstance(message, AIMessage), message
    return message


def as_tool(message: BaseMessage | None) -> ToolMessage:
    """Return ``message``, which a test expects to be a tool output (fails the test if not)."""
    assert isinstance(message, ToolMessage), message
    return message


def blocks(message: BaseMessage) -> list[dict[str, Any]]:
    """Return the dict content blocks of ``message`` (none when its content is a string)."""
    return (
        [b for b in message.content if isinstance(b, dict)]
        if isinstance(message.content, list)
        else []
    )


T = TypeVar("T")


def known(value: T | None) -> T:
    """Return ``value``, which the test expects to be there (fails the test if it is None)."""
    assert value is not None
    return value
