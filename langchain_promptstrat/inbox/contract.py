"""The inbox contract every backend keeps, the records that cross it, and the rules every backend
shares.

An :class:`InboxBackend` is the inbox of one conversation; an :class:`InboxProvider` hands out
the backend of any conversation (the ``DirectoryInbox`` class, ``PostgresInboxes(dsn)``).
:class:`NoticeStore` holds the rules both built-in backends share; each backend only stores.
The contract (``tests/test_inbox_backends.py`` runs it against every backend):

1. ``pending()`` lists names sorted by code point; reading creates nothing.
2. ``claim(name)`` gives a pending notice to exactly one caller and records it in the history
   with its posting time, under ``name`` or the first free ``stem.N.ext``; None when another
   reader took it first; ``OSError`` when it cannot, the notice then still pending.
3. ``post`` refuses a pending name, the reserved ``abort``, hidden or path-like names and empty
   content; ``request_abort`` writes ``abort`` and refuses a second one.
4. Leases (:class:`LeasingInbox`): ``lease`` claims without recording; ``acknowledge`` records;
   ``take_over`` gives a claim to exactly one caller, keeping its token. A notice is pending,
   in flight or delivered, never two of them and never none.
5. Thread lives (:class:`ThreadBoundInbox`): ``bind_to_thread(created_at)`` empties an inbox
   recorded for another creation time of its thread, once however many bind at once, and
   adopts one that records none.

No LangChain here: the CLI's ``inbox`` commands import this.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Generic, Protocol, TypeVar, runtime_checkable

from typing_extensions import TypeIs

from langchain_promptstrat.ceiling import DEFAULT_MAX_TOKENS
from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.settings import Settings

ABORT_FILE = "abort"
"""The reserved notice name (exact, case-sensitive) that asks the run to stop."""
PREVIEW_BYTES = 240
"""Bytes of a notice a listing reads for its preview."""
PREVIEW_CHARS = 80
MAX_NAME_BYTES = 255

_log = logging.getLogger("langchain_promptstrat")
_warned: set[tuple[str, ...]] = set()
_warned_lock = threading.Lock()
_owner_cache: dict[int, str] = {}


class NoticeNameTaken(InboxError, FileExistsError):
    """A notice (or an abort) of that name is already pending: wait for it to be delivered, or pick
    another name."""


class NoticeTooLarge(InboxError):
    """A notice or an abort reason is over ``INBOX_MAX_NOTICE_BYTES``."""


# --------------------------------------------------------------------------- owners


def _start_time(pid: int) -> str | None:
    """Return the start time of process ``pid`` (Linux: ticks since boot), "0" where unknown, None
    if it is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return None if fields[0] in (b"Z", b"X") else fields[19].decode("ascii")
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:
        pass
    return "0"


def current_owner() -> str:
    """Return this process's owner name for claims: ``<host id>-<pid>-<start time>`` (recomputed
    after ``fork``)."""
    pid = os.getpid()
    if pid not in _owner_cache:
        try:
            with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
                boot = f.read().strip()
        except OSError:
            boot = ""
        host = hashlib.sha256(
            f"{socket.gethostname()}|{boot}".encode("utf-8", "replace")
        ).hexdigest()[:12]
        _owner_cache.clear()
        _owner_cache[pid] = f"{host}-{pid}-{_start_time(pid) or '0'}"
    return _owner_cache[pid]


def owner_state(owner: str) -> str:
    """Return ``"mine"``, ``"alive"``, ``"dead"`` (gone, a zombie, or a new process under its pid)
    or ``"unknown"`` (another host)."""
    if owner == current_owner():
        return "mine"
    host, _, rest = owner.partition("-")
    pid_text, _, start = rest.partition("-")
    if host != current_owner().partition("-")[0] or not pid_text.isdigit():
        return "unknown"
    now = _start_time(int(pid_text))
    return "dead" if now is None or (start != "0" and now != "0" and now != start) else "alive"


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Claimed:
    """A notice this reader took out of the inbox: where it lies now (a file, or ``pg:...``) and
    what it held."""

    name: str
    path: Path | str
    mtime: float
    """When it was posted, in seconds since the epoch."""
    data: bytes | None
    """The bytes read, or None when unreadable (only with ``need_content=False``)."""
    token: str | None = None
    """For a lease: the claim's stable token (pass it to ``acknowledge``)."""


