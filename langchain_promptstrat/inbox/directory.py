"""The inbox on disk: where it lies, how a file is claimed exactly once, how writers post.

A conversation saved to ``x/agent.chat`` has its inbox in the sibling directory
``x/agent.inbox``; delivered files are moved into ``x/agent.inbox_removed``, which is the
record of what was delivered and when (mtimes are kept). For a LangGraph thread the save
file is ``<root>/<encoded thread id>.chat``.

Claim protocol (why no file is delivered twice and none is overwritten):

1. A reader opens the pending file (``O_NOFOLLOW``; a file it cannot open is skipped in
   place), then claims it with ``os.rename`` into a private staging name
   ``.claim-<pid>-<random>`` inside the removed directory. ``rename`` is atomic: of all
   readers racing for the same inbox entry, exactly one moves it; the others get
   ``FileNotFoundError`` and treat the file as not theirs. An inode therefore leaves the
   inbox once, into a name nobody else ever touches, and is read only by the reader that
   moved it. If a writer reused the name between listing and claiming, the reader claims
   the new file, notices that the staged inode is not the one it opened, and reads the
   staged one: still one reader per file.
2. The reader then gives the staged file its final name with ``os.link`` (which fails
   with ``FileExistsError`` instead of replacing), trying ``name``, ``name.1.ext``,
   ``name.2.ext``, ... in turn, and unlinks the staging name. Nothing in the removed
   directory is ever replaced. (Where hard links are not supported, a name is reserved
   with ``O_CREAT | O_EXCL`` and the staged file renamed over that empty placeholder, which
   only ever replaces the reader's own placeholder. A writer doing the same may let a
   reader deliver the empty placeholder before the real notice: an extra empty notice on
   such filesystems, never a lost or doubled one.)
3. Writers write a hidden temporary file in the inbox (readers ignore dotfiles), fsync it,
   and link it to its final name, so a reader never sees half a file and a pending file of
   the same name is never replaced.

``claim`` is the one-step consume (at most once). Delivery that survives crashes uses a
lease instead (see :mod:`~langchain_promptstrat.inbox.contract`):

4. ``lease(name)`` creates ``<removed>/.claims/<token>.<owner>/`` (``owner`` names host,
   process id and process start time) and renames the pending file into it: still one
   atomic rename, so one reader per file, and the file is neither pending nor delivered.
5. ``acknowledge(token, name)`` moves it into the removed directory as in step 2 and removes
   the claim directory. A reader killed after the link and before the unlink leaves the
   file in both places; the history then holds the same inode, which recovery recognises
   as acknowledged.
6. ``take_over(lease)`` renames a claim directory to the caller's owner name: of all readers
   recovering the claim of a dead owner (same host, process gone or its start time
   different) or of an expired lease, exactly one wins the rename; the token, and with it
   the notice's message id, stays the same.

Files still being written are not ``ready()``: an empty file, or one changed within the
last ``quiet_seconds``, unless it has no write permission bit (writers here post
read-only files, so their notices are ready at once). A file larger than
``max_notice_bytes`` stays pending with one warning. An inbox or removed directory that
is a symbolic link is refused, with one warning, and nothing is moved.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import secrets
import socket
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.settings import Settings

__all__ = [
    "ABORT_FILE",
    "Lease",
    "current_owner",
    "owner_state",
    "INBOX_ROOT_ENV",
    "Claimed",
    "DirectoryInbox",
    "InboxEntry",
    "default_notice_name",
    "encode_thread_id",
    "inbox_dir",
    "inbox_removed_dir",
    "inbox_root",
    "post_to_inbox",
    "request_abort",
    "resolve_save_file",
    "thread_save_file",
]

ABORT_FILE = "abort"
"""The reserved file name (exact, case-sensitive) that asks the run to stop."""

INBOX_ROOT_ENV = "PROMPTSTRAT_INBOX_ROOT"
"""Environment variable naming the directory that holds one inbox per LangGraph thread."""

INBOX_SUFFIX = ".inbox"
REMOVED_SUFFIX = ".inbox_removed"
THREAD_SAVE_SUFFIX = ".chat"

_SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_MAX_ENCODED = 180
"""Longest encoded thread id kept verbatim: with ``.inbox_removed`` it stays under the
255-byte file-name limit of common filesystems."""
_LONG_PREFIX = 96
_MAX_NAME_BYTES = 255
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
"""Never follow a symlink swapped in after listing, never block on a FIFO."""
_NO_LINK_ERRNOS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS, errno.EXDEV}


# --------------------------------------------------------------------------- paths


def _stem(name: str) -> str:
    """Return ``name`` without its last extension; a name without one is kept whole.

    A leading dot does not start an extension (``.chat`` stays ``.chat``) and neither
    does a trailing one (``a.`` stays ``a.``): the rule is spelled out here rather than
    left to ``pathlib``, whose ``stem`` changed between Python versions.
    """
    cut = name.rfind(".")
    return name[:cut] if 0 < cut < len(name) - 1 else name


def _sibling(save_file: str | os.PathLike[str], suffix: str) -> Path:
    path = Path(save_file)
    if not path.name or path.name in (".", ".."):
        raise InboxError(f"save file {os.fspath(save_file)!r} names no file; pass the path of the conversation's file")
    return path.parent / (_stem(path.name) + suffix)


def inbox_dir(save_file: str | os.PathLike[str]) -> Path:
    """Return the inbox directory of a conversation saved to ``save_file`` (its ``.inbox`` sibling).

    The last extension of the file name is replaced: ``x/agent.chat`` -> ``x/agent.inbox``,
    ``dir/a.b.chat`` -> ``dir/a.b.inbox``, ``dir/agent`` -> ``dir/agent.inbox``.
    """
    return _sibling(save_file, INBOX_SUFFIX)


def inbox_removed_dir(save_file: str | os.PathLike[str]) -> Path:
    """Return the directory delivered notices are moved into (the ``.inbox_removed`` sibling)."""
    return _sibling(save_file, REMOVED_SUFFIX)


def encode_thread_id(thread_id: str) -> str:
    """Return ``thread_id`` as one safe file-name component, readable when it already is one.

    Every character outside ``[A-Za-z0-9._-]`` becomes ``%XX`` per UTF-8 byte (``%`` itself
    included), and so does a leading dot, so ``..``, ``/etc`` or ``a/b`` can never leave the
    root or hide a directory; ``run.1`` stays ``run.1``. The mapping is injective. An
    encoding longer than 180 characters is cut to its first 96 and ``~`` plus the SHA-256 of
    the id: ``~`` never appears in a short encoding, so long ids cannot collide with short
    ones, and two long ids collide only if SHA-256 does. Empty or non-string ids raise
    :class:`InboxError`. On a case-insensitive filesystem ``Run`` and ``run`` share an inbox.
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
    """Return the inbox root: ``root`` when given, else ``$PROMPTSTRAT_INBOX_ROOT``, else None.

    The environment is read on every call. A root that exists but is not a directory
    raises :class:`InboxError`.
    """
    value = os.fspath(root) if root is not None else os.environ.get(INBOX_ROOT_ENV, "")
    if not value:
        return None
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        source = "root" if root is not None else INBOX_ROOT_ENV
        raise InboxError(f"inbox root {str(path)!r} ({source}) exists and is not a directory; point it at a directory")
    return path


