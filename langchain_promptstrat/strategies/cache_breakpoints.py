"""cache_breakpoints: Anthropic ``cache_control`` breakpoints where the strategy knows the prompt is
stable.

Anthropic caches only at breakpoints (4 per request), each reaching back 20 blocks. An epoch
advance rewrites the prompt from its compaction edge on, out of a tail breakpoint's reach, so
four go on: the **system** message, the **previous compaction edge** (read by the first call
after an advance), the **current edge** (written once per epoch for the next advance) and the
**tail**. The edges come from the report (``compaction_edge``, ``epoch_size``, ``drop_edge``)
or, for the ladder's ``tool_results``, are its last two placeholders. A mark goes on the last
content block of the tool result at that forward position (an empty message passes it to the
nearest earlier one). Beside ``AnthropicPromptCachingMiddleware`` (system, last tool, tail)
the middleware keeps one edge mark: the previous edge right after an advance, else the current one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage

from langchain_promptstrat.cache_rules import ANTHROPIC_MAX_BREAKPOINTS
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.registry import resolve_strategies
from langchain_promptstrat.report import Compacted, StrategyReport, make_report
from langchain_promptstrat.settings import Settings, settings_with_options
from langchain_promptstrat.strategies.inbox import Inbox
from langchain_promptstrat.strategies.ladder_machinery.rungs import PLACEHOLDER_KIND, kind_of
from langchain_promptstrat.strategy import NO_REQUEST, PromptRequest, PromptStrategy

DEFAULT_CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}


def compaction_edge_ids(
    before: Sequence[BaseMessage], report: StrategyReport
) -> tuple[str | None, str | None]:
    """Return the tool call ids at the previous and current compaction edges the report names, or
    None for each missing.

    Forward position ``f`` is the ``f``-th tool output of ``before``. The previous edge is
    ``previous_compaction_edge`` when reported (edges moved by a ceiling), else the current
    one minus ``epoch_size``, and only past the drop edge.
    """
    details = report.details
    edge, size, drop = (
        details.get("compaction_edge"),
        details.get("epoch_size"),
        details.get("drop_edge") or 0,
    )
    if not isinstance(edge, int) or edge <= 0:
        return None, None
    outputs = [m.tool_call_id for m in before if isinstance(m, ToolMessage)]
    current = outputs[edge - 1] if edge <= len(outputs) else None
    previous_edge = edge - size if isinstance(size, int) and size > 0 else 0
    if isinstance(
        details.get("previous_compaction_edge"), int
    ):  # edges moved by a context ceiling, not by epochs
        previous_edge = details["previous_compaction_edge"]
    previous = outputs[previous_edge - 1] if drop < previous_edge <= len(outputs) else None
    return previous, current


def mark_cache_control(
    message: BaseMessage, cache_control: dict[str, Any] | None = None
) -> BaseMessage | None:
    """Return a copy of ``message`` with ``cache_control`` on its last content block (a string
    becomes one ``text`` block), or None when it has no content."""
    control = dict(cache_control or DEFAULT_CACHE_CONTROL)
    if not message.content:
        return None
    blocks: list[Any] = (
        [message.content] if isinstance(message.content, str) else list(message.content)
    )
    last = blocks[-1]
    blocks[-1] = (
        {**last, "cache_control": control}
        if isinstance(last, dict)
        else {"type": "text", "text": last, "cache_control": control}
    )
    return message.model_copy(update={"content": blocks})


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

    By priority: the tail, the current edge, the previous edge (before the current one
    right after an advance, which reads it), the system message. Edges are tool call ids.
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
        target = next(
            (i for i in range(index, -1, -1) if out[i].content), None
        )  # an empty message passes its mark back
        if target is not None and target not in chosen and len(chosen) < limit:
            chosen.append(target)
    for index in chosen:
        out[index] = mark_cache_control(out[index], cache_control) or out[index]
    return out, sorted(chosen)


class CacheBreakpoints(PromptStrategy):
    """Runs ``strategies`` (default ``shorten_tools_epoch_stable``), then marks Anthropic cache
    breakpoints at their stable edges.

    ``CacheBreakpoints() | ChatAnthropic(...)``, for Anthropic models only. The report adds
    ``breakpoints`` (indices marked), ``previous_edge_id`` and ``current_edge_id``.
    """

    strategy_name = "cache_breakpoints"

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
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 0 <= limit <= ANTHROPIC_MAX_BREAKPOINTS
        ):
            raise ConfigError(
                f"limit must be an integer from 0 to {ANTHROPIC_MAX_BREAKPOINTS}, got {limit!r}"
            )
        self.strategies = resolve_strategies(strategies, settings=settings)
        self.system, self.tail, self.limit, self.cache_control = system, tail, limit, cache_control
        self.label = name or f"{','.join(s.strategy_name for s in self.strategies)}+breakpoints"

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        """Return the label (the wrapped strategies' names and ``+breakpoints``)."""
        return super().get_name(suffix, name=name or self.label)

    def apply(self, messages: list[BaseMessage], request: PromptRequest = NO_REQUEST) -> Compacted:
        """Return the wrapped strategies' prompt for ``request`` with breakpoints marked at the last
        reported compaction edges."""
        current = list(messages)
        delivered: list[BaseMessage] = []
        previous_id = current_id = None
        advanced = False
        for strategy in self.strategies:
            result = strategy.apply(current, request)
            delivered += result.delivered
            if "compaction_edge" in result.report.details:
                previous_id, current_id = compaction_edge_ids(current, result.report)
                advanced = bool(result.report.details.get("boundary_moved"))
            # the ladder's tool_results clears oldest first: its last two placeholders are the edges
            elif result.report.changed:
                cleared = [
                    m.tool_call_id
                    for m in result.messages
                    if isinstance(m, ToolMessage) and kind_of(m) == PLACEHOLDER_KIND
                ]
                if cleared:
                    previous_id, current_id = (
                        (cleared[-2] if len(cleared) > 1 else None),
                        cleared[-1],
                    )
            current = result.messages
        out, marked = mark_breakpoints(
            current,
            previous_edge=previous_id,
            current_edge=current_id,
            system=self.system,
            tail=self.tail,
            limit=self.limit,
            advanced=advanced,
            cache_control=self.cache_control,
        )
        report = make_report(
            self.strategy_name,
            messages,
            out,
            breakpoints=marked,
            previous_edge_id=previous_id,
            current_edge_id=current_id,
        )
        return Compacted(out, report, delivered)

    def __repr__(self) -> str:
        return f"CacheBreakpoints({self.label!r})"


def wrap_for_breakpoints(
    strategies: Sequence[PromptStrategy],
    *,
    system: bool = True,
    tail: bool = True,
    limit: int = ANTHROPIC_MAX_BREAKPOINTS,
) -> list[PromptStrategy]:
    """Return ``strategies`` with those before the first inbox in one :class:`CacheBreakpoints`: a
    one-off notice never moves the tail mark."""
    split = next((i for i, s in enumerate(strategies) if isinstance(s, Inbox)), len(strategies))
    if split == 0:
        return list(strategies)
    head = CacheBreakpoints(list(strategies[:split]), system=system, tail=tail, limit=limit)
    return [head, *strategies[split:]]


def is_anthropic_model(model: Any) -> bool:
    """Return whether ``model`` is a LangChain Anthropic chat model (``ChatAnthropic`` or a
    subclass), without importing it."""
    return any(cls.__name__ == "ChatAnthropic" for cls in type(model).__mro__)
