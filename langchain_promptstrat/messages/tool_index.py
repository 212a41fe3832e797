"""The tool-call index of a conversation: each call, its output and its position; steps and turns.

Strategies work on positions (1-based, counted from the newest ``ToolMessage``; a call
shares its output's position), steps (an ``AIMessage`` and the ``ToolMessage``s right
after it) and turns (a real user message and everything up to the next one).
:func:`index_tool_calls` builds a :class:`ToolIndex` in one pass; a
:class:`GrowingToolIndex` (:func:`grow_tool_index`) is extended by the messages appended
since it was built, for a strategy that runs before every model call of a growing
conversation. An output is matched only within its step.

Must not read a message's call fields itself (``recorded_calls`` does) nor edit a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.marks import is_real_user_message
from langchain_promptstrat.messages.recorded_calls import keyed_calls, recorded_calls, repeat_key

__all__ = [
    "CompletedCall",
    "GrowingToolIndex",
    "IndexedCall",
    "ToolCallRecord",
    "ToolIndex",
    "grow_tool_index",
    "index_tool_calls",
    "split_steps",
    "split_turns",
]


@dataclass
class ToolCallRecord:
    """One completed or pending tool call: where it is recorded and where its output is."""

    id: str
    name: str
    args: Any
    ai_index: int
    output_index: int | None = None
    position: int | None = None
    """1-based from the newest ToolMessage; None while the call has no output."""

    @property
    def key(self) -> str:
        """The call's repeat key (see :func:`repeat_key`)."""
        return repeat_key(self.name, self.args)


@dataclass
class ToolIndex:
    """Every tool call of a conversation, oldest first, with positions; built in one pass."""

    calls: list[ToolCallRecord] = field(default_factory=list)
    total_outputs: int = 0
    """T: the number of ToolMessages (completed calls, as the reference counts them)."""
    by_output_index: dict[int, ToolCallRecord] = field(default_factory=dict)

    @property
    def completed(self) -> list[ToolCallRecord]:
        """Calls that have an output in their step, oldest first."""
        return [c for c in self.calls if c.output_index is not None]


def index_tool_calls(messages: Sequence[BaseMessage]) -> ToolIndex:
    """Return the tool-call index of ``messages``: each call, its output and its position.

    An output is matched only within its step (the ``AIMessage`` right before the run of
    ``ToolMessage``s it belongs to). Orphan and duplicate outputs still count towards
    positions (the reference counts ToolMessages), but they belong to no call.
    """
    index = ToolIndex()
    total = sum(1 for m in messages if isinstance(m, ToolMessage))
    index.total_outputs = total
    seen_outputs = 0
    step: dict[str, ToolCallRecord] = {}
    for i, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            position = total - seen_outputs
            seen_outputs += 1
            record = step.get(message.tool_call_id)
            if record is not None and record.output_index is None:
                record.output_index = i
                record.position = position
                index.by_output_index[i] = record
            continue
        step = {}
        if isinstance(message, AIMessage):
            for call_id, name, args in recorded_calls(message):
                record = ToolCallRecord(id=call_id, name=name, args=args, ai_index=i)
                index.calls.append(record)
                step[call_id] = record
    return index


class IndexedCall(NamedTuple):
    """One call of a :class:`GrowingToolIndex`: a :class:`ToolCallRecord` with a forward position instead of a position."""

    id: str
    name: str
    args: Any
    ai_index: int
    output_index: int | None
    forward: int | None
    """1-based from the oldest ToolMessage (orphans count, as for positions); None while the call has no output."""
    key: str
    """The call's repeat key (see :func:`repeat_key`)."""


class CompletedCall(NamedTuple):
    """A call that has its output, as the epoch strategies read it: its number in the index's calls, forward position, repeat key."""

    number: int
    forward: int
    """1-based from the oldest output; unlike the position it never changes as the list grows."""
    key: str


_new_tuple = tuple.__new__
"""Builds a named tuple from its fields in C (a NamedTuple's own ``__new__`` and ``_replace`` are Python functions)."""


