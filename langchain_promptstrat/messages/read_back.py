"""Reading a tool output back from the stored conversation, which still holds every output whole:
the handle a stub carries and the read-back.

A shortened output ends with its handle, ``[whole: read_back(call=N)]``, N the call's number
in the conversation (1 = first), which never changes as it grows; shortened arguments end
with ``[whole: read_back(call=N, arguments=True)]``. :func:`read_back` answers
from the messages alone, never by running a tool again; its answers in the newest step reach
the model whole (:func:`keep_read_backs_whole`), so an agent never loops on a read-back cut again.
Must not know any strategy nor front end (the tool around :func:`read_back` is an adapter).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.pairs import tool_results_as_tool_messages
from langchain_promptstrat.messages.recorded_calls import content_text, recorded_calls
from langchain_promptstrat.messages.tool_index import ToolCallRecord, index_tool_calls

READ_BACK_TOOL = "read_back"
"""The name of the read-back tool, which every handle names."""
PAGE_LINES = 400
"""The most lines one answer holds."""
PAGE_CHARS = 12_000
"""The most characters one answer holds: about 3,000 tokens, under a fifth of a 16,000-token
ceiling."""


def handle_text(call: int | str, arguments: bool = False) -> str:
    """Return the handle a shortened output of call ``call`` (its 1-based number, or its id) ends
    with; ``arguments``: its shortened arguments'."""
    return f"[whole: {READ_BACK_TOOL}(call={call!r}{', arguments=True' if arguments else ''})]"


def range_text(first: int, last: int) -> str:
    """Return how a note names the calls ``first`` to ``last`` (1-based), each of which
    :func:`read_back` reads."""
    return f"calls {first}-{last}"


_NAMED = re.compile(rf"{READ_BACK_TOOL}\(call=(\d+|'[^']*')\)|calls (\d+)-(\d+)")


def calls_named(text: str) -> tuple[set[str], list[tuple[int, int]]]:
    """Return the calls ``text`` names by a handle (numbers, and ids as quoted) and the ranges it
    names."""
    handles: set[str] = set()
    ranges: list[tuple[int, int]] = []
    for handle, first, last in _NAMED.findall(text):
        if handle:
            handles.add(handle)
        else:
            ranges.append((int(first), int(last)))
    return handles, ranges


def _find(calls: Sequence[ToolCallRecord], call: int | str) -> ToolCallRecord | None:
    if isinstance(call, str) and call.strip().isdigit():
        call = int(call)
    if isinstance(call, int):
        return calls[call - 1] if 1 <= call <= len(calls) else None
    return next((record for record in calls if record.id == call), None)


def _page(lines: list[str], offset: int, limit: int, page_chars: int) -> tuple[str, int]:
    """Return the lines from ``offset`` that fit ``limit`` lines and ``page_chars`` characters, and
    where the page ends."""
    end, used = offset, 0
    while end < len(lines) and end - offset < limit and used + len(lines[end]) + 1 <= page_chars:
        used += len(lines[end]) + 1
        end += 1
    if end == offset and end < len(lines):  # one line longer than a page: its head
        return lines[end][:page_chars], end + 1
    return "\n".join(lines[offset:end]), end


