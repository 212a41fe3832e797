"""The tool-call index of a conversation (each call, its output and its position), steps and turns.

A step's outputs are matched among the ``ToolMessage``s right after its ``AIMessage``. Must
not read a message's call fields itself (``recorded_calls`` does) nor edit a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.recorded_calls import (
    is_real_user_message,
    recorded_calls,
    repeat_key,
)


class ToolCallRecord(NamedTuple):
    """One tool call: its number in the index, where it is recorded and where its output is."""

    number: int
    """Its place in :attr:`ToolIndex.calls` (fates are keyed by it)."""
    id: str
    name: str
    args: Any
    key: str
    """The call's repeat key (see :func:`~langchain_promptstrat.messages.repeat_key`)."""
    ai_index: int
    """The index of the assistant message that records it."""
    output_index: int | None
    """The index of its output, None while the call has none."""
    forward: int
    """Its output's place among the ToolMessages, 1 = oldest (orphans count); 0 while the call has
    no output.

    Unlike the position (:meth:`ToolIndex.position`) it never changes as the list grows."""


_new_tuple = tuple.__new__
"""Builds a named tuple from its fields in C (a NamedTuple's own ``__new__`` and ``_replace`` are
Python functions)."""


class ToolIndex:
    """Every tool call of a message list that only grows at its end, oldest first: extended by the
    new messages, never rebuilt.

    It records forward positions (1 = oldest output), which never change as the list grows,
    so :meth:`extend` reads only the messages after :attr:`length` and returns a new index
    (this one stays valid for the shorter history). It holds no message; the caller checks
    that the list it extends starts with the messages this index was built on.
    """

    __slots__ = (
        "length",
        "calls",
        "outputs",
        "call_of_output",
        "completed_per_ai",
        "calls_per_ai",
        "completed",
        "repeats",
        "_keys",
        "_step",
    )

    def __init__(self) -> None:
        self.length = 0
        """How many messages are indexed."""
        self.calls: list[ToolCallRecord] = []
        """Every call, in the order the assistant messages record them."""
        self.outputs: list[int] = []
        """The index of every ToolMessage, oldest first: output ``f`` (forward) is
        ``messages[outputs[f - 1]]``."""
        self.call_of_output: dict[int, int] = {}
        """Message index of a matched output -> its call's number in :attr:`calls`."""
        self.completed_per_ai: dict[int, int] = {}
        """Assistant message index -> how many of its calls have their output."""
        self.calls_per_ai: dict[int, list[int]] = {}
        """Assistant message index -> the numbers of its calls."""
        self.completed: list[ToolCallRecord] = []
        """The calls with an output, oldest output first (outputs may answer a step's calls in any
        order)."""
        self.repeats = 0
        """How many completed calls repeat the key of an older completed call."""
        self._keys: set[str] = set()
        self._step: dict[str, int] = {}
        """Call id -> number, for the step the indexed list ends in (its outputs may still
        arrive)."""

    @property
    def total_outputs(self) -> int:
        """T: the number of ToolMessages (orphan and duplicate outputs included, as the reference
        counts them)."""
        return len(self.outputs)

    def position(self, call: ToolCallRecord) -> int | None:
        """Return the position of ``call``'s output, 1 = newest ToolMessage, or None while it has no
        output."""
        return len(self.outputs) - call.forward + 1 if call.forward else None

    def call_answered_by(self, output_index: int) -> ToolCallRecord | None:
        """Return the call the ToolMessage at ``output_index`` answers, or None (an orphan or
        duplicate output)."""
        number = self.call_of_output.get(output_index)
        return None if number is None else self.calls[number]

    def extend(self, messages: Sequence[BaseMessage]) -> ToolIndex:
        """Return the index of ``messages``, which must start with the ``length`` messages this
        index was built on."""
        new = ToolIndex()
        new.calls, new.outputs, new.call_of_output = (
            list(self.calls),
            list(self.outputs),
            dict(self.call_of_output),
        )
        new.completed_per_ai, new.calls_per_ai = (
            dict(self.completed_per_ai),
            dict(self.calls_per_ai),
        )
        new.completed, new.repeats, new._keys, new._step = (
            list(self.completed),
            self.repeats,
            set(self._keys),
            dict(self._step),
        )
        new._read(messages, self.length)
        return new

    def _read(self, messages: Sequence[BaseMessage], start: int) -> None:
        calls, outputs, call_of_output, completed, keys = (
            self.calls,
            self.outputs,
            self.call_of_output,
            self.completed,
            self._keys,
        )
        completed_per_ai, calls_per_ai = self.completed_per_ai, self.calls_per_ai
        step = self._step
        repeats = self.repeats
        for i in range(start, len(messages)):
            message = messages[i]
            if isinstance(message, ToolMessage):
                outputs.append(i)
                number = step.get(message.tool_call_id)
                if number is not None:
                    _, call_id, name, args, key, ai_index, output_index, _ = calls[number]
                    if output_index is None:
                        record = _new_tuple(
                            ToolCallRecord,
                            (number, call_id, name, args, key, ai_index, i, len(outputs)),
                        )
                        calls[number] = record
                        call_of_output[i] = number
                        completed_per_ai[ai_index] = completed_per_ai.get(ai_index, 0) + 1
                        completed.append(record)
                        if key in keys:
                            repeats += 1
                        else:
                            keys.add(key)
                continue
            step = {}
            if isinstance(message, AIMessage):
                recorded = recorded_calls(message)
                if recorded:
                    first = len(calls)
                    for call_id, name, args in recorded:
                        number = len(calls)
                        step[call_id] = number
                        calls.append(
                            _new_tuple(
                                ToolCallRecord,
                                (number, call_id, name, args, repeat_key(name, args), i, None, 0),
                            )
                        )
                    calls_per_ai[i] = list(range(first, len(calls)))
        self._step = step
        self.repeats = repeats
        self.length = len(messages)


_EMPTY = ToolIndex()


def index_tool_calls(messages: Sequence[BaseMessage]) -> ToolIndex:
    """Return the tool-call index of ``messages``; orphan and duplicate outputs count towards
    positions but belong to no call."""
    return _EMPTY.extend(messages)


def split_steps(messages: Sequence[BaseMessage]) -> list[range]:
    """Return the index ranges of the steps: an ``AIMessage`` and the ToolMessages right after
    it."""
    steps: list[range] = []
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage):
            j = i + 1
            while j < len(messages) and isinstance(messages[j], ToolMessage):
                j += 1
            steps.append(range(i, j))
    return steps


def split_turns(messages: Sequence[BaseMessage]) -> list[range]:
    """Return the index ranges of the turns: a real user message (never a strategy notice) up to the
    next one."""
    starts = [i for i, m in enumerate(messages) if is_real_user_message(m)]
    return [range(s, e) for s, e in zip(starts, starts[1:] + [len(messages)], strict=False)]
