"""The prompt floor: :func:`keep_prompt_floor` restores what a strategy broke before the list reaches a model.

Never a prompt without the system block, the newest real user message or paired tool
calls, and never an empty one; each repair is deterministic and logged as a warning.

Must not know any strategy (it judges their output, whichever ran).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.edits import drop_tool_call
from langchain_promptstrat.messages.marks import is_real_user_message, leading_system_count
from langchain_promptstrat.messages.pairs import find_tool_pair_violations


_logger = logging.getLogger("langchain_promptstrat")
"""The package logger (``report.logger``), looked up by name: ``report`` imports this module."""


def _key(message: BaseMessage) -> tuple[str, Any]:
    return ("id", message.id) if message.id else ("object", id(message))


def _is_copy(message: BaseMessage, original: BaseMessage) -> bool:
    return _key(message) == _key(original) or (type(message) is type(original) and message.content == original.content)


def _repair_pairs(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Return ``messages`` without orphan or duplicate outputs and without calls that lost their output."""
    violations = find_tool_pair_violations(messages)
    extra_outputs = {v.index for v in violations if v.kind != "missing_output"}
    lost: dict[int, list[str]] = {}
    for v in violations:
        if v.kind == "missing_output":
            lost.setdefault(v.index, []).append(v.call_id)
    out: list[BaseMessage] = []
    message: BaseMessage | None
    for i, message in enumerate(messages):
        if i in extra_outputs:
            continue
        for call_id in lost.get(i, ()):
            message = drop_tool_call(message, call_id) if isinstance(message, AIMessage) else message
            if message is None:
                break
        if message is not None:
            out.append(message)
    return out


def _anchor_position(source: Sequence[BaseMessage], anchor: BaseMessage, prompt: list[BaseMessage]) -> int:
    """Return where ``anchor`` goes back: before the first kept message that followed it, at a step's start."""
    order = {_key(m): i for i, m in enumerate(source)}
    at, start = order[_key(anchor)], leading_system_count(prompt)
    for j in range(start, len(prompt)):
        if order.get(_key(prompt[j]), -1) > at:
            while j > start and isinstance(prompt[j], ToolMessage):
                j -= 1  # a user message between a call and its output breaks the pair
            return j
    return len(prompt)


def keep_prompt_floor(source: Sequence[BaseMessage], prompt: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return ``prompt``, restored where a strategy broke the floor, with a warning naming the repair.

    The floor: the system block of ``source`` leads, its newest real user message is present
    (back at its place in the original order), calls and outputs pair up (unpaired ones are
    removed; when ``source`` itself holds them, the warning says so), and the prompt is not empty.
    """
    out, repaired = list(prompt), []
    system = list(source[: leading_system_count(source)])
    if system and not leading_system_count(out):
        keys = {_key(m) for m in system}
        out = [*system, *(m for m in out if _key(m) not in keys)]
        repaired.append("the system message")
    inherited = False
    broken = find_tool_pair_violations(out)
    if broken:
        out = _repair_pairs(out)
        # a conversation resumed after a kill mid-tool-call holds the broken pair itself: not the strategies' doing
        given = {(v.kind, v.call_id) for v in find_tool_pair_violations(source)}
        inherited = all((v.kind, v.call_id) in given for v in broken)
        if not inherited:
            repaired.append("tool call/output pairs")
    anchor = next((m for m in reversed(source) if is_real_user_message(m)), None)
    if anchor is not None and not any(_is_copy(m, anchor) for m in out):
        out.insert(_anchor_position(source, anchor, out), anchor)
        repaired.append("the newest user message")
    if not out and source:
        out = _repair_pairs(list(source)) or list(source)
        repaired.append("a non-empty prompt (the unchanged conversation)")
    if inherited:
        _logger.warning(
            "prompt floor: left out tool calls without outputs (or outputs without calls) that the conversation "
            "itself holds, as a run stopped mid-tool-call leaves them; the stored conversation keeps them"
        )
    if repaired:
        _logger.warning("prompt floor: restored %s after the strategies broke it", ", ".join(repaired))
    return out