def thread_save_file(thread_id: str, root: str | os.PathLike[str] | None = None) -> Path:
    """Return ``<root>/<encoded thread_id>.chat``: the save file that stands for a LangGraph thread.

    Its inbox is ``<root>/<encoded>.inbox``, always directly inside ``root`` whatever the
    thread id holds. Raises :class:`InboxError` when there is no root (no ``root`` and no
    ``PROMPTSTRAT_INBOX_ROOT``).
    """
    base = inbox_root(root)
    if base is None:
        raise InboxError(f"no inbox root for thread {thread_id!r}: pass root= (--root) or set {INBOX_ROOT_ENV}")
    save_file = base / (encode_thread_id(thread_id) + THREAD_SAVE_SUFFIX)
    for derived in (save_file, inbox_dir(save_file), inbox_removed_dir(save_file)):
        if derived.parent != base or derived.name.startswith(".") or os.sep in derived.name:  # defence in depth
            raise InboxError(f"thread id {thread_id!r} would name {str(derived)!r} outside the inbox root")
    return save_file


def resolve_save_file(
    save_file: str | os.PathLike[str] | None = None,
    *,
    thread_id: str | None = None,
    root: str | os.PathLike[str] | None = None,
) -> Path:
    """Return the save file named by ``save_file``, or by ``thread_id`` under ``root``; exactly one is needed."""
    if save_file is not None and thread_id is not None:
        raise InboxError("give either a save file or a thread id, not both")
    if save_file is not None and os.fspath(save_file):
        if root is not None:
            raise InboxError("root= goes with thread_id=, not with a save file")
        return Path(save_file)
    if thread_id is not None:
        return thread_save_file(thread_id, root)
    raise InboxError("no inbox named: give a save file, or a thread id with root= or " + INBOX_ROOT_ENV)


