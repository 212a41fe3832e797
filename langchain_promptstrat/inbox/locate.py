"""Which inbox serves a run: the ``backend=`` argument, and the save file or thread a run's config
names.

A request's config never moves its run to another thread's inbox: ``configurable.save_file``
names the inbox only where nothing else does (the directory backend with no root) or where the
code says so (``allow_save_file=True``). Inside LangGraph Server a thread's inbox belongs to
that thread's life: once the server's routes have said how to learn when a thread was created
(:func:`bind_inboxes_to_threads`), a run's inbox is bound to its thread's creation time before
it is used, and a thread deleted and created again under the same id starts with an empty one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from typing_extensions import TypeIs

from langchain_promptstrat.errors import ConfigError, InboxError
from langchain_promptstrat.inbox.contract import (
    InboxBackend,
    InboxProvider,
    ThreadBoundInbox,
    is_inbox_backend,
    warn_once,
)
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.paths import inbox_root, thread_save_file

InboxBackendSpec = InboxBackend | InboxProvider | type[DirectoryInbox] | None
"""What ``backend=`` accepts: a provider (``PostgresInboxes(dsn)``, the ``DirectoryInbox`` class),
one conversation's backend, or None."""

ThreadCreatedAt = Callable[[str], str | None]
"""Returns when the LangGraph Server thread of an id was created (an opaque text), or None."""

_log = logging.getLogger("langchain_promptstrat")
_thread_created_at: list[ThreadCreatedAt] = []


def bind_inboxes_to_threads(created_at: ThreadCreatedAt | None) -> None:
    """Bind each run's inbox to its thread's life, learnt from ``created_at`` (None: stop doing so).

    The routes (``server.py``) call it when LangGraph Server starts them: the server deletes a
    thread without telling anyone, so a run asks it, each time, which thread it is.
    """
    _thread_created_at[:] = [] if created_at is None else [created_at]


def bind_inbox_to_thread(
    store: InboxBackend, thread_id: str, created_at: str, *, create: bool = False
) -> None:
    """Bind ``store`` to thread ``thread_id``, created at ``created_at`` (see ``ThreadBoundInbox``).

    Logs a warning when that removed an earlier thread's notices, and once per backend type
    when ``store`` cannot be bound.
    """
    if not isinstance(store, ThreadBoundInbox):
        warn_once(
            ("unbound", type(store).__name__),
            "inbox: %s cannot be bound to a thread's life; a thread deleted and created again "
            "under the same id would receive its notices",
            type(store).__name__,
        )
    elif store.bind_to_thread(created_at, create=create):
        _log.warning(
            "inbox: %s held the notices of an earlier thread %s, deleted since; they were removed",
            store.location,
            thread_id,
        )


def save_file_for_config(
    config: RunnableConfig | None,
    root: str | os.PathLike[str] | None = None,
    *,
    allow_save_file: bool = False,
) -> Path | None:
    """Return the save file a run's config names: ``<root>/<thread_id>.chat``, or
    ``configurable.save_file`` where no root is set.

    ``root`` defaults to ``$PROMPTSTRAT_INBOX_ROOT``, read now; with one, a ``save_file`` is
    ignored with one warning unless ``allow_save_file=True``.
    """
    return _directory_target(config, root, allow_save_file)[0]


def _directory_target(
    config: RunnableConfig | None, root: str | os.PathLike[str] | None, allow_save_file: bool
) -> tuple[Path | None, str | None]:
    """Return :func:`save_file_for_config`'s save file and the thread id it stands for, if any."""
    configurable = (config or {}).get("configurable") or {}
    if not configurable.get("save_file") and configurable.get("thread_id") is None:
        return None, None  # the run names no inbox: nothing to look up, no file touched
    base = inbox_root(root)
    because = "an inbox root is set (root= or $PROMPTSTRAT_INBOX_ROOT)"
    save_file, thread_id = _named(
        config, allow_save_file or base is None, because, os.fspath(base or "")
    )
    if save_file is not None:
        return Path(save_file), None
    if thread_id is None or base is None:
        return None, None
    return thread_save_file(thread_id, root), thread_id


