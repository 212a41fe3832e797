"""Prompt strategies for long LangChain and LangGraph agent runs.

Applied just before each model call, they shorten and drop old tool calls (keeping the
provider's prompt cache hitting), deliver consume-once inbox notices, and aim at token
budgets, without ever changing the stored conversation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_promptstrat.adapters.langgraph import make_inbox_node, pre_model_hook
    from langchain_promptstrat.strategy import PromptStrategy
    from langchain_promptstrat.ceiling import DEFAULT_CEILING, Ceiling, resolve_ceiling
    from langchain_promptstrat.errors import (
        ConfigError,
        ContextWindowError,
        InboxAborted,
        InboxError,
        InvalidMessagesError,
        PromptStratError,
        UnknownStrategyError,
    )
    from langchain_promptstrat.inbox.contract import InboxBackend, InboxProvider
    from langchain_promptstrat.inbox.directory import DirectoryInbox
    from langchain_promptstrat.inbox.paths import inbox_dir, inbox_removed_dir
    from langchain_promptstrat.inbox.postgres import PostgresInbox, PostgresInboxes
    from langchain_promptstrat.inbox.posting import post_to_inbox, request_abort
    from langchain_promptstrat.messages import check_tool_pairs
    from langchain_promptstrat.pickup import InboxPickup, inbox_pickup
    from langchain_promptstrat.registry import (
        DEFAULT_STRATEGIES,
        available_strategies,
        get_strategy,
        prepare_prompt,
        register_strategy,
        unregister_strategy,
    )
    from langchain_promptstrat.report import Compacted, StrategyReport
    from langchain_promptstrat.settings import Settings
    from langchain_promptstrat.strategies.epoch import ShortenToolsEpoch, ShortenToolsEpochIncrement, is_compaction_notice
    from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
    from langchain_promptstrat.strategies.inbox import Inbox
    from langchain_promptstrat.strategies.ladder import CompactionLadder
    from langchain_promptstrat.strategies.none import NoStrategy
    from langchain_promptstrat.strategies.shorten_tools import ShortenTools
    from langchain_promptstrat.strategies.sliding_window import SlidingWindow
    from langchain_promptstrat.strategies.summary import Summary, SummaryFailedWarning
    from langchain_promptstrat.strategies.tool_results import ToolResults
    from langchain_promptstrat.tokens import TokenCounter, as_token_counter
    from langchain_promptstrat.truncation import shorten_string, truncate_string
    from langchain_promptstrat.adapters.middleware import PromptStrategyMiddleware

__all__ = [
    "Ceiling",
    "Compacted",
    "CompactionLadder",
    "ConfigError",
    "ContextWindowError",
    "DEFAULT_CEILING",
    "DEFAULT_STRATEGIES",
    "DirectoryInbox",
    "Inbox",
    "InboxAborted",
    "InboxBackend",
    "InboxError",
    "InboxPickup",
    "InboxProvider",
    "InvalidMessagesError",
    "NoStrategy",
    "PostgresInbox",
    "PostgresInboxes",
    "PromptStratError",
    "PromptStrategy",
    "PromptStrategyMiddleware",
    "Settings",
    "ShortenTools",
    "ShortenToolsEpoch",
    "ShortenToolsEpochIncrement",
    "ShortenToolsEpochStable",
    "SlidingWindow",
    "StrategyReport",
    "Summary",
    "SummaryFailedWarning",
    "TokenCounter",
    "ToolResults",
    "UnknownStrategyError",
    "as_token_counter",
    "available_strategies",
    "check_tool_pairs",
    "get_strategy",
    "inbox_dir",
    "inbox_pickup",
    "inbox_removed_dir",
    "is_compaction_notice",
    "make_inbox_node",
    "post_to_inbox",
    "pre_model_hook",
    "prepare_prompt",
    "register_strategy",
    "request_abort",
    "resolve_ceiling",
    "shorten_string",
    "truncate_string",
    "unregister_strategy",
]

_EXPORTS: dict[str, str] = {
    "Ceiling": "langchain_promptstrat.ceiling",
    "ContextWindowError": "langchain_promptstrat.errors",
    "DEFAULT_CEILING": "langchain_promptstrat.ceiling",
    "resolve_ceiling": "langchain_promptstrat.ceiling",
    "Compacted": "langchain_promptstrat.report",
    "CompactionLadder": "langchain_promptstrat.strategies.ladder",
    "ConfigError": "langchain_promptstrat.errors",
    "DEFAULT_STRATEGIES": "langchain_promptstrat.registry",
    "DirectoryInbox": "langchain_promptstrat.inbox.directory",
    "Inbox": "langchain_promptstrat.strategies.inbox",
    "InboxAborted": "langchain_promptstrat.errors",
    "InboxBackend": "langchain_promptstrat.inbox.contract",
    "InboxError": "langchain_promptstrat.errors",
    "InboxPickup": "langchain_promptstrat.pickup",
    "InboxProvider": "langchain_promptstrat.inbox.contract",
    "InvalidMessagesError": "langchain_promptstrat.errors",
    "NoStrategy": "langchain_promptstrat.strategies.none",
    "PostgresInbox": "langchain_promptstrat.inbox.postgres",
    "PostgresInboxes": "langchain_promptstrat.inbox.postgres",
    "PromptStratError": "langchain_promptstrat.errors",
    "PromptStrategy": "langchain_promptstrat.strategy",
    "PromptStrategyMiddleware": "langchain_promptstrat.adapters.middleware",
    "Settings": "langchain_promptstrat.settings",
    "ShortenTools": "langchain_promptstrat.strategies.shorten_tools",
    "ShortenToolsEpoch": "langchain_promptstrat.strategies.epoch",
    "ShortenToolsEpochIncrement": "langchain_promptstrat.strategies.epoch",
    "ShortenToolsEpochStable": "langchain_promptstrat.strategies.epoch_stable",
    "SlidingWindow": "langchain_promptstrat.strategies.sliding_window",
    "StrategyReport": "langchain_promptstrat.report",
    "Summary": "langchain_promptstrat.strategies.summary",
    "SummaryFailedWarning": "langchain_promptstrat.strategies.summary",
    "TokenCounter": "langchain_promptstrat.tokens",
    "ToolResults": "langchain_promptstrat.strategies.tool_results",
    "UnknownStrategyError": "langchain_promptstrat.errors",
    "as_token_counter": "langchain_promptstrat.tokens",
    "available_strategies": "langchain_promptstrat.registry",
    "check_tool_pairs": "langchain_promptstrat.messages",
    "get_strategy": "langchain_promptstrat.registry",
    "inbox_dir": "langchain_promptstrat.inbox.paths",
    "inbox_pickup": "langchain_promptstrat.pickup",
    "inbox_removed_dir": "langchain_promptstrat.inbox.paths",
    "is_compaction_notice": "langchain_promptstrat.strategies.epoch",
    "make_inbox_node": "langchain_promptstrat.adapters.langgraph",
    "post_to_inbox": "langchain_promptstrat.inbox.posting",
    "pre_model_hook": "langchain_promptstrat.adapters.langgraph",
    "prepare_prompt": "langchain_promptstrat.registry",
    "register_strategy": "langchain_promptstrat.registry",
    "request_abort": "langchain_promptstrat.inbox.posting",
    "shorten_string": "langchain_promptstrat.truncation",
    "truncate_string": "langchain_promptstrat.truncation",
    "unregister_strategy": "langchain_promptstrat.registry",
}
"""The module each public name comes from. Imported on first use, so ``import
langchain_promptstrat`` (and ``promptstrat --help``) does not pay for LangGraph and
LangChain; ``PromptStrategyMiddleware`` also needs the optional ``langchain`` package."""


if not TYPE_CHECKING:  # checkers see the imports above, and no catch-all that would hide a misspelt name

    def __getattr__(name: str) -> Any:
        """Import a public name from its module on first use, and keep it."""
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*globals(), *_EXPORTS])
