"""Built-in strategies, one module per strategy, named like its registry key."""

from __future__ import annotations

BUILTIN_STRATEGIES: dict[str, str] = {
    "none": "langchain_promptstrat.strategies.none:NoStrategy",
    "shorten_tools": "langchain_promptstrat.strategies.shorten_tools:ShortenTools",
    "shorten_tools_epoch": "langchain_promptstrat.strategies.epoch:ShortenToolsEpoch",
    "shorten_tools_epoch_increment": "langchain_promptstrat.strategies.epoch:ShortenToolsEpochIncrement",
    "shorten_tools_epoch_stable": "langchain_promptstrat.strategies.epoch_stable:ShortenToolsEpochStable",
    "inbox": "langchain_promptstrat.strategies.inbox:Inbox",
    "tool_results": "langchain_promptstrat.strategies.tool_results:ToolResults",
    "sliding_window": "langchain_promptstrat.strategies.sliding_window:SlidingWindow",
    "summary": "langchain_promptstrat.strategies.summary:Summary",
}
"""Registry key -> ``module:attribute`` of each built-in strategy class, imported on first use."""
