"""This package's marks on the messages it creates, and who speaks: real user messages, the task, the system block.

A strategy's notice is a user message too; :func:`mark` records under :data:`MARK_KEY` in
``additional_kwargs`` (which chat-model integrations do not send) that the package wrote
it, so :func:`is_real_user_message` never takes it for a person's message. Must not read
where a tool call is recorded nor know any strategy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage


MARK_KEY = "promptstrat"
"""Key in ``additional_kwargs`` under which this package marks the messages it creates."""


_Message = TypeVar("_Message", bound=BaseMessage)


def mark(message: _Message, kind: str, *, notice: bool, **meta: Any) -> _Message:
    """Return a copy of ``message`` marked as produced by this package; ``notice=True``: never a real user message."""
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
    """Return the index of the run's task: the first real user message (harnesses speak as the user too), or None."""
    return next((i for i, m in enumerate(messages) if is_real_user_message(m)), None)


def leading_system_count(messages: Sequence[BaseMessage]) -> int:
    """Return how many messages at the head are ``SystemMessage``s (the system block)."""
    n = 0
    for m in messages:
        if not isinstance(m, SystemMessage):
            break
        n += 1
    return n
