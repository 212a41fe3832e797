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

from langchain_promptstrat.ceiling import DEFAULT_CEILING
from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.inbox.paths import name_stem
from langchain_promptstrat.settings import Settings

__all__ = [
    "NoticeNameTaken",
    "abort_reason_bytes",
    "check_notice_name",
    "check_notice_size",
    "default_notice_name",
    "history_names",
    "notice_bytes",
    "notice_limits",
    "pickup_budget",
    "printable_name",
    "split_ext",
    "warn_once",
]

_MAX_NAME_BYTES = 255

_log = logging.getLogger("langchain_promptstrat")
_warned: set[tuple[str, ...]] = set()
_warned_lock = threading.Lock()


class NoticeNameTaken(InboxError, FileExistsError):
    """A notice (or an abort) of that name is already pending: wait for it to be delivered, or pick another name."""


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


def pickup_budget(ceiling: int | None = None) -> int:
    """Return how many bytes of notices one pickup admits: ``inbox_pickup_share`` of the context ceiling.

    The ceiling is ``ceiling`` (the front end's ``max_tokens``), else ``PROMPTSTRAT_MAX_TOKENS``,
    else the default 111,616 tokens; a byte is counted as a token, an upper bound (a token
    covers at least one byte), so the notices of one pickup never take more than that share
    of the prompt.
    """
    loaded = Settings.load()
    return int(loaded.inbox_pickup_share * (ceiling or loaded.max_context_tokens or DEFAULT_CEILING))


def split_ext(name: str) -> tuple[str, str]:
    """Return ``name`` as its stem and its last extension (dot included; empty when it has none)."""
    stem = name_stem(name)
    return stem, name[len(stem):]


def history_names(name: str) -> Iterator[str]:
    """Yield ``name``, then ``stem.1.ext``, ``stem.2.ext``, ...: the names a delivered file may take.

    Each stays within 255 bytes, the file-name limit of common filesystems: the end of the
    stem (then of the extension) is cut to make room for the number, so a long name that
    was delivered once can be delivered again.
    """
    yield name
    stem, ext = split_ext(name)
    n = 1
    while True:
        cut_stem, cut_ext = stem, ext
        while len(os.fsencode(f"{cut_stem}.{n}{cut_ext}")) > _MAX_NAME_BYTES:
            cut_stem, cut_ext = (cut_stem[:-1], cut_ext) if len(cut_stem) > 1 else (cut_stem, cut_ext[:-1])
        yield f"{cut_stem}.{n}{cut_ext}"
        n += 1


def printable_name(name: str) -> str:
    """Return ``name`` safe to print on a terminal or in JSON: control, invisible and undecodable characters escaped (``\\x1b``)."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in name)


def check_notice_name(name: str) -> None:
    """Raise :class:`InboxError` unless ``name`` may be posted: a plain, printable file name of at most 255 bytes.

    Control characters (an escape sequence, a newline that would forge a listing line),
    invisible ones and lone surrogates are refused: a name is printed to operators.
    """
    if not isinstance(name, str) or not name:
        raise InboxError("a notice name must be a non-empty string")
    if "/" in name or "\x00" in name or (os.altsep and os.altsep in name):
        raise InboxError(f"notice name {name!r} must be a plain file name, without '/' or NUL")
    if name.startswith("."):
        raise InboxError(f"notice name {name!r} starts with '.'; readers ignore dotfiles, so it would never be delivered")
    if not name.isprintable():
        raise InboxError(
            f"notice name {printable_name(name)!r} holds a control, invisible or undecodable character; use printable text"
        )
    if len(name.encode("utf-8")) > _MAX_NAME_BYTES:
        raise InboxError(f"notice name is longer than {_MAX_NAME_BYTES} bytes")


def check_notice_size(data: bytes, cap: int, what: str = "notice") -> bytes:
    """Return ``data`` when it fits the notice cap; raise :class:`InboxError` with the one sentence every writer gives otherwise."""
    if len(data) > cap:
        raise InboxError(f"the {what} is {len(data)} bytes; this inbox takes at most {cap} (INBOX_MAX_NOTICE_BYTES)")
    return data


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
