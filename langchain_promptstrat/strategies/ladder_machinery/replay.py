"""What the ladder's watermark replays: the history's model calls (:func:`call_points`) and where a replay stands.

The prompt under a watermark is defined by replaying the history's own model calls (see
:mod:`langchain_promptstrat.strategies.ladder`); ``shorten_tools_epoch_stable`` replays
them too. Every prefix of a history has the same call points up to its length, which is
what makes a replay a function of the history alone.

Must not decide when to compact (the ladder does) nor run rungs (``rung``).
"""

from __future__ import annotations

import operator
import weakref
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
    """Where a replay stands after the call point ``len(history)``: the prompt built so far and its counts.

    It holds no message of the caller, so a remembered replay never keeps a finished
    conversation alive: the history is held weakly (compared by identity with the next
    call's messages), and the prompt is encoded as :attr:`picks` into the history plus the
    replay's own edited copies (:attr:`copies`, ``chars`` characters of them).
    """

    history: tuple[weakref.ref[BaseMessage], ...]
    picks: tuple[int, ...]
    """The prompt: ``history[pick]`` for a pick >= 0, ``copies[-pick - 1]`` for a negative one."""
    copies: tuple[BaseMessage, ...]
    chars: int
    """Characters of :attr:`copies` (what remembering this replay costs)."""
    tokens: int
    history_tokens: int
    events: int
    last_event: int | None
    last_pass: LadderPass | None
    """The pass of an event at the history's own length, without its messages (None when that call did not compact)."""

    def prompt(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Return the prompt for ``messages``, whose first ``len(history)`` messages are the history's (same objects)."""
        pool = list(messages[: len(self.history)])
        pool += reversed(self.copies)  # pool[-k - 1] is copies[k]: one C-level lookup per pick
        return list(map(pool.__getitem__, self.picks))


def encode_prompt(prompt: Sequence[BaseMessage], picks: Sequence[int], rewritten: Sequence[BaseMessage]) -> tuple[list[int], list[BaseMessage]]:
    """Return the picks and copies of ``rewritten``, a rung pass's output for ``prompt`` (encoded by ``picks``).

    A message of ``rewritten`` that is one of the history's messages in ``prompt`` keeps its
    pick; anything else (an edited copy, a note, a summary) is the replay's own copy.
    """
    where = {id(m): p for m, p in zip(prompt, picks) if p >= 0}
    out: list[int] = []
    copies: list[BaseMessage] = []
    for message in rewritten:
        pick = where.get(id(message))
        if pick is None:
            copies.append(message)
            pick = -len(copies)
        out.append(pick)
    return out, copies


_DEREF = weakref.ref.__call__
"""Dereference a weak reference, as a C function ``map`` can call without a Python frame."""


def same_history(history: Sequence[weakref.ref[BaseMessage]], messages: Sequence[BaseMessage]) -> bool:
    """Return whether the messages ``history`` refers to are the first ``len(history)`` of ``messages``, by identity."""
    return len(history) <= len(messages) and all(map(operator.is_, map(_DEREF, history), messages))


def alive(replay: _Replay) -> bool:
    """Return whether the oldest and newest messages of ``replay``'s history still live (a dead one can never match again)."""
    history = replay.history
    return not history or (history[0]() is not None and history[-1]() is not None)