# --------------------------------------------------------------------------- owners and leases

_log = logging.getLogger("langchain_promptstrat")
CLAIMS_DIR = ".claims"
"""Hidden directory inside the removed directory holding one sub-directory per in-flight claim."""

_owner_cache: dict[int, str] = {}
_warned: set[tuple[str, ...]] = set()
_warned_lock = threading.Lock()


def warn_once(key: tuple[str, ...], message: str, *args: object) -> None:
    """Log ``message`` at WARNING the first time ``key`` is seen in this process."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    _log.warning(message, *args)


def _host_id() -> str:
    boot = ""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
    except OSError:
        pass
    return hashlib.sha256(f"{socket.gethostname()}|{boot}".encode("utf-8", "replace")).hexdigest()[:12]


def _start_time(pid: int) -> str | None:
    """Return the start time of process ``pid`` (Linux: ticks since boot), "0" where unknown, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[19].decode("ascii")
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
    """Return this process's owner name for claims: ``<host id>-<pid>-<start time>`` (recomputed after ``fork``)."""
    pid = os.getpid()
    owner = _owner_cache.get(pid)
    if owner is None:
        owner = f"{_host_id()}-{pid}-{_start_time(pid) or '0'}"
        _owner_cache.clear()
        _owner_cache[pid] = owner
    return owner


def owner_state(owner: str) -> str:
    """Return ``"mine"``, ``"alive"``, ``"dead"`` or ``"unknown"`` (another host) for a claim's owner name."""
    if owner == current_owner():
        return "mine"
    host, _, rest = owner.partition("-")
    pid_text, _, start = rest.partition("-")
    if host != current_owner().partition("-")[0] or not pid_text.isdigit():
        return "unknown"
    now = _start_time(int(pid_text))
    if now is None or (start != "0" and now != "0" and now != start):
        return "dead"
    return "alive"


@dataclass(frozen=True)
class Lease:
    """A notice claimed but not yet acknowledged: taken out of the pending set, not yet in the history."""

    token: str
    """Stable identity of the claim, kept when another reader takes it over."""
    name: str
    owner: str
    leased_at: float
    """When the current owner took it, in seconds since the epoch."""
    lease_seconds: float
    mtime: float
    size: int
    head: bytes | None = field(default=None, compare=False)
    """The first bytes of the content, for listings (``in_flight(with_head=True)``); None otherwise."""

    @property
    def state(self) -> str:
        """Return whose it is: ``"mine"``, or, for another owner, ``"expired"``, ``"dead"``, ``"held"`` (alive, in lease)."""
        who = owner_state(self.owner)
        if who == "mine":
            return "mine"
        if who == "dead":
            return "dead"
        if time.time() > self.leased_at + self.lease_seconds:
            return "expired"
        return "held"

    @property
    def recoverable(self) -> bool:
        """Whether this process may take the claim over (its own, or its owner dead or out of lease)."""
        return self.state != "held"


