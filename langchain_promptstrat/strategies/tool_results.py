"""tool_results: the cheapest token rung, large old tool outputs become short placeholders.

Oldest first, until under target, an output larger than ``tool_results_min_tokens`` becomes a
marked placeholder (call id and name kept) naming the handle that reads it back,
``[whole: read_back(call=N)]``, with the ``read_back_handles`` setting, else inviting the model
to call the tool again; the newest ``keep_steps`` tool-calling steps are never touched.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, ToolMessage

from langchain_promptstrat.messages import (
    CountTokens,
    handle_text,
    index_tool_calls,
    mark,
    split_steps,
    tool_call_ids,
)
from langchain_promptstrat.options import ToolResultsOptions
from langchain_promptstrat.strategies.ladder_machinery.rungs import (
    PLACEHOLDER_KIND,
    Plan,
    Rewrite,
    Rung,
    call_spans,
    done,
    kind_of,
)
from langchain_promptstrat.tokens import message_counter

PLACEHOLDER_TEXT = (
    "[compacted:tool_results] This {name} result ({tokens} tokens) was cleared to free context. "
    "Call {name} again if you need it."
)
HANDLE_PLACEHOLDER_TEXT = (
    "[compacted:tool_results] This {name} result ({tokens} tokens) was cleared. {handle}"
)
"""The placeholder naming its call's handle, in the room of the invitation to call again."""


def placeholder(
    output: ToolMessage, name: str, tokens: int, call: int | None = None
) -> ToolMessage:
    """Return ``output`` with its content the marked placeholder; id, call id and name stay.

    With ``call`` (its 1-based number in the stored conversation) the placeholder ends with
    the handle that reads the output back.
    """
    if call is None:
        text = PLACEHOLDER_TEXT.format(name=name or "tool", tokens=tokens)
    else:
        handle = handle_text(call)
        text = HANDLE_PLACEHOLDER_TEXT.format(name=name or "tool", tokens=tokens, handle=handle)
    cleared = output.model_copy(update={"content": text, "artifact": None})
    return mark(cleared, PLACEHOLDER_KIND, notice=True, strategy="tool_results", tokens=tokens)


def rewrite(
    messages: Sequence[BaseMessage],
    /,
    *,
    target: int,
    counter: CountTokens,
    min_tokens: int = 200,
    keep_steps: int = 1,
    handles: bool = True,
) -> Rewrite:
    """Return ``messages`` with the oldest large tool outputs replaced by placeholders until under
    ``target``.

    With ``handles`` each placeholder names its call's handle. Declines when under target or
    when no output is larger than ``min_tokens`` and its placeholder, outside the newest
    ``keep_steps`` steps and not a placeholder already.
    """
    messages = list(messages)
    tokens = counter(messages)
    if tokens <= target:
        return Rewrite(None, {"reason": "under target"})
    count_one = message_counter(counter)
    calling = [step for step in split_steps(messages) if tool_call_ids(messages[step.start])]
    protected = {
        i for step in calling[-keep_steps:] for i in step if isinstance(messages[i], ToolMessage)
    }  # the newest steps' outputs
    index = index_tool_calls(messages)
    spans = call_spans(messages, index) if handles else []
    out = list(messages)
    replaced = freed = 0
    for i, message in enumerate(messages):
        if tokens <= target:
            break
        if (
            not isinstance(message, ToolMessage)
            or i in protected
            or kind_of(message) == PLACEHOLDER_KIND
        ):
            continue
        size = count_one(message)
        if size <= min_tokens:
            continue
        record = index.call_answered_by(i)
        call = None
        if record is not None and handles:  # its message's first call, plus its place there
            span, first = spans[record.ai_index], index.calls_per_ai[record.ai_index][0]
            call = span[0] + record.number - first if span else None
        short = placeholder(message, message.name or (record.name if record else ""), size, call)
        saved = size - count_one(short)
        if saved <= 0:
            continue
        out[i] = short
        tokens -= saved
        replaced += 1
        freed += saved
    if not replaced:
        return Rewrite(None, {"reason": "no tool output it may clear"})
    return Rewrite(out, {"replaced": replaced, "freed": freed})


class ToolResults(Rung, ToolResultsOptions):
    """``tool_results``: replace the oldest large tool outputs by placeholders to fit a token
    target.

    ``ToolResults(max_tokens=100_000, tool_results_min_tokens=200)``; in a ladder, the ladder's
    target and counter.
    """

    strategy_name = "tool_results"

    def plan(
        self, messages: Sequence[BaseMessage], *, max_tokens: int, counter: CountTokens
    ) -> Plan:
        """Return the plan of :func:`rewrite` (it needs no model call)."""
        settings = self.settings
        return done(
            rewrite(
                messages,
                target=max_tokens,
                counter=counter,
                min_tokens=settings.tool_results_min_tokens,
                keep_steps=settings.keep_steps,
                handles=settings.read_back_handles,
            )
        )
