"""The message model: the only package that knows where a tool call is recorded.

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

The modules behind it: ``coercion`` (input as messages, ``tool_result`` blocks as
``ToolMessage``s), ``marks`` (this package's marks, real user messages, the task, the
system block), ``recorded_calls`` (reading a message's calls from every place they are
recorded), ``tool_index`` (the one tool-call index: calls, outputs, positions, extended as a
conversation grows; steps and turns), ``sizes`` (cheap sizes for reports), ``edits`` (shortening and dropping calls and
outputs, applying fates), ``pairs`` (pair checks) and ``floor`` (the prompt floor). Import
from here; this module only re-exports, and knows no strategy. Two modules are imported by
their own names, for the strategies that resume from earlier calls: ``keys`` (what a message
is, as one number) and ``history_memo`` (a history's model calls and the one memo of
earlier replays, keyed by those numbers).
"""

from __future__ import annotations

from langchain_promptstrat.messages.coercion import coerce_messages, tool_arguments_problem, tool_results_as_tool_messages
from langchain_promptstrat.messages.edits import (
    Fate,
    apply_fates,
    drop_tool_call,
    edit_ai_message,
    shorten_arguments,
    shorten_text,
    shorten_tool_call,
    shorten_tool_output,
    with_handle,
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
from langchain_promptstrat.messages.floor import keep_prompt_floor
from langchain_promptstrat.messages.marks import (
    MARK_KEY,
    is_real_user_message,
    leading_system_count,
    mark,
    mark_of,
    task_index,
)
from langchain_promptstrat.messages.pairs import ToolPairViolation, check_tool_pairs, find_tool_pair_violations
from langchain_promptstrat.messages.recorded_calls import CALL_BLOCK_TYPES, call_block_id, recorded_calls, repeat_key, tool_call_ids
from langchain_promptstrat.messages.sizes import content_text, message_chars, value_chars
from langchain_promptstrat.messages.tool_index import ToolCallRecord, ToolIndex, index_tool_calls, split_steps, split_turns

__all__ = [
    "PAGE_CHARS",
    "PAGE_LINES",
    "READ_BACK_TOOL",
    "calls_named",
    "range_text",
    "handle_text",
    "keep_read_backs_whole",
    "read_back",
    "with_handle",
    "MARK_KEY",
    "task_index",
    "CALL_BLOCK_TYPES",
    "Fate",
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
    "index_tool_calls",
    "tool_arguments_problem",
    "tool_results_as_tool_messages",
    "is_real_user_message",
    "keep_prompt_floor",
    "leading_system_count",
    "mark",
    "mark_of",
    "message_chars",
    "recorded_calls",
    "repeat_key",
    "shorten_arguments",
    "shorten_tool_call",
    "shorten_text",
    "shorten_tool_output",
    "split_steps",
    "split_turns",
    "tool_call_ids",
    "value_chars",
]