@dataclass(frozen=True)
class InboxEntry:
    """One notice of the inbox or of its history, for listings: its posting time, size, delivery
    time (PostgreSQL), first bytes."""

    name: str
    mtime: float
    size: int
    delivered_at: float | None = None
    head: bytes | None = None

    @property
    def preview(self) -> str | None:
        """Return the notice's start as one printable line (80 characters); None when unreadable.

        Whoever posted the notice chose its bytes: control and bidi characters are escaped
        (:func:`printable_text`), so a listing cannot drive a terminal or reorder what it shows.
        """
        if self.head is None:
            return None
        text = " ".join(self.head.decode("utf-8", "replace").split())
        cut = len(self.head) < self.size or len(text) > PREVIEW_CHARS
        return printable_text(text[: PREVIEW_CHARS - 1] + "…" if cut else text)


@dataclass(frozen=True)
class Lease:
    """A notice claimed but not yet acknowledged; ``token`` is kept when another reader takes it
    over."""

    token: str
    name: str
    owner: str
    leased_at: float
    lease_seconds: float
    mtime: float
    size: int
    head: bytes | None = field(default=None, compare=False)

    @property
    def state(self) -> str:
        """Return whose it is: ``"mine"``, or, for another owner, ``"expired"``, ``"dead"``,
        ``"held"`` (alive, in lease: not to be taken over)."""
        who = owner_state(self.owner)
        if who in ("mine", "dead"):
            return who
        return "expired" if time.time() > self.leased_at + self.lease_seconds else "held"

    @property
    def listed_state(self) -> str:
        """Return :attr:`state` as a listing shows it: this process's own claim counts as
        ``"held"``."""
        return "held" if self.state == "mine" else self.state

    @property
    def entry(self) -> InboxEntry:
        return InboxEntry(self.name, self.mtime, self.size, head=self.head)


# --------------------------------------------------------------------------- protocols


@runtime_checkable
class InboxBackend(Protocol):
    """The inbox of one conversation: pending notices, the atomic claim, the history, the
    writers."""

    @property
    def location(self) -> str:
        """Return a human-readable name of where the pending notices lie."""
        ...

    def pending(self) -> list[str]: ...
    def pending_entries(self) -> list[InboxEntry]: ...
    def delivered_entries(self) -> list[InboxEntry]: ...
    def claim(self, name: str, *, need_content: bool = True) -> Claimed | None: ...
    def post(self, content: str | bytes, *, name: str | None = None) -> Path | str: ...
    def request_abort(self, reason: str = "") -> Path | str: ...


@runtime_checkable
class LeasingInbox(InboxBackend, Protocol):
    """A backend that claims a notice, delivers it, and records the delivery later: no notice lost
    to a crash."""

    def ready(self) -> list[str]: ...
    def lease(self, name: str, *, need_content: bool = True) -> Claimed | None: ...
    def in_flight(self, *, with_head: bool = False) -> list[Lease]: ...
    def take_over(self, lease: Lease, *, need_content: bool = True) -> Claimed | None: ...
    def acknowledge(self, token: str, name: str | None = None) -> Path | str | None: ...


@runtime_checkable
class ThreadBoundInbox(Protocol):
    """A backend whose inbox belongs to one life of a LangGraph Server thread: its creation time.

    A thread deleted and created again under the same id is another thread: its inbox starts
    empty. ``bind_to_thread(created_at)`` removes everything (pending, in flight, delivered) an
    inbox holds for another creation time, and returns whether it did; an inbox that records
    none (notices posted before the thread was first seen, or from a shell) is adopted.
    """

    def bind_to_thread(self, created_at: str, *, create: bool = False) -> bool: ...


