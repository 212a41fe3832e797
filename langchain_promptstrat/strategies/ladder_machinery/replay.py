"""What the ladder's watermark replays: the history's model calls (:func:`call_points`) and where a replay stands.

The prompt under a watermark is defined by replaying the history's own model calls (see
:mod:`langchain_promptstrat.strategies.ladder`); ``shorten_tools_epoch_stable`` replays
them too. Every prefix of a history has the same call points up to its length, which is
what makes a replay a function of the history alone.

Must not decide when to compact (the ladder does) nor run rungs (``rung``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.strategies.ladder_machinery.rung import LadderPass

__all__ = ["call_points"]


def call_points(messages: Sequence[BaseMessage]) -> list[int]:
    """Return the history lengths at which an agent loop calls the model, oldest first.

    A prompt never ends between a call and its outputs, nor with the assistant's own
    message; the full history is always a call point. Every prefix of a history has the
    same call points up to its length, which is what makes the replay a function of the
    history alone.
    """
    n = len(messages)
    points = [
        e for e in range(1, n)
        if not isinstance(messages[e], ToolMessage) and not isinstance(messages[e - 1], AIMessage)
    ]
    if n:
        points.append(n)
    return points


@dataclass(frozen=True)
class _Replay:
    """Where a replay stands after the call point ``len(history)``: the prompt built so far and its counts."""

    history: tuple[BaseMessage, ...]
    prompt: tuple[BaseMessage, ...]
    tokens: int
    history_tokens: int
    events: int
    last_event: int | None
    last_pass: LadderPass | None
    """The pass of an event at the history's own length (None when that call did not compact)."""
