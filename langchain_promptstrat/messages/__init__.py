"""The message model: the only package that knows where a tool call is recorded, and how to edit it
there.

A call is an entry of ``AIMessage.tool_calls`` (also kept in OpenAI's ``additional_kwargs``,
content blocks and ``invalid_tool_calls``); its output is the ``ToolMessage`` with the same
``tool_call_id``. Strategies work on positions (1-based from the newest ``ToolMessage``; a
call shares its output's), steps (an ``AIMessage`` and the ``ToolMessage``s right after it)
and turns (a real user message up to the next one). Messages are immutable: an edit returns a
copy. Read next: ``recorded_calls`` (what a message records), ``pairs`` (input and pair
checks), ``tool_index`` (the one tool-call index), ``edits`` (edits and the prompt floor),
``read_back`` (handles and reading an output back); ``history_memo`` (the memos: message keys,
the replay memo, the head cache) and ``references`` (references to another output's lines, kept
true in every prompt) are imported by their own names.
"""

from __future__ import annotations

from langchain_promptstrat.messages.edits import (
    CountTokens,
    Fate,
    apply_fates,
    drop_tool_call,
    edit_ai_message,
    keep_prompt_floor,
    shorten_arguments,
    shorten_lines,
    shorten_text,
    shorten_tool_call,
    shorten_tool_output,
    shortens_arguments,
    with_handle,
)
from langchain_promptstrat.messages.pairs import (
    ToolPairViolation,
    check_tool_pairs,
    coerce_messages,
    find_tool_pair_violations,
    tool_arguments_problem,
    tool_results_as_tool_messages,
)
from langchain_promptstrat.messages.read_back import (
    PAGE_CHARS,
    PAGE_LINES,
    READ_BACK_TOOL,
    calls_named,
    handle_text,
    keep_read_backs_whole,
    range_text,
    read_back,
)
from langchain_promptstrat.messages.recorded_calls import (
    CALL_BLOCK_TYPES,
    MARK_KEY,
    call_block_id,
    canonical_json,
    content_text,
    is_real_user_message,
    leading_system_count,
    mark,
    mark_of,
    message_chars,
    recorded_calls,
    repeat_key,
    task_index,
    tool_call_ids,
    value_chars,
)
from langchain_promptstrat.messages.tool_index import (
    ToolCallRecord,
    ToolIndex,
    index_tool_calls,
    split_steps,
    split_turns,
)

__all__ = [
    "CALL_BLOCK_TYPES",
    "CountTokens",
    "Fate",
    "MARK_KEY",
    "PAGE_CHARS",
    "PAGE_LINES",
    "READ_BACK_TOOL",
    "ToolCallRecord",
    "ToolIndex",
    "ToolPairViolation",
    "apply_fates",
    "call_block_id",
    "calls_named",
    "canonical_json",
    "check_tool_pairs",
    "coerce_messages",
    "content_text",
    "drop_tool_call",
    "edit_ai_message",
    "find_tool_pair_violations",
    "handle_text",
    "index_tool_calls",
    "is_real_user_message",
    "keep_prompt_floor",
    "keep_read_backs_whole",
    "leading_system_count",
    "mark",
    "mark_of",
    "message_chars",
    "range_text",
    "read_back",
    "recorded_calls",
    "repeat_key",
    "shorten_arguments",
    "shorten_lines",
    "shorten_text",
    "shorten_tool_call",
    "shorten_tool_output",
    "shortens_arguments",
    "split_steps",
    "split_turns",
    "task_index",
    "tool_arguments_problem",
    "tool_call_ids",
    "tool_results_as_tool_messages",
    "value_chars",
    "with_handle",
]
