"""The file operations the directory inbox is built from: open without following, move without replacing.

Each is one careful system-call sequence that the claim protocol of
:mod:`~langchain_promptstrat.inbox.directory` relies on: a read that never follows a
symbolic link swapped in after listing nor blocks on a FIFO, a move that fails rather than
replace a file (hard links, or an exclusive placeholder where the filesystem has none), a
listing of the regular, visible files of a directory, a write no reader sees half done.

They know files and directories only: nothing here knows what a notice, a claim or an
abort is.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from langchain_promptstrat.inbox.contract import PREVIEW_BYTES, InboxEntry

__all__ = [
    "fsync_dir",
    "holds_inode",
    "move_back",
    "move_no_replace",
    "move_to_first_free",
    "open_regular",
    "read_all",
    "read_head",
    "scan_entries",
    "visible_entries",
    "write_new_file",
]

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
"""Never follow a symlink swapped in after listing, never block on a FIFO."""
_NO_LINK_ERRNOS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS, errno.EXDEV}


def read_head(path: str) -> bytes | None:
    """Return the first PREVIEW_BYTES of a regular file, or None when it cannot be read (claimed meanwhile, a link, a FIFO)."""
    try:
        fd, _ = open_regular(Path(path))
    except OSError:
        return None
    try:
        return os.read(fd, PREVIEW_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


def move_no_replace(src: Path, dst: Path) -> None:
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


def move_to_first_free(src: Path, directory: Path, names: Iterable[str]) -> Path:
    """Move ``src`` into ``directory`` under the first of ``names`` that is free, and return where it went.

    Never replaces a file: a taken name is skipped (``names`` should not run out; the
    history's ``name``, ``stem.1.ext``, ... never does).
    """
    for candidate in names:
        final = directory / candidate
        try:
            move_no_replace(src, final)
        except FileExistsError:
            continue
        return final
    raise AssertionError("unreachable")  # pragma: no cover


def move_back(src: Path, dst: Path) -> None:
    """Move ``src`` back to ``dst`` when that name is free; if it is taken (or the move fails), ``src`` stays where it is."""
    try:
        if src.is_dir() and not src.is_symlink():
            if not dst.exists():
                os.rename(src, dst)
        else:
            move_no_replace(src, dst)
    except OSError:
        pass


def fsync_dir(path: Path) -> None:
    """Flush ``path``'s directory entries to disk, where the platform allows; never raises."""
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


def open_regular(path: Path) -> tuple[int, os.stat_result]:
    """Return a read descriptor on ``path`` and its stat; raise OSError unless it is a regular file."""
    fd = os.open(path, _READ_FLAGS)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd, st


def read_all(fd: int, limit: int) -> bytes:
    """Return what is left to read from descriptor ``fd``, at most ``limit`` bytes (a file grown after it was admitted is cut there)."""
    chunks: list[bytes] = []
    while limit > 0:
        chunk = os.read(fd, min(limit, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


def visible_entries(directory: str | os.PathLike[str]) -> Iterator[tuple[os.DirEntry[str], os.stat_result]]:
    """Yield each visible entry of ``directory`` with its own stat (links not followed); nothing when it is missing.

    Dot names are the inbox's own (temporary files, the claims directory) and never a
    notice; an entry that vanishes between the listing and its stat is passed over.
    """
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


def scan_entries(directory: Path, with_head: bool = False) -> list[InboxEntry]:
    """Return the regular, visible files of ``directory`` by name (``with_head``: with their first bytes); none when it is missing."""
    entries = []
    for item, st in visible_entries(directory):
        if stat.S_ISREG(st.st_mode):
            head = read_head(item.path) if with_head else None
            entries.append(InboxEntry(item.name, st.st_mtime, st.st_size, head=head))
    entries.sort(key=lambda e: e.name)
    return entries


def holds_inode(directory: Path, st: os.stat_result) -> bool:
    """Return whether a visible entry of ``directory`` is the file ``st`` describes (the same inode)."""
    try:
        return any((other.st_dev, other.st_ino) == (st.st_dev, st.st_ino) for _, other in visible_entries(directory))
    except OSError:
        return False


def write_new_file(directory: Path, data: bytes, names: Iterable[str]) -> Path | None:
    """Write ``data`` as a new read-only file of ``directory`` under the first of ``names`` not taken; None when all are.

    The bytes go to a hidden temporary file (readers ignore dotfiles), are fsynced, and
    the file is then linked to its name, so a reader never sees half a file and no file
    is ever replaced. Read-only marks it finished: the directory inbox takes such a file
    at once, where a writable one waits until it has been quiet for a while.
    """
    tmp = directory / f".tmp-{os.getpid()}-{secrets.token_hex(8)}"
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o444)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        for name in names:
            final = directory / name
            try:
                move_no_replace(tmp, final)
            except FileExistsError:
                continue
            fsync_dir(directory)
            return final
        return None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
