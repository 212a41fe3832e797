"""Conversation files: a JSON array or JSON lines of messages, read into messages and written back.

A file holds LangChain dicts (``messages_to_dict``'s) or role dicts (OpenAI's), one style for
every message, or one transcript object with a ``messages`` list (an OpenAI or Anthropic
request body, a mini-swe-agent ``.traj.json``) of which only what a provider receives is kept
(``thinking`` blocks are left out; its ``tools`` are kept). Reading refuses what a provider
would reject, naming the position; a role no provider reads is left out with a note, and a
final model call whose calls have no output yet is held out as ``pending``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
    messages_from_dict,
    messages_to_dict,
)

from langchain_promptstrat.errors import InvalidMessagesError
from langchain_promptstrat.messages import find_tool_pair_violations, tool_arguments_problem

CHAT_ROLES = ("ai", "assistant", "developer", "function", "human", "system", "tool", "user")
"""Roles a role dict may have (what ``convert_to_messages`` reads)."""

HARNESS_ROLES = {"exit": "mini-swe-agent's record of how the run ended"}
"""Extra roles written by known harnesses, with what they hold (named in the note)."""

_PROVIDER_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
"""Keys of an OpenAI message a provider reads; the rest is harness bookkeeping."""


def _is_anthropic(body: dict[str, Any]) -> bool:
    blocks = (
        b
        for m in body["messages"]
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for b in m["content"]
    )
    return "system" in body or any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in blocks
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _from_anthropic(body: dict[str, Any], notes: list[str]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = (
        [("system", {"role": "system", "content": _text_of(body["system"])})]
        if body.get("system")
        else []
    )
    thinking = 0
    for n, message in enumerate(body["messages"]):
        where = f"message {n}"
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            found.append((where, message))
            continue
        role, blocks = message.get("role"), message["content"]
        if role == "assistant":
            calls = [
                {
                    "id": b.get("id"),
                    "type": "function",
                    "function": {
                        "name": b.get("name"),
                        "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False),
                    },
                }
                for b in blocks
                if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            thinking += sum(
                1
                for b in blocks
                if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")
            )
            item: dict[str, Any] = {"role": "assistant", "content": _text_of(blocks)}
            if calls:
                item["tool_calls"] = calls
            found.append((where, item))
            continue
        rest = []
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                tool = {
                    "role": "tool",
                    "tool_call_id": b.get("tool_use_id"),
                    "content": _text_of(b.get("content")),
                }
                found.append((f"{where} (tool_result)", tool))
            else:
                rest.append(b)
        if rest:
            found.append((where, {"role": role, "content": rest}))
    if thinking:
        notes.append(f"{thinking} thinking block{'s' if thinking > 1 else ''} left out")
    return found


def _transcript_items(body: dict[str, Any], notes: list[str]) -> list[tuple[str, Any]]:
    """Return the position and message of each message of a transcript object, as role dicts
    (non-messages as found).

    ``notes`` gets what is left out.
    """
    if _is_anthropic(body):
        return _from_anthropic(body, notes)
    found: list[tuple[str, Any]] = []
    for n, message in enumerate(body["messages"]):
        if isinstance(message, dict) and "role" in message and "data" not in message:
            message = {k: v for k, v in message.items() if k in _PROVIDER_KEYS}
            if message.get("content") is None:
                message["content"] = ""
        found.append((f"message {n}", message))
    return found


def _transcript_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the tool schemas a transcript object's requests carried: its ``tools`` (or OpenAI's
    older ``functions`` as tools)."""
    tools = body.get("tools")
    if isinstance(tools, list):
        return [t for t in tools if isinstance(t, dict)]
    functions = body.get("functions")
    if isinstance(functions, list):
        return [{"type": "function", "function": f} for f in functions if isinstance(f, dict)]
    return []


_LANGCHAIN_TYPES = ("ai", "chat", "function", "human", "system", "tool")
"""The ``type`` of ``messages_to_dict`` dicts (``messages_from_dict`` also reads chunks and
``remove``)."""

_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


