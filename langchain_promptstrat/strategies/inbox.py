"""inbox: moves the pending notices of a conversation's inbox out and appends them as user messages.

This is the one strategy with a side effect. A person steers a running agent by dropping
a file next to its conversation; a file named exactly ``abort`` stops the run instead,
with its content as the reason.

This module holds the strategy alone: :func:`inbox` and :class:`Inbox`. How a notice is
claimed, delivered and acknowledged exactly once is :mod:`~langchain_promptstrat.inbox.delivery`'s
(:func:`~langchain_promptstrat.inbox.delivery.pick_up`); which inbox serves a run is
:mod:`~langchain_promptstrat.inbox.locate`'s; where the inbox lives is the backend's
(:mod:`~langchain_promptstrat.inbox.contract`): a directory beside the save file by
default, or PostgreSQL with ``backend=PostgresInboxes(dsn)``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from langchain_promptstrat.inbox.contract import InboxBackend
from langchain_promptstrat.inbox.delivery import pick_up
from langchain_promptstrat.inbox.locate import (
    InboxBackendSpec,
    check_backend,
    inbox_for_config,
    inbox_for_save_file,
)
from langchain_promptstrat.messages import mark_of
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings, settings_with_options
from langchain_promptstrat.strategy import PromptStrategy

__all__ = ["Inbox", "inbox"]


def _deliver(messages: Sequence[BaseMessage], store: InboxBackend | None) -> Compacted:
    if store is None:
        out = list(messages)
        return Compacted(out, make_report("inbox", messages, out, delivered=0))
    result = pick_up(store)
    if result.aborted:
        raise result.error()
    out = [*messages, *result.delivered]
    return Compacted(out, make_report(
        "inbox", messages, out,
        inbox=store.location,
        delivered=len(result.delivered),
        files=[mark_of(m)["file"] for m in result.delivered],  # type: ignore[index]
        skipped=result.skipped,
        replaced_characters=result.replaced_characters,
        empty=result.empty,
        budget_bytes=result.budget_bytes,
        waiting=result.waiting,
    ))


def inbox(
    messages: Sequence[BaseMessage],
    /,
    *,
    save_file: str | os.PathLike[str] | None = None,
    backend: InboxBackendSpec = None,
) -> Compacted:
    """Return ``messages`` plus the pending notices of ``save_file``'s inbox, consuming them (side effect).

    No save file, or no inbox directory: the messages come back unchanged and nothing is
    created. An ``abort`` file raises :class:`InboxAborted` carrying its reason, where it
    now lies, and the notices consumed before it (``delivered``). ``backend`` says where
    the inbox lives (see :func:`~langchain_promptstrat.inbox.locate.inbox_for_save_file`);
    the directory beside the save file by default.
    """
    return _deliver(messages, inbox_for_save_file(save_file, backend))


class Inbox(PromptStrategy):
    """``inbox``: appends the pending notices of the conversation's inbox as user messages, once each.

    Side effect: consumed files move into the ``.inbox_removed`` sibling. The save file
    comes from ``prepare_prompt(..., save_file=)`` or, as a Runnable, from
    ``config["configurable"]["save_file"]``, else from the ``thread_id`` under ``root``
    (default ``$PROMPTSTRAT_INBOX_ROOT``, read on each call): ``<root>/<thread_id>.chat``.

    A ``root`` given here wins over a run config's ``save_file`` unless
    ``allow_save_file=True``. Notices are acknowledged as they are handed over (one-call
    delivery; see :func:`~langchain_promptstrat.inbox.delivery.pick_up`).

    ``backend`` moves the inbox elsewhere: ``PostgresInboxes(dsn)`` serves each run the
    inbox of its ``configurable.thread_id`` (or ``save_file``) from PostgreSQL, with the
    same consume-once rule; a backend bound to one conversation
    (``PostgresInbox(dsn, thread_id=...)``) serves every call. The default, None, is the
    directory backend.
    """

    strategy_name = "inbox"
    uses_save_file = True
    places_notices = True

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        root: str | os.PathLike[str] | None = None,
        backend: InboxBackendSpec = None,
        allow_save_file: bool = False,
        include_paths: bool = False,
        **unknown: NoReturn,
    ) -> None:
        """Build the strategy.

        Args:
            settings: Accepted so every strategy builds from the same arguments. The
                inbox's own limits (``inbox_quiet_seconds``, ``inbox_lease_seconds``,
                ``inbox_max_notice_bytes``) are read from the environment at each pickup.
            root: The directory of ``<thread_id>.chat`` save files, for runs whose config
                names a ``thread_id`` (default ``$PROMPTSTRAT_INBOX_ROOT``, read on each call).
            backend: Where the inbox lives: None or ``DirectoryInbox`` (the directory next
                to the save file), a provider such as ``PostgresInboxes(dsn)``, or one
                conversation's inbox such as ``PostgresInbox(dsn, thread_id=...)``.
            allow_save_file: Let a run config's ``save_file`` win over ``root``.
            include_paths: Put the server paths (``path``, where the consumed abort lies, and
                ``inbox``) into the hook's and the middleware's abort interrupt payload,
                which every API client of a server reads; off by default.

        Raises:
            ConfigError: A bad ``backend``, or a keyword that is not one of these options.
        """
        super().__init__(settings_with_options(type(self), settings, unknown))
        self.root = root
        self.backend = check_backend(backend, root)
        self.allow_save_file = allow_save_file
        self.include_paths = include_paths

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return :func:`inbox` of ``messages`` for ``save_file``; raises InboxAborted on ``abort``."""
        return inbox(messages, save_file=save_file, backend=self.backend)

    def save_file_from_config(self, config: RunnableConfig | None) -> Path | None:
        """Return None: as a Runnable the inbox finds its store from the whole run config (:meth:`pick_up_notices`), since a provider serves a thread id, not a path."""
        return None

    def inbox_for_config(self, config: RunnableConfig | None) -> InboxBackend | None:
        """Return the run's inbox from this strategy's backend, or None (see :mod:`~langchain_promptstrat.inbox.locate`)."""
        return inbox_for_config(config, backend=self.backend, root=self.root, allow_save_file=self.allow_save_file)

    def pick_up_notices(
        self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None, config: RunnableConfig | None = None
    ) -> Compacted:
        """Return ``messages`` with the run's pending notices: the inbox of ``save_file``, else the one ``config`` names; raises InboxAborted on ``abort``."""
        if save_file is not None:
            return self.compact(messages, save_file=save_file)
        return _deliver(messages, self.inbox_for_config(config))
