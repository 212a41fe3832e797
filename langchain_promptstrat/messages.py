"""The message model: the only module that knows where a tool call is recorded.

A tool call is an entry of ``AIMessage.tool_calls``; its output is the ``ToolMessage`` with
the same ``tool_call_id``. Real conversations may carry the same call in several
places: ``tool_calls``, OpenAI's ``additional_kwargs["tool_calls"]``, and content blocks
(Anthropic's ``tool_use``, LangChain v1 ``tool_call``, OpenAI Responses ``function_call``).
A provider sees whichever its integration serialises, so every edit here changes every
place consistently. A call recorded only in ``invalid_tool_calls`` (arguments that did not
parse) is a call too: langchain-openai sends it, so it needs its output like any other,
and is dropped or shortened with it. An output may also arrive as an Anthropic
``tool_result`` block inside a user message (a raw Anthropic transcript):
:func:`coerce_messages` turns each into the ``ToolMessage`` LangChain uses for it, which
langchain-anthropic turns back into the same block.

Strategies work on positions (1-based, counted from the newest ``ToolMessage``; a call
shares its output's position), steps (an ``AIMessage`` and the ``ToolMessage``s right
after it) and turns (a real user message and everything up to the next one). Messages are
treated as immutable: an edit returns a copy, the input list and its messages are never
changed, so the stored conversation keeps full fidelity. :func:`keep_prompt_floor` restores
what a strategy broke before the list reaches a model.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple, TypeVar

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.prompt_values import PromptValue

from langchain_promptstrat._memo import IdentityMemo
from langchain_promptstrat.errors import InvalidMessagesError
from langchain_promptstrat.truncation import DEFAULT_ARGUMENT_SIZE, DEFAULT_OUTPUT_SIZE, shorten_string

__all__ = [
    "MARK_KEY",
    "task_index",
    "CALL_BLOCK_TYPES",
    "CompletedCallEntry",
    "Fate",
    "GrowingToolIndex",
    "IndexedCall",
    "ToolCallRecord",
    "ToolIndex",
    "ToolPairViolation",
    "apply_fates",
    "call_block_id",
    "check_tool_pairs",
    "coerce_messages",
    "content_text",
    "drop_tool_call",
    "edit_ai_message",
    "find_tool_pair_violations",
    "grow_tool_index",
    "index_tool_calls",
    "tool_results_as_tool_messages",
    "is_real_user_message",
    "keep_prompt_floor",
    "leading_system_count",
    "mark",
    "mark_of",
    "message_chars",
    "repeat_key",
    "shorten_arguments",
    "shorten_tool_call",
    "shorten_tool_output",
    "split_steps",
    "split_turns",
    "tool_call_ids",
    "value_chars",
]

MARK_KEY = "promptstrat"
"""Key in ``additional_kwargs`` under which this package marks the messages it creates.

Chat-model integrations do not send unknown ``additional_kwargs`` keys of a user message to
the provider, so the mark is visible to code and invisible to the model.
"""


# --------------------------------------------------------------------------- input


def coerce_messages(value: Any) -> list[BaseMessage]:
    """Return ``value`` as a new list of messages: a ``PromptValue``, messages, dicts or tuples.

    Raises :class:`InvalidMessagesError` naming the position of the first item that is not
    a message in any form ``langchain_core.messages.convert_to_messages`` understands.
    """
    if isinstance(value, PromptValue):
        return list(value.to_messages())
    if isinstance(value, (BaseMessage, Mapping)):  # a dict would iterate over its keys
        raise InvalidMessagesError(
            f"expected a list of messages or a PromptValue, got a single {type(value).__name__}; wrap it in a list"
        )
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidMessagesError(
            f"expected a list of messages or a PromptValue, got {type(value).__name__}"
        )
    items = list(value)
    if all(isinstance(m, BaseMessage) for m in items):
        return tool_results_as_tool_messages(items)
    out: list[BaseMessage] = []
    for i, item in enumerate(items):
        if isinstance(item, BaseMessage):
            out.append(item)
            continue
        try:  # AttributeError: a malformed field such as "tool_calls": "oops"
            out.extend(convert_to_messages([item]))
        except (ValueError, TypeError, KeyError, AttributeError, NotImplementedError) as exc:
            raise InvalidMessagesError(f"message {i}: cannot read as a chat message: {exc}") from None
    return tool_results_as_tool_messages(out)


def _is_tool_result_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str)


def tool_results_as_tool_messages(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Return ``messages`` with each Anthropic ``tool_result`` block of a user message as a ``ToolMessage``.

    A raw Anthropic transcript answers a ``tool_use`` with a user message holding
    ``tool_result`` blocks; LangChain represents the same thing as ``ToolMessage``s (and
    langchain-anthropic sends those back as those blocks). Turning them into ``ToolMessage``s
    lets every strategy see the pair: the results come first, in order, then a user message
    with the remaining blocks, if any. Returns ``messages`` itself when there is none.
    """
    if not any(
        isinstance(m, HumanMessage) and isinstance(m.content, list) and any(_is_tool_result_block(b) for b in m.content)
        for m in messages
    ):
        return messages
    out: list[BaseMessage] = []
    for message in messages:
        content = message.content
        if not (isinstance(message, HumanMessage) and isinstance(content, list)):
            out.append(message)
            continue
        results: list[dict[str, Any]] = [b for b in content if isinstance(b, dict) and _is_tool_result_block(b)]
        if not results:
            out.append(message)
            continue
        for k, block in enumerate(results):
            body = block.get("content", "")
            out.append(ToolMessage(
                content=body if isinstance(body, (str, list)) else json.dumps(body, default=str),
                tool_call_id=block["tool_use_id"],
                status="error" if block.get("is_error") else "success",
                id=f"{message.id}-tool_result-{k}" if message.id else None,
            ))
        rest = [b for b in content if not _is_tool_result_block(b)]
        if rest:
            out.append(message.model_copy(update={"content": rest}))
    return out