@runtime_checkable
class InboxProvider(Protocol):
    """Hands out the inbox backend of any conversation, named by thread id or by save file."""

    def for_thread(self, thread_id: str) -> InboxBackend: ...
    def for_save_file(self, save_file: str | os.PathLike[str]) -> InboxBackend: ...


def is_inbox_backend(value: object) -> TypeIs[InboxBackend]:
    """Return whether ``value`` is a backend bound to one conversation (a class never is:
    ``DirectoryInbox`` is a provider)."""
    return not isinstance(value, type) and isinstance(value, InboxBackend)


# --------------------------------------------------------------------------- shared rules


def warn_once(key: tuple[str, ...], message: str, *args: object) -> None:
    """Log ``message`` at WARNING the first time ``key`` is seen in this process."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    _log.warning(message, *args)


def notice_limits() -> tuple[float, float, int]:
    """Return the settings every backend starts from: quiet seconds, lease seconds, the largest
    notice in bytes."""
    loaded = Settings.load()
    return loaded.inbox_quiet_seconds, loaded.inbox_lease_seconds, loaded.inbox_max_notice_bytes


def pickup_budget(ceiling: int | None = None) -> int:
    """Return how many tokens of notices one pickup admits: ``inbox_pickup_share`` of a ceiling."""
    loaded = Settings.load()
    configured = loaded.max_tokens if isinstance(loaded.max_tokens, int) else None
    return int(loaded.inbox_pickup_share * (ceiling or configured or DEFAULT_MAX_TOKENS))


def name_stem(name: str) -> str:
    """Return ``name`` without its last extension (a leading or trailing dot starts none), the same
    on every Python."""
    cut = name.rfind(".")
    return name[:cut] if 0 < cut < len(name) - 1 else name


def history_names(name: str) -> Iterator[str]:
    """Yield ``name``, then ``stem.1.ext``, ``stem.2.ext``, ...: the history names of a notice, each
    within 255 bytes (the stem cut first)."""
    yield name
    stem = name_stem(name)
    ext = name[len(stem) :]
    n = 1
    while True:
        cut_stem, cut_ext = stem, ext
        while len(os.fsencode(f"{cut_stem}.{n}{cut_ext}")) > MAX_NAME_BYTES:
            cut_stem, cut_ext = (
                (cut_stem[:-1], cut_ext) if len(cut_stem) > 1 else (cut_stem, cut_ext[:-1])
            )
        yield f"{cut_stem}.{n}{cut_ext}"
        n += 1


def printable_text(text: str) -> str:
    """Return ``text`` (a name, a preview, a claim owner) safe to print on a terminal or in JSON.

    Escaped as ``repr`` escapes them: C0 and C1 controls (``\\x1b``, ``\\x9b``), format
    characters such as the bidi overrides and isolates (``\\u202e``, ``\\u2066``) and zero-width
    ones, separators other than the space, and undecodable bytes (``\\udc80``): every character
    ``str.isprintable`` refuses. Every listing (HTTP, ``inbox ls`` as text and JSON) shows what
    others wrote through it.
    """
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def check_notice_name(name: str) -> None:
    """Raise :class:`InboxError` unless ``name`` may be posted: a plain, printable file name of at
    most 255 bytes (it is printed to operators)."""
    if not isinstance(name, str) or not name:
        raise InboxError("a notice name must be a non-empty string")
    if "/" in name or "\x00" in name or (os.altsep and os.altsep in name):
        raise InboxError(f"notice name {name!r} must be a plain file name, without '/' or NUL")
    if name.startswith("."):
        raise InboxError(
            f"notice name {name!r} starts with '.'; readers ignore dotfiles, so it would never be "
            "delivered"
        )
    if not name.isprintable():
        raise InboxError(
            f"notice name {printable_text(name)!r} holds a control, invisible or undecodable "
            "character; use printable text"
        )
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise InboxError(f"notice name is longer than {MAX_NAME_BYTES} bytes")


def text_bytes(content: object, what: str, cap: int) -> bytes:
    """Return a notice (str or bytes) or an abort reason (str) as UTF-8 bytes within ``cap``, before
    anything is written.

    Raises :class:`InboxError` for anything else (``bytes(42)`` would be 42 NUL bytes, a lone
    surrogate cannot be encoded) and :class:`NoticeTooLarge` over ``cap``: every writer's sentences.
    """
    notice = what == "notice"
    if isinstance(content, str):
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InboxError(
                f"the {what} is not valid text: character {exc.start} is a lone surrogate"
            ) from None
    elif notice and isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
    else:
        kind = "text (str, or UTF-8 bytes)" if notice else "text (str)"
        raise InboxError(
            f"{'a notice' if notice else 'an abort reason'} is {kind}, got {type(content).__name__}"
        )
    if len(data) > cap:
        raise NoticeTooLarge(
            f"the {what} is {len(data)} bytes; this inbox takes at most {cap} "
            "(INBOX_MAX_NOTICE_BYTES)"
        )
    return data


def notice_data(content: object, name: str | None, cap: int) -> bytes:
    """Return a notice's bytes once it may be posted under ``name`` (None: a fresh name);
    :class:`InboxError` saying why not."""
    if name is not None:
        check_notice_name(name)
        if name == ABORT_FILE:
            raise InboxError(
                "'abort' is reserved for abort requests; use request_abort() or `promptstrat "
                "inbox abort`"
            )
    data = text_bytes(content, "notice", cap)
    if not data.strip():
        raise InboxError("refusing to post an empty notice; give it some content")
    return data


def default_notice_name() -> str:
    """Return a fresh notice name that sorts in arrival order: UTC time to the microsecond, a random
    suffix."""
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S_%f}Z-{secrets.token_hex(3)}.txt"


W = TypeVar("W", Path, str)


class NoticeStore(Generic[W]):
    """What both built-in backends do alike: refuse a notice for the same reasons, leave an
    oversized one pending.

    A backend provides ``location``, ``max_notice_bytes`` and ``_write(data, name)`` (``name``
    None: a fresh arrival-ordered name; raises :class:`NoticeNameTaken` when it is pending).
    """

    max_notice_bytes: int

    @property
    def location(self) -> str:
        raise NotImplementedError

    def _write(self, data: bytes, name: str | None) -> W:
        raise NotImplementedError

    def post(self, content: str | bytes, *, name: str | None = None) -> W:
        """Post a notice and return where it lies; ``name`` defaults to an arrival-ordered one.

        Refuses the reserved name ``abort`` (use :meth:`request_abort`), hidden or path-like
        names, empty content, content over :attr:`max_notice_bytes`, and a name already
        pending (:class:`NoticeNameTaken`).
        """
        return self._write(notice_data(content, name, self.max_notice_bytes), name)

    def request_abort(self, reason: str = "") -> W:
        """Post the reserved ``abort`` notice holding ``reason`` and return where it lies; refuses a
        second pending one."""
        return self._write(text_bytes(reason, "abort reason", self.max_notice_bytes), ABORT_FILE)

    def delivery_problem(self) -> str | None:
        """Return why no notice of this inbox can be delivered now (naming no path), or None."""
        return None

    def _taken(self, name: str) -> NoticeNameTaken:
        what = "an abort is" if name == ABORT_FILE else f"a notice named {name!r} is"
        return NoticeNameTaken(
            f"{what} already pending in this inbox; wait for it to be delivered or pick another "
            "name"
        )

    def _fits(self, name: str, size: int, shown: str) -> bool:
        """Return whether notice ``name`` of ``size`` bytes may be delivered; one warning for one
        over the limit (an abort always may)."""
        if size <= self.max_notice_bytes or name == ABORT_FILE:
            return True
        warn_once(
            ("too-large", self.location, name, str(size)),
            "inbox: %s/%s is %d bytes, over the %d-byte notice limit (INBOX_MAX_NOTICE_BYTES); "
            "it is left pending, not delivered",
            self.location,
            shown,
            size,
            self.max_notice_bytes,
        )
        return False
