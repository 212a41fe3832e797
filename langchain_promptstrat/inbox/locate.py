"""Which inbox serves a run: the ``backend=`` argument, and the save file or thread a run's config names.

A run names its conversation in its config: ``configurable.save_file``, else
``configurable.thread_id``. With the directory backend (the default) a thread's inbox lies
under the inbox root (``root=``, else ``$PROMPTSTRAT_INBOX_ROOT``); a provider such as
``PostgresInboxes(dsn)`` serves any thread; a backend bound to one conversation serves
every run. The strategy, the LangGraph adapters and the middleware all ask here.

It only finds the inbox: it never reads, claims or posts a notice.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from typing_extensions import TypeIs

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.inbox.contract import InboxBackend, InboxProvider, is_inbox_backend
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.notices import warn_once
from langchain_promptstrat.inbox.paths import inbox_root, thread_save_file

__all__ = ["InboxBackendSpec", "check_backend", "inbox_for_config", "inbox_for_save_file", "save_file_for_config"]

InboxBackendSpec = InboxBackend | InboxProvider | type[DirectoryInbox] | None
"""What ``backend=`` accepts: a provider (``PostgresInboxes(dsn)``, the ``DirectoryInbox``
class), one conversation's backend, or None for the directory default."""


def save_file_for_config(
    config: RunnableConfig | None, root: str | os.PathLike[str] | None = None, *, allow_save_file: bool = False
) -> Path | None:
    """Return the save file a run's config names: ``configurable.save_file``, else ``<root>/<thread_id>.chat``.

    ``root`` defaults to ``$PROMPTSTRAT_INBOX_ROOT``, read now; with neither, a thread has
    no inbox and None comes back. A ``root`` the application gave wins over the run
    config's ``save_file`` (which would let a run point the inbox at any path; it is
    ignored with one warning) unless ``allow_save_file``.
    """
    configurable = (config or {}).get("configurable") or {}
    if configurable.get("save_file") and root is not None and not allow_save_file:
        warn_once(
            ("save_file", os.fspath(root)),
            "inbox: the run config's configurable.save_file is ignored because the application set root=%s; "
            "pass allow_save_file=True to let run configs choose the inbox", os.fspath(root),
        )
    elif configurable.get("save_file"):
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
    config: RunnableConfig | None,
    *,
    backend: InboxBackendSpec = None,
    root: str | os.PathLike[str] | None = None,
    allow_save_file: bool = False,
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
        save_file = save_file_for_config(config, root, allow_save_file=allow_save_file)
        return None if save_file is None else (backend or DirectoryInbox).for_save_file(save_file)
    configurable = (config or {}).get("configurable") or {}
    if configurable.get("save_file"):
        return backend.for_save_file(configurable["save_file"])
    thread_id = configurable.get("thread_id")
    return None if thread_id is None else backend.for_thread(str(thread_id))


def _is_directory(backend: InboxBackendSpec) -> TypeIs[type[DirectoryInbox] | None]:
    """Return whether ``backend`` names the directory backend: None, ``DirectoryInbox`` or a subclass."""
    return backend is None or (isinstance(backend, type) and issubclass(backend, DirectoryInbox))