class GrowingToolIndex:
    """The tool-call index of a message list that only grows at its end: extended by the new messages, never rebuilt.

    A strategy runs before every model call on the same conversation plus a few new
    messages, and indexing the whole list again each time costs more than everything else
    it does. Positions counted from the newest output (:class:`ToolCallRecord`) change
    with every output appended, so this index records forward positions (1 = oldest
    output), which never change as the list grows: what was indexed stays true, and
    :meth:`extend` only reads the messages after :attr:`length`. The matching rule is
    :func:`index_tool_calls`'s (an output is matched only within its step), and
    :meth:`tool_index` gives exactly the index :func:`index_tool_calls` builds for the
    same messages.

    An index is never changed once built: :meth:`extend` returns a new one (copying the
    tables, a few C-level copies), so an index remembered for a shorter history stays valid
    for it while a longer one is in use (another thread, a previous-prompt comparison). It
    holds no message, only indices and the calls' ids, names, arguments and keys; the caller
    must check that the list it extends starts with the messages this index was built on
    (by identity): that is what makes extending safe.
    """

    __slots__ = ("length", "calls", "outputs", "call_of_output", "completed_per_ai", "calls_per_ai", "completed", "repeats", "_keys", "_step")

    def __init__(self) -> None:
        self.length = 0
        """How many messages are indexed."""
        self.calls: list[IndexedCall] = []
        """Every call, in the order the assistant messages record them."""
        self.outputs: list[int] = []
        """The index of every ToolMessage, oldest first: output ``f`` (forward) is ``messages[outputs[f - 1]]``."""
        self.call_of_output: dict[int, int] = {}
        """Message index of a matched output -> its call's number in :attr:`calls`."""
        self.completed_per_ai: dict[int, int] = {}
        """Assistant message index -> how many of its calls have their output."""
        self.calls_per_ai: dict[int, list[int]] = {}
        """Assistant message index -> the numbers of its calls."""
        self.completed: list[CompletedCall] = []
        """The calls with an output, oldest output first."""
        self.repeats = 0
        """How many completed calls repeat the key of an older completed call."""
        self._keys: set[str] = set()
        self._step: dict[str, int] = {}
        """Call id -> number, for the step the indexed list ends in (its outputs may still arrive)."""

    @property
    def total_outputs(self) -> int:
        """T: the number of ToolMessages."""
        return len(self.outputs)

    def extend(self, messages: Sequence[BaseMessage]) -> GrowingToolIndex:
        """Return the index of ``messages``, which must start with the ``length`` messages this index was built on."""
        new = GrowingToolIndex()
        new.calls, new.outputs, new.call_of_output = list(self.calls), list(self.outputs), dict(self.call_of_output)
        new.completed_per_ai, new.calls_per_ai = dict(self.completed_per_ai), dict(self.calls_per_ai)
        new.completed, new.repeats, new._keys, new._step = list(self.completed), self.repeats, set(self._keys), dict(self._step)
        new._read(messages, self.length)
        return new

    def _read(self, messages: Sequence[BaseMessage], start: int) -> None:
        calls, outputs, call_of_output, completed, keys = self.calls, self.outputs, self.call_of_output, self.completed, self._keys
        completed_per_ai, calls_per_ai = self.completed_per_ai, self.calls_per_ai
        step = self._step
        repeats = self.repeats
        for i in range(start, len(messages)):
            message = messages[i]
            if isinstance(message, ToolMessage):
                outputs.append(i)
                number = step.get(message.tool_call_id)
                if number is not None:
                    call_id, name, args, ai_index, output_index, _, key = calls[number]
                    if output_index is None:
                        forward = len(outputs)
                        calls[number] = _new_tuple(IndexedCall, (call_id, name, args, ai_index, i, forward, key))
                        call_of_output[i] = number
                        completed_per_ai[ai_index] = completed_per_ai.get(ai_index, 0) + 1
                        completed.append(_new_tuple(CompletedCall, (number, forward, key)))
                        if key in keys:
                            repeats += 1
                        else:
                            keys.add(key)
                continue
            step = {}
            if isinstance(message, AIMessage):
                recorded = keyed_calls(message)
                if recorded:
                    first = len(calls)
                    for call_id, name, args, key in recorded:
                        step[call_id] = len(calls)
                        calls.append(_new_tuple(IndexedCall, (call_id, name, args, i, None, None, key)))
                    calls_per_ai[i] = list(range(first, len(calls)))
        self._step = step
        self.repeats = repeats
        self.length = len(messages)

    def tool_index(self) -> ToolIndex:
        """Return the :class:`ToolIndex` of the indexed messages (positions from the current total), as :func:`index_tool_calls` builds it."""
        index = ToolIndex()
        total = index.total_outputs = len(self.outputs)
        index.calls = [
            ToolCallRecord(c.id, c.name, c.args, c.ai_index, c.output_index, None if c.forward is None else total - c.forward + 1)
            for c in self.calls
        ]
        index.by_output_index = {i: index.calls[number] for i, number in self.call_of_output.items()}
        return index


def grow_tool_index(messages: Sequence[BaseMessage], start: GrowingToolIndex | None = None) -> GrowingToolIndex:
    """Return the :class:`GrowingToolIndex` of ``messages``, extending ``start`` (built on their first ``start.length`` messages) when given."""
    return (start if start is not None else GrowingToolIndex()).extend(messages)


def split_steps(messages: Sequence[BaseMessage]) -> list[range]:
    """Return the index ranges of the steps: an ``AIMessage`` and the ToolMessages right after it."""
    steps: list[range] = []
    i, n = 0, len(messages)
    while i < n:
        if isinstance(messages[i], AIMessage):
            j = i + 1
            while j < n and isinstance(messages[j], ToolMessage):
                j += 1
            steps.append(range(i, j))
            i = j
        else:
            i += 1
    return steps


def split_turns(messages: Sequence[BaseMessage]) -> list[range]:
    """Return the index ranges of the turns: a real user message up to the next one.

    Messages before the first real user message belong to no turn. Strategy notices are
    not real user messages, so they never start a turn.
    """
    starts = [i for i, m in enumerate(messages) if is_real_user_message(m)]
    return [range(s, e) for s, e in zip(starts, starts[1:] + [len(messages)])]