def _limits() -> tuple[float, float, int]:
    loaded = Settings.load()
    return loaded.inbox_quiet_seconds, loaded.inbox_lease_seconds, loaded.inbox_max_notice_bytes


# --------------------------------------------------------------------------- the store


@dataclass(frozen=True)
class Claimed:
    """A file this reader took out of the inbox: where it lies now and what it held."""

    name: str
    """Its name in the inbox."""
    path: Path | str
    """Where it lies now: the file in the removed directory (``name`` or ``name.N.ext``), or,
    for a backend without files, a string naming the history record (``pg:...``)."""
    mtime: float
    """When it was posted (the file's mtime), in seconds since the epoch."""
    data: bytes | None
    """The bytes read, or None when the file could not be read (only with ``need_content=False``)."""
    token: str | None = None
    """For a lease: the claim's stable token (pass it to ``acknowledge``); None for a one-step claim."""


@dataclass(frozen=True)
class InboxEntry:
    """One file of the inbox or of its removed directory, for listings."""

    name: str
    mtime: float
    """When it was posted (the file's mtime), in seconds since the epoch."""
    size: int
    delivered_at: float | None = None
    """When it was delivered, where the backend records it (PostgreSQL); None otherwise."""
    head: bytes | None = None
    """The first bytes of the content (up to :data:`PREVIEW_BYTES`), for previews; None if unreadable."""

    @property
    def preview(self) -> str | None:
        """Return the start of the notice as one line of text (at most 80 characters), or None when unreadable."""
        if self.head is None:
            return None
        text = " ".join(self.head.decode("utf-8", "replace").split())
        cut = len(self.head) < self.size or len(text) > PREVIEW_CHARS
        return text[: PREVIEW_CHARS - 1] + "…" if cut else text


PREVIEW_BYTES = 240
"""Bytes of a notice a listing reads for its preview."""
PREVIEW_CHARS = 80
"""Characters a preview shows at most (the last one an ellipsis when the notice is longer)."""


def _read_head(path: str) -> bytes | None:
    """Return the first PREVIEW_BYTES of a file, or None when it cannot be read (it may be claimed meanwhile)."""
    try:
        with open(path, "rb") as f:
            return f.read(PREVIEW_BYTES)
    except OSError:
        return None


def _split_ext(name: str) -> tuple[str, str]:
    stem = _stem(name)
    return stem, name[len(stem):]


def _numbered(name: str) -> Iterator[str]:
    """Yield ``name``, then ``stem.1.ext``, ``stem.2.ext``, ...: the names a delivered file may take."""
    yield name
    stem, ext = _split_ext(name)
    n = 1
    while True:
        yield f"{stem}.{n}{ext}"
        n += 1


