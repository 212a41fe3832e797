"""shorten_tools: tiered shortening and dropping of old tool calls, recomputed on every call.

Newest first: the most recent outputs and calls stay whole, a middle band is shortened and
the oldest dropped, once the tool content kept passes ``max_tool_chars``. The boundary moves
with every call, so it defeats prompt caching; the epoch strategies exist for that.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages import (
    Fate,
    apply_fates,
    content_text,
    index_tool_calls,
    is_real_user_message,
    shorten_arguments,
    value_chars,
)
from langchain_promptstrat.options import ShortenToolsOptions
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategy import NO_REQUEST, PromptRequest, PromptStrategy
from langchain_promptstrat.tokens import as_token_counter
from langchain_promptstrat.truncation import DEFAULT_OUTPUT_SIZE, shorten_string


def shorten_tools(messages: Sequence[BaseMessage], /, *, settings: Settings) -> Compacted:
    """Return ``messages`` with old tool calls and outputs shortened or dropped, and a report.

    The reference's rule: an output at position ``n`` (1 = newest) stays whole when
    ``n < full_tool_outputs`` or while the tool characters kept are under ``max_tool_chars``,
    else is dropped when ``n > max_tool_outputs`` and shortened when not; calls likewise with
    ``full_tool_calls``/``max_tool_calls``. Unlike the reference, ``protect_current_turn``
    (keep the newest user turn whole; its guard never fired there) defaults off, and a pair
    never splits: both sides take the milder fate, since a provider rejects half a pair.
    """
    index = index_tool_calls(messages)
    fates: dict[int, list[Fate]] = {}  # call number -> [the call's fate, its output's]
    used = protected = outputs_seen = 0
    user_messages = 0 if settings.protect_current_turn else 1

    def judge(position: int, size: int, shortened_size: int, full: int, maximum: int) -> Fate:
        """Return the fate of one side of a call, adding the characters it keeps to ``used``."""
        nonlocal used
        if user_messages == 0 or position < full or used < settings.max_tool_chars:
            used += size
            return Fate.KEEP
        if position > maximum:
            return Fate.DROP
        used += shortened_size
        return Fate.SHORTEN

    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, ToolMessage):
            outputs_seen += 1
            text = content_text(message.content)
            fate = judge(
                outputs_seen,
                len(text),
                len(shorten_string(text, DEFAULT_OUTPUT_SIZE)),
                settings.full_tool_outputs,
                settings.max_tool_outputs or 0,
            )
            number = index.call_of_output.get(i)
            if number is not None:
                fates[number] = [Fate.KEEP, fate]
                if user_messages == 0 and settings.protect_current_turn:
                    protected += 1
        elif isinstance(message, AIMessage):
            for k in reversed(index.calls_per_ai.get(i, ())):
                rec = index.calls[k]
                if rec.output_index is None:
                    continue
                size, short = value_chars(rec.args), value_chars(shorten_arguments(rec.args))
                fates[k][0] = judge(
                    index.position(rec) or 0,
                    size,
                    short,
                    settings.full_tool_calls,
                    settings.max_tool_calls,
                )
        elif is_real_user_message(message):
            user_messages += 1

    pair_fates: dict[int, tuple[Fate, Fate]] = {}
    shortened = dropped = 0
    for k, (call_fate, out_fate) in fates.items():
        if (call_fate is Fate.DROP) != (out_fate is Fate.DROP):
            call_fate = out_fate = max(call_fate, out_fate)
        if call_fate is Fate.DROP:
            dropped += 1
        elif Fate.SHORTEN in (call_fate, out_fate):
            shortened += 1
        else:
            continue
        pair_fates[k] = (call_fate, out_fate)
    out = (
        apply_fates(
            messages,
            index,
            pair_fates,
            count=as_token_counter(None),
            handles=settings.read_back_handles,
        )
        if pair_fates
        else list(messages)
    )
    return Compacted(
        out,
        make_report(
            "shorten_tools",
            messages,
            out,
            shortened=shortened,
            dropped=dropped,
            protected=protected,
        ),
    )


class ShortenTools(PromptStrategy, ShortenToolsOptions):
    """``shorten_tools``: tiered shortening and dropping of old tool calls, newest kept whole.

    ``ShortenTools(full_tool_outputs=5, max_tool_chars=30_000)``; option > ``settings`` >
    environment > default.
    """

    strategy_name = "shorten_tools"

    def apply(self, messages: list[BaseMessage], request: PromptRequest = NO_REQUEST) -> Compacted:
        """Return :func:`shorten_tools` of ``messages`` with this strategy's settings."""
        return shorten_tools(messages, settings=self.settings)