# --------------------------------------------------------------------------- marks


_Message = TypeVar("_Message", bound=BaseMessage)


def mark(message: _Message, kind: str, *, notice: bool, **meta: Any) -> _Message:
    """Return a copy of ``message`` marked as produced by this package (``kind``, ``meta``).

    ``notice=True`` says the message was written by a strategy, not by a person: it is
    never taken for a real user message (sliding-window anchor, turn counting).
    """
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
    """Return the index of the run's task: the first real user message, or None when there is none.

    Agent harnesses speak as the user too ("No tool calls found...", format errors), so the
    newest user message is not always what the model was asked to do; the first one is.
    Bounded strategies keep both.
    """
    return next((i for i, m in enumerate(messages) if is_real_user_message(m)), None)


# --------------------------------------------------------------------------- where calls live


def _openai_calls(message: BaseMessage) -> list[dict[str, Any]]:
    calls = message.additional_kwargs.get("tool_calls") if message.additional_kwargs else None
    return calls if isinstance(calls, list) else []


CALL_BLOCK_TYPES: dict[str, tuple[str, str]] = {
    "tool_use": ("id", "input"),  # Anthropic
    "tool_call": ("id", "args"),  # LangChain's v1 standard content blocks
    "function_call": ("call_id", "arguments"),  # OpenAI Responses API (arguments as JSON text)
}
"""Content block types that record a call: ``type -> (key of the call id, key of its arguments)``."""


def call_block_id(block: Any) -> str | None:
    """Return the call id a content block records, or None when it records no call."""
    if isinstance(block, dict):
        keys = CALL_BLOCK_TYPES.get(block.get("type"))  # type: ignore[arg-type]
        if keys is not None:
            value = block.get(keys[0])
            return value if isinstance(value, str) and value else None
    return None


def _call_blocks(content: Any) -> Iterable[dict[str, Any]]:
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") in CALL_BLOCK_TYPES:
                yield block


def _block_args(block: dict[str, Any]) -> Any:
    raw = block.get(CALL_BLOCK_TYPES[block["type"]][1])
    if block["type"] == "function_call" and isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def tool_call_ids(message: BaseMessage) -> list[str]:
    """Return the ids of the calls ``message`` records, in order, each once, from all three places."""
    if not isinstance(message, AIMessage):
        return []
    ids: list[str] = []
    seen: set[str] = set()

    def add(call_id: Any) -> None:
        if isinstance(call_id, str) and call_id and call_id not in seen:
            seen.add(call_id)
            ids.append(call_id)

    call: Mapping[str, Any]  # a LangChain ToolCall, then an OpenAI call dict
    for call in message.tool_calls:
        add(call.get("id"))
    for call in _openai_calls(message):
        if isinstance(call, dict):
            add(call.get("id"))
    for block in _call_blocks(message.content):
        add(call_block_id(block))
    for invalid in message.invalid_tool_calls:
        add(invalid.get("id"))
    return ids


