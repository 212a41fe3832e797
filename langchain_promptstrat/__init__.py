"""Prompt strategies for long LangChain and LangGraph agent runs.

Applied just before each model call, they shorten and drop old tool calls (keeping the
provider's prompt cache hitting), deliver consume-once inbox notices, and aim at token
budgets, without ever changing the stored conversation.

Every public name is listed once, in the ``if TYPE_CHECKING:`` block below (``name as
name``, which marks it exported for mypy and pyright). At run time nothing is imported when
the package is: the first use of a name reads that block (:func:`_public_names`) and imports
the name from its module, so ``import langchain_promptstrat`` and ``promptstrat --help`` do
not pay for LangGraph and LangChain; ``PromptStrategyMiddleware`` also needs the optional
``langchain`` package. ``__all__`` and ``dir()`` come from the same block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the public names, each once: checkers read these imports; at run time __getattr__ reads them
    from langchain_promptstrat.adapters.langgraph import (
        make_inbox_node as make_inbox_node,
        pre_model_hook as pre_model_hook,
        read_back_tool as read_back_tool,
    )
    from langchain_promptstrat.adapters.middleware import PromptStrategyMiddleware as PromptStrategyMiddleware
    from langchain_promptstrat.ceiling import (
        DEFAULT_CEILING as DEFAULT_CEILING,
        Ceiling as Ceiling,
        resolve_ceiling as resolve_ceiling,
    )
    from langchain_promptstrat.errors import (
        ConfigError as ConfigError,
        ContextWindowError as ContextWindowError,
        InboxAborted as InboxAborted,
        InboxError as InboxError,
        InvalidMessagesError as InvalidMessagesError,
        PromptStratError as PromptStratError,
        UnknownStrategyError as UnknownStrategyError,
    )
    from langchain_promptstrat.inbox.contract import (
        InboxBackend as InboxBackend,
        InboxProvider as InboxProvider,
    )
    from langchain_promptstrat.inbox.directory import (
        DirectoryInbox as DirectoryInbox,
        post_to_inbox as post_to_inbox,
        request_abort as request_abort,
    )
    from langchain_promptstrat.inbox.paths import (
        inbox_dir as inbox_dir,
        inbox_removed_dir as inbox_removed_dir,
    )
    from langchain_promptstrat.inbox.postgres import (
        PostgresInbox as PostgresInbox,
        PostgresInboxes as PostgresInboxes,
    )
    from langchain_promptstrat.messages import check_tool_pairs as check_tool_pairs
    from langchain_promptstrat.messages import read_back as read_back
    from langchain_promptstrat.pickup import InboxPickup as InboxPickup
    from langchain_promptstrat.pickup import inbox_pickup as inbox_pickup
    from langchain_promptstrat.registry import prepare_prompt as prepare_prompt
    from langchain_promptstrat.report import (
        Compacted as Compacted,
        StrategyReport as StrategyReport,
    )
    from langchain_promptstrat.settings import Settings as Settings
    from langchain_promptstrat.strategies.epoch import (
        ShortenToolsEpoch as ShortenToolsEpoch,
        ShortenToolsEpochIncrement as ShortenToolsEpochIncrement,
    )
    from langchain_promptstrat.strategies.epoch_machinery.notice import is_compaction_notice as is_compaction_notice
    from langchain_promptstrat.strategies.dedupe_outputs import DedupeOutputs as DedupeOutputs
    from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable as ShortenToolsEpochStable
    from langchain_promptstrat.strategies.inbox import Inbox as Inbox
    from langchain_promptstrat.strategies.ladder import CompactionLadder as CompactionLadder
    from langchain_promptstrat.strategies.none import NoStrategy as NoStrategy
    from langchain_promptstrat.strategies.shorten_tools import ShortenTools as ShortenTools
    from langchain_promptstrat.strategies.sliding_window import SlidingWindow as SlidingWindow
    from langchain_promptstrat.strategies.summary import (
        Summary as Summary,
        SummaryFailedWarning as SummaryFailedWarning,
    )
    from langchain_promptstrat.strategies.tool_results import ToolResults as ToolResults
    from langchain_promptstrat.strategy import PromptStrategy as PromptStrategy
    from langchain_promptstrat.strategy_names import (
        DEFAULT_STRATEGIES as DEFAULT_STRATEGIES,
        available_strategies as available_strategies,
        get_strategy as get_strategy,
        register_strategy as register_strategy,
        unregister_strategy as unregister_strategy,
    )
    from langchain_promptstrat.tokens import (
        TokenCounter as TokenCounter,
        as_token_counter as as_token_counter,
    )
    from langchain_promptstrat.truncation import (
        shorten_string as shorten_string,
        truncate_string as truncate_string,
    )


_names: dict[str, str] | None = None


def _public_names() -> dict[str, str]:
    """Return each public name -> its module, read from this module's ``if TYPE_CHECKING:`` block."""
    global _names
    if _names is None:
        import ast

        get_source = getattr(__spec__.loader if __spec__ else None, "get_source", None)
        source = get_source(__name__) if get_source is not None else None
        if source is None:
            raise ImportError("langchain_promptstrat's public names are read from its source, which is not installed")
        block = next(
            node for node in ast.parse(source).body
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        )
        _names = {
            alias.asname or alias.name: node.module
            for node in block.body
            if isinstance(node, ast.ImportFrom) and node.module is not None
            for alias in node.names
        }
    return _names


if not TYPE_CHECKING:  # checkers see the imports above, and no catch-all that would hide a misspelt name

    def __getattr__(name: str) -> Any:
        """Import a public name from its module on first use, and keep it; ``__all__`` is every public name."""
        if name == "__all__":
            return sorted(_public_names())
        module = _public_names().get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_public_names(), "__all__"})
