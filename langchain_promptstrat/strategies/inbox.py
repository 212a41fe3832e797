"""inbox: moves the pending files of a conversation's inbox out and appends them as user messages.

This is the one strategy with a side effect: each file is consumed once, moved into the
``.inbox_removed`` sibling before it is read, so a notice reaches at most one model call
(a crash between the move and the read drops it rather than delivering it twice). A
person steers a running agent by dropping a file next to its conversation; a file named
exactly ``abort`` stops the run instead, with its content as the reason.

Where the inbox lives is the backend's business (:mod:`~langchain_promptstrat.inbox_backends`):
a directory beside the save file by default, or PostgreSQL with
``backend=PostgresInboxes(dsn)``. The rule above holds for both.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from typing_extensions import TypeIs

from langchain_core.callbacks import CallbackManagerForChainRun
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_promptstrat.adapters.runnable import PromptStrategy, emit_report
from langchain_promptstrat.errors import ConfigError, InboxAborted
from langchain_promptstrat.inbox_backends import InboxBackend, InboxProvider, is_inbox_backend
from langchain_promptstrat.inbox_store import ABORT_FILE, DirectoryInbox, inbox_root, thread_save_file
from langchain_promptstrat.messages import coerce_messages, mark, mark_of
from langchain_promptstrat.report import Compacted, logger, make_report
from langchain_promptstrat.settings import Settings

__all__ = [
    "DELIVERY_KIND",
    "Inbox",
    "InboxBackendSpec",
    "Pickup",
    "check_backend",
    "inbox",
    "inbox_for_config",
    "inbox_for_save_file",
    "pick_up",
    "save_file_for_config",
]

InboxBackendSpec = InboxBackend | InboxProvider | type[DirectoryInbox] | None
"""What ``backend=`` accepts: a provider (``PostgresInboxes(dsn)``, the ``DirectoryInbox``
class), one conversation's backend, or None for the directory default."""

DELIVERY_KIND = "inbox_delivery"
"""Mark kind of a delivered notice (``mark_of(m)["kind"]``); it is a real user message."""


@dataclass
class Pickup:
    """What one pass over the inbox took: notices, an abort request, and the files it skipped."""

    delivered: list[HumanMessage] = field(default_factory=list)
    abort_reason: str | None = None
    """None when no ``abort`` file was consumed."""
    abort_path: str | None = None
    """Where the consumed ``abort`` file now lies."""
    skipped: list[dict[str, str]] = field(default_factory=list)
    """``{"file", "error"}`` for each file left in place because it could not be read or moved."""
    replaced_characters: list[str] = field(default_factory=list)
    """Names of the files that were not valid UTF-8 and were decoded with U+FFFD."""
    empty: list[str] = field(default_factory=list)
    """Names of the blank files consumed but not delivered: providers reject an empty user message."""

    @property
    def aborted(self) -> bool:
        """Whether the pickup consumed an ``abort`` file."""
        return self.abort_reason is not None

    def error(self) -> InboxAborted:
        """Return the :class:`InboxAborted` this pickup stands for (only when :attr:`aborted`)."""
        return InboxAborted(self.abort_reason or "", path=self.abort_path, delivered=self.delivered)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat()


def _notice(name: str, path: Path | str, mtime: float, data: bytes) -> tuple[HumanMessage, bool]:
    try:
        text, replaced = data.decode("utf-8"), False
    except UnicodeDecodeError:
        text, replaced = data.decode("utf-8", errors="replace"), True
    message = mark(
        HumanMessage(text), DELIVERY_KIND, notice=False,
        file=name, mtime=_iso(mtime), removed_path=str(path), replaced_characters=replaced,
    )
    return message, replaced


def pick_up(store: InboxBackend) -> Pickup:
    """Return the notices claimed from ``store`` (any backend), in name order, stopping at an ``abort`` file.

    Files sorting after ``abort`` stay for the next pickup. An ``abort`` file is honoured
    even when it cannot be read (the reason then says so). Any other file that cannot be
    read or moved is left where it is, logged at INFO and listed in ``skipped``; it never stops
    the others. A file another reader claimed first is simply not ours. A blank file is
    consumed but not delivered (listed in ``empty``): an empty user message would make the
    provider reject the whole request.
    """
    result = Pickup()
    for name in store.pending():
        is_abort = name == ABORT_FILE
        try:
            claimed = store.claim(name, need_content=not is_abort)
        except OSError as exc:
            logger.info("inbox: skipped %s/%s: %s", store.location, name, exc)
            result.skipped.append({"file": name, "error": str(exc)})
            continue
        if claimed is None:
            continue
        if is_abort:
            if claimed.data is None:
                reason = f"abort requested through the inbox (unreadable abort file, now at {claimed.path})"
            else:
                text = claimed.data.decode("utf-8", errors="replace").strip()
                reason = text or f"abort requested through the inbox (empty abort file, now at {claimed.path})"
            result.abort_reason = reason
            result.abort_path = str(claimed.path)
            return result
        message, replaced = _notice(name, claimed.path, claimed.mtime, claimed.data or b"")
        if not str(message.content).strip():
            result.empty.append(name)  # consumed (it is in the history) but never sent
            continue
        result.delivered.append(message)
        if replaced:
            result.replaced_characters.append(name)
    return result


