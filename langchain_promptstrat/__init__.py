"""Prompt strategies for long LangChain and LangGraph agent runs.

Applied just before each model call, they shorten and drop old tool calls (keeping the
provider's prompt cache hitting), deliver consume-once inbox notices, and aim at token
budgets, without ever changing the stored conversation.

The public names are :data:`_PUBLIC` (module -> names), imported on first use so that
``import langchain_promptstrat`` and ``promptstrat --help`` do not load LangChain. The
``if TYPE_CHECKING:`` block says the same for mypy and pyright; ``tests/test_architecture.py``
checks that the two agree.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "adapters.langgraph": ("make_inbox_node", "pre_model_hook", "read_back_tool"),
    "adapters.middleware": (  # also needs the optional langchain package
        "CompactionMiddleware",
        "PromptStrategyMiddleware",
    ),
    "ceiling": ("DEFAULT_MAX_TOKENS", "Ceiling", "resolve_ceiling"),
    "errors": (
        "ConfigError",
        "ContextWindowError",
        "InboxAborted",
        "InboxError",
        "InvalidMessagesError",
        "PromptStratError",
        "UnknownStrategyError",
    ),
    "inbox.contract": ("InboxBackend", "InboxProvider"),
    "inbox.directory": ("DirectoryInbox", "post_to_inbox", "request_abort"),
    "inbox.paths": ("inbox_dir", "inbox_removed_dir"),
    "inbox.postgres": ("PostgresInbox", "PostgresInboxes"),
    "messages": ("check_tool_pairs", "read_back"),
    "pickup": ("InboxPickup", "inbox_pickup"),
    "registry": (
        "DEFAULT_STRATEGIES",
        "available_strategies",
        "get_strategy",
        "prepare_prompt",
        "register_strategy",
        "unregister_strategy",
    ),
    "report": ("Compacted", "StrategyReport"),
    "settings": ("Settings",),
    "strategies.dedupe_outputs": ("DedupeOutputs",),
    "strategies.epoch": ("ShortenToolsEpoch", "ShortenToolsEpochIncrement"),
    "strategies.epoch_machinery.notice": ("is_compaction_notice",),
    "strategies.epoch_stable": ("ShortenToolsEpochStable",),
    "strategies.inbox": ("Inbox",),
    "strategies.ladder": ("CompactionLadder",),
    "strategies.none": ("NoStrategy",),
    "strategies.shorten_tools": ("ShortenTools",),
    "strategies.sliding_window": ("SlidingWindow",),
    "strategies.summary": ("Summary", "SummaryFailedWarning"),
    "strategies.tool_results": ("ToolResults",),
    "strategy": ("PromptRequest", "PromptStrategy"),
    "tokens": ("TokenCounter", "as_token_counter"),
    "truncation": ("shorten_string", "truncate_string"),
}
"""Module (under this package) -> the public names it defines."""

_MODULE_OF = {name: f"{__name__}.{module}" for module, names in _PUBLIC.items() for name in names}

_RENAMED = {"DEFAULT_CEILING": "DEFAULT_MAX_TOKENS"}
"""Public names renamed for one spelling of the ceiling (old -> new): the old name still answers for
one release, with a ``DeprecationWarning``; not in ``__all__``."""

if TYPE_CHECKING:  # the same names for the checkers (``name as name`` marks each exported)
    from langchain_promptstrat.adapters.langgraph import (
        make_inbox_node as make_inbox_node,
    )
    from langchain_promptstrat.adapters.langgraph import (
        pre_model_hook as pre_model_hook,
    )
    from langchain_promptstrat.adapters.langgraph import (
        read_back_tool as read_back_tool,
    )
    from langchain_promptstrat.adapters.middleware import (
        CompactionMiddleware as CompactionMiddleware,
    )
    from langchain_promptstrat.adapters.middleware import (
        PromptStrategyMiddleware as PromptStrategyMiddleware,
    )
    from langchain_promptstrat.ceiling import (
        DEFAULT_MAX_TOKENS as DEFAULT_MAX_TOKENS,
    )
    from langchain_promptstrat.ceiling import (
        Ceiling as Ceiling,
    )
    from langchain_promptstrat.ceiling import (
        resolve_ceiling as resolve_ceiling,
    )
    from langchain_promptstrat.errors import (
        ConfigError as ConfigError,
    )
    from langchain_promptstrat.errors import (
        ContextWindowError as ContextWindowError,
    )
    from langchain_promptstrat.errors import (
        InboxAborted as InboxAborted,
    )
    from langchain_promptstrat.errors import (
        InboxError as InboxError,
    )
    from langchain_promptstrat.errors import (
        InvalidMessagesError as InvalidMessagesError,
    )
    from langchain_promptstrat.errors import (
        PromptStratError as PromptStratError,
    )
    from langchain_promptstrat.errors import (
        UnknownStrategyError as UnknownStrategyError,
    )
    from langchain_promptstrat.inbox.contract import (
        InboxBackend as InboxBackend,
    )
    from langchain_promptstrat.inbox.contract import (
        InboxProvider as InboxProvider,
    )
    from langchain_promptstrat.inbox.directory import (
        DirectoryInbox as DirectoryInbox,
    )
    from langchain_promptstrat.inbox.directory import (
        post_to_inbox as post_to_inbox,
    )
    from langchain_promptstrat.inbox.directory import (
        request_abort as request_abort,
    )
    from langchain_promptstrat.inbox.paths import (
        inbox_dir as inbox_dir,
    )
    from langchain_promptstrat.inbox.paths import (
        inbox_removed_dir as inbox_removed_dir,
    )
    from langchain_promptstrat.inbox.postgres import (
        PostgresInbox as PostgresInbox,
    )
    from langchain_promptstrat.inbox.postgres import (
        PostgresInboxes as PostgresInboxes,
    )
    from langchain_promptstrat.messages import (
        check_tool_pairs as check_tool_pairs,
    )
    from langchain_promptstrat.messages import (
        read_back as read_back,
    )
    from langchain_promptstrat.pickup import (
        InboxPickup as InboxPickup,
    )
    from langchain_promptstrat.pickup import (
        inbox_pickup as inbox_pickup,
    )
    from langchain_promptstrat.registry import (
        DEFAULT_STRATEGIES as DEFAULT_STRATEGIES,
    )
    from langchain_promptstrat.registry import (
        available_strategies as available_strategies,
    )
    from langchain_promptstrat.registry import (
        get_strategy as get_strategy,
    )
    from langchain_promptstrat.registry import (
        prepare_prompt as prepare_prompt,
    )
    from langchain_promptstrat.registry import (
        register_strategy as register_strategy,
    )
    from langchain_promptstrat.registry import (
        unregister_strategy as unregister_strategy,
    )
    from langchain_promptstrat.report import (
        Compacted as Compacted,
    )
    from langchain_promptstrat.report import (
        StrategyReport as StrategyReport,
    )
    from langchain_promptstrat.settings import Settings as Settings
    from langchain_promptstrat.strategies.dedupe_outputs import DedupeOutputs as DedupeOutputs
    from langchain_promptstrat.strategies.epoch import (
        ShortenToolsEpoch as ShortenToolsEpoch,
    )
    from langchain_promptstrat.strategies.epoch import (
        ShortenToolsEpochIncrement as ShortenToolsEpochIncrement,
    )
    from langchain_promptstrat.strategies.epoch_machinery.notice import (
        is_compaction_notice as is_compaction_notice,
    )
    from langchain_promptstrat.strategies.epoch_stable import (
        ShortenToolsEpochStable as ShortenToolsEpochStable,
    )
    from langchain_promptstrat.strategies.inbox import Inbox as Inbox
    from langchain_promptstrat.strategies.ladder import CompactionLadder as CompactionLadder
    from langchain_promptstrat.strategies.none import NoStrategy as NoStrategy
    from langchain_promptstrat.strategies.shorten_tools import ShortenTools as ShortenTools
    from langchain_promptstrat.strategies.sliding_window import SlidingWindow as SlidingWindow
    from langchain_promptstrat.strategies.summary import (
        Summary as Summary,
    )
    from langchain_promptstrat.strategies.summary import (
        SummaryFailedWarning as SummaryFailedWarning,
    )
    from langchain_promptstrat.strategies.tool_results import ToolResults as ToolResults
    from langchain_promptstrat.strategy import PromptRequest as PromptRequest
    from langchain_promptstrat.strategy import PromptStrategy as PromptStrategy
    from langchain_promptstrat.tokens import (
        TokenCounter as TokenCounter,
    )
    from langchain_promptstrat.tokens import (
        as_token_counter as as_token_counter,
    )
    from langchain_promptstrat.truncation import (
        shorten_string as shorten_string,
    )
    from langchain_promptstrat.truncation import (
        truncate_string as truncate_string,
    )
else:  # checkers see the imports above, and no catch-all that would hide a misspelt name
    __all__ = sorted(_MODULE_OF)

    def __getattr__(name: str) -> Any:
        """Import a public name from its module on first use, and keep it."""
        if name in _RENAMED:
            from langchain_promptstrat.errors import warn_renamed

            warn_renamed(name, _RENAMED[name])
            return __getattr__(_RENAMED[name])
        if name not in _MODULE_OF:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = globals()[name] = getattr(importlib.import_module(_MODULE_OF[name]), name)
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