def _named(
    config: RunnableConfig | None, allow_save_file: bool, because: str, where: str
) -> tuple[str | None, str | None]:
    """Return the run config's ``save_file`` (where allowed) and ``thread_id``; an ignored save file
    warns once per ``where``."""
    configurable = (config or {}).get("configurable") or {}
    save_file, thread_id = configurable.get("save_file"), configurable.get("thread_id")
    if save_file and allow_save_file:
        return save_file, None
    if save_file:
        warn_once(
            ("save_file", because, where),
            "inbox: the run config's configurable.save_file is ignored because %s; a request must "
            "not choose "
            "another thread's inbox. Pass allow_save_file=True in code to let run configs choose "
            "it",
            because,
        )
    return None, None if thread_id is None else str(thread_id)


def check_backend(backend: Any, root: str | os.PathLike[str] | None = None) -> InboxBackendSpec:
    """Return ``backend`` once it is known to be usable as ``backend=`` (``root`` only with the
    directory backend); raise :class:`ConfigError` otherwise."""
    directory = _is_directory(backend)
    if not directory and (
        isinstance(backend, type)
        or not (is_inbox_backend(backend) or isinstance(backend, InboxProvider))
    ):
        raise ConfigError(
            f"backend={backend!r} is not an inbox backend; pass a provider such as "
            "PostgresInboxes(dsn) or "
            "DirectoryInbox, one conversation's inbox such as PostgresInbox(dsn, thread_id=...), "
            "or None"
        )
    if root is not None and not directory:
        raise ConfigError(f"root= is the directory backend's inbox root; {backend!r} needs none")
    return cast(InboxBackendSpec, backend)  # checked above


def inbox_for_save_file(
    save_file: str | os.PathLike[str] | None, backend: InboxBackendSpec = None
) -> InboxBackend | None:
    """Return the inbox of the conversation saved to ``save_file`` (a directory by default; None
    without one); a bound backend as is."""
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
    """Return the inbox of a run: its ``configurable.thread_id``'s (or ``save_file``'s, see
    :func:`save_file_for_config`), else None.

    A backend bound to one conversation is returned as is; the directory backend needs a root.
    """
    if is_inbox_backend(backend):
        return backend
    if _is_directory(backend):
        save_file, thread_id = _directory_target(config, root, allow_save_file)
        if save_file is None:
            return None
        store = (backend or DirectoryInbox).for_save_file(save_file)
        return store if thread_id is None else _of_live_thread(store, thread_id)
    named, thread_id = _named(
        config, allow_save_file, f"the inbox backend is {type(backend).__name__}", str(id(backend))
    )
    if named is not None:
        return backend.for_save_file(named)
    return None if thread_id is None else _of_live_thread(backend.for_thread(thread_id), thread_id)


def _of_live_thread(store: InboxBackend, thread_id: str) -> InboxBackend | None:
    """Return ``store`` bound to its thread where the server says how; None when the thread is gone.

    None too, with one warning, when the server cannot say: no notice is delivered then, and
    none is lost.
    """
    if not _thread_created_at:
        return store
    try:
        created_at = _thread_created_at[0](thread_id)
        if created_at is not None:
            bind_inbox_to_thread(store, thread_id, created_at)
    except (OSError, InboxError) as exc:
        warn_once(
            ("thread life", type(exc).__name__),
            "inbox: cannot tell which life of thread %s "
            "its inbox belongs to (%s); its notices wait until it can",
            thread_id,
            exc,
        )
        return None
    return None if created_at is None else store


def _is_directory(backend: object) -> TypeIs[type[DirectoryInbox] | None]:
    """Return whether ``backend`` names the directory backend: None, ``DirectoryInbox`` or a
    subclass."""
    return backend is None or (isinstance(backend, type) and issubclass(backend, DirectoryInbox))