def read_back(
    messages: Sequence[BaseMessage],
    call: int | str | None = None,
    *,
    offset: int = 0,
    limit: int = PAGE_LINES,
    pattern: str | None = None,
    page_chars: int = PAGE_CHARS,
    arguments: bool = False,
) -> str | list[str | dict[str, Any]]:
    """Return a tool output as the conversation stores it, a page of its lines, or the lines
    matching ``pattern``.

    Args:
        messages: The stored conversation (Anthropic ``tool_result`` blocks are read as outputs).
        call: The call's number in the conversation (1 = first; the ``N`` of a handle) or its
            tool call id; None with ``pattern`` searches every output.
        offset: The first line (0-based) of the page, or the first match.
        limit: The most lines (or matches) the answer holds.
        pattern: A regular expression: the answer is the matching lines, each with its call
            number and line number (1-based).
        page_chars: The most characters the answer holds.
        arguments: Read the call's arguments (as JSON) instead of its output.

    Returns:
        The stored content itself (a string or content blocks, byte for byte) when the whole
        output fits one page; else the page's lines and a last line saying where the next
        page starts; a sentence when there is no such call or output (never an exception).
    """
    stored = tool_results_as_tool_messages(list(messages))
    calls = index_tool_calls(stored).calls
    offset, limit, page_chars = max(offset, 0), max(limit, 1), max(page_chars, 200)
    if call is None and pattern is None:
        return (
            f"Give the call's number (the N of {READ_BACK_TOOL}(call=N)) or its id, "
            "or a pattern to search every output."
        )
    record = None if call is None else _find(calls, call)
    if call is not None and (record is None or (record.output_index is None and not arguments)):
        what = "has no output yet" if record is not None else "is not in this conversation"
        return (
            f"Call {call!r} {what}: it has calls 1-{len(calls)}; "
            f"{READ_BACK_TOOL} reads their outputs."
        )
    if pattern is not None:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            return (
                f"The pattern {pattern!r} is not a regular expression ({exc}); "
                "escape special characters or search plain words."
            )
        searched = (
            [record]
            if record is not None
            else [r for r in calls if r.output_index is not None and r.name != READ_BACK_TOOL]
        )
        hits = [
            f"call {r.number + 1} line {n}: {line}"
            for r in searched
            for n, line in enumerate(content_text(stored[r.output_index].content).split("\n"), 1)  # type: ignore[index]
            if regex.search(line)
        ]
        page, end = _page(hits, offset, limit, page_chars)
        more = (
            f"; more: {READ_BACK_TOOL}(pattern={pattern!r}, offset={end})"
            if end < len(hits)
            else ""
        )
        return (
            f"{page}\n[matches {offset + 1}-{end} of {len(hits)}{more}]"
            if hits
            else f"No output line matches {pattern!r}."
        )
    assert record is not None
    content = (
        json.dumps(record.args, ensure_ascii=False)
        if arguments
        else stored[record.output_index].content  # type: ignore[index]
    )
    lines = content_text(content).split("\n")
    if offset == 0 and len(lines) <= limit and len(content_text(content)) <= page_chars:
        return content
    page, end = _page(lines, offset, limit, page_chars)
    more = (
        f"; more: {READ_BACK_TOOL}(call={record.number + 1}, "
        f"offset={end}{', arguments=True' if arguments else ''})"
        if end < len(lines)
        else ""
    )
    where = f"lines {offset + 1}-{end} of {len(lines)}{more}"
    return f"{page}\n[call {record.number + 1} ({record.name}): {where}]"


def keep_read_backs_whole(
    source: Sequence[BaseMessage], result: list[BaseMessage]
) -> list[BaseMessage]:
    """Return ``result`` with the read-back answers of ``source``'s newest step as ``source`` holds
    them.

    An answer cut or pointed back again in the step it is read would send the agent to read
    it again, and again: while it is in the newest step no strategy changes it; later it ages
    like any output.
    """
    end = len(source)
    start = end
    while start > 0 and isinstance(source[start - 1], ToolMessage):
        start -= 1
    if start == 0 or start == end or not isinstance(source[start - 1], AIMessage):
        return result
    names = {call_id: name for call_id, name, _ in recorded_calls(source[start - 1])}  # type: ignore[arg-type]
    whole = {
        m.tool_call_id: m
        for m in source[start:]
        if isinstance(m, ToolMessage) and names.get(m.tool_call_id) == READ_BACK_TOOL
    }
    if not whole:
        return result
    return [whole.get(m.tool_call_id, m) if isinstance(m, ToolMessage) else m for m in result]
