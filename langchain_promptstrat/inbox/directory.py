"""The inbox on disk (:class:`DirectoryInbox`): how a file is claimed exactly once, how writers post.

A conversation saved to ``x/agent.chat`` has its inbox in the sibling directory
``x/agent.inbox``; delivered files are moved into ``x/agent.inbox_removed``, which is the
record of what was delivered and when (mtimes are kept). Where those directories lie is
:mod:`~langchain_promptstrat.inbox.paths`'s rule; the careful system calls are
:mod:`~langchain_promptstrat.inbox.files`'.

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

What a claimed file means (a notice, an abort) is not this module's business: that is
:mod:`~langchain_promptstrat.inbox.delivery`'s. It holds no LangChain import, so the CLI's
``inbox`` commands stay fast.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import time
from pathlib import Path

from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.inbox.claims import (
    CLAIMS_DIR,
    drop_claim_dir,
    find_claim_dir,
    list_claims,
    new_claim_dir,
    read_claim,
    reown_claim,
)
from langchain_promptstrat.inbox.contract import ABORT_FILE, Claimed, InboxEntry, Lease
from langchain_promptstrat.inbox.files import (
    holds_inode,
    move_back,
    move_to_first_free,
    open_regular,
    read_all,
    scan_entries,
    visible_entries,
    write_new_file,
)
from langchain_promptstrat.inbox.notices import (
    NoticeNameTaken,
    abort_reason_bytes,
    check_notice_name,
    check_notice_size,
    default_notice_name,
    history_names,
    notice_bytes,
    notice_limits,
    warn_once,
)
from langchain_promptstrat.inbox.paths import inbox_dir, inbox_removed_dir, thread_save_file

__all__ = ["DirectoryInbox"]


class DirectoryInbox:
    """The inbox of one conversation as two directories: pending files and delivered ones.

    This is the filesystem backend (an :class:`~langchain_promptstrat.inbox.contract.InboxBackend`):
    listing, the atomic claim, the clash suffix and the writers live here; what a claimed
    file means (a notice, an abort) is :mod:`~langchain_promptstrat.inbox.delivery`'s business. Build it with
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
        quiet, lease, cap = notice_limits()
        self.quiet_seconds = quiet if quiet_seconds is None else quiet_seconds
        self.lease_seconds = lease if lease_seconds is None else lease_seconds
        self.max_notice_bytes = cap if max_notice_bytes is None else max_notice_bytes

    @property
    def claims_path(self) -> Path:
        """Return the hidden directory holding the in-flight claims (inside the removed directory)."""
        return self.removed_path / CLAIMS_DIR

    def _safe(self, *, inbox_only: bool = False) -> bool:
        """Return whether both directories and the claims directory (or the inbox alone) may be used; a symlinked one is refused with one warning."""
        for directory in (self.path,) if inbox_only else (self.path, self.removed_path, self.claims_path):
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
        return [entry.name for entry in scan_entries(self.path)] if self._safe() else []

    def pending_entries(self) -> list[InboxEntry]:
        """Return the pending files with their mtimes, sizes and first bytes, in delivery order."""
        return scan_entries(self.path, with_head=True) if self._safe() else []

    def ready(self) -> list[str]:
        """Return the pending names a pickup may take now, in delivery order.

        Left for a later pickup: an empty file other than ``abort`` (an editor may be about to
        fill it), a writable file other than ``abort`` changed within the last
        :attr:`quiet_seconds` (an editor may still be writing it), and a file over
        :attr:`max_notice_bytes` (one warning; it stays pending until someone removes or
        shortens it). Read-only files, which is how :meth:`post` writes, are complete and
        ready at once. ``abort`` is ready as soon as it exists, whatever its write state:
        stopping needs no complete reason (its text is read as it is, a default when empty).
        """
        if not self._safe():
            return []
        names = []
        now = time.time()
        for item, st in visible_entries(self.path):
            if not stat.S_ISREG(st.st_mode):
                continue
            if st.st_size == 0 and item.name != ABORT_FILE:
                continue
            if st.st_mode & 0o222 and item.name != ABORT_FILE and abs(now - st.st_mtime) < self.quiet_seconds:
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
        return sorted(scan_entries(self.removed_path, with_head=True), key=lambda e: (e.mtime, e.name))

    def _open_pending(self, src: Path, need_content: bool) -> tuple[int | None, os.stat_result | None] | None:
        """Open pending file ``src`` before claiming it: its descriptor and stat, (None, None) when it cannot be opened without ``need_content``.

        Returns None when it is gone (another reader took it). Refuses a symlinked inbox or
        history directory; raises ``OSError`` when ``need_content`` and it cannot be opened.
        """
        if not self._safe():
            raise InboxError(f"refusing to claim from {self.path}: the inbox or its removed directory is a symbolic link")
        try:
            return open_regular(src)
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
                move_back(staging, src)
                raise OSError(errno.EINVAL, "not a regular file; left in place", str(src))
            if opened is None or (opened.st_dev, opened.st_ino) != (staged.st_dev, staged.st_ino):
                # Not the file we opened (a writer reused the name), or none: read what we claimed.
                if fd is not None:
                    os.close(fd)
                try:
                    fd, _ = open_regular(staging)
                except OSError:
                    fd = None
                    if need_content:
                        final = move_to_first_free(staging, self.removed_path, history_names(name))
                        raise OSError(errno.EACCES, f"claimed but unreadable; left at {final}", str(src)) from None
            final = move_to_first_free(staging, self.removed_path, history_names(name))
            if staged.st_mtime_ns != os.lstat(final).st_mtime_ns:
                os.utime(final, ns=(staged.st_atime_ns, staged.st_mtime_ns), follow_symlinks=False)
            data = None
            if fd is not None:
                try:
                    data = read_all(fd, self.max_notice_bytes)
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
        self.removed_path.mkdir(parents=True, exist_ok=True)
        claim_dir = new_claim_dir(self.claims_path, token)
        try:
            os.rename(src, claim_dir / name)
        except FileNotFoundError:  # another reader took it first: leave no empty claims directory behind
            drop_claim_dir(claim_dir)
            return None
        staged = os.lstat(claim_dir / name)
        if not stat.S_ISREG(staged.st_mode):
            move_back(claim_dir / name, src)
            drop_claim_dir(claim_dir)
            raise OSError(errno.EINVAL, "not a regular file; left in place", str(src))
        return read_claim(claim_dir, name, token, need_content, self.max_notice_bytes)

    def in_flight(self, *, with_head: bool = False) -> list[Lease]:
        """Return the claims not yet acknowledged, oldest posting time first; empty claim leftovers are cleared.

        ``with_head`` also reads each notice's first bytes, for a listing's preview.
        """
        if not self._safe():
            return []
        return list_claims(self.claims_path, self.lease_seconds, with_head=with_head)

    def take_over(self, lease: Lease, *, need_content: bool = True) -> Claimed | None:
        """Make ``lease`` this process's claim (renewing its lease) and return the notice; None when gone or taken.

        A claim whose file the history already holds (its reader stopped in mid-acknowledge)
        is finished instead and None comes back.
        """
        if not self._safe():
            return None
        new = reown_claim(self.claims_path, lease)
        if new is None:
            return None
        path = new / lease.name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            drop_claim_dir(new)
            return None
        if st.st_nlink > 1 and holds_inode(self.removed_path, st):
            os.unlink(path)
            drop_claim_dir(new)
            return None
        return read_claim(new, lease.name, lease.token, need_content, self.max_notice_bytes)

    def acknowledge(self, token: str, name: str | None = None) -> Path | None:
        """Record claim ``token`` as delivered: move its file into the history and return where; None when not in flight."""
        if not self._safe():
            return None
        claim_dir = find_claim_dir(self.claims_path, token)
        if claim_dir is None:
            return None
        try:
            inside = [e.name for e in os.scandir(claim_dir) if not e.name.startswith(".")]
        except FileNotFoundError:
            return None
        if not inside:
            drop_claim_dir(claim_dir)
            return None
        staged = claim_dir / inside[0]
        try:
            st = os.lstat(staged)
            if st.st_nlink > 1 and holds_inode(self.removed_path, st):
                final = None
                os.unlink(staged)
            else:
                final = move_to_first_free(staged, self.removed_path, history_names(inside[0]))
                if st.st_mtime_ns != os.lstat(final).st_mtime_ns:
                    os.utime(final, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
        except FileNotFoundError:  # recorded or taken over by another reader at the same moment: not in flight here
            return None
        drop_claim_dir(claim_dir)
        return final

    # ----------------------------------------------------------------- writing

    def post(self, content: str | bytes, *, name: str | None = None) -> Path:
        """Write a notice atomically and return its path; ``name`` defaults to an arrival-ordered one.

        Refuses the reserved name ``abort`` (use :meth:`request_abort`), names that would be
        hidden or leave the directory, empty content, content over :attr:`max_notice_bytes`,
        and a name that is already pending (:class:`~langchain_promptstrat.inbox.notices.NoticeNameTaken`).
        """
        if name is not None:
            check_notice_name(name)
            if name == ABORT_FILE:
                raise InboxError("'abort' is reserved for abort requests; use request_abort() or `promptstrat inbox abort`")
        data = check_notice_size(notice_bytes(content), self.max_notice_bytes)
        if not data.strip():
            raise InboxError("refusing to post an empty notice; give it some content")
        return self._write(data, name)

    def request_abort(self, reason: str = "") -> Path:
        """Write the reserved ``abort`` file (content: ``reason``) and return its path.

        Raises :class:`InboxError` when an abort is already pending, rather than replace
        its reason, or when the reason is over the notice cap.
        """
        return self._write(check_notice_size(abort_reason_bytes(reason), self.max_notice_bytes, "abort reason"), ABORT_FILE)

    def _write(self, data: bytes, name: str | None) -> Path:
        if not self._safe(inbox_only=True):
            raise InboxError(f"refusing to post to {self.path}: it is a symbolic link")
        self.path.mkdir(parents=True, exist_ok=True)
        names = [name] if name else (default_notice_name() for _ in range(100))
        final = write_new_file(self.path, data, names)
        if final is not None:
            return final
        if not name:
            raise InboxError(f"could not find a free notice name in {self.path}")  # pragma: no cover
        what = "an abort is" if name == ABORT_FILE else f"a notice named {name!r} is"
        raise NoticeNameTaken(f"{what} already pending in this inbox; wait for it to be delivered or pick another name")

