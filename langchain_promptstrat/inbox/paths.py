"""Where a conversation's inbox lies: ``x/agent.chat`` has ``x/agent.inbox`` and
``x/agent.inbox_removed``.

A LangGraph thread's save file is ``<root>/<encoded thread id>.chat`` (``root=`` or
``$PROMPTSTRAT_INBOX_ROOT``). Paths only: nothing is created here.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.inbox.contract import name_stem

INBOX_ROOT_ENV = "PROMPTSTRAT_INBOX_ROOT"
"""Environment variable naming the directory that holds one inbox per LangGraph thread."""

INBOX_SUFFIX = ".inbox"
REMOVED_SUFFIX = ".inbox_removed"
THREAD_SAVE_SUFFIX = ".chat"

_SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_MAX_ENCODED = 180  # with ".inbox_removed", within the 255-byte file names of common filesystems
_LONG_PREFIX = 96


def _sibling(save_file: str | os.PathLike[str], suffix: str) -> Path:
    path = Path(save_file)
    if not path.name or path.name in (".", ".."):
        raise InboxError(
            f"save file {os.fspath(save_file)!r} names no file; pass the path of the "
            "conversation's file"
        )
    return path.parent / (name_stem(path.name) + suffix)


def inbox_dir(save_file: str | os.PathLike[str]) -> Path:
    """Return the inbox directory of a conversation saved to ``save_file``: ``x/a.b.chat`` ->
    ``x/a.b.inbox``, ``x/a`` -> ``x/a.inbox``."""
    return _sibling(save_file, INBOX_SUFFIX)


def inbox_removed_dir(save_file: str | os.PathLike[str]) -> Path:
    """Return the directory delivered notices are moved into (the ``.inbox_removed`` sibling)."""
    return _sibling(save_file, REMOVED_SUFFIX)


def canonical_thread_id(thread_id: str) -> str:
    """Return the one spelling of a thread id that names its inbox (LangGraph Server's): a UUID
    lowercase and hyphenated, any other id as it is."""
    try:
        return str(uuid.UUID(thread_id))
    except (ValueError, TypeError, AttributeError):
        return thread_id


def encode_thread_id(thread_id: str) -> str:
    """Return ``thread_id`` as one safe file-name component, readable when it already is one.

    Every character outside ``[A-Za-z0-9._-]``, and a leading dot, becomes ``%XX`` per UTF-8
    byte (injective; no id leaves the root); over 180 characters, the first 96, ``~`` and the
    id's SHA-256 (``~`` never appears in a short one).
    """
    if not isinstance(thread_id, str):
        raise InboxError(f"thread_id must be a string, got {type(thread_id).__name__}")
    if not thread_id:
        raise InboxError("thread_id is empty; an inbox needs a non-empty thread id")
    parts: list[str] = []
    for i, char in enumerate(thread_id):
        if char in _SAFE_CHARS and not (i == 0 and char == "."):
            parts.append(char)
        else:
            parts.append("".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass")))
    encoded = "".join(parts)
    if len(encoded) > _MAX_ENCODED:
        digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()
        prefix = encoded[:_LONG_PREFIX]
        if "%" in prefix[-2:]:  # do not cut an escape in half
            prefix = prefix[: prefix.rindex("%")]
        encoded = f"{prefix}~{digest}"
    return encoded


def inbox_root(root: str | os.PathLike[str] | None = None) -> Path | None:
    """Return the inbox root: ``root``, else ``$PROMPTSTRAT_INBOX_ROOT`` (read now), else None;
    :class:`InboxError` when it is not a directory."""
    value = os.fspath(root) if root is not None else os.environ.get(INBOX_ROOT_ENV, "")
    if not value:
        return None
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        source = "root" if root is not None else INBOX_ROOT_ENV
        raise InboxError(
            f"inbox root {str(path)!r} ({source}) exists and is not a directory; point it at a "
            "directory"
        )
    return path


def thread_save_file(thread_id: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Return ``<root>/<encoded canonical thread_id>.chat``, the save file of a LangGraph thread;
    :class:`InboxError` without a root."""
    base = inbox_root(root)
    if base is None:
        raise InboxError(
            f"no inbox root for thread {thread_id!r}: pass root= (--root) or set {INBOX_ROOT_ENV}"
        )
    return base / (encode_thread_id(canonical_thread_id(thread_id)) + THREAD_SAVE_SUFFIX)


def resolve_save_file(
    save_file: str | os.PathLike[str] | None = None,
    *,
    thread_id: str | None = None,
    root: str | os.PathLike[str] | None = None,
) -> Path:
    """Return the save file named by ``save_file``, or by ``thread_id`` under ``root``; exactly one
    is needed."""
    if save_file is not None and thread_id is not None:
        raise InboxError("give either a save file or a thread id, not both")
    if save_file is not None and os.fspath(save_file):
        if root is not None:
            raise InboxError("root= goes with thread_id=, not with a save file")
        return Path(save_file)
    if thread_id is not None:
        return thread_save_file(thread_id, root)
    raise InboxError(
        "no inbox named: give a save file, or a thread id with root= or " + INBOX_ROOT_ENV
    )