def save_file_for_config(config: RunnableConfig | None, root: str | os.PathLike[str] | None = None) -> Path | None:
    """Return the save file a run's config names: ``configurable.save_file``, else ``<root>/<thread_id>.chat``.

    ``root`` defaults to ``$PROMPTSTRAT_INBOX_ROOT``, read now; with neither, a thread has
    no inbox and None comes back.
    """
    configurable = (config or {}).get("configurable") or {}
    if configurable.get("save_file"):
        return Path(configurable["save_file"])
    thread_id = configurable.get("thread_id")
    if thread_id is None or inbox_root(root) is None:
        return None
    return thread_save_file(str(thread_id), root)


def check_backend(backend: Any, root: str | os.PathLike[str] | None = None) -> InboxBackendSpec:
    """Return ``backend`` once it is known to be usable as ``backend=``; raise :class:`ConfigError` otherwise.

    ``root`` (the directory backend's inbox root) only goes with the directory backend.
    """
    directory = backend is None or (isinstance(backend, type) and issubclass(backend, DirectoryInbox))
    if not directory and (isinstance(backend, type) or not (is_inbox_backend(backend) or isinstance(backend, InboxProvider))):
        raise ConfigError(
            f"backend={backend!r} is not an inbox backend; pass a provider such as PostgresInboxes(dsn) or "
            "DirectoryInbox, one conversation's inbox such as PostgresInbox(dsn, thread_id=...), or None"
        )
    if root is not None and not directory:
        raise ConfigError(f"root= is the directory backend's inbox root; {backend!r} needs none")
    return cast(InboxBackendSpec, backend)  # checked above


def inbox_for_save_file(save_file: str | os.PathLike[str] | None, backend: InboxBackendSpec = None) -> InboxBackend | None:
    """Return the inbox of the conversation saved to ``save_file``: from ``backend``, a directory by default.

    A backend bound to one conversation is returned whatever ``save_file`` says; otherwise
    no save file means no inbox (None).
    """
    if is_inbox_backend(backend):
        return backend
    if not save_file or not os.fspath(save_file):
        return None
    return (backend or DirectoryInbox).for_save_file(save_file)


def inbox_for_config(
    config: RunnableConfig | None, *, backend: InboxBackendSpec = None, root: str | os.PathLike[str] | None = None
) -> InboxBackend | None:
    """Return the inbox of a run: ``configurable.save_file``'s, else ``configurable.thread_id``'s, else None.

    With the directory backend a thread's inbox lies under ``root`` (default
    ``$PROMPTSTRAT_INBOX_ROOT``, read now) and without a root there is none; a provider
    such as ``PostgresInboxes`` needs no root. A backend bound to one conversation is
    returned as is.
    """
    if is_inbox_backend(backend):
        return backend
    if _is_directory(backend):
        save_file = save_file_for_config(config, root)
        return None if save_file is None else (backend or DirectoryInbox).for_save_file(save_file)
    configurable = (config or {}).get("configurable") or {}
    if configurable.get("save_file"):
        return backend.for_save_file(configurable["save_file"])
    thread_id = configurable.get("thread_id")
    return None if thread_id is None else backend.for_thread(str(thread_id))


def _is_directory(backend: InboxBackendSpec) -> TypeIs[type[DirectoryInbox] | None]:
    """Return whether ``backend`` names the directory backend: None, ``DirectoryInbox`` or a subclass."""
    return backend is None or (isinstance(backend, type) and issubclass(backend, DirectoryInbox))


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
    the inbox lives (see :func:`inbox_for_save_file`); the directory beside the save file
    by default.
    """
    return _deliver(messages, inbox_for_save_file(save_file, backend))


class Inbox(PromptStrategy):
    """``inbox``: appends the pending notices of the conversation's inbox as user messages, once each.

    Side effect: consumed files move into the ``.inbox_removed`` sibling. The save file
    comes from ``prepare_prompt(..., save_file=)`` or, as a Runnable, from
    ``config["configurable"]["save_file"]``, else from the ``thread_id`` under ``root``
    (default ``$PROMPTSTRAT_INBOX_ROOT``, read on each call): ``<root>/<thread_id>.chat``.

    ``backend`` moves the inbox elsewhere: ``PostgresInboxes(dsn)`` serves each run the
    inbox of its ``configurable.thread_id`` (or ``save_file``) from PostgreSQL, with the
    same consume-once rule; a backend bound to one conversation
    (``PostgresInbox(dsn, thread_id=...)``) serves every call. The default, None, is the
    directory backend.
    """

    strategy_name = "inbox"
    uses_save_file = True

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        root: str | os.PathLike[str] | None = None,
        backend: InboxBackendSpec = None,
        **overrides: Any,
    ) -> None:
        super().__init__(settings, **overrides)
        self.root = root
        self.backend = check_backend(backend, root)

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return :func:`inbox` of ``messages`` for ``save_file``; raises InboxAborted on ``abort``."""
        return inbox(messages, save_file=save_file, backend=self.backend)

    def save_file_from_config(self, config: RunnableConfig | None) -> Path | None:
        """Return ``configurable.save_file``, else ``<root>/<thread_id>.chat`` when a root is set, else None."""
        return save_file_for_config(config, self.root)

    def inbox_for_config(self, config: RunnableConfig | None) -> InboxBackend | None:
        """Return the run's inbox from this strategy's backend (see :func:`inbox_for_config`), or None."""
        return inbox_for_config(config, backend=self.backend, root=self.root)

    def _invoke(self, input: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig) -> list[BaseMessage]:
        result = _deliver(coerce_messages(input), self.inbox_for_config(config))
        emit_report(result, config)
        return result.messages
