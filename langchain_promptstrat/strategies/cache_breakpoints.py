"""cache_breakpoints: Anthropic ``cache_control`` breakpoints where the strategy knows the prompt is stable.

Anthropic caches a prompt only at breakpoints (at most 4 per request), and a breakpoint
finds an earlier entry only at its own position or up to 20 blocks before it. The usual
placement (``AnthropicPromptCachingMiddleware``: system, last tool, last block) serves an
agent loop well while the prompt only grows at its tail, but an epoch advance of
``shorten_tools_epoch_stable`` rewrites the prompt from its compaction edge on, dozens of
steps behind the tail: the tail's entry no longer matches and the edge is out of the
tail breakpoint's reach, so the whole prompt is written again (1.25x) although everything
before the edge is unchanged.

The strategy's report says where its prefix is stable (``compaction_edge``: forward
positions at or below it are frozen until the next advance; ``epoch_size``: how far an
advance moves it; ``drop_edge``: the front). Four breakpoints are placed:

* the **system** message (its prefix never changes);
* the **previous compaction edge** (``compaction_edge - epoch_size``), which the previous
  epoch wrote as its current edge: on the first call after an advance it reads
  everything up to there;
* the **current compaction edge**, written once per epoch so the next advance can read it;
* the **tail** (the last message), read by the next call of the same epoch within the
  20-block lookback.

The token ladder (``tool_results``) reports no epoch edges; its edge is its last placeholder
(it clears the oldest outputs first, so the prompt up to there holds until it clears more),
and the placeholder before that one stands for the previous edge.

An edge breakpoint sits on the tool result at the reported forward position itself, not at
the end of its step before the notice: when the edge splits a parallel step, the step's
later results are shortened at the next advance, so a breakpoint after them would never
match again.

Composing with ``AnthropicPromptCachingMiddleware`` (which marks system, last tool and the
tail itself) leaves one breakpoint to this module: it goes on the previous edge on the first
call after an advance (the one that reads it) and on the current edge otherwise (the calls
that write it), so no request carries more than 4.

Marking copies the message with its content as a list of blocks and ``cache_control`` on
the last one (a string becomes one ``text`` block); langchain-anthropic moves a mark inside a
tool message's content to its ``tool_result`` block. A message with empty content (an
assistant message holding only tool calls) cannot carry a mark, so the breakpoint moves to
the nearest earlier message that can.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage

from langchain_promptstrat.strategy import PromptStrategy, request_for
from langchain_promptstrat.cache_rules import ANTHROPIC_MAX_BREAKPOINTS
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.strategy_names import resolve_strategies
from langchain_promptstrat.report import Compacted, StrategyReport, make_report
from langchain_promptstrat.settings import Settings, settings_with_options
from langchain_promptstrat.strategies.ladder_machinery.vocabulary import PLACEHOLDER_KIND, kind_of

__all__ = [
    "DEFAULT_CACHE_CONTROL",
    "STRATEGY_NAME",
    "CacheBreakpoints",
    "clearing_edge_ids",
    "compaction_edge_ids",
    "is_anthropic_model",
    "mark_breakpoints",
    "mark_cache_control",
    "wrap_for_breakpoints",
]

STRATEGY_NAME = "cache_breakpoints"
DEFAULT_CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}


def compaction_edge_ids(before: Sequence[BaseMessage], report: StrategyReport) -> tuple[str | None, str | None]:
    """Return the tool call ids at the previous and current compaction edges the report names, or None for each missing.

    Forward position ``f`` is the ``f``-th tool output of ``before`` (the messages the
    strategy received), as the epoch strategies count. The previous edge is the report's
    ``previous_compaction_edge`` when it has one (the bounded default, whose edges also move
    at the ceiling), else the current one minus ``epoch_size``; only when it is still behind
    the current edge and past the drop edge.
    """
    details = report.details
    edge, size, drop = details.get("compaction_edge"), details.get("epoch_size"), details.get("drop_edge") or 0
    if not isinstance(edge, int) or edge <= 0:
        return None, None
    outputs = [m.tool_call_id for m in before if isinstance(m, ToolMessage)]
    current = outputs[edge - 1] if edge <= len(outputs) else None
    previous_edge = edge - size if isinstance(size, int) and size > 0 else 0
    if isinstance(details.get("previous_compaction_edge"), int):  # edges moved by a context ceiling, not by epochs
        previous_edge = details["previous_compaction_edge"]
    previous = outputs[previous_edge - 1] if drop < previous_edge <= len(outputs) else None
    return previous, current


def clearing_edge_ids(messages: Sequence[BaseMessage]) -> tuple[str | None, str | None]:
    """Return the tool call ids of the last two placeholders the ladder left (``tool_results``), or None for each missing.

    The ladder clears the oldest large outputs first, so everything up to its last
    placeholder stays unchanged until it clears more, and the next clearing lands after
    it: a breakpoint there is read by the next call.
    """
    ids = [m.tool_call_id for m in messages if isinstance(m, ToolMessage) and kind_of(m) == PLACEHOLDER_KIND]
    return (ids[-2] if len(ids) > 1 else None), (ids[-1] if ids else None)


def mark_cache_control(message: BaseMessage, cache_control: dict[str, Any] | None = None) -> BaseMessage | None:
    """Return a copy of ``message`` with ``cache_control`` on its last content block, or None when it has no content to mark."""
    control = dict(cache_control or DEFAULT_CACHE_CONTROL)
    content = message.content
    if isinstance(content, str):
        if not content:
            return None
        blocks: list[Any] = [{"type": "text", "text": content, "cache_control": control}]
    elif isinstance(content, list) and content:
        blocks = list(content)
        last = blocks[-1]
        blocks[-1] = {**last, "cache_control": control} if isinstance(last, dict) else {"type": "text", "text": last, "cache_control": control}
    else:
        return None
    return message.model_copy(update={"content": blocks})


def _markable_at_or_before(messages: Sequence[BaseMessage], index: int, floor: int = 0) -> int | None:
    for i in range(index, floor - 1, -1):
        content = messages[i].content
        if (isinstance(content, str) and content) or (isinstance(content, list) and content):
            return i
    return None


def mark_breakpoints(
    messages: Sequence[BaseMessage],
    *,
    previous_edge: str | None = None,
    current_edge: str | None = None,
    system: bool = True,
    tail: bool = True,
    limit: int = ANTHROPIC_MAX_BREAKPOINTS,
    advanced: bool = False,
    cache_control: dict[str, Any] | None = None,
) -> tuple[list[BaseMessage], list[int]]:
    """Return ``messages`` with at most ``limit`` breakpoints marked, and the marked indices.

    Candidates by priority: the tail, the current edge, the previous edge, the system
    message; on the call right after an advance (``advanced``) the previous edge comes
    before the current one, since that call reads it. Edges are tool call ids, found
    among the tool messages of ``messages``. The input list is not changed.
    """
    out = list(messages)
    by_id = {m.tool_call_id: i for i, m in enumerate(out) if isinstance(m, ToolMessage)}
    wanted: list[int] = []
    if tail and out:
        wanted.append(len(out) - 1)
    edges = [previous_edge, current_edge] if advanced else [current_edge, previous_edge]
    wanted += [by_id[e] for e in edges if e is not None and e in by_id]
    if system and out and isinstance(out[0], SystemMessage):
        wanted.append(0)
    chosen: list[int] = []
    for index in wanted:
        target = _markable_at_or_before(out, index)
        if target is not None and target not in chosen and len(chosen) < limit:
            chosen.append(target)
    for index in chosen:
        marked = mark_cache_control(out[index], cache_control)
        if marked is not None:
            out[index] = marked
    return out, sorted(chosen)


class CacheBreakpoints(PromptStrategy):
    """Runs ``strategies`` (default ``shorten_tools_epoch_stable``), then marks Anthropic cache breakpoints at their stable edges.

    A ``Runnable`` like any strategy: ``CacheBreakpoints() | ChatAnthropic(...)``. Use it
    with Anthropic models only: other providers do not know ``cache_control``.
    ``system``/``tail`` mark those two (leave them off when something else marks them,
    e.g. ``AnthropicPromptCachingMiddleware``); ``limit`` caps the breakpoints this
    strategy places (at most 4 per request in total). The report adds ``breakpoints``
    (indices marked), ``previous_edge_id`` and ``current_edge_id``.
    """

    strategy_name = STRATEGY_NAME
    carries_replay = True
    """It hands a carried replay on to the strategies it wraps that carry one."""

    def __init__(
        self,
        strategies: Any = "shorten_tools_epoch_stable",
        *,
        system: bool = True,
        tail: bool = True,
        limit: int = ANTHROPIC_MAX_BREAKPOINTS,
        cache_control: dict[str, Any] | None = None,
        name: str | None = None,
        settings: Settings | None = None,
        **unknown: NoReturn,
    ) -> None:
        """Build the wrapper.

        Args:
            strategies: What runs first, in any form ``prepare_prompt`` takes (a name, a
                comma-separated string, strategies, callables or a list of them).
            system: Mark the system message.
            tail: Mark the last message.
            limit: The most breakpoints this strategy places (0 to 4; Anthropic takes at most
                4 per request in total).
            cache_control: The mark to place (default ``{"type": "ephemeral"}``).
            name: The run name (default: the wrapped strategies' names and ``+breakpoints``).
            settings: Thresholds for the strategies given by name (default: read from the
                environment now).

        Raises:
            ConfigError: A bad ``limit``, or a keyword that is not one of these options.
        """
        super().__init__(settings_with_options(type(self), settings, unknown))
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= ANTHROPIC_MAX_BREAKPOINTS:
            raise ConfigError(f"limit must be an integer from 0 to {ANTHROPIC_MAX_BREAKPOINTS}, got {limit!r}")
        self.strategies = resolve_strategies(strategies, settings=settings)
        self.system, self.tail, self.limit, self.cache_control = system, tail, limit, cache_control
        self.label = name or f"{','.join(s.strategy_name for s in self.strategies)}+breakpoints"

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        """Return the label (the wrapped strategies' names and ``+breakpoints``)."""
        return super().get_name(suffix, name=name or self.label)

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return the wrapped strategies' prompt with breakpoints marked at the last reported compaction edges."""
        return self._compact(messages, save_file, {})

    def compact_for_request(self, messages: Sequence[BaseMessage], **request: Any) -> Compacted:
        """Return :meth:`compact`'s prompt, the wrapped strategies bounded by a ceiling given ``request`` (``model``, ``tools``, ``system``, ``max_tokens``) as the adapters give it."""
        return self._compact(list(messages), None, request)

    def _compact(self, messages: list[BaseMessage], save_file: str | os.PathLike[str] | None, request: dict[str, Any]) -> Compacted:
        current = list(messages)
        previous_id = current_id = None
        advanced = False
        for strategy in self.strategies:
            bounded: Callable[..., Compacted] | None = getattr(strategy, "compact_for_request", None)
            if request and callable(bounded):
                result = bounded(current, **request_for(strategy, request))
            else:
                result = strategy.compact(current, save_file=save_file if strategy.uses_save_file else None)
            if "compaction_edge" in result.report.details:
                previous_id, current_id = compaction_edge_ids(current, result.report)
                advanced = bool(result.report.details.get("boundary_moved"))
            elif result.report.changed:
                cleared = clearing_edge_ids(result.messages)
                if cleared != (None, None):
                    previous_id, current_id = cleared
            current = result.messages
        out, marked = mark_breakpoints(
            current, previous_edge=previous_id, current_edge=current_id, system=self.system, tail=self.tail,
            limit=self.limit, advanced=advanced, cache_control=self.cache_control,
        )
        return Compacted(out, make_report(
            STRATEGY_NAME, messages, out, breakpoints=marked, previous_edge_id=previous_id, current_edge_id=current_id,
        ))

    def __repr__(self) -> str:
        return f"CacheBreakpoints({self.label!r})"


def wrap_for_breakpoints(
    strategies: Sequence[PromptStrategy], *, system: bool = True, tail: bool = True, limit: int = ANTHROPIC_MAX_BREAKPOINTS
) -> list[PromptStrategy]:
    """Return ``strategies`` with those before the first inbox grouped into one :class:`CacheBreakpoints`.

    What the adapters use for ``cache_breakpoints=True``: the inbox keeps its place (its
    notices come after the marks, so the tail breakpoint sits on the last message of the
    conversation and a one-off notice never moves it).
    """
    split = next((i for i, s in enumerate(strategies) if s.uses_save_file), len(strategies))
    if split == 0:
        return list(strategies)
    head = CacheBreakpoints(list(strategies[:split]), system=system, tail=tail, limit=limit)
    return [head, *strategies[split:]]


def is_anthropic_model(model: Any) -> bool:
    """Return whether ``model`` is a LangChain Anthropic chat model (``ChatAnthropic`` or a subclass), without importing it."""
    return any(cls.__name__ == "ChatAnthropic" for cls in type(model).__mro__)
