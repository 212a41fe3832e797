"""The inbox on disk (:class:`DirectoryInbox`): ``x/agent.inbox`` pending, ``x/agent.inbox_removed``
the history.

Why no file is delivered twice and none is overwritten:

1. ``lease`` renames the pending file into ``<history>/.claims/<token>.<owner>/``: of all
   racing readers exactly one moves it, and the moved inode is the one read.
2. ``acknowledge`` gives it its history name with ``os.link``, which fails rather than replace
   (``name``, ``name.1.ext``, ...; without hard links, an ``O_EXCL`` placeholder is replaced);
   a reader killed between link and unlink leaves one inode in both places, recognised as
   recorded. ``claim`` is a lease acknowledged at once.
3. ``take_over`` renames the claim directory to the caller's owner: one winner, same token.
4. Writers write a hidden temporary file, fsync it, and link it to its name, read-only.

Files are opened ``O_NOFOLLOW | O_NONBLOCK``; a symlinked inbox, history or claims directory is
refused, by listings too. The LangGraph Server thread an inbox belongs to is recorded in its
pending directory (``.thread``, its creation time); a binding to another is made under
``flock`` on the root, so the old notices are removed once and never after a new post.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import shutil
import stat
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
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
from langchain_promptstrat.inbox.paths import (
    inbox_dir,
    inbox_removed_dir,
    resolve_save_file,
    thread_save_file,
)

CLAIMS_DIR = ".claims"  # in the history directory: one sub-directory per claim in flight
THREAD_RECORD = ".thread"  # in the pending directory: when the thread it belongs to was created
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_NO_LINK_ERRNOS = {
    errno.EPERM,
    errno.ENOTSUP,
    errno.EOPNOTSUPP,
    errno.EMLINK,
    errno.ENOSYS,
    errno.EXDEV,
}


# --------------------------------------------------------------------------- careful system calls


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """Return a read descriptor on ``path`` and its stat; raise OSError unless it is a regular
    file."""
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
        # No hard links here: reserve the name exclusively, then replace only that placeholder of
        # our own.
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
    """Move ``src`` into ``directory`` under the first of ``names`` that is free and return where;
    None when all are taken."""
    for candidate in names:
        try:
            _move_no_replace(src, directory / candidate)
        except FileExistsError:
            continue
        return directory / candidate
    return None


def _into_history(src: Path, st: os.stat_result, directory: Path, name: str) -> Path:
    """Move ``src`` (stat ``st``) into the history under its first free name, keeping its mtime, and
    return where."""
    final = _move_to_first_free(src, directory, history_names(name))
    assert final is not None  # history_names never runs out
    if st.st_mtime_ns != os.lstat(final).st_mtime_ns:
        os.utime(final, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    return final


def _move_back(src: Path, dst: Path) -> None:
    """Move ``src`` back to ``dst`` when that name is free; otherwise (or if the move fails) ``src``
    stays."""
    with suppress(OSError):
        if not src.is_dir() or src.is_symlink():
            _move_no_replace(src, dst)
        elif not dst.exists():
            os.rename(src, dst)


def _visible(
    directory: str | os.PathLike[str],
) -> Iterator[tuple[os.DirEntry[str], os.stat_result]]:
    """Yield each entry of ``directory`` not starting with a dot, with its own stat; nothing when it
    is missing."""
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


def _regular_names(directory: Path) -> list[str]:
    """Return the names of the regular, visible files of ``directory``, sorted (no stat each)."""
    try:
        it = os.scandir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    with it:
        names = [item.name for item in it if item.is_file(follow_symlinks=False)]
    return sorted(name for name in names if not name.startswith("."))


def _entries(directory: Path, names: Iterable[str], *, delivered: bool = False) -> list[InboxEntry]:
    """Return the entries of the regular files ``names`` of ``directory``, with their first bytes.

    A file gone since is left out. ``delivered``: the history, whose files keep their posting
    mtime; the time a file was moved in is its status-change time (``st_ctime``), which the
    move sets.
    """
    entries = []
    for name in names:
        try:
            st = os.lstat(directory / name)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            head = _read_head(str(directory / name))
            delivered_at = st.st_ctime if delivered else None
            entries.append(InboxEntry(name, st.st_mtime, st.st_size, delivered_at, head))
    return entries


def _page(items: list[str], offset: int, limit: int | None) -> list[str]:
    return items[offset:] if limit is None else items[offset : offset + limit]


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _recorded(directory: Path, st: os.stat_result) -> bool:
    """Return whether the history ``directory`` already holds the file ``st`` describes (a reader
    stopped in mid-acknowledge)."""
    if st.st_nlink <= 1:
        return False
    try:
        return any((o.st_dev, o.st_ino) == (st.st_dev, st.st_ino) for _, o in _visible(directory))
    except OSError:
        return False


def _remove(directory: Path) -> None:
    """Remove ``directory`` and all it holds, following no link; renamed aside first."""
    aside = directory.with_name(f".{directory.name}.removing-{secrets.token_hex(4)}")
    try:
        os.rename(directory, aside)
    except FileNotFoundError:
        return
    if _is_link(aside):
        os.unlink(aside)
        return
    shutil.rmtree(aside, ignore_errors=True)
    if os.path.lexists(aside):
        warn_once(("not removed", str(aside)), "inbox: could not remove all of %s", aside)


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` (``flock``: released when the process ends)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(directory, flags)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- claim directories


def new_claim_dir(claims_path: Path, token: str) -> Path:
    """Create and return ``<claims_path>/<token>.<this process's owner>``, creating ``claims_path``
    as needed."""
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
    """Return the notice ``name`` lying in ``claim_dir`` with its bytes (None when unreadable,
    unless ``need_content``)."""
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
    """The inbox of one conversation as two directories, pending files and delivered ones; the class
    is the provider."""

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
    def for_thread(
        cls, thread_id: str, root: str | os.PathLike[str] | None = None
    ) -> DirectoryInbox:
        """Return the inbox of LangGraph thread ``thread_id`` under ``root`` (or
        ``$PROMPTSTRAT_INBOX_ROOT``)."""
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

    def _symlinked(self, *, inbox_only: bool = False) -> Path | None:
        """Return the first directory (the pending one alone with ``inbox_only``) that is a link."""
        directories = [self.path, self.removed_path, self.claims_path][: 1 if inbox_only else 3]
        return next((directory for directory in directories if _is_link(directory)), None)

    def _safe(self, *, inbox_only: bool = False) -> bool:
        """Return whether the directories may be used; a symlinked one is refused with one
        warning."""
        directory = self._symlinked(inbox_only=inbox_only)
        if directory is None:
            return True
        warn_once(
            ("symlink", str(directory)),
            "inbox: refusing %s: it is a symbolic link (it could lead outside the inbox root); "
            "nothing is read or moved there. Replace it with a real directory.",
            directory,
        )
        return False

    def delivery_problem(self) -> str | None:
        """Return the sentence saying which directory is a symbolic link, or None when none is."""
        directory = self._symlinked()
        if directory is None:
            return None
        which = {self.path: "pending", self.removed_path: "history"}.get(directory, "claims")
        return (
            f"the inbox's {which} directory is a symbolic link, which could lead outside the inbox "
            "root: its notices are not delivered until it is replaced with a real directory"
        )

    def pending(self) -> list[str]:
        """Return the names of the pending notices, sorted: regular files not starting with a dot;
        nothing is created."""
        return _regular_names(self.path) if not _is_link(self.path) else []

    def pending_entries(self) -> list[InboxEntry]:
        """Return the pending files with their mtimes, sizes and first bytes, in delivery order."""
        return self.pending_page(0, None)[0]

    def pending_page(self, offset: int, limit: int | None) -> tuple[list[InboxEntry], int]:
        """Return ``limit`` pending entries from ``offset`` (None: all) and how many are pending.

        In delivery order. Every name is read from the directory, but only the page's files are
        opened for their previews. A pending directory that is a symbolic link lists nothing.
        """
        names = self.pending()
        return _entries(self.path, _page(names, offset, limit)), len(names)

    def delivered_entries(self) -> list[InboxEntry]:
        """Return the delivered files (the history directory), oldest mtime first."""
        return self.delivered_page(0, None)[0]

    def delivered_page(self, offset: int, limit: int | None) -> tuple[list[InboxEntry], int]:
        """Return ``limit`` delivered entries from ``offset`` (None: all) and how many there are.

        Oldest posting time first. A history directory that is a symbolic link lists nothing:
        the files behind it lie outside the inbox.
        """
        if _is_link(self.removed_path):
            return [], 0
        files = _visible(self.removed_path)
        order = sorted((st.st_mtime, file.name) for file, st in files if stat.S_ISREG(st.st_mode))
        names = [name for _, name in order]
        return _entries(self.removed_path, _page(names, offset, limit), delivered=True), len(names)

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
                st.st_size == 0
                or (st.st_mode & 0o222 and abs(now - st.st_mtime) < self.quiet_seconds)
            ):
                continue
            if self._fits(
                item.name, st.st_size, os.fsencode(item.name).decode("utf-8", "backslashreplace")
            ):
                names.append(item.name)
        return sorted(names)

    def _is_pending(self, src: Path, need_content: bool) -> bool:
        """Return whether pending ``src`` is there to take; ``OSError`` when it cannot be opened and
        ``need_content``."""
        if not self._safe():
            raise InboxError(
                f"refusing to claim from {self.path}: the inbox or its removed directory is a "
                "symbolic link"
            )
        try:
            os.close(_open_regular(src)[0])
        except FileNotFoundError:
            return False
        except OSError:
            if need_content:
                raise
        return True

    def claim(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Lease pending file ``name`` and record it in the history at once; None when another
        reader took it.

        With ``need_content`` a file this process cannot open stays pending (``OSError``);
        without, it is claimed anyway with ``data=None``.
        """
        claimed = self.lease(name, need_content=need_content)
        if claimed is None or claimed.token is None:
            return None
        final = self.acknowledge(claimed.token, name)
        return (
            None
            if final is None
            else Claimed(name=name, path=final, mtime=claimed.mtime, data=claimed.data)
        )

    def lease(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Take pending file ``name`` into a claim of this process and return it with its token;
        None when another reader took it."""
        src = self.path / name
        if not self._is_pending(src, need_content):
            return None
        token = secrets.token_hex(16)
        self.removed_path.mkdir(parents=True, exist_ok=True)
        claim_dir = new_claim_dir(self.claims_path, token)
        try:
            os.rename(src, claim_dir / name)
        except (
            FileNotFoundError
        ):  # another reader took it first: leave no empty claim directory behind
            _drop_claim_dir(claim_dir)
            return None
        if not stat.S_ISREG(os.lstat(claim_dir / name).st_mode):
            _move_back(claim_dir / name, src)
            _drop_claim_dir(claim_dir)
            raise OSError(errno.EINVAL, "not a regular file; left in place", str(src))
        return _read_claim(claim_dir, name, token, need_content, self.max_notice_bytes)

    def in_flight(self, *, with_head: bool = False) -> list[Lease]:
        """Return the claims not yet acknowledged, oldest posting time first (``with_head``: with
        their first bytes).

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
                leases.append(
                    Lease(
                        token,
                        inside[0].name,
                        owner,
                        leased_at,
                        self.lease_seconds,
                        st.st_mtime,
                        st.st_size,
                        head,
                    )
                )
        return sorted(leases, key=lambda lease: (lease.mtime, lease.name))

    def take_over(self, lease: Lease, *, need_content: bool = True) -> Claimed | None:
        """Make ``lease`` this process's claim (renewing it) and return the notice; None when gone,
        taken or already recorded."""
        if not self._safe():
            return None
        old = self.claims_path / f"{lease.token}.{lease.owner}"
        new = self.claims_path / f"{lease.token}.{current_owner()}"
        if old != new:
            try:
                os.rename(old, new)
            except OSError as exc:
                if isinstance(exc, FileNotFoundError) or exc.errno in (
                    errno.ENOTEMPTY,
                    errno.EEXIST,
                ):
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
        """Record claim ``token`` as delivered: move its file into the history and return where;
        None when not in flight."""
        if not self._safe():
            return None
        try:
            claim_dir = next(
                Path(e.path) for e in os.scandir(self.claims_path) if e.name.startswith(token + ".")
            )
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

    def _thread_record(self) -> str | None:
        """Return when the thread this inbox belongs to was created; None when it records none."""
        try:
            fd, _ = _open_regular(self.path / THREAD_RECORD)
        except OSError:
            return None
        with open(fd, "rb") as file:
            return file.read(200).decode("utf-8", "replace").strip() or None

    def bind_to_thread(self, created_at: str, *, create: bool = False) -> bool:
        """Bind this inbox to the thread created at ``created_at``; return whether it was emptied.

        An inbox recorded for another creation time is emptied (pending, in flight and delivered
        notices removed) under a lock on the root, so that two processes binding at once empty
        it once; one recording none is adopted. ``create`` records the binding even where the
        inbox holds nothing yet (a writer about to post); otherwise nothing is created. A
        pending directory that is a symbolic link is left alone: every reader refuses it.
        """
        if _is_link(self.path) or self._thread_record() == created_at:
            return False
        if not (create or os.path.lexists(self.path) or os.path.lexists(self.removed_path)):
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(self.path.parent):
            recorded = self._thread_record()
            if recorded == created_at:
                return False
            if recorded is not None:
                _remove(self.path)
                _remove(self.removed_path)
            if create or recorded is None:
                self.path.mkdir(exist_ok=True)
                staged = self.path / f"{THREAD_RECORD}.tmp-{secrets.token_hex(8)}"
                with open(staged, "x", encoding="utf-8") as file:
                    file.write(created_at)
                os.replace(staged, self.path / THREAD_RECORD)
        return recorded is not None

    def _write(self, data: bytes, name: str | None) -> Path:
        """Write ``data`` as a new read-only file under ``name`` (or a fresh name): hidden
        temporary, fsync, link."""
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
            final = _move_to_first_free(
                tmp, self.path, [name] if name else (default_notice_name() for _ in range(100))
            )
        finally:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
        if final is None:
            raise (
                self._taken(name)
                if name
                else InboxError(f"could not find a free notice name in {self.path}")
            )
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
    """Post ``content`` to the directory inbox of ``save_file`` (or of ``thread_id`` under ``root``)
    and return the new file's path."""
    if content is None:
        raise TypeError("post_to_inbox() needs the notice content")
    return DirectoryInbox.for_save_file(
        resolve_save_file(save_file, thread_id=thread_id, root=root)
    ).post(content, name=name)


def request_abort(
    save_file: str | os.PathLike[str] | None = None,
    reason: str = "",
    *,
    thread_id: str | None = None,
    root: str | os.PathLike[str] | None = None,
) -> Path:
    """Ask a conversation's run to stop with ``reason`` (it raises ``InboxAborted``, or interrupts):
    write ``abort``, return its path."""
    return DirectoryInbox.for_save_file(
        resolve_save_file(save_file, thread_id=thread_id, root=root)
    ).request_abort(reason)
