"""Which inbox serves a run: the ``backend=`` argument, and the save file or thread a run's config names.

A request's config never moves its run to another thread's inbox: ``configurable.save_file``
names the inbox only where nothing else does (the directory backend with no root) or where the
code says so (``allow_save_file=True``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from typing_extensions import TypeIs

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.inbox.contract import InboxBackend, InboxProvider, is_inbox_backend, warn_once
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.paths import inbox_root, thread_save_file

InboxBackendSpec = InboxBackend | InboxProvider | type[DirectoryInbox] | None
"""What ``backend=`` accepts: a provider (``PostgresInboxes(dsn)``, the ``DirectoryInbox`` class), one conversation's backend, or None."""


def save_file_for_config(
    config: RunnableConfig | None, root: str | os.PathLike[str] | None = None, *, allow_save_file: bool = False
) -> Path | None:
    """Return the save file a run's config names: ``<root>/<thread_id>.chat``, or ``configurable.save_file`` where no root is set.

    ``root`` defaults to ``$PROMPTSTRAT_INBOX_ROOT``, read now; with one, a ``save_file`` is
    ignored with one warning unless ``allow_save_file=True``.
    """
    base = inbox_root(root)
    because = "an inbox root is set (root= or $PROMPTSTRAT_INBOX_ROOT)"
    save_file, thread_id = _named(config, allow_save_file or base is None, because, os.fspath(base or ""))
    if save_file is not None:
        return Path(save_file)
    return None if thread_id is None or base is None else thread_save_file(thread_id, root)


def _named(config: RunnableConfig | None, allow_save_file: bool, because: str, where: str) -> tuple[str | None, str | None]:
    """Return the run config's ``save_file`` (where allowed) and ``thread_id``; an ignored save file warns once per ``where``."""
    configurable = (config or {}).get("configurable") or {}
    save_file, thread_id = configurable.get("save_file"), configurable.get("thread_id")
    if save_file and allow_save_file:
        return save_file, None
    if save_file:
        warn_once(
            ("save_file", because, where),
            "inbox: the run config's configurable.save_file is ignored because %s; a request must not choose "
            "another thread's inbox. Pass allow_save_file=True in code to let run configs choose it", because,
        )
    return None, None if thread_id is None else str(thread_id)


def check_backend(backend: Any, root: str | os.PathLike[str] | None = None) -> InboxBackendSpec:
    """Return ``backend`` once it is known to be usable as ``backend=`` (``root`` only with the directory backend); raise :class:`ConfigError` otherwise."""
    directory = _is_directory(backend)
    if not directory and (isinstance(backend, type) or not (is_inbox_backend(backend) or isinstance(backend, InboxProvider))):
        raise ConfigError(
            f"backend={backend!r} is not an inbox backend; pass a provider such as PostgresInboxes(dsn) or "
            "DirectoryInbox, one conversation's inbox such as PostgresInbox(dsn, thread_id=...), or None"
        )
    if root is not None and not directory:
        raise ConfigError(f"root= is the directory backend's inbox root; {backend!r} needs none")
    return cast(InboxBackendSpec, backend)  # checked above


def inbox_for_save_file(save_file: str | os.PathLike[str] | None, backend: InboxBackendSpec = None) -> InboxBackend | None:
    """Return the inbox of the conversation saved to ``save_file`` (a directory by default; None without one); a bound backend as is."""
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
    """Return the inbox of a run: its ``configurable.thread_id``'s (or ``save_file``'s, see :func:`save_file_for_config`), else None.

    A backend bound to one conversation is returned as is; the directory backend needs a root.
    """
    if is_inbox_backend(backend):
        return backend
    if _is_directory(backend):
        save_file = save_file_for_config(config, root, allow_save_file=allow_save_file)
        return None if save_file is None else (backend or DirectoryInbox).for_save_file(save_file)
    named, thread_id = _named(config, allow_save_file, f"the inbox backend is {type(backend).__name__}", str(id(backend)))
    if named is not None:
        return backend.for_save_file(named)
    return None if thread_id is None else backend.for_thread(thread_id)


def _is_directory(backend: object) -> TypeIs[type[DirectoryInbox] | None]:
    """Return whether ``backend`` names the directory backend: None, ``DirectoryInbox`` or a subclass."""
    return backend is None or (isinstance(backend, type) and issubclass(backend, DirectoryInbox))
