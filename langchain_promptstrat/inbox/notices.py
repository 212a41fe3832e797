"""What every inbox backend does alike to a notice: its name, its bytes, its limits, one warning per problem.

Both backends (:mod:`~langchain_promptstrat.inbox.directory`,
:mod:`~langchain_promptstrat.inbox.postgres`) call these, so a notice is refused for the
same reasons and with the same words wherever it is posted, and a delivered one takes the
same history name (``name``, then ``stem.1.ext``, ``stem.2.ext``, ...).

Pure rules: nothing here reads or writes an inbox.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Iterator
from datetime import datetime, timezone

from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.inbox.paths import name_stem
from langchain_promptstrat.settings import Settings

__all__ = [
    "abort_reason_bytes",
    "check_notice_name",
    "default_notice_name",
    "history_names",
    "notice_bytes",
    "notice_limits",
    "split_ext",
    "warn_once",
]

_MAX_NAME_BYTES = 255

_log = logging.getLogger("langchain_promptstrat")
_warned: set[tuple[str, ...]] = set()
_warned_lock = threading.Lock()


def warn_once(key: tuple[str, ...], message: str, *args: object) -> None:
    """Log ``message`` at WARNING the first time ``key`` is seen in this process."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    _log.warning(message, *args)


def notice_limits() -> tuple[float, float, int]:
    """Return the settings every backend starts from: quiet seconds, lease seconds, the largest notice in bytes."""
    loaded = Settings.load()
    return loaded.inbox_quiet_seconds, loaded.inbox_lease_seconds, loaded.inbox_max_notice_bytes


def split_ext(name: str) -> tuple[str, str]:
    """Return ``name`` as its stem and its last extension (dot included; empty when it has none)."""
    stem = name_stem(name)
    return stem, name[len(stem):]


def history_names(name: str) -> Iterator[str]:
    """Yield ``name``, then ``stem.1.ext``, ``stem.2.ext``, ...: the names a delivered file may take."""
    yield name
    stem, ext = split_ext(name)
    n = 1
    while True:
        yield f"{stem}.{n}{ext}"
        n += 1


def check_notice_name(name: str) -> None:
    """Raise :class:`InboxError` unless ``name`` may be posted: a plain, visible file name of at most 255 bytes."""
    if not isinstance(name, str) or not name:
        raise InboxError("a notice name must be a non-empty string")
    if "/" in name or "\x00" in name or (os.altsep and os.altsep in name):
        raise InboxError(f"notice name {name!r} must be a plain file name, without '/' or NUL")
    if name.startswith("."):
        raise InboxError(f"notice name {name!r} starts with '.'; readers ignore dotfiles, so it would never be delivered")
    if len(name.encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES:
        raise InboxError(f"notice name is longer than {_MAX_NAME_BYTES} bytes")


def default_notice_name() -> str:
    """Return a fresh notice name that sorts in arrival order: UTC time to the microsecond, a random suffix."""
    now = datetime.now(timezone.utc)
    return f"{now:%Y%m%dT%H%M%S_%f}Z-{secrets.token_hex(3)}.txt"


def notice_bytes(content: object) -> bytes:
    """Return a notice's content as UTF-8 bytes; refuse anything that is not text.

    ``bytes(42)`` would be 42 NUL bytes and a lone surrogate cannot be encoded: both are
    refused with :class:`InboxError` naming the problem, before anything is written.
    Bytes are taken as they are (the reader decodes them with replacement characters).
    """
    if isinstance(content, str):
        try:
            return content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InboxError(f"the notice is not valid text: character {exc.start} is a lone surrogate") from None
    if isinstance(content, (bytes, bytearray, memoryview)):
        return bytes(content)  # delivered with replacement characters where it is not UTF-8
    raise InboxError(f"a notice is text (str, or UTF-8 bytes), got {type(content).__name__}")


def abort_reason_bytes(reason: object) -> bytes:
    """Return an abort reason as UTF-8 bytes; refuse anything that is not text, before anything is written.

    Like :func:`notice_bytes`, a lone surrogate (from a command line of undecodable bytes)
    or a non-string is refused with :class:`InboxError` naming the problem.
    """
    if not isinstance(reason, str):
        raise InboxError(f"an abort reason is text (str), got {type(reason).__name__}")
    try:
        return reason.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InboxError(f"the abort reason is not valid text: character {exc.start} is a lone surrogate") from None