def _move_no_replace(src: Path, dst: Path) -> None:
    """Move ``src`` to ``dst``, failing with FileExistsError instead of ever replacing ``dst``."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in _NO_LINK_ERRNOS:
            raise
        # No hard links on this filesystem: reserve the name exclusively, then replace
        # only that placeholder of our own.
        fd = os.open(dst, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        try:
            os.replace(src, dst)
        except OSError:
            os.unlink(dst)
            raise
        return
    try:
        os.unlink(src)
    except FileNotFoundError:
        pass


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """Return a read descriptor on ``path`` and its stat; raise OSError unless it is a regular file."""
    fd = os.open(path, _READ_FLAGS)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd, st


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _check_name(name: str) -> None:
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


class DirectoryInbox:
    """The inbox of one conversation as two directories: pending files and delivered ones.

    This is the filesystem backend (an :class:`~langchain_promptstrat.inbox.contract.InboxBackend`):
    listing, the atomic claim, the clash suffix and the writers live here; what a claimed
    file means (a notice, an abort) is the strategy's business. Build it with
    :meth:`for_save_file` or :meth:`for_thread`; the class itself, with those two
    classmethods, is the directory backend's inbox provider.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        removed_path: str | os.PathLike[str],
        *,
        quiet_seconds: float | None = None,
        lease_seconds: float | None = None,
        max_notice_bytes: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.removed_path = Path(removed_path)
        quiet, lease, cap = _limits()
        self.quiet_seconds = quiet if quiet_seconds is None else quiet_seconds
        self.lease_seconds = lease if lease_seconds is None else lease_seconds
        self.max_notice_bytes = cap if max_notice_bytes is None else max_notice_bytes

    @property
    def claims_path(self) -> Path:
        """Return the hidden directory holding the in-flight claims (inside the removed directory)."""
        return self.removed_path / CLAIMS_DIR

    def _safe(self, *, inbox_only: bool = False) -> bool:
        """Return whether both directories (or the inbox alone) may be used; a symlinked one is refused with one warning."""
        for directory in (self.path,) if inbox_only else (self.path, self.removed_path):
            try:
                st = os.lstat(directory)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                warn_once(
                    ("symlink", str(directory)),
                    "inbox: refusing %s: it is a symbolic link (it could lead outside the inbox root); "
                    "nothing is read or moved there. Replace it with a real directory.",
                    directory,
                )
                return False
        return True

    @classmethod
    def for_save_file(cls, save_file: str | os.PathLike[str]) -> DirectoryInbox:
        """Return the inbox of the conversation saved to ``save_file`` (the sibling rule)."""
        return cls(inbox_dir(save_file), inbox_removed_dir(save_file))

    @classmethod
    def for_thread(cls, thread_id: str, root: str | os.PathLike[str] | None = None) -> DirectoryInbox:
        """Return the inbox of LangGraph thread ``thread_id`` under ``root`` (or ``$PROMPTSTRAT_INBOX_ROOT``)."""
        return cls.for_save_file(thread_save_file(thread_id, root))

    def __repr__(self) -> str:
        return f"DirectoryInbox({str(self.path)!r})"

    @property
    def location(self) -> str:
        """Return where the pending notices lie, for messages and listings: the inbox directory."""
        return str(self.path)

    # ----------------------------------------------------------------- reading

    def pending(self) -> list[str]:
        """Return the names of the pending notices, sorted: regular files not starting with a dot.

        A missing inbox (or one that is not a directory) has no pending notice; nothing is
        created. Symbolic links, subdirectories and other special files are left alone.
        """
        return [entry.name for entry in self._scan(self.path)] if self._safe() else []

    def pending_entries(self) -> list[InboxEntry]:
        """Return the pending files with their mtimes, sizes and first bytes, in delivery order."""
        return self._scan(self.path, with_head=True) if self._safe() else []

    def ready(self) -> list[str]:
        """Return the pending names a pickup may take now, in delivery order.

        Left for a later pickup: an empty file other than ``abort`` (an editor may be about to
        fill it), a writable file changed within the last :attr:`quiet_seconds` (an editor
        may still be writing it), and a file over :attr:`max_notice_bytes` (one warning;
        it stays pending until someone removes or shortens it). Read-only files, which is
        how :meth:`post` writes, are complete and ready at once.
        """
        if not self._safe():
            return []
        names = []
        now = time.time()
        try:
            it = os.scandir(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return []
        with it:
            for item in it:
                if item.name.startswith("."):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                if st.st_size == 0 and item.name != ABORT_FILE:
                    continue
                if st.st_mode & 0o222 and abs(now - st.st_mtime) < self.quiet_seconds:
                    continue
                if st.st_size > self.max_notice_bytes and item.name != ABORT_FILE:
                    warn_once(
                        ("too-large", str(self.path), item.name, str(st.st_size)),
                        "inbox: %s/%s is %d bytes, over the %d-byte notice limit (INBOX_MAX_NOTICE_BYTES); "
                        "it is left pending, not delivered",
                        self.path, os.fsencode(item.name).decode("utf-8", "backslashreplace"), st.st_size,
                        self.max_notice_bytes,
                    )
                    continue
                names.append(item.name)
        names.sort()
        return names

    def delivered_entries(self) -> list[InboxEntry]:
        """Return the delivered files (the removed directory), oldest mtime first."""
        return sorted(self._scan(self.removed_path, with_head=True), key=lambda e: (e.mtime, e.name))

    @staticmethod
    def _scan(directory: Path, with_head: bool = False) -> list[InboxEntry]:
        try:
            it = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return []
        entries = []
        with it:
            for item in it:
                if item.name.startswith("."):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    head = _read_head(item.path) if with_head else None
                    entries.append(InboxEntry(item.name, st.st_mtime, st.st_size, head=head))
        entries.sort(key=lambda e: e.name)
        return entries

    def _open_pending(self, src: Path, need_content: bool) -> tuple[int | None, os.stat_result | None] | None:
        """Open pending file ``src`` before claiming it: its descriptor and stat, (None, None) when it cannot be opened without ``need_content``.

        Returns None when it is gone (another reader took it). Refuses a symlinked inbox or
        history directory; raises ``OSError`` when ``need_content`` and it cannot be opened.
        """
        if not self._safe():
            raise InboxError(f"refusing to claim from {self.path}: the inbox or its removed directory is a symbolic link")
        try:
            return _open_regular(src)
        except FileNotFoundError:
            return None
        except OSError:
            if need_content:
                raise
            return None, None

    def claim(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Move pending file ``name`` into the removed directory and return it with its bytes.

        Returns None when another reader claimed it first (or it vanished). Raises
        ``OSError`` when the file cannot be claimed: with ``need_content`` (the default) a
        file this process cannot open is left in place; without it, it is claimed anyway
        and returned with ``data=None``. The claim is atomic across processes (see the
        module docstring), the removed directory is created on the first claim, and the
        file keeps its mtime.
        """
        src = self.path / name
        pending = self._open_pending(src, need_content)
        if pending is None:
            return None
        fd, opened = pending
        try:
            self.removed_path.mkdir(parents=True, exist_ok=True)
            staging = self.removed_path / f".claim-{os.getpid()}-{secrets.token_hex(8)}"
            try:
                os.rename(src, staging)
            except FileNotFoundError:
                return None  # another reader won the race
            # From here on the file is ours alone.
            staged = os.lstat(staging)
            if not stat.S_ISREG(staged.st_mode):  # something else was swapped in under that name
                self._give_back(staging, src)
                raise OSError(errno.EINVAL, "not a regular file; left in place", str(src))
            if opened is None or (opened.st_dev, opened.st_ino) != (staged.st_dev, staged.st_ino):
                # Not the file we opened (a writer reused the name), or none: read what we claimed.
                if fd is not None:
                    os.close(fd)
                try:
                    fd, _ = _open_regular(staging)
                except OSError:
                    fd = None
                    if need_content:
                        final = self._place(staging, name)
                        raise OSError(errno.EACCES, f"claimed but unreadable; left at {final}", str(src)) from None
            final = self._place(staging, name)
            if staged.st_mtime_ns != os.lstat(final).st_mtime_ns:
                os.utime(final, ns=(staged.st_atime_ns, staged.st_mtime_ns), follow_symlinks=False)
            data = None
            if fd is not None:
                try:
                    data = _read_all(fd)
                except OSError as exc:
                    if need_content:
                        raise OSError(exc.errno, f"claimed but unreadable ({exc.strerror}); left at {final}", str(src)) from None
            return Claimed(name=name, path=final, mtime=staged.st_mtime, data=data)
        finally:
            if fd is not None:
                os.close(fd)

    # ----------------------------------------------------------------- leases

    def lease(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Take pending file ``name`` into a claim owned by this process and return it with its bytes and token.

        The notice is then neither pending nor delivered until :meth:`acknowledge` (or a
        take-over after this process died). Returns None when another reader took it.
        Raises ``OSError`` when it cannot be claimed; the file is then still pending.
        """
        src = self.path / name
        pending = self._open_pending(src, need_content)
        if pending is None:
            return None
        fd, opened = pending
        if fd is not None:
            os.close(fd)
        token = secrets.token_hex(16)
        claim_dir = self.claims_path / f"{token}.{current_owner()}"
        self.removed_path.mkdir(parents=True, exist_ok=True)
        for attempt in range(100):  # another reader may remove the emptied claims directory in between
            try:
                os.mkdir(self.claims_path)
            except FileExistsError:
                pass
            try:
                os.mkdir(claim_dir)
                break
            except FileNotFoundError:
                if attempt == 99:
                    raise
        try:
            os.rename(src, claim_dir / name)
        except FileNotFoundError:
            os.rmdir(claim_dir)
            return None
        staged = os.lstat(claim_dir / name)
        if not stat.S_ISREG(staged.st_mode):
            self._give_back(claim_dir / name, src)
            self._drop_claim_dir(claim_dir)
            raise OSError(errno.EINVAL, "not a regular file; left in place", str(src))
        return self._read_claim(claim_dir, name, token, need_content, opened)

    def _read_claim(
        self, claim_dir: Path, name: str, token: str, need_content: bool, opened: os.stat_result | None = None
    ) -> Claimed:
        path = claim_dir / name
        try:
            fd, st = _open_regular(path)
        except OSError:
            if need_content:
                raise
            st = os.lstat(path)
            return Claimed(name=name, path=path, mtime=st.st_mtime, data=None, token=token)
        try:
            data = _read_all(fd)
        finally:
            os.close(fd)
        return Claimed(name=name, path=path, mtime=st.st_mtime, data=data, token=token)

    def in_flight(self, *, with_head: bool = False) -> list[Lease]:
        """Return the claims not yet acknowledged, oldest posting time first; empty claim leftovers are cleared.

        ``with_head`` also reads each notice's first bytes, for a listing's preview.
        """
        if not self._safe():
            return []
        try:
            it = os.scandir(self.claims_path)
        except (FileNotFoundError, NotADirectoryError):
            return []
        leases = []
        with it:
            for item in it:
                token, dot, owner = item.name.partition(".")
                if not dot or not item.is_dir(follow_symlinks=False):
                    continue
                try:
                    leased_at = item.stat(follow_symlinks=False).st_mtime
                    inside = [e for e in os.scandir(item.path) if not e.name.startswith(".")]
                except OSError:
                    continue
                if not inside:
                    if owner_state(owner) in ("dead", "mine") or time.time() > leased_at + self.lease_seconds:
                        self._drop_claim_dir(Path(item.path))  # a reader stopped between mkdir and rename, or acknowledged
                    continue
                try:
                    st = inside[0].stat(follow_symlinks=False)
                except OSError:
                    continue
                head = _read_head(inside[0].path) if with_head else None
                leases.append(Lease(token, inside[0].name, owner, leased_at, self.lease_seconds, st.st_mtime, st.st_size, head))
        leases.sort(key=lambda lease: (lease.mtime, lease.name))
        return leases

    def _claim_dir(self, token: str) -> Path | None:
        try:
            with os.scandir(self.claims_path) as it:
                for item in it:
                    if item.name.startswith(token + "."):
                        return Path(item.path)
        except OSError:
            pass
        return None

    def take_over(self, lease: Lease, *, need_content: bool = True) -> Claimed | None:
        """Make ``lease`` this process's claim (renewing its lease) and return the notice; None when gone or taken.

        A claim whose file the history already holds (its reader stopped in mid-acknowledge)
        is finished instead and None comes back.
        """
        if not self._safe():
            return None
        old = self.claims_path / f"{lease.token}.{lease.owner}"
        new = self.claims_path / f"{lease.token}.{current_owner()}"
        if old != new:
            try:
                os.rename(old, new)
            except (FileNotFoundError, OSError) as exc:
                if isinstance(exc, FileNotFoundError) or exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    return None
                raise
        os.utime(new)
        path = new / lease.name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self._drop_claim_dir(new)
            return None
        if st.st_nlink > 1 and self._in_history(st):
            os.unlink(path)
            self._drop_claim_dir(new)
            return None
        return self._read_claim(new, lease.name, lease.token, need_content)

    def _in_history(self, st: os.stat_result) -> bool:
        try:
            with os.scandir(self.removed_path) as it:
                for item in it:
                    if item.name.startswith("."):
                        continue
                    try:
                        other = item.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                        return True
        except OSError:
            pass
        return False

    def acknowledge(self, token: str, name: str | None = None) -> Path | None:
        """Record claim ``token`` as delivered: move its file into the history and return where; None when not in flight."""
        if not self._safe():
            return None
        claim_dir = self._claim_dir(token)
        if claim_dir is None:
            return None
        try:
            inside = [e.name for e in os.scandir(claim_dir) if not e.name.startswith(".")]
        except FileNotFoundError:
            return None
        if not inside:
            self._drop_claim_dir(claim_dir)
            return None
        staged = claim_dir / inside[0]
        st = os.lstat(staged)
        if st.st_nlink > 1 and self._in_history(st):
            final = None
            os.unlink(staged)
        else:
            final = self._place(staged, inside[0])
            if st.st_mtime_ns != os.lstat(final).st_mtime_ns:
                os.utime(final, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
        self._drop_claim_dir(claim_dir)
        return final

    @staticmethod
    def _drop_claim_dir(claim_dir: Path) -> None:
        """Remove an emptied claim directory, and the claims directory once no claim is left."""
        for directory in (claim_dir, claim_dir.parent):
            try:
                os.rmdir(directory)
            except OSError:
                return

    @staticmethod
    def _give_back(staging: Path, src: Path) -> None:
        """Return a claimed entry that is not a notice to its old name; if taken, it stays hidden where it is."""
        try:
            if staging.is_dir() and not staging.is_symlink():
                if not src.exists():
                    os.rename(staging, src)
            else:
                _move_no_replace(staging, src)
        except OSError:
            pass

    def _place(self, staging: Path, name: str) -> Path:
        """Give the staged file the first free name among ``name``, ``name.1.ext``, ... and return it."""
        for candidate in _numbered(name):
            final = self.removed_path / candidate
            try:
                _move_no_replace(staging, final)
            except FileExistsError:
                continue
            return final
        raise AssertionError("unreachable")  # pragma: no cover

    # ----------------------------------------------------------------- writing

    def post(self, content: str | bytes, *, name: str | None = None) -> Path:
        """Write a notice atomically and return its path; ``name`` defaults to an arrival-ordered one.

        Refuses the reserved name ``abort`` (use :meth:`request_abort`), names that would be
        hidden or leave the directory, empty content, and a name that is already pending.
        """
        if name is not None:
            _check_name(name)
            if name == ABORT_FILE:
                raise InboxError("'abort' is reserved for abort requests; use request_abort() or `promptstrat inbox abort`")
        data = notice_bytes(content)
        if not data.strip():
            raise InboxError("refusing to post an empty notice; give it some content")
        return self._write(data, name)

    def request_abort(self, reason: str = "") -> Path:
        """Write the reserved ``abort`` file (content: ``reason``) and return its path.

        Raises :class:`InboxError` when an abort is already pending, rather than replace
        its reason.
        """
        return self._write(abort_reason_bytes(reason), ABORT_FILE)

    def _write(self, data: bytes, name: str | None) -> Path:
        if not self._safe(inbox_only=True):
            raise InboxError(f"refusing to post to {self.path}: it is a symbolic link")
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / f".tmp-{os.getpid()}-{secrets.token_hex(8)}"
        # read-only: a finished notice, which readers take at once (writable files wait until quiet)
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o444)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            for _ in range(100):
                final = self.path / (name or default_notice_name())
                try:
                    _move_no_replace(tmp, final)
                except FileExistsError:
                    if name is None:
                        continue
                    what = "an abort is" if name == ABORT_FILE else f"a notice named {name!r} is"
                    raise InboxError(
                        f"{what} already pending in {self.path}; wait for it to be delivered or pick another name"
                    ) from None
                _fsync_dir(self.path)
                return final
            raise InboxError(f"could not find a free notice name in {self.path}")  # pragma: no cover
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass


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
