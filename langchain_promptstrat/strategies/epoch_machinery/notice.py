"""The compaction notice: the marked user message that tells the model what compaction did, and
where it goes.

Public as ``langchain_promptstrat.is_compaction_notice``, so no code takes a notice for something a
person wrote. Its text is part of the cached prefix: the same counts give the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_promptstrat.messages import (
    READ_BACK_TOOL,
    Fate,
    is_real_user_message,
    leading_system_count,
    mark,
    mark_of,
    range_text,
    tool_call_ids,
)

NOTICE_KIND = "compaction_notice"
"""The ``kind`` of this module's mark on the compaction notice."""


def _calls(n: int) -> str:
    return (
        f"{n} older tool call and its result"
        if n == 1
        else f"{n} older tool calls and their results"
    )


def compaction_notice_text(
    shortened: int, dropped: int, dropped_calls: tuple[int, int] | None = None, handles: bool = True
) -> str:
    """Return the notice's words for ``shortened`` and ``dropped`` calls, the dropped ones among
    calls ``dropped_calls`` (first, last); the same counts give the same text.

    Without ``handles`` it names neither the calls nor ``read_back``.
    """
    where = f" from {range_text(*dropped_calls)}" if dropped_calls and dropped and handles else ""
    read_back = (
        (
            f" {READ_BACK_TOOL}(call=N) gives the whole output of call N (calls count from 1), "
            f"{READ_BACK_TOOL}(pattern=...) searches every output."
        )
        if handles
        else ""
    )
    return (
        "[Context compacted] This conversation is long, so older tool activity was compacted "
        "before "
        f"this request: {_calls(shortened)} {'was' if shortened == 1 else 'were'} shortened (a "
        "cut value "
        f"shows its original length and an md5 prefix), and {_calls(dropped)} "
        f"{'was' if dropped == 1 else 'were'} removed{where}. A result that is missing or cut "
        "short here does "
        "not mean the tool never ran: it ran, and its result was seen at the time. Do not repeat "
        "a call "
        "only because an older occurrence is no longer visible; call a tool again only when you "
        "need "
        f"its result now.{read_back}"
    )


def compaction_notice(
    shortened: int,
    dropped: int,
    *,
    strategy: str,
    fates: Mapping[int, Fate] | None = None,
    handles: bool = True,
) -> HumanMessage:
    """Return the marked user-role notice telling the model what compaction did and how to read any
    of it back.

    It is a user message because every provider accepts one after tool results, and it is
    marked as a notice so no strategy ever takes it for something a person wrote. With
    ``handles`` (the ``read_back_handles`` setting) the dropped calls of ``fates`` (call number
    -> fate) are named as one range and the notice says how to read any call back.
    """
    gone = [number + 1 for number, fate in (fates or {}).items() if fate is Fate.DROP]
    message = HumanMessage(
        compaction_notice_text(
            shortened, dropped, (min(gone), max(gone)) if gone else None, handles
        )
    )
    return mark(
        message, NOTICE_KIND, notice=True, strategy=strategy, shortened=shortened, dropped=dropped
    )


def is_compaction_notice(message: BaseMessage) -> bool:
    """Return whether ``message`` is a compaction notice written by an epoch strategy."""
    if not isinstance(message, HumanMessage):
        return False
    m = mark_of(message)
    return m is not None and m.get("kind") == NOTICE_KIND


def notice_index(messages: Sequence[BaseMessage]) -> int:
    """Return where the notice goes in a compacted list: right after the first step that still calls
    a tool.

    After that step's last output the notice never separates a call from its output, it is
    normally followed by an assistant turn (as strict-alternation chat templates want), and
    it sits in the frozen part of the prompt, so it moves only when the frozen regions do.
    Without such a step: after the system block and the first user message.
    """
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage) and tool_call_ids(message):
            j = i + 1
            while j < len(messages) and isinstance(messages[j], ToolMessage):
                j += 1
            return j
    i = leading_system_count(messages)
    if i < len(messages) and is_real_user_message(messages[i]):
        i += 1
    return i
