"""``InboxSource``: where a graph front end (the hook, the middleware) finds a run's inbox.

The ``inbox`` strategy in the front end's list says where inboxes live (its ``root``,
``backend``, ``allow_save_file``, ``include_paths``) unless the front end was given its own; a
list without it has no inbox. The pickup itself is :func:`~langchain_promptstrat.inbox.delivery.
deliver_inbox`'s.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

from langchain_core.runnables import RunnableConfig
from typing_extensions import Unpack

from langchain_promptstrat.ceiling import MaxTokens
from langchain_promptstrat.inbox.contract import InboxBackend, pickup_budget
from langchain_promptstrat.inbox.delivery import (
    DeliveryOptions,
    InboxDelivery,
    deliver_inbox,
    prompt_counter,
)
from langchain_promptstrat.inbox.locate import (
    InboxBackendSpec,
    check_backend,
    inbox_for_config,
    save_file_for_config,
)
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV, inbox_root
from langchain_promptstrat.strategies.inbox import Inbox
from langchain_promptstrat.strategy import PromptStrategy


class InboxSource:
    """Where one hook or middleware finds a run's inbox; warns once when a root is set but the run
    has no thread id."""

    def __init__(
        self,
        strategies: Sequence[PromptStrategy],
        root: str | os.PathLike[str] | None = None,
        backend: InboxBackendSpec = None,
        max_tokens: MaxTokens = None,
    ) -> None:
        inbox = next((s for s in strategies if isinstance(s, Inbox)), None)
        if root is None and backend is None and inbox is not None:
            root, backend = inbox.root, inbox.backend  # the front end's arguments win
        self.allow_save_file = inbox is not None and inbox.allow_save_file
        self.include_paths = inbox is not None and inbox.include_paths
        self.root = root
        self.backend = check_backend(backend, root)
        if root is not None:
            inbox_root(
                root
            )  # a root that is not a directory fails now, not at the first model call
        self.enabled = inbox is not None
        """Whether the list holds the inbox: without it, a front end picks nothing up."""
        self.ceiling = max_tokens if isinstance(max_tokens, int) else None
        """The ceiling a pickup admits a share of (none: the default share of the default)."""
        self.count = prompt_counter(strategies)
        self._warned = False

    def save_file(self, config: RunnableConfig) -> Path | None:
        """Return the run's save file (``configurable.save_file``, else
        ``<root>/<thread_id>.chat``), or None (always None without the inbox)."""
        if not self.enabled:
            return None
        path = save_file_for_config(config, self.root, allow_save_file=self.allow_save_file)
        if path is None and not self._warned and inbox_root(self.root) is not None:
            self._warned = True
            where = "root=" + os.fspath(self.root) if self.root is not None else INBOX_ROOT_ENV
            warnings.warn(
                f"the inbox is skipped: an inbox root is set ({where}) but the run config has "
                "neither configurable.thread_id nor configurable.save_file; pass "
                "config={'configurable': {'thread_id': ...}} to deliver this thread's notices",
                RuntimeWarning,
                stacklevel=2,
            )
        return path

    def store(self, config: RunnableConfig | None) -> InboxBackend | None:
        """Return the run's inbox, or None (no inbox strategy, or the run names no inbox)."""
        if not self.enabled:
            return None
        return inbox_for_config(
            config, backend=self.backend, root=self.root, allow_save_file=self.allow_save_file
        )

    def deliver(
        self, config: RunnableConfig, **options: Unpack[DeliveryOptions]
    ) -> tuple[Path | None, InboxDelivery]:
        """Return the save file and what the inbox delivered (nothing without an inbox strategy or a
        save file)."""
        save_file = self.save_file(config)
        store = self.store(config)
        if store is None:
            return save_file, InboxDelivery([])
        return save_file, deliver_inbox(
            store,
            config,
            include_paths=self.include_paths,
            budget_tokens=pickup_budget(self.ceiling),
            count=self.count,
            **options,
        )
