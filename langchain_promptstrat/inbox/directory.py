"""The inbox on disk (:class:`DirectoryInbox`): ``x/agent.inbox`` pending, ``x/agent.inbox_removed`` the history.

Why no file is delivered twice and none is overwritten:

1. ``lease`` renames the pending file into ``<history>/.claims/<token>.<owner>/``: of all
   racing readers exactly one moves it, and the moved inode is the one read.
2. ``acknowledge`` gives it its history name with ``os.link``, which fails rather than replace
   (``name``, ``name.1.ext``, ...; without hard links, an ``O_EXCL`` placeholder is replaced);
   a reader killed between link and unlink leaves one inode in both places, recognised as
   recorded. ``claim`` is a lease acknowledged at once.
3. ``take_over`` renames the claim directory to the caller's owner: one winner, same token.
4. Writers write a hidden temporary file, fsync it, and link it to its name, read-only.

Files are opened ``O_NOFOLLOW | O_NONBLOCK``; a symlinked inbox or history directory is refused.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import time
from collections.abc import Iterable, Iterator
from contextlib import suppress
from pathlib import Path

from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.inbox.contract import (
    ABORT_FILE,
    PREVIEW_BYTES,
    Claimed,
    InboxEntry,
    Lease,
    NoticeStore,
    current_owner,
    default_notice_name,
    history_names,
    notice_limits,
    owner_state,
    warn_once,
)
from langchain_promptstrat.inbox.paths import inbox_dir, inbox_removed_dir, resolve_save_file, thread_save_file

CLAIMS_DIR = ".claims"  # in the history directory: one sub-directory per claim in flight
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NO_LINK_ERRNOS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS, errno.EXDEV}


# --------------------------------------------------------------------------- careful system calls


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """Return a read descriptor on ``path`` and its stat; raise OSError unless it is a regular file."""
    fd = os.open(path, _READ_FLAGS)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd, st


def _read_head(path: str) -> bytes | None:
    """Return the first bytes of a regular file for a preview, or None when it cannot be read."""
    try:
        fd, _ = _open_regular(Path(path))
        with open(fd, "rb") as file:
            return file.read(PREVIEW_BYTES)
    except OSError:
        return None


def _move_no_replace(src: Path, dst: Path) -> None:
    """Move ``src`` to ``dst``, failing with FileExistsError instead of ever replacing ``dst``."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in _NO_LINK_ERRNOS:
            raise
        # No hard links here: reserve the name exclusively, then replace only that placeholder of our own.
        os.close(os.open(dst, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        try:
            os.replace(src, dst)
        except OSError:
            os.unlink(dst)
            raise
        return
    with suppress(FileNotFoundError):
        os.unlink(src)


def _move_to_first_free(src: Path, directory: Path, names: Iterable[str]) -> Path | None:
    """Move ``src`` into ``directory`` under the first of ``names`` that is free and return where; None when all are taken."""
    for candidate in names:
        try:
            _move_no_replace(src, directory / candidate)
        except FileExistsError:
            continue
        return directory / candidate
    return None


def _into_history(src: Path, st: os.stat_result, directory: Path, name: str) -> Path:
    """Move ``src`` (stat ``st``) into the history under its first free name, keeping its mtime, and return where."""
    final = _move_to_first_free(src, directory, history_names(name))
    assert final is not None  # history_names never runs out
    if st.st_mtime_ns != os.lstat(final).st_mtime_ns:
        os.utime(final, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    return final


def _move_back(src: Path, dst: Path) -> None:
    """Move ``src`` back to ``dst`` when that name is free; otherwise (or if the move fails) ``src`` stays."""
    with suppress(OSError):
        if not src.is_dir() or src.is_symlink():
            _move_no_replace(src, dst)
        elif not dst.exists():
            os.rename(src, dst)


def _visible(directory: str | os.PathLike[str]) -> Iterator[tuple[os.DirEntry[str], os.stat_result]]:
    """Yield each entry of ``directory`` not starting with a dot, with its own stat; nothing when it is missing."""
    try:
        it = os.scandir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return
    with it:
        for item in it:
            if item.name.startswith("."):
                continue
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            yield item, st


def _scan(directory: Path, with_head: bool = False) -> list[InboxEntry]:
    """Return the regular, visible files of ``directory`` by name (``with_head``: with their first bytes)."""
    entries = [
        InboxEntry(item.name, st.st_mtime, st.st_size, head=_read_head(item.path) if with_head else None)
        for item, st in _visible(directory) if stat.S_ISREG(st.st_mode)
    ]
    return sorted(entries, key=lambda e: e.name)


def _recorded(directory: Path, st: os.stat_result) -> bool:
    """Return whether the history ``directory`` already holds the file ``st`` describes (a reader stopped in mid-acknowledge)."""
    if st.st_nlink <= 1:
        return False
    try:
        return any((o.st_dev, o.st_ino) == (st.st_dev, st.st_ino) for _, o in _visible(directory))
    except OSError:
        return False


# --------------------------------------------------------------------------- claim directories


def new_claim_dir(claims_path: Path, token: str) -> Path:
    """Create and return ``<claims_path>/<token>.<this process's owner>``, creating ``claims_path`` as needed."""
    claim_dir = claims_path / f"{token}.{current_owner()}"
    for attempt in range(100):  # another reader may remove the emptied claims directory in between
        with suppress(FileExistsError):
            os.mkdir(claims_path)
        try:
            os.mkdir(claim_dir)
            return claim_dir
        except FileNotFoundError:
            if attempt == 99:
                raise
    return claim_dir  # pragma: no cover


def _drop_claim_dir(claim_dir: Path) -> None:
    """Remove an emptied claim directory, and the claims directory once no claim is left."""
    for directory in (claim_dir, claim_dir.parent):
        try:
            os.rmdir(directory)
        except OSError:
            return


def _read_claim(claim_dir: Path, name: str, token: str, need_content: bool, limit: int) -> Claimed:
    """Return the notice ``name`` lying in ``claim_dir`` with its bytes (None when unreadable, unless ``need_content``)."""
    path = claim_dir / name
    try:
        fd, st = _open_regular(path)
    except OSError:
        if need_content:
            raise
        return Claimed(name=name, path=path, mtime=os.lstat(path).st_mtime, data=None, token=token)
    with open(fd, "rb") as file:  # buffered: reads until ``limit`` bytes or the end
        return Claimed(name=name, path=path, mtime=st.st_mtime, data=file.read(limit), token=token)


class DirectoryInbox(NoticeStore[Path]):
    """The inbox of one conversation as two directories, pending files and delivered ones; the class is the provider."""

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
        quiet, lease, cap = notice_limits()
        self.quiet_seconds = quiet if quiet_seconds is None else quiet_seconds
        self.lease_seconds = lease if lease_seconds is None else lease_seconds
        self.max_notice_bytes = cap if max_notice_bytes is None else max_notice_bytes

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
        """Return where the pending notices lie: the inbox directory."""
        return str(self.path)

    @property
    def claims_path(self) -> Path:
        return self.removed_path / CLAIMS_DIR

    def _safe(self, *, inbox_only: bool = False) -> bool:
        """Return whether the directories may be used; a symlinked one is refused with one warning."""
        for directory in (self.path,) if inbox_only else (self.path, self.removed_path, self.claims_path):
            try:
                if not stat.S_ISLNK(os.lstat(directory).st_mode):
                    continue
            except OSError:
                continue
            warn_once(
                ("symlink", str(directory)),
                "inbox: refusing %s: it is a symbolic link (it could lead outside the inbox root); "
                "nothing is read or moved there. Replace it with a real directory.",
                directory,
            )
            return False
        return True

    def pending(self) -> list[str]:
        """Return the names of the pending notices, sorted: regular files not starting with a dot; nothing is created."""
        return [entry.name for entry in _scan(self.path)] if self._safe() else []

    def pending_entries(self) -> list[InboxEntry]:
        """Return the pending files with their mtimes, sizes and first bytes, in delivery order."""
        return _scan(self.path, with_head=True) if self._safe() else []

    def delivered_entries(self) -> list[InboxEntry]:
        """Return the delivered files (the history directory), oldest mtime first."""
        return sorted(_scan(self.removed_path, with_head=True), key=lambda e: (e.mtime, e.name))

    def ready(self) -> list[str]:
        """Return the pending names a pickup may take now, in delivery order.

        Left for later: an empty file (an editor may be about to fill it), a writable one changed
        within :attr:`quiet_seconds` (:meth:`post` writes read-only files), one over
        :attr:`max_notice_bytes`. ``abort`` is ready as soon as it exists.
        """
        if not self._safe():
            return []
        now = time.time()
        names = []
        for item, st in _visible(self.path):
            if not stat.S_ISREG(st.st_mode):
                continue
            if item.name != ABORT_FILE and (
                st.st_size == 0 or (st.st_mode & 0o222 and abs(now - st.st_mtime) < self.quiet_seconds)
            ):
                continue
            if self._fits(item.name, st.st_size, os.fsencode(item.name).decode("utf-8", "backslashreplace")):
                names.append(item.name)
        return sorted(names)

    def _is_pending(self, src: Path, need_content: bool) -> bool:
        """Return whether pending ``src`` is there to take; ``OSError`` when it cannot be opened and ``need_content``."""
        if not self._safe():
            raise InboxError(f"refusing to claim from {self.path}: the inbox or its removed directory is a symbolic link")
        try:
            os.close(_open_regular(src)[0])
        except FileNotFoundError:
            return False
        except OSError:
            if need_content:
                raise
        return True

    def claim(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Lease pending file ``name`` and record it in the history at once; None when another reader took it.

        With ``need_content`` a file this process cannot open stays pending (``OSError``);
        without, it is claimed anyway with ``data=None``.
        """
        claimed = self.lease(name, need_content=need_content)
        if claimed is None or claimed.token is None:
            return None
        final = self.acknowledge(claimed.token, name)
        return None if final is None else Claimed(name=name, path=final, mtime=claimed.mtime, data=claimed.data)

    def lease(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Take pending file ``name`` into a claim of this process and return it with its token; None when another reader took it."""
        src = self.path / name
        if not self._is_pending(src, need_content):
            return None
        token = secrets.token_hex(16)
        self.removed_path.mkdir(parents=True, exist_ok=True)
        claim_dir = new_claim_dir(self.claims_path, token)
        try:
            os.rename(src, claim_dir / name)
        except FileNotFoundError:  # another reader took it first: leave no empty claim directory behind
            _drop_claim_dir(claim_dir)
            return None
        if not stat.S_ISREG(os.lstat(claim_dir / name).st_mode):
            _move_back(claim_dir / name, src)
            _drop_claim_dir(claim_dir)
            raise OSError(errno.EINVAL, "not a regular file; left in place", str(src))
        return _read_claim(claim_dir, name, token, need_content, self.max_notice_bytes)

    def in_flight(self, *, with_head: bool = False) -> list[Lease]:
        """Return the claims not yet acknowledged, oldest posting time first (``with_head``: with their first bytes).

        An empty claim directory is removed once its owner is dead or its lease ran out, never
        while its owner lives: a reader of that process may be between its mkdir and rename.
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
                    st = inside[0].stat(follow_symlinks=False) if inside else None
                except OSError:
                    continue
                if st is None:
                    if owner_state(owner) == "dead" or time.time() > leased_at + self.lease_seconds:
                        _drop_claim_dir(Path(item.path))
                    continue
                head = _read_head(inside[0].path) if with_head else None
                leases.append(Lease(token, inside[0].name, owner, leased_at, self.lease_seconds, st.st_mtime, st.st_size, head))
        return sorted(leases, key=lambda lease: (lease.mtime, lease.name))

    def take_over(self, lease: Lease, *, need_content: bool = True) -> Claimed | None:
        """Make ``lease`` this process's claim (renewing it) and return the notice; None when gone, taken or already recorded."""
        if not self._safe():
            return None
        old = self.claims_path / f"{lease.token}.{lease.owner}"
        new = self.claims_path / f"{lease.token}.{current_owner()}"
        if old != new:
            try:
                os.rename(old, new)
            except OSError as exc:
                if isinstance(exc, FileNotFoundError) or exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    return None
                raise
        os.utime(new)
        try:
            st = os.lstat(new / lease.name)
        except FileNotFoundError:
            _drop_claim_dir(new)
            return None
        if _recorded(self.removed_path, st):
            os.unlink(new / lease.name)
            _drop_claim_dir(new)
            return None
        return _read_claim(new, lease.name, lease.token, need_content, self.max_notice_bytes)

    def acknowledge(self, token: str, name: str | None = None) -> Path | None:
        """Record claim ``token`` as delivered: move its file into the history and return where; None when not in flight."""
        if not self._safe():
            return None
        try:
            claim_dir = next(Path(e.path) for e in os.scandir(self.claims_path) if e.name.startswith(token + "."))
            inside = [e.name for e in os.scandir(claim_dir) if not e.name.startswith(".")]
        except (OSError, StopIteration):
            return None
        if not inside:
            _drop_claim_dir(claim_dir)
            return None
        staged = claim_dir / inside[0]
        try:
            st = os.lstat(staged)
            if _recorded(self.removed_path, st):
                final = None
                os.unlink(staged)
            else:
                final = _into_history(staged, st, self.removed_path, inside[0])
        except FileNotFoundError:  # recorded or taken over by another reader at the same moment
            return None
        _drop_claim_dir(claim_dir)
        return final

    def _write(self, data: bytes, name: str | None) -> Path:
        """Write ``data`` as a new read-only file under ``name`` (or a fresh name): hidden temporary, fsync, link."""
        if not self._safe(inbox_only=True):
            raise InboxError(f"refusing to post to {self.path}: it is a symbolic link")
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / f".tmp-{os.getpid()}-{secrets.token_hex(8)}"
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o444)
        try:
            with open(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(fd)
            final = _move_to_first_free(tmp, self.path, [name] if name else (default_notice_name() for _ in range(100)))
        finally:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
        if final is None:
            raise self._taken(name) if name else InboxError(f"could not find a free notice name in {self.path}")
        with suppress(OSError):  # the new name on disk, where the platform allows
            dir_fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        return final


def post_to_inbox(
    save_file: str | os.PathLike[str] | None = None,
    content: str | bytes | None = None,
    *,
    name: str | None = None,
    thread_id: str | None = None,
    root: str | os.PathLike[str] | None = None,
) -> Path:
    """Post ``content`` to the directory inbox of ``save_file`` (or of ``thread_id`` under ``root``) and return the new file's path."""
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
    """Ask a conversation's run to stop with ``reason`` (it raises ``InboxAborted``, or interrupts): write ``abort``, return its path."""
    return DirectoryInbox.for_save_file(resolve_save_file(save_file, thread_id=thread_id, root=root)).request_abort(reason)
