"""inbox: appends the pending notices of the conversation's inbox as user messages, each once.

The one strategy with a side effect: a person steers a running agent by dropping a file beside
its conversation, and a file named exactly ``abort`` stops the run instead. How a notice is
claimed and acknowledged is :mod:`~langchain_promptstrat.inbox.delivery`'s, which inbox serves
a run :mod:`~langchain_promptstrat.inbox.locate`'s.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import NoReturn

from langchain_core.messages import BaseMessage

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
from langchain_promptstrat.strategy import NO_REQUEST, PromptRequest, PromptStrategy


def _deliver(messages: Sequence[BaseMessage], store: InboxBackend | None) -> Compacted:
    if store is None:
        out = list(messages)
        return Compacted(out, make_report("inbox", messages, out, delivered=0))
    result = pick_up(store)
    if result.aborted:
        raise result.error()
    out = [*messages, *result.delivered]
    return Compacted(
        out,
        make_report(
            "inbox",
            messages,
            out,
            inbox=store.location,
            delivered=len(result.delivered),
            files=[mark_of(m)["file"] for m in result.delivered],  # type: ignore[index]
            skipped=result.skipped,
            replaced_characters=result.replaced_characters,
            empty=result.empty,
            budget_tokens=result.budget_tokens,
            waiting=result.waiting,
        ),
        result.delivered,
    )


def inbox(
    messages: Sequence[BaseMessage],
    /,
    *,
    save_file: str | os.PathLike[str] | None = None,
    backend: InboxBackendSpec = None,
) -> Compacted:
    """Return ``messages`` plus the pending notices of ``save_file``'s inbox, consuming them (side
    effect).

    No save file or no inbox: the messages come back unchanged and nothing is created. An
    ``abort`` raises :class:`InboxAborted` with its reason and the notices consumed before it.
    """
    return _deliver(messages, inbox_for_save_file(save_file, backend))


class Inbox(PromptStrategy):
    """``inbox``: appends the pending notices of the conversation's inbox as user messages, once
    each.

    The inbox is that of ``prepare_prompt(..., save_file=)``, else of the run config's ``thread_id``
    under ``root`` (``<root>/<thread_id>.chat``) or in ``backend``; a run config's ``save_file``
    only without a root, or with ``allow_save_file=True``. Notices are acknowledged as they are
    handed over (see :func:`~langchain_promptstrat.inbox.delivery.pick_up`).
    """

    strategy_name = "inbox"

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
            settings: Accepted so every strategy builds from the same arguments; the inbox's
                own limits (``inbox_*``) are read from the environment at each pickup.
            root: The directory of ``<thread_id>.chat`` save files (default
                ``$PROMPTSTRAT_INBOX_ROOT``, read on each call).
            backend: Where the inbox lives: None or ``DirectoryInbox`` (the directory beside the
                save file), a provider such as ``PostgresInboxes(dsn)``, or one conversation's
                inbox such as ``PostgresInbox(dsn, thread_id=...)``.
            allow_save_file: Let a run config's ``save_file`` win over ``root``.
            include_paths: Put the server paths (``path``, ``inbox``) into the hook's and the
                middleware's abort interrupt payload, which every API client reads; off by default.

        Raises:
            ConfigError: A bad ``backend``, or a keyword that is not one of these options.
        """
        super().__init__(settings_with_options(type(self), settings, unknown))
        self.root = root
        self.backend = check_backend(backend, root)
        self.allow_save_file = allow_save_file
        self.include_paths = include_paths

    def apply(self, messages: list[BaseMessage], request: PromptRequest = NO_REQUEST) -> Compacted:
        """Return ``messages`` with the run's notices appended: those the front end picked up, else
        the pending ones of the request's save file's inbox, else of its config's thread.

        Reads no inbox when the request names neither a save file nor a thread. Raises
        :class:`InboxAborted` on ``abort``.
        """
        if request.notices is not None:
            notices = list(request.notices)
            out = [*messages, *notices]
            files = [(mark_of(m) or {}).get("file") for m in notices]
            report = make_report("inbox", messages, out, delivered=len(notices), files=files)
            return Compacted(out, report, notices)
        if request.save_file is not None:
            return _deliver(messages, inbox_for_save_file(request.save_file, self.backend))
        store = inbox_for_config(
            request.config,
            backend=self.backend,
            root=self.root,
            allow_save_file=self.allow_save_file,
        )
        return _deliver(messages, store)
