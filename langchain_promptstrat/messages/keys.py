"""What a message *is*, as one number: the key every memo of a history is found by.

A conversation loaded from a checkpoint (every run of a LangGraph server thread, a new
process) arrives as new objects equal to the ones a strategy saw before. A memo keyed by
identity misses on it and redoes the work of every earlier call; a memo keyed by
:func:`message_key` finds it. The key is remembered per live object, so a message read
again (the next call of the same conversation, or another memo on the same call) costs one
lookup, not a second pass over its content.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage

from langchain_promptstrat._memo import IdentityMemo

__all__ = ["message_key"]

_PLAIN = (str, int, float, bool, type(None))

_KEYS_MEMO_SIZE = 100_000
_keys: IdentityMemo[int] = IdentityMemo(_KEYS_MEMO_SIZE)


def _value(value: Any) -> Any:
    return value if type(value) in _PLAIN else repr(value)


def _compute(message: BaseMessage, fields: Mapping[str, Any]) -> int:
    content = fields.get("content")
    extra = fields.get("additional_kwargs")
    key: tuple[Any, ...] = (
        type(message), fields.get("id"), content if type(content) is str else repr(content),
        fields.get("tool_call_id"), fields.get("name"), repr(extra) if extra else None,
    )
    calls = fields.get("tool_calls")
    if calls:
        key = (key, tuple([
            (c.get("id"), c.get("name"), tuple([(k, _value(v)) for k, v in args.items()]) if type(args := c.get("args")) is dict else repr(args))
            for c in calls
        ]))
    invalid = fields.get("invalid_tool_calls")
    if invalid:
        key = (key, repr(invalid))
    return hash(key)


def message_key(message: BaseMessage) -> int:
    """Return a hash of what a strategy reads of ``message``: type, id, content, name, call id, tool calls, extra fields.

    Read from the fields directly (a pydantic attribute miss costs microseconds); string
    values are hashed as they are (in C, and cached by the string), others by their repr.
    Remembered per live object, checked against its ``content``, ``tool_calls`` and
    ``additional_kwargs`` objects, so a replaced field is a new key.
    """
    fields = message.__dict__
    content, calls, extra = fields.get("content"), fields.get("tool_calls"), fields.get("additional_kwargs")
    key = _keys.get(message, content, calls, extra)
    if key is None:
        key = _compute(message, fields)
        _keys.put(message, key, content, calls, extra)
    return key
