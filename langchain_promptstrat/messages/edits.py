"""Edits of tool calls and outputs: shorten or drop a call in every place it is recorded, shorten an output, apply fates.

Messages are treated as immutable: an edit returns a copy (or the message itself when
nothing changes), so the input list and the stored conversation keep full fidelity. A
call is shortened or dropped in ``tool_calls``, OpenAI's ``additional_kwargs``, its call
blocks and ``invalid_tool_calls`` at once, because a provider sees whichever its
integration serialises. :func:`apply_fates` applies a strategy's decisions (:class:`Fate`
of each side of each completed call) to a whole list, dropping a pair whole or not at all.

Must not decide what to shorten or drop (the strategies do) nor repair a broken list
(``floor`` does).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from enum import IntEnum
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.read_back import handle_text
from langchain_promptstrat.messages.recorded_calls import CALL_BLOCK_TYPES, call_block_id, call_blocks, openai_calls
from langchain_promptstrat.messages.sizes import content_text
from langchain_promptstrat.messages.tool_index import ToolIndex
from langchain_promptstrat.truncation import DEFAULT_ARGUMENT_SIZE, DEFAULT_OUTPUT_SIZE, shorten_string

M = TypeVar("M", bound=BaseMessage)

__all__ = [
    "Fate",
    "apply_fates",
    "drop_tool_call",
    "edit_ai_message",
    "shorten_arguments",
    "shorten_tool_call",
    "shorten_text",
    "shorten_tool_output",
    "with_handle",
]


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

    openai = openai_calls(message)
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
    if isinstance(content, list) and any(True for _ in call_blocks(content)):
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
    if not remaining and not invalid_left and not any(True for _ in call_blocks(content)) and not _has_text(content):
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


def shorten_text(message: M, size: int) -> M:
    """Return a copy of ``message`` with its text shortened to ``size`` (hash-stamped), or ``message`` when nothing changes.

    List content keeps its shape: each text block is shortened on its own and other blocks
    (a ``tool_use``, an image) stay, so the same content always gives the same bytes.
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


def shorten_tool_output(message: ToolMessage, size: int = DEFAULT_OUTPUT_SIZE, call: int | str | None = None) -> ToolMessage:
    """Return a copy of ``message`` with its content shortened to ``size`` (hash-stamped): :func:`shorten_text` of an output, with the handle of ``call``."""
    return with_handle(message, shorten_text(message, size), call)


def with_handle(whole: ToolMessage, short: ToolMessage, call: int | str | None) -> ToolMessage:
    """Return ``short``, the shortened form of ``whole``, ending with the handle of call ``call`` (1-based, or its id); ``whole`` when that is not shorter.

    The stub must cost less than what it stands for, in tokens as well as characters: a
    stub's marker and handle are dense in tokens, so it is kept only when it has at most
    three quarters of the characters of the whole (a 430-character output stays whole).
    """
    if short is whole or call is None:
        return short
    tag = handle_text(call)
    content: Any = f"{short.content}\n{tag}" if isinstance(short.content, str) else [*short.content, {"type": "text", "text": tag}]
    if 4 * (len(content_text(short.content)) + len(tag) + 1) > 3 * len(content_text(whole.content)):
        return whole
    return short.model_copy(update={"content": content})


def apply_fates(
    messages: Sequence[BaseMessage],
    index: ToolIndex,
    fates: Mapping[int, tuple[Fate, Fate]],
    *,
    shortened_outputs: Mapping[int, BaseMessage] | None = None,
    narration_chars: int = 0,
    leave_out: Collection[int] = (),
) -> list[BaseMessage]:
    """Return a new list with each completed call's ``(call fate, output fate)`` applied.

    ``fates`` maps a position in ``index.calls`` to the fates of its call and its output;
    calls not in it are kept. A pair is dropped whole or not at all: if either side is
    dropped, both are. Messages that do not change are reused, not copied. A shortened
    output is its entry in ``shortened_outputs`` (by message index) when it has one, else
    :func:`shorten_tool_output`. With ``narration_chars``, an assistant message with a shortened
    call and no call left whole (none pending) has its text shortened to that size too
    (:func:`shorten_text`). The messages at ``leave_out`` (indices) are not in the result.
    """
    ai_edits: dict[int, tuple[set[str], set[str]]] = {}
    output_fate: dict[int, Fate] = {}
    output_call: dict[int, int] = {}
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
        output_call[record.output_index] = number + 1
    calls_of: dict[int, int] = {}
    if narration_chars > 0:
        for record in index.calls:
            calls_of[record.ai_index] = calls_of.get(record.ai_index, 0) + 1
    out: list[BaseMessage] = []
    for i, message in enumerate(messages):
        if i in leave_out:
            continue
        edit = ai_edits.get(i)
        if edit is not None:
            edited = edit_ai_message(message, shorten=edit[0], drop=edit[1])  # type: ignore[arg-type]
            if edited is not None:
                if narration_chars > 0 and edit[0] and len(edit[0]) + len(edit[1]) == calls_of.get(i, 0):
                    edited = shorten_text(edited, narration_chars)
                out.append(edited)
            continue
        fate = output_fate.get(i)
        if fate is Fate.DROP:
            continue
        if fate is Fate.SHORTEN:
            short = shortened_outputs.get(i) if shortened_outputs is not None else None
            out.append(short if short is not None else shorten_tool_output(message, call=output_call[i]))  # type: ignore[arg-type]
        else:
            out.append(message)
    return out