@dataclass
class ConversationFile:
    """A conversation file read into messages, with the dict style it came in and each message's
    position."""

    messages: list[BaseMessage]
    style: str | None
    """``"langchain"`` (messages_to_dict dicts), ``"role"`` (role dicts) or None (no messages)."""
    positions: list[str]
    """Where each message stood in the file: ``message N`` (from 0) or ``line N`` (from 1)."""
    pending: list[BaseMessage] = field(default_factory=list)
    """The trailing messages from a final model call whose tool calls have no output (held out of
    ``messages``)."""
    notes: list[str] = field(default_factory=list)
    """One line per thing left out or held out while reading (unknown roles, an unanswered final
    call)."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The tool schemas a transcript object's requests carried (its ``tools``), as saved; empty for
    message lists."""


class _UnknownRole(ValueError):
    """A role no provider reads: ``args[0]``."""


_PROBLEM_CHARS = 200
"""Longest problem text quoted from a library's error (some quote the whole offending dict)."""


def _first_problem(exc: BaseException) -> str:
    """Return the first thing ``exc`` complains about, on one line (pydantic lists every field)."""
    errors: Callable[[], list[dict[str, Any]]] | None = getattr(
        exc, "errors", None
    )  # pydantic's ValidationError
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            return f"{where}: {first['msg']}" if where else str(first["msg"])
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= _PROBLEM_CHARS else text[: _PROBLEM_CHARS - 3] + "..."


def _read_text(source: str) -> str:
    if source == "-":
        data: bytes | str = (
            sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        )
    else:
        data = Path(source).read_bytes()
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidMessagesError(
            f"{source}: not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x})"
        ) from None


def _parse_items(
    source: str, text: str, notes: list[str], tools: list[dict[str, Any]]
) -> list[tuple[str, Any]]:
    """Return the position (``message N`` or ``line N``) and JSON value of each message of a
    conversation file.

    A transcript object's notes and tools are added to ``notes`` and ``tools``.
    """
    if not text.strip():
        raise InvalidMessagesError(
            f"{source}: empty: expected a JSON array of messages or JSON lines"
        )
    try:
        whole = json.loads(text)
    except RecursionError:
        raise InvalidMessagesError(
            f"{source}: JSON nested too deeply to be a conversation"
        ) from None
    except json.JSONDecodeError as exc:
        if text.lstrip().startswith("["):
            raise InvalidMessagesError(
                f"{source}: line {exc.lineno}: not JSON: {exc.msg} (column {exc.colno})"
            ) from None
    else:
        if isinstance(whole, list):
            return [(f"message {i}", item) for i, item in enumerate(whole)]
        if (
            isinstance(whole, dict)
            and isinstance(whole.get("messages"), list)
            and "role" not in whole
            and "data" not in whole
        ):
            tools += _transcript_tools(whole)  # a transcript object
            return _transcript_items(whole, notes)
        if isinstance(whole, dict):
            return [("message 0", whole)]
        kind = _JSON_TYPES.get(type(whole), "a value")
        raise InvalidMessagesError(f"{source}: expected a JSON array of messages, got {kind}")
    found: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            found.append((f"line {number}", json.loads(line)))
        except RecursionError:
            raise InvalidMessagesError(
                f"{source}: line {number}: JSON nested too deeply to be a message"
            ) from None
        except json.JSONDecodeError as exc:
            raise InvalidMessagesError(
                f"{source}: line {number}: not JSON: {exc.msg} (column {exc.colno})"
            ) from None
    return found


def _to_message(item: Any) -> tuple[BaseMessage, str]:
    """Return one message read from a JSON value and its dict style; raise ``ValueError`` naming the
    problem."""
    if not isinstance(item, dict):
        raise ValueError(f"expected a message object, got {_JSON_TYPES.get(type(item), 'a value')}")
    if isinstance(item.get("data"), dict) and "type" in item:
        kind = item["type"]
        try:
            return messages_from_dict([item])[0], "langchain"
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            if isinstance(exc, ValueError) and str(exc).startswith("Got unexpected message type"):
                raise ValueError(
                    f"unknown type {kind!r}; known: {', '.join(_LANGCHAIN_TYPES)}"
                ) from None
            raise ValueError(
                f"cannot read as a LangChain {kind!r} message: {_first_problem(exc)}"
            ) from None
    role = item.get("role", item.get("type"))
    if role is None:
        raise ValueError(
            "a message needs a 'role' (or 'type') key; got keys: "
            f"{', '.join(map(str, item)) or 'none'}"
        )
    if role not in CHAT_ROLES:
        raise _UnknownRole(role)
    problem = tool_arguments_problem(item)
    if problem is not None:
        raise ValueError(f"{role} message: {problem}")
    try:
        return convert_to_messages([item])[0], "role"
    except (
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
        RecursionError,
        NotImplementedError,
    ) as exc:
        raise ValueError(f"cannot read as a {role!r} message: {_first_problem(exc)}") from None


