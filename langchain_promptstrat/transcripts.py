"""Saved transcripts in the formats agent harnesses write, turned into the role dicts a conversation file holds.

A user asking "what would a strategy save on *my* runs?" has their runs in whatever their
harness saved: OpenAI chat request bodies, Anthropic Messages API bodies, mini-swe-agent's
``.traj.json`` trajectories, or plain message lists. :func:`transcript_items` recognises a
JSON object holding a ``messages`` list and returns its messages as OpenAI role dicts, which
:mod:`langchain_promptstrat.conversation_file` then reads like any other file:

* **OpenAI chat body** (``{"model": ..., "messages": [...]}``) and **mini-swe-agent
  trajectory** (``{"info": ..., "messages": [...], "trajectory_format": ...}``): the
  messages as they are, keeping only what a provider receives (``role``, ``content``,
  ``tool_calls``, ``tool_call_id``, ``name``): mini-swe-agent's ``extra`` (whole provider
  responses) and ``provider_specific_fields`` are left out.
* **Anthropic Messages API body** (a top-level ``system``, or ``tool_use`` /
  ``tool_result`` blocks): ``system`` becomes a system message; an assistant's ``text``
  blocks its content and its ``tool_use`` blocks its tool calls; a user message's
  ``tool_result`` blocks become tool messages (in order, before the rest of that user
  message); ``thinking`` blocks are left out (a provider ignores old ones).

The request's ``tools`` (an OpenAI body's function tools, or its older ``functions``; an
Anthropic body's tools with their ``input_schema``) are part of every call's prompt:
:func:`transcript_tools` returns them, for the replay to count. A mini-swe-agent trajectory
does not save them.

Messages no provider reads are reported, not refused: a role outside the chat roles (such
as mini-swe-agent's ``exit``, which records why the run ended) is left out with a note
naming its position, so one harness-only message never makes a whole run unreadable.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["CHAT_ROLES", "HARNESS_ROLES", "is_transcript_object", "transcript_items", "transcript_tools"]

CHAT_ROLES = ("ai", "assistant", "developer", "function", "human", "system", "tool", "user")
"""Roles a role dict may have (what ``convert_to_messages`` reads)."""

HARNESS_ROLES = {"exit": "mini-swe-agent's record of how the run ended"}
"""Extra roles written by known harnesses, with what they hold (named in the note)."""

_PROVIDER_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
"""Keys of an OpenAI message a provider reads; the rest is harness bookkeeping."""


def is_transcript_object(value: Any) -> bool:
    """Return whether ``value`` is a transcript object: a dict holding a ``messages`` list, not a message itself."""
    return isinstance(value, dict) and isinstance(value.get("messages"), list) and "role" not in value and "data" not in value


def _is_anthropic(body: dict[str, Any]) -> bool:
    if "system" in body:
        return True
    for message in body["messages"]:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return True
    return False


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _from_anthropic(body: dict[str, Any], notes: list[str]) -> tuple[list[Any], list[str]]:
    items: list[Any] = []
    positions: list[str] = []
    if body.get("system"):
        items.append({"role": "system", "content": _text_of(body["system"])})
        positions.append("system")
    thinking = 0
    for n, message in enumerate(body["messages"]):
        where = f"message {n}"
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            items.append(message)
            positions.append(where)
            continue
        role, blocks = message.get("role"), message["content"]
        if role == "assistant":
            calls = [
                {"id": b.get("id"), "type": "function",
                 "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False)}}
                for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            thinking += sum(1 for b in blocks if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking"))
            item: dict[str, Any] = {"role": "assistant", "content": _text_of(blocks)}
            if calls:
                item["tool_calls"] = calls
            items.append(item)
            positions.append(where)
            continue
        rest = []
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                items.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text_of(b.get("content"))})
                positions.append(f"{where} (tool_result)")
            else:
                rest.append(b)
        if rest:
            items.append({"role": role, "content": rest})
            positions.append(where)
    if thinking:
        notes.append(f"{thinking} thinking block{'s' if thinking > 1 else ''} left out")
    return items, positions


def transcript_items(body: dict[str, Any], notes: list[str]) -> tuple[list[Any], list[str]]:
    """Return the messages of a transcript object as role dicts (or as found) and their positions.

    ``notes`` receives one line per thing left out. Anything that is not a message object is
    passed through for the reader to refuse with its position.
    """
    if _is_anthropic(body):
        return _from_anthropic(body, notes)
    items: list[Any] = []
    positions: list[str] = []
    for n, message in enumerate(body["messages"]):
        if isinstance(message, dict) and "role" in message and "data" not in message:
            message = {k: v for k, v in message.items() if k in _PROVIDER_KEYS}
            if message.get("content") is None:
                message["content"] = ""
        items.append(message)
        positions.append(f"message {n}")
    return items, positions


def transcript_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the tool schemas a transcript object's requests carried: its ``tools`` (or OpenAI's older ``functions``), as saved.

    Entries that are not objects are left out; an OpenAI ``functions`` entry becomes the
    ``{"type": "function", "function": ...}`` tool it stands for.
    """
    tools = body.get("tools")
    if isinstance(tools, list):
        return [t for t in tools if isinstance(t, dict)]
    functions = body.get("functions")
    if isinstance(functions, list):
        return [{"type": "function", "function": f} for f in functions if isinstance(f, dict)]
    return []


def unknown_role_note(position: str, role: Any) -> str:
    """Return the note for a message left out because no provider reads its role."""
    what = HARNESS_ROLES.get(role) if isinstance(role, str) else None
    return f"{position}: role {role!r} is not a chat role ({what or 'known: ' + ', '.join(CHAT_ROLES)}); left out"