def _call_name_and_args(message: AIMessage, call_id: str) -> tuple[str, Any]:
    call: Mapping[str, Any]  # a LangChain ToolCall, then an OpenAI call dict
    for call in message.tool_calls:
        if call.get("id") == call_id:
            return call.get("name") or "", call.get("args")
    for call in _openai_calls(message):
        if isinstance(call, dict) and call.get("id") == call_id:
            function = call.get("function") or {}
            raw = function.get("arguments")
            try:
                args = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError:
                args = raw
            return function.get("name") or "", args
    for block in _call_blocks(message.content):
        if call_block_id(block) == call_id:
            return block.get("name") or "", _block_args(block)
    for invalid in message.invalid_tool_calls:
        if invalid.get("id") == call_id:
            return invalid.get("name") or "", invalid.get("args")
    return "", None


_RECORDED_MEMO_SIZE = 100_000
_recorded_memo: IdentityMemo[tuple[tuple[str, str, Any], ...]] = IdentityMemo(_RECORDED_MEMO_SIZE)


def _recorded_calls(message: AIMessage) -> Sequence[tuple[str, str, Any]]:
    """Return ``(id, name, args)`` of each call ``message`` records, in order, each once.

    Remembered per live message (held weakly, checked against the fields that record
    calls): every strategy indexes the whole, growing conversation before each model call.
    """
    fields = message.__dict__
    check = (fields.get("content"), fields.get("tool_calls"), fields.get("additional_kwargs"), fields.get("invalid_tool_calls"))
    found = _recorded_memo.get(message, *check)
    if found is None:
        found = tuple(_read_recorded_calls(message))
        _recorded_memo.put(message, found, *check)
    return found


def _read_recorded_calls(message: AIMessage) -> list[tuple[str, str, Any]]:
    """Return what :func:`_recorded_calls` remembers; most messages record their calls in ``tool_calls`` only, read in one pass."""
    if not _openai_calls(message) and not isinstance(message.content, list) and not message.invalid_tool_calls:
        out: list[tuple[str, str, Any]] = []
        seen: set[str] = set()
        for call in message.tool_calls:
            call_id = call.get("id")
            if isinstance(call_id, str) and call_id and call_id not in seen:
                seen.add(call_id)
                out.append((call_id, call.get("name") or "", call.get("args")))
        return out
    return [(call_id, *_call_name_and_args(message, call_id)) for call_id in tool_call_ids(message)]


def repeat_key(name: str, args: Any) -> str:
    """Return the identity of a call for repeat detection: tool name plus canonical JSON args.

    Keys are sorted at every depth and the generated call id is not part of the key, so the
    same request made twice has the same key.
    """
    return name + "\x00" + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


# --------------------------------------------------------------------------- the index


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
            for call_id, name, args in _recorded_calls(message):
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


class CompletedCallEntry(NamedTuple):
    """A call that has its output, as the epoch strategies read it: number in ``calls``, forward position, repeat key."""

    number: int
    forward: int
    key: str


_KEYED_MEMO_SIZE = 100_000
_keyed_memo: IdentityMemo[tuple[tuple[str, str, Any, str], ...]] = IdentityMemo(_KEYED_MEMO_SIZE)


def _keyed_calls(message: AIMessage) -> tuple[tuple[str, str, Any, str], ...]:
    """Return ``(id, name, args, repeat key)`` of each call ``message`` records (:func:`_recorded_calls` with keys).

    Remembered per live message like :func:`_recorded_calls`, so each call's arguments are
    serialised for its key once per message object, not at every model call.
    """
    fields = message.__dict__
    check = (fields.get("content"), fields.get("tool_calls"), fields.get("additional_kwargs"), fields.get("invalid_tool_calls"))
    found = _keyed_memo.get(message, *check)
    if found is None:
        found = tuple((call_id, name, args, repeat_key(name, args)) for call_id, name, args in _recorded_calls(message))
        _keyed_memo.put(message, found, *check)
    return found


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
        self.completed: list[CompletedCallEntry] = []
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
                        completed.append(_new_tuple(CompletedCallEntry, (number, forward, key)))
                        if key in keys:
                            repeats += 1
                        else:
                            keys.add(key)
                continue
            step = {}
            if isinstance(message, AIMessage):
                recorded = _keyed_calls(message)
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


