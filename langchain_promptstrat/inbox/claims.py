"""The claims directory of a directory inbox: one sub-directory per lease, ``<token>.<owner>``.

A leased notice lies in ``<removed>/.claims/<token>.<owner>/<name>``: out of the pending
directory, not yet in the history (steps 4 to 6 of the claim protocol in
:mod:`~langchain_promptstrat.inbox.directory`). The token is the claim's identity for its
whole life; the owner part names the process holding it (:mod:`~langchain_promptstrat.inbox.owners`),
and a take-over is one atomic rename of that part, so of any number of recovering
readers exactly one wins.

These functions only create, list, rename and remove claim directories and read the
file inside one. Moving a notice in from the pending directory or out into the history,
and deciding whether a directory may be used at all (symbolic links), is the store's.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from langchain_promptstrat.inbox.contract import Claimed, Lease
from langchain_promptstrat.inbox.files import open_regular, read_all, read_head
from langchain_promptstrat.inbox.owners import current_owner, owner_state

__all__ = ["CLAIMS_DIR", "drop_claim_dir", "find_claim_dir", "list_claims", "new_claim_dir", "read_claim", "reown_claim"]

CLAIMS_DIR = ".claims"
"""Hidden directory inside the removed directory holding one sub-directory per in-flight claim."""


def new_claim_dir(claims_path: Path, token: str) -> Path:
    """Create and return ``<claims_path>/<token>.<this process's owner name>``, creating ``claims_path`` as needed."""
    claim_dir = claims_path / f"{token}.{current_owner()}"
    for attempt in range(100):  # another reader may remove the emptied claims directory in between
        try:
            os.mkdir(claims_path)
        except FileExistsError:
            pass
        try:
            os.mkdir(claim_dir)
            break
        except FileNotFoundError:
            if attempt == 99:
                raise
    return claim_dir


def read_claim(claim_dir: Path, name: str, token: str, need_content: bool, limit: int) -> Claimed:
    """Return the notice ``name`` lying in ``claim_dir`` with its bytes, at most ``limit`` (None when unreadable, unless ``need_content``)."""
    path = claim_dir / name
    try:
        fd, st = open_regular(path)
    except OSError:
        if need_content:
            raise
        st = os.lstat(path)
        return Claimed(name=name, path=path, mtime=st.st_mtime, data=None, token=token)
    try:
        data = read_all(fd, limit)
    finally:
        os.close(fd)
    return Claimed(name=name, path=path, mtime=st.st_mtime, data=data, token=token)


def list_claims(claims_path: Path, lease_seconds: float, *, with_head: bool = False) -> list[Lease]:
    """Return the claims in ``claims_path``, oldest posting time first; empty claim leftovers are cleared.

    An empty claim directory is a reader that stopped between its ``mkdir`` and its
    rename, or one that acknowledged: it is removed once its owner is dead or its lease
    ran out (not while its owner lives, even this process: another reader of it may be
    between those two steps). A claims directory that is a symbolic link is not read;
    ``with_head`` reads each notice's first bytes, from regular files only.
    """
    try:
        if os.path.islink(claims_path):
            return []
        it = os.scandir(claims_path)
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
                if owner_state(owner) == "dead" or time.time() > leased_at + lease_seconds:
                    drop_claim_dir(Path(item.path))  # a reader stopped between mkdir and rename, or acknowledged
                continue
            try:
                st = inside[0].stat(follow_symlinks=False)
            except OSError:
                continue
            head = read_head(inside[0].path) if with_head else None
            leases.append(Lease(token, inside[0].name, owner, leased_at, lease_seconds, st.st_mtime, st.st_size, head))
    leases.sort(key=lambda lease: (lease.mtime, lease.name))
    return leases


def find_claim_dir(claims_path: Path, token: str) -> Path | None:
    """Return the directory of claim ``token``, whoever owns it now; None when there is none."""
    try:
        with os.scandir(claims_path) as it:
            for item in it:
                if item.name.startswith(token + "."):
                    return Path(item.path)
    except OSError:
        pass
    return None


def reown_claim(claims_path: Path, lease: Lease) -> Path | None:
    """Rename ``lease``'s claim directory to this process's owner name (renewing the lease) and return it; None when gone or taken."""
    old = claims_path / f"{lease.token}.{lease.owner}"
    new = claims_path / f"{lease.token}.{current_owner()}"
    if old != new:
        try:
            os.rename(old, new)
        except (FileNotFoundError, OSError) as exc:
            if isinstance(exc, FileNotFoundError) or exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return None
            raise
    os.utime(new)
    return new


def drop_claim_dir(claim_dir: Path) -> None:
    """Remove an emptied claim directory, and the claims directory once no claim is left."""
    for directory in (claim_dir, claim_dir.parent):
        try:
            os.rmdir(directory)
        except OSError:
            return