def _unanswered_tail(messages: list[BaseMessage], violations: list[Any]) -> int | None:
    """Return where the final unanswered model call (the last ``AIMessage``, no output after it)
    starts when that is the only pairing problem, else None."""
    last_ai = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), None
    )
    if last_ai is None or any(v.kind != "missing_output" or v.index != last_ai for v in violations):
        return None
    return None if any(isinstance(m, ToolMessage) for m in messages[last_ai + 1 :]) else last_ai


def read_conversation(source: str) -> ConversationFile:
    """Return the conversation in ``source`` (a path or '-'), refusing anything a provider would
    reject.

    Raises:
        InvalidMessagesError: One line naming the file, the position and the problem.
        OSError: The file cannot be read.
    """
    notes: list[str] = []
    tools: list[dict[str, Any]] = []
    found = _parse_items(source, _read_text(source), notes, tools)
    messages: list[BaseMessage] = []
    kept: list[str] = []
    unknown_roles: list[Any] = []
    style: str | None = None
    for position, item in found:
        try:
            message, item_style = _to_message(item)
        except _UnknownRole as exc:
            role = exc.args[0]
            what = HARNESS_ROLES.get(role) if isinstance(role, str) else None
            notes.append(
                f"{position}: role {role!r} is not a chat role "
                f"({what or 'known: ' + ', '.join(CHAT_ROLES)}); left out"
            )
            unknown_roles.append(role)
            continue
        except ValueError as exc:
            raise InvalidMessagesError(f"{source}: {position}: {exc}") from None
        if style is not None and item_style != style:
            names = {
                "langchain": "a LangChain dict ({type, data})",
                "role": "a role dict ({role, content})",
            }
            raise InvalidMessagesError(
                f"{source}: {position} is {names[item_style]} but {kept[0]} is {names[style]}; "
                "use one format for every message"
            )
        style = item_style
        messages.append(message)
        kept.append(position)
    if (
        unknown_roles and not messages
    ):  # nothing left to work on: a file of another format, not a conversation
        roles = ", ".join(dict.fromkeys(repr(role) for role in unknown_roles))
        raise InvalidMessagesError(
            f"{source}: no message has a chat role (found {roles}; understood: "
            f"{', '.join(CHAT_ROLES)})"
        )
    pending: list[BaseMessage] = []
    violations = find_tool_pair_violations(messages)
    tail = _unanswered_tail(messages, violations) if violations else None
    if tail is not None:
        pending, messages = messages[tail:], messages[:tail]
        calls = len(violations)
        notes.append(
            f"{kept[tail]}: the final model call's {calls} tool call{'s' if calls > 1 else ''} "
            f"{'have' if calls > 1 else 'has'} no output (the run stopped there); "
            + (
                "held out"
                if len(pending) == 1
                else f"held out with the {len(pending) - 1} "
                f"message{'s' if len(pending) > 2 else ''} after it"
            )
        )
        kept = kept[:tail]
    elif violations:
        first = violations[0]
        text = str(first)
        prefix = f"message {first.index}"
        if text.startswith(prefix):
            text = kept[first.index] + text[len(prefix) :]
        more = len(violations) - 1
        if more:
            text += f" (and {more} more pairing problem{'s' if more > 1 else ''})"
        raise InvalidMessagesError(f"{source}: {text}")
    return ConversationFile(messages, style, kept, pending, notes, tools)


def dump_messages(messages: list[BaseMessage], style: str | None) -> str:
    """Return ``messages`` as an indented JSON array in ``style`` (``"langchain"``, else role
    dicts), so the output may replace the input."""
    data = (
        messages_to_dict(messages) if style == "langchain" else convert_to_openai_messages(messages)
    )
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)
