"""Post a notice or ask for an abort in one call, naming the conversation by save file or thread id.

:func:`post_to_inbox` and :func:`request_abort` are what a person's script or another
process calls to steer a run whose inbox is the directory beside its save file (or under
``$PROMPTSTRAT_INBOX_ROOT`` for a LangGraph thread). A PostgreSQL inbox is posted to
through its backend (``PostgresInboxes(dsn).for_thread(t).post(...)``).

They only resolve the conversation and call :class:`~langchain_promptstrat.inbox.directory.DirectoryInbox`;
every rule (names, content, atomic writes) lives there.
"""

from __future__ import annotations

import os
from pathlib import Path

from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.paths import resolve_save_file

__all__ = ["post_to_inbox", "request_abort"]


def post_to_inbox(
    save_file: str | os.PathLike[str] | None = None,
    content: str | bytes | None = None,
    *,
    name: str | None = None,
    thread_id: str | None = None,
    root: str | os.PathLike[str] | None = None,
) -> Path:
    """Post ``content`` to a conversation's inbox, atomically, and return the new file's path.

    Name the conversation by ``save_file``, or by ``thread_id`` under ``root`` (default
    ``$PROMPTSTRAT_INBOX_ROOT``). The inbox directory is created when needed; the default
    name sorts in arrival order.
    """
    if content is None:
        raise TypeError("post_to_inbox() needs the notice content")
    return DirectoryInbox.for_save_file(resolve_save_file(save_file, thread_id=thread_id, root=root)).post(content, name=name)


def request_abort(
    save_file: str | os.PathLike[str] | None = None,
    reason: str = "",
    *,
    thread_id: str | None = None,
    root: str | os.PathLike[str] | None = None,
) -> Path:
    """Ask a conversation's run to stop: write its inbox's ``abort`` file atomically and return its path.

    The run that picks it up raises :class:`~langchain_promptstrat.errors.InboxAborted`
    (or interrupts, in LangGraph) with ``reason``.
    """
    return DirectoryInbox.for_save_file(resolve_save_file(save_file, thread_id=thread_id, root=root)).request_abort(reason)
