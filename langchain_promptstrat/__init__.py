"""Prompt strategies for long LangChain and LangGraph agent runs.

Applied just before each model call, they shorten and drop old tool calls (keeping the
provider's prompt cache hitting), deliver consume-once inbox notices, and aim at token
budgets, without ever changing the stored conversation.
"""

from typing import TYPE_CHECKING, Any

from langchain_promptstrat.adapters.langgraph import make_inbox_node, pre_model_hook
from langchain_promptstrat.adapters.runnable import PromptStrategy
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
from langchain_promptstrat.inbox_backends import InboxBackend, InboxProvider
from langchain_promptstrat.inbox_postgres import PostgresInbox, PostgresInboxes
from langchain_promptstrat.inbox_store import DirectoryInbox, inbox_dir, inbox_removed_dir, post_to_inbox, request_abort
from langchain_promptstrat.messages import check_tool_pairs
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
from langchain_promptstrat.strategies.summary import Summary
from langchain_promptstrat.strategies.tool_results import ToolResults
from langchain_promptstrat.tokens import TokenCounter, as_token_counter
from langchain_promptstrat.truncation import shorten_string, truncate_string

if TYPE_CHECKING:  # imported on first use at run time (see __getattr__): it needs the optional langchain package
    from langchain_promptstrat.adapters.middleware import PromptStrategyMiddleware

__all__ = [
    "DEFAULT_CEILING",
    "Ceiling",
    "ContextWindowError",
    "resolve_ceiling",
    "Compacted",
    "CompactionLadder",
    "ConfigError",
    "DEFAULT_STRATEGIES",
    "DirectoryInbox",
    "Inbox",
    "InboxAborted",
    "InboxBackend",
    "InboxError",
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
    "TokenCounter",
    "ToolResults",
    "UnknownStrategyError",
    "as_token_counter",
    "available_strategies",
    "check_tool_pairs",
    "get_strategy",
    "inbox_dir",
    "inbox_removed_dir",
    "is_compaction_notice",
    "make_inbox_node",
    "post_to_inbox",
    "pre_model_hook",
    "prepare_prompt",
    "register_strategy",
    "request_abort",
    "shorten_string",
    "truncate_string",
    "unregister_strategy",
]


if not TYPE_CHECKING:  # checkers see the import above, and no catch-all that would hide a misspelt name

    def __getattr__(name: str) -> Any:
        """Import PromptStrategyMiddleware on first use: it needs the optional ``langchain`` package."""
        if name == "PromptStrategyMiddleware":
            from langchain_promptstrat.adapters.middleware import PromptStrategyMiddleware

            return PromptStrategyMiddleware
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