def leading_system_count(messages: Sequence[BaseMessage]) -> int:
    """Return how many messages at the head are ``SystemMessage``s (the system block)."""
    n = 0
    for m in messages:
        if not isinstance(m, SystemMessage):
            break
        n += 1
    return n


# --------------------------------------------------------------------------- sizes


def content_text(content: Any) -> str:
    """Return the text of a message content: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
    return "".join(parts)


def value_chars(value: Any) -> int:
    """Return the characters of a value's strings, keys and scalars, walking containers.

    The walk keeps its own stack rather than recursing, so arguments nested deeper than
    Python's recursion limit (a JSON file may nest a thousand levels) are measured, not
    turned into a ``RecursionError``.
    """
    if isinstance(value, str):
        return len(value)
    total = 0
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            total += sum(len(str(k)) for k in item)
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
        elif item is not None:
            total += len(str(item))
    return total


def message_chars(message: BaseMessage) -> int:
    """Return the characters a message carries: its text plus its calls' names and arguments.

    A cheap size for reports, not a token count; a call mirrored in several places is
    counted once.
    """
    n = len(content_text(message.content))
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            n += len(call.get("name") or "") + value_chars(call.get("args"))
    return n


# --------------------------------------------------------------------------- edits


class Fate(IntEnum):
    """What happens to one side of a call: ordered so the milder fate is the larger value."""

    DROP = 0
    SHORTEN = 1
    KEEP = 2


def shorten_arguments(args: Any, size: int = DEFAULT_ARGUMENT_SIZE) -> Any:
    """Return ``args`` with each top-level string value shortened; the same object if none is."""
    if not isinstance(args, dict):
        return args
    changed = False
    out: dict[str, Any] = {}
    for k, v in args.items():
        if isinstance(v, str):
            short = shorten_string(v, size)
            changed = changed or short is not v
            out[k] = short
        else:
            out[k] = v
    return out if changed else args


def _shorten_json_arguments(raw: Any, size: int) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        parsed = json.loads(raw)
    except ValueError:
        return shorten_string(raw, size)
    short = shorten_arguments(parsed, size)
    return raw if short is parsed else json.dumps(short, ensure_ascii=False)


def _has_text(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                if block.strip():
                    return True
            elif isinstance(block, dict):
                kind = block.get("type")
                if kind == "text":
                    if str(block.get("text") or "").strip():
                        return True
                elif kind not in CALL_BLOCK_TYPES and kind not in ("thinking", "redacted_thinking", "reasoning"):
                    return True  # images, documents, ...: real content the message still carries
    return False


def edit_ai_message(
    message: AIMessage,
    *,
    shorten: Iterable[str] = (),
    drop: Iterable[str] = (),
    argument_size: int = DEFAULT_ARGUMENT_SIZE,
) -> AIMessage | None:
    """Return a copy of ``message`` with some calls shortened and some dropped, in every place.

    ``shorten`` and ``drop`` are call ids. Shortening truncates each string-valued argument
    to ``argument_size`` (non-string values stay). Returns ``message`` itself when nothing
    changes, and None when no call and no text is left: an empty assistant message is
    rejected by providers and tells the model nothing.
    """
    shorten, drop = set(shorten) - set(drop), set(drop)
    if not shorten and not drop:
        return message
    update: dict[str, Any] = {}

    new_calls = []
    calls_changed = False
    call: Mapping[str, Any]  # a LangChain ToolCall or a copy, then an OpenAI call dict
    for call in message.tool_calls:
        cid = call.get("id")
        if cid in drop:
            calls_changed = True
            continue
        if cid in shorten:
            args = shorten_arguments(call.get("args"), argument_size)
            if args is not call.get("args"):
                call = {**call, "args": args}
                calls_changed = True
        new_calls.append(call)
    if calls_changed:
        update["tool_calls"] = new_calls

    new_invalid = []
    for invalid in message.invalid_tool_calls:
        cid = invalid.get("id")
        if cid in drop:
            continue
        if cid in shorten and isinstance(invalid.get("args"), str):
            invalid = {**invalid, "args": shorten_arguments(invalid["args"], argument_size)}
        new_invalid.append(invalid)
    if new_invalid != message.invalid_tool_calls:
        update["invalid_tool_calls"] = new_invalid

    openai = _openai_calls(message)
    if openai:
        new_openai = []
        for call in openai:
            cid = call.get("id") if isinstance(call, dict) else None
            if cid in drop:
                continue
            if cid in shorten and isinstance(call.get("function"), dict):
                function = call["function"]
                arguments = _shorten_json_arguments(function.get("arguments"), argument_size)
                if arguments is not function.get("arguments"):
                    call = {**call, "function": {**function, "arguments": arguments}}
            new_openai.append(call)
        kwargs = dict(message.additional_kwargs)
        if new_openai:
            kwargs["tool_calls"] = new_openai
        else:
            kwargs.pop("tool_calls", None)
        update["additional_kwargs"] = kwargs

    content = message.content
    if isinstance(content, list) and any(True for _ in _call_blocks(content)):
        new_content: list[Any] = []
        for block in content:
            cid = call_block_id(block)
            if cid is not None and isinstance(block, dict):  # only a dict block records a call
                if cid in drop:
                    continue
                if cid in shorten:
                    key = CALL_BLOCK_TYPES[block["type"]][1]
                    if block["type"] == "function_call":
                        short = _shorten_json_arguments(block.get(key), argument_size)
                    else:
                        short = shorten_arguments(block.get(key), argument_size)
                    if short is not block.get(key):
                        block = {**block, key: short}
            new_content.append(block)
        update["content"] = new_content
        content = new_content

    remaining = new_calls or (update.get("additional_kwargs", message.additional_kwargs).get("tool_calls"))
    invalid_left = update.get("invalid_tool_calls", message.invalid_tool_calls)
    if not remaining and not invalid_left and not any(True for _ in _call_blocks(content)) and not _has_text(content):
        return None
    return message.model_copy(update=update) if update else message


def shorten_tool_call(message: AIMessage, call_id: str, size: int = DEFAULT_ARGUMENT_SIZE) -> AIMessage:
    """Return a copy of ``message`` whose call ``call_id`` has its string arguments shortened."""
    edited = edit_ai_message(message, shorten=[call_id], argument_size=size)
    assert edited is not None  # shortening never removes a call
    return edited


def drop_tool_call(message: AIMessage, call_id: str) -> AIMessage | None:
    """Return a copy of ``message`` without call ``call_id`` anywhere, or None when nothing is left.

    The caller must drop the call's ``ToolMessage`` too: a provider rejects an output whose
    call is gone.
    """
    return edit_ai_message(message, drop=[call_id])


def shorten_tool_output(message: ToolMessage, size: int = DEFAULT_OUTPUT_SIZE) -> ToolMessage:
    """Return a copy of ``message`` with its content shortened to ``size`` (hash-stamped).

    List content keeps its shape: each text block is shortened on its own and other blocks
    stay, so the same content always gives the same bytes.
    """
    content = message.content
    if isinstance(content, str):
        short = shorten_string(content, size)
        return message if short is content else message.model_copy(update={"content": short})
    if isinstance(content, list):
        changed = False
        new: list[Any] = []
        for block in content:
            if isinstance(block, str):
                short = shorten_string(block, size)
                changed = changed or short is not block
                new.append(short)
            elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                short = shorten_string(block["text"], size)
                if short is not block["text"]:
                    changed = True
                    block = {**block, "text": short}
                new.append(block)
            else:
                new.append(block)
        return message.model_copy(update={"content": new}) if changed else message
    return message


def apply_fates(
    messages: Sequence[BaseMessage],
    index: ToolIndex,
    fates: Mapping[int, tuple[Fate, Fate]],
    *,
    output_size: int = DEFAULT_OUTPUT_SIZE,
    argument_size: int = DEFAULT_ARGUMENT_SIZE,
) -> list[BaseMessage]:
    """Return a new list with each completed call's ``(call fate, output fate)`` applied.

    ``fates`` maps a position in ``index.calls`` to the fates of its call and its output;
    calls not in it are kept. A pair is dropped whole or not at all: if either side is
    dropped, both are. Messages that do not change are reused, not copied.
    """
    ai_edits: dict[int, tuple[set[str], set[str]]] = {}
    output_fate: dict[int, Fate] = {}
    for number, (call_fate, out_fate) in fates.items():
        record = index.calls[number]
        if record.output_index is None:
            continue
        if Fate.DROP in (call_fate, out_fate):
            call_fate = out_fate = Fate.DROP
        shorten, drop = ai_edits.setdefault(record.ai_index, (set(), set()))
        if call_fate is Fate.DROP:
            drop.add(record.id)
        elif call_fate is Fate.SHORTEN:
            shorten.add(record.id)
        output_fate[record.output_index] = out_fate
    out: list[BaseMessage] = []
    for i, message in enumerate(messages):
        edit = ai_edits.get(i)
        if edit is not None:
            edited = edit_ai_message(message, shorten=edit[0], drop=edit[1], argument_size=argument_size)  # type: ignore[arg-type]
            if edited is not None:
                out.append(edited)
            continue
        fate = output_fate.get(i)
        if fate is Fate.DROP:
            continue
        if fate is Fate.SHORTEN:
            out.append(shorten_tool_output(message, output_size))  # type: ignore[arg-type]
        else:
            out.append(message)
    return out


# --------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class ToolPairViolation:
    """One way a message list breaks the call/output pairing providers require."""

    kind: str
    """``orphan_output``, ``missing_output`` or ``duplicate_output``."""
    call_id: str
    index: int

    def __str__(self) -> str:
        if self.kind == "orphan_output":
            return f"message {self.index} (tool): output for call {self.call_id!r} answers no call of its step"
        if self.kind == "duplicate_output":
            return f"message {self.index} (tool): duplicate output for call {self.call_id!r}"
        return f"message {self.index} (ai): call {self.call_id!r} has no output"


def find_tool_pair_violations(messages: Sequence[BaseMessage]) -> list[ToolPairViolation]:
    """Return every pairing violation of ``messages`` as structured records, in message order."""
    violations: list[ToolPairViolation] = []
    step_index: int | None = None
    pending: dict[str, None] = {}
    answered: set[str] = set()

    def close() -> None:
        for call_id in pending:
            violations.append(ToolPairViolation("missing_output", call_id, step_index or 0))

    for i, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            answers = [message.tool_call_id]
        elif isinstance(message, HumanMessage) and isinstance(message.content, list):
            answers = [b["tool_use_id"] for b in message.content if isinstance(b, dict) and _is_tool_result_block(b)]
        else:
            answers = []
        for call_id in answers:  # a ToolMessage, or Anthropic tool_result blocks in a user message
            if call_id in answered:
                violations.append(ToolPairViolation("duplicate_output", call_id, i))
            elif call_id in pending:
                del pending[call_id]
                answered.add(call_id)
            else:
                violations.append(ToolPairViolation("orphan_output", call_id, i))
        if isinstance(message, ToolMessage) or (answers and len(answers) == len(message.content)):
            continue
        close()
        pending, answered, step_index = {}, set(), None
        if isinstance(message, AIMessage):
            step_index = i
            pending = dict.fromkeys(tool_call_ids(message))
    close()
    violations.sort(key=lambda v: v.index)
    return violations


def check_tool_pairs(messages: Sequence[BaseMessage] | Any) -> list[str]:
    """Return one readable line per tool call/output pairing violation; empty when valid.

    A violation is an output that answers no call of its step, a call without an output,
    or a second output for the same call: each makes OpenAI and Anthropic reject the
    request. Calls are read from all three places they may be recorded.
    """
    return [str(v) for v in find_tool_pair_violations(coerce_messages(messages))]


# --------------------------------------------------------------------------- the prompt floor

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

    The floor: the system block of ``source`` (when it has one) leads, the newest real user
    message of ``source`` is present, tool calls and outputs pair up, and the prompt is not
    empty. A prompt without them makes the provider reject the request or leaves the model
    with nothing to act on (the peers' trimming examples return ``[]`` or a lone system
    message in single-task agent runs). Repairs are deterministic: the system block goes
    back in front, unpaired calls and outputs are removed, the user message goes back at
    its place in the original order.
    """
    out, repaired = list(prompt), []
    system = list(source[: leading_system_count(source)])
    if system and not leading_system_count(out):
        keys = {_key(m) for m in system}
        out = [*system, *(m for m in out if _key(m) not in keys)]
        repaired.append("the system message")
    if find_tool_pair_violations(out):
        out = _repair_pairs(out)
        repaired.append("tool call/output pairs")
    anchor = next((m for m in reversed(source) if is_real_user_message(m)), None)
    if anchor is not None and not any(_is_copy(m, anchor) for m in out):
        out.insert(_anchor_position(source, anchor, out), anchor)
        repaired.append("the newest user message")
    if not out and source:
        out = _repair_pairs(list(source)) or list(source)
        repaired.append("a non-empty prompt (the unchanged conversation)")
    if repaired:
        _logger.warning("prompt floor: restored %s after the strategies broke it", ", ".join(repaired))
    return out
