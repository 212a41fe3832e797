"""Edits of tool calls and outputs, and the prompt floor that repairs what a strategy broke.

An edit returns a copy (or the message itself when nothing changes): the input list and the
stored conversation keep full fidelity. A call is shortened or dropped in every place it is
recorded at once, because a provider sees whichever its integration serialises;
:func:`apply_fates` drops a pair whole or not at all. :func:`keep_prompt_floor` judges the
strategies' output, whichever ran. Must not decide what to shorten or drop (strategies do).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from enum import IntEnum
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.pairs import find_tool_pair_violations
from langchain_promptstrat.messages.read_back import handle_text
from langchain_promptstrat.messages.recorded_calls import (
    CALL_BLOCK_TYPES,
    call_block_id,
    call_blocks,
    is_real_user_message,
    leading_system_count,
    openai_calls,
    parsed_json,
)
from langchain_promptstrat.messages.tool_index import ToolIndex
from langchain_promptstrat.truncation import (
    DEFAULT_ARGUMENT_SIZE,
    DEFAULT_OUTPUT_SIZE,
    shorten_by_lines,
    shorten_string,
)

M = TypeVar("M", bound=BaseMessage)

_logger = logging.getLogger("langchain_promptstrat")
"""The package logger (``report.logger``), looked up by name: ``report`` imports this module."""


class Fate(IntEnum):
    """What happens to one side of a call: ordered so the milder fate is the larger value."""

    DROP = 0
    SHORTEN = 1
    KEEP = 2


CountTokens = Callable[[Sequence[BaseMessage]], int]
"""Counts the tokens of a message list (the strategies' counter)."""


def shorten_arguments(
    args: Any, size: int = DEFAULT_ARGUMENT_SIZE, *, as_json: bool = False, handle: str = ""
) -> Any:
    """Return ``args`` with each top-level string value shortened (``as_json``: arguments as JSON
    text), the first ending with ``handle``; the same object if none is.

    Unlike an output's, the handle takes no room from the values: they are the agent's own
    words (the paths and names it works on), kept to ``size`` each.
    """
    if as_json and isinstance(args, str):
        parsed = parsed_json(args)
        if parsed is args:  # not JSON: shortened as text
            return shorten_arguments({"": args}, size, handle=handle)[""]
        short = shorten_arguments(parsed, size, handle=handle)
        return args if short is parsed else json.dumps(short, ensure_ascii=False)
    if not isinstance(args, dict):
        return args
    out = {k: shorten_string(v, size) if isinstance(v, str) else v for k, v in args.items()}
    changed = [k for k, v in args.items() if out[k] is not v]
    if not changed:
        return args
    if handle:
        out[changed[0]] = f"{out[changed[0]]} {handle}"
    return out


def _has_text(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str) and block.strip():
            return True
        if isinstance(block, dict):
            kind = block.get("type")
            if kind == "text" and str(block.get("text") or "").strip():
                return True
            if kind not in (
                "text",
                "thinking",
                "redacted_thinking",
                "reasoning",
                *CALL_BLOCK_TYPES,
            ):
                return True  # images, documents, ...: real content the message still carries
    return False


def _edited(
    items: Sequence[Any],
    call_id: Callable[[Any], Any],
    shortened: Callable[[Any], Any],
    shorten: set[str],
    drop: set[str],
) -> list[Any]:
    """Return ``items`` (one place a message records calls) without the dropped calls, the shortened
    ones shortened."""
    return [
        shortened(item) if call_id(item) in shorten else item
        for item in items
        if call_id(item) not in drop
    ]


def edit_ai_message(
    message: AIMessage,
    *,
    shorten: Iterable[str] = (),
    drop: Iterable[str] = (),
    argument_size: int = DEFAULT_ARGUMENT_SIZE,
    count: CountTokens | None = None,
    handles: Mapping[str, int] | None = None,
) -> AIMessage | None:
    """Return a copy of ``message`` with the calls ``shorten`` shortened (each string argument to
    ``argument_size``) and ``drop`` dropped, in every place.

    A call in ``handles`` (call id -> its 1-based number) has its shortened arguments end with
    the handle that reads them back. With ``count`` (the strategies' counter) a call is
    shortened only when that leaves the message with fewer tokens: a shortened form is never
    larger than what it replaces. Returns ``message`` itself when nothing changes, and None
    when no call and no text is left: an empty assistant message is rejected by providers and
    tells the model nothing.
    """
    shorten, drop = set(shorten) - set(drop), set(drop)
    if count is not None and shorten:
        whole = count([message])
        if len(shorten) == 1 and not drop:  # the one call's check is the message's
            edited = edit_ai_message(
                message, shorten=shorten, argument_size=argument_size, handles=handles
            )
            return edited if edited is not None and count([edited]) < whole else message
        shorten = {
            c
            for c in shorten
            if count(
                [
                    edit_ai_message(  # type: ignore[list-item]
                        message, shorten=[c], argument_size=argument_size, handles=handles
                    )
                ]
            )
            < whole
        }
    if not shorten and not drop:
        return message
    update: dict[str, Any] = {}
    handles = handles or {}

    def short_args(args: Any, call_id: Any, as_json: bool = False) -> Any:
        number = handles.get(call_id)
        handle = "" if number is None else handle_text(number, arguments=True)
        return shorten_arguments(args, argument_size, as_json=as_json, handle=handle)

    def with_args(call: dict[str, Any], key: str, short: Any) -> dict[str, Any]:
        return call if short is call.get(key) else {**call, key: short}

    calls = _edited(
        message.tool_calls,
        lambda c: c.get("id"),
        lambda c: with_args(c, "args", short_args(c.get("args"), c.get("id"))),
        shorten,
        drop,
    )
    if len(calls) < len(message.tool_calls) or any(
        a is not b for a, b in zip(calls, message.tool_calls, strict=False)
    ):
        update["tool_calls"] = calls
    invalid = [
        c for c in message.invalid_tool_calls if c.get("id") not in drop
    ]  # unparsed arguments are not shortened
    if len(invalid) < len(message.invalid_tool_calls):
        update["invalid_tool_calls"] = invalid
    kwargs = message.additional_kwargs
    if openai_calls(message):

        def short_openai(call: dict[str, Any]) -> dict[str, Any]:
            function = call.get("function")
            if not isinstance(function, dict):
                return call
            return with_args(
                call,
                "function",
                with_args(
                    function,
                    "arguments",
                    short_args(function.get("arguments"), call.get("id"), as_json=True),
                ),
            )

        openai = _edited(
            openai_calls(message),
            lambda c: c.get("id") if isinstance(c, dict) else None,
            short_openai,
            shorten,
            drop,
        )
        kwargs = dict(kwargs)
        if openai:
            kwargs["tool_calls"] = openai
        else:
            del kwargs["tool_calls"]
        update["additional_kwargs"] = kwargs
    content = message.content
    if any(True for _ in call_blocks(content)):

        def short_block(block: dict[str, Any]) -> dict[str, Any]:
            key = CALL_BLOCK_TYPES[block["type"]][1]
            return with_args(
                block,
                key,
                short_args(
                    block.get(key), call_block_id(block), as_json=block["type"] == "function_call"
                ),
            )

        content = update["content"] = _edited(content, call_block_id, short_block, shorten, drop)
    if (
        not calls
        and not kwargs.get("tool_calls")
        and not invalid
        and not any(True for _ in call_blocks(content))
        and not _has_text(content)
    ):
        return None
    return message.model_copy(update=update) if update else message


def shortens_arguments(
    message: AIMessage, call_id: str, count: CountTokens, number: int | None = None
) -> bool:
    """Return whether shortening call ``call_id`` changes ``message`` (its arguments ending with the
    handle of ``number``, if given): long enough, and fewer tokens."""
    return (
        edit_ai_message(
            message,
            shorten=[call_id],
            count=count,
            handles=None if number is None else {call_id: number},
        )
        is not message
    )


def shorten_tool_call(
    message: AIMessage, call_id: str, size: int = DEFAULT_ARGUMENT_SIZE
) -> AIMessage:
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
    """Return a copy of ``message`` with its text shortened to ``size`` (hash-stamped), or
    ``message`` when nothing changes.

    List content keeps its shape: each text block is shortened on its own and other blocks
    (a ``tool_use``, an image) stay, so the same content always gives the same bytes.
    """
    content = message.content
    if isinstance(content, str):
        short = shorten_string(content, size)
        return message if short is content else message.model_copy(update={"content": short})
    new = [_short_text_block(block, size) for block in content]
    return (
        message
        if all(a is b for a, b in zip(new, content, strict=False))
        else message.model_copy(update={"content": new})
    )


def _short_text_block(block: Any, size: int) -> Any:
    if isinstance(block, str):
        return shorten_string(block, size)
    if (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ):
        short = shorten_string(block["text"], size)
        return block if short is block["text"] else {**block, "text": short}
    return block


def shorten_lines(message: ToolMessage, size: int) -> ToolMessage:
    """Return ``message`` (its content a string) with whole lines of its head and tail within
    ``size`` characters (:func:`shorten_by_lines`)."""
    short = shorten_by_lines(message.content, size)  # type: ignore[arg-type]
    return message if short is message.content else message.model_copy(update={"content": short})


def shorten_tool_output(
    message: ToolMessage,
    count: CountTokens,
    size: int = DEFAULT_OUTPUT_SIZE,
    call: int | str | None = None,
) -> ToolMessage:
    """Return :func:`with_handle` of :func:`shorten_text`: ``message``'s content shortened to
    ``size`` (hash-stamped), with the handle of ``call``."""
    return with_handle(message, shorten_text, size, call, count)


def with_handle(
    whole: M, cut: Callable[[M, int], M], size: int, call: int | str | None, count: CountTokens
) -> M:
    """Return ``cut(whole, size)`` ending with the handle of call ``call`` (1-based, or its id;
    None: no handle), or ``whole`` when that is not smaller.

    A shortened form is never larger than what it replaces: it is used only when it has fewer
    tokens than the whole by ``count``, the strategies' counter (an output barely longer than
    ``size`` stays whole). The handle takes its room from the preview, so a stub costs about
    what it would without one.
    """
    tag = "" if call is None else handle_text(call)
    short = cut(whole, max(size - len(tag) - 1, 0) if tag else size)
    if short is whole:
        return whole
    if tag:
        content: Any = (
            f"{short.content}\n{tag}"
            if isinstance(short.content, str)
            else [*short.content, {"type": "text", "text": tag}]
        )
        short = short.model_copy(update={"content": content})
    return short if count([short]) < count([whole]) else whole


def apply_fates(
    messages: Sequence[BaseMessage],
    index: ToolIndex,
    fates: Mapping[int, tuple[Fate, Fate]],
    *,
    count: CountTokens,
    handles: bool = True,
    shortened_outputs: Mapping[int, BaseMessage] | None = None,
    narration_chars: int = 0,
    leave_out: Collection[int] = (),
) -> list[BaseMessage]:
    """Return a new list with each completed call's ``(call fate, output fate)`` (``fates`` by
    number in ``index.calls``) applied.

    A pair is dropped whole or not at all; unchanged messages are reused. A shortened output is
    its entry in ``shortened_outputs`` (by message index), else :func:`shorten_tool_output`; with
    ``handles`` each shortened output and arguments end with the handle that reads them back, and
    each is used only when smaller by ``count``. With ``narration_chars``, an assistant message
    whose calls are all shortened (or dropped, one at least shortened) has its text shortened to
    that size. The messages at ``leave_out`` are left out.
    """
    ai_edits: dict[int, tuple[set[str], set[str]]] = {}
    output_fate: dict[int, Fate] = {}
    output_call: dict[int, int] = {}
    numbers = {index.calls[number].id: number + 1 for number in fates} if handles else {}
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
    out: list[BaseMessage] = []
    for i, message in enumerate(messages):
        if i in leave_out:
            continue
        edit = ai_edits.get(i)
        if edit is not None:
            edited = edit_ai_message(
                message,  # type: ignore[arg-type]
                shorten=edit[0],
                drop=edit[1],
                count=count,
                handles=numbers,
            )
            if edited is not None:
                if (
                    narration_chars > 0
                    and edit[0]
                    and len(edit[0]) + len(edit[1]) == len(index.calls_per_ai[i])
                ):
                    edited = shorten_text(edited, narration_chars)
                out.append(edited)
            continue
        fate = output_fate.get(i)
        if fate is Fate.DROP:
            continue
        if fate is Fate.SHORTEN:
            short = shortened_outputs.get(i) if shortened_outputs is not None else None
            out.append(
                short
                if short is not None
                else shorten_tool_output(
                    message,  # type: ignore[arg-type]
                    count,
                    call=output_call[i] if handles else None,
                )
            )
        else:
            out.append(message)
    return out


def _key(message: BaseMessage) -> tuple[str, Any]:
    return ("id", message.id) if message.id else ("object", id(message))


def _is_copy(message: BaseMessage, original: BaseMessage) -> bool:
    return _key(message) == _key(original) or (
        type(message) is type(original) and message.content == original.content
    )


def _repair_pairs(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Return ``messages`` without orphan or duplicate outputs and without calls that lost their
    output."""
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
            message = (
                drop_tool_call(message, call_id) if isinstance(message, AIMessage) else message
            )
            if message is None:
                break
        if message is not None:
            out.append(message)
    return out


def _anchor_position(
    source: Sequence[BaseMessage], anchor: BaseMessage, prompt: list[BaseMessage]
) -> int:
    """Return where ``anchor`` goes back: before the first kept message that followed it, at a
    step's start."""
    order = {_key(m): i for i, m in enumerate(source)}
    at, start = order[_key(anchor)], leading_system_count(prompt)
    for j in range(start, len(prompt)):
        if order.get(_key(prompt[j]), -1) > at:
            while j > start and isinstance(prompt[j], ToolMessage):
                j -= 1  # a user message between a call and its output breaks the pair
            return j
    return len(prompt)


def keep_prompt_floor(
    source: Sequence[BaseMessage], prompt: Sequence[BaseMessage]
) -> list[BaseMessage]:
    """Return ``prompt``, restored where a strategy broke the floor, with a warning naming the
    repair.

    The floor: the system block of ``source`` leads, its newest real user message is present
    (back at its place in the original order), calls and outputs pair up (unpaired ones are
    removed; when ``source`` itself holds them, the warning says so), and the prompt is not empty.
    """
    out, repaired = list(prompt), []
    system = list(source[: leading_system_count(source)])
    if system and not leading_system_count(out):
        keys = {_key(m) for m in system}
        out = [*system, *(m for m in out if _key(m) not in keys)]
        repaired.append("the system message")
    inherited = False
    broken = find_tool_pair_violations(out)
    if broken:
        out = _repair_pairs(out)
        # a conversation resumed after a kill mid-tool-call holds the broken pair itself: not the
        # strategies' doing
        given = {(v.kind, v.call_id) for v in find_tool_pair_violations(source)}
        inherited = all((v.kind, v.call_id) in given for v in broken)
        if not inherited:
            repaired.append("tool call/output pairs")
    anchor = next((m for m in reversed(source) if is_real_user_message(m)), None)
    if anchor is not None and not any(_is_copy(m, anchor) for m in out):
        out.insert(_anchor_position(source, anchor, out), anchor)
        repaired.append("the newest user message")
    if not out and source:
        out = _repair_pairs(list(source)) or list(source)
        repaired.append("a non-empty prompt (the unchanged conversation)")
    if inherited:
        _logger.warning(
            "prompt floor: left out tool calls without outputs (or outputs without calls) that "
            "the conversation "
            "itself holds, as a run stopped mid-tool-call leaves them; the stored conversation "
            "keeps them"
        )
    if repaired:
        _logger.warning(
            "prompt floor: restored %s after the strategies broke it", ", ".join(repaired)
        )
    return out
