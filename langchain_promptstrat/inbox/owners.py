"""Who holds a claim: this process's owner name, and whether another owner is still alive.

A lease (see :mod:`~langchain_promptstrat.inbox.contract`) records its owner as
``<host id>-<pid>-<process start time>``; a reader recovering claims asks
:func:`owner_state` whether that owner is this process, alive, dead (same host, process
gone, a zombie not yet reaped, or restarted under the same pid) or unknown (another host: only the lease's expiry
tells). Both backends use these names.

It reads ``/proc`` and signals nothing but ``kill(pid, 0)``; it knows nothing of notices,
files or tables.
"""

from __future__ import annotations

import hashlib
import os
import socket

__all__ = ["current_owner", "owner_state"]

_owner_cache: dict[int, str] = {}


def _host_id() -> str:
    boot = ""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
    except OSError:
        pass
    return hashlib.sha256(f"{socket.gethostname()}|{boot}".encode("utf-8", "replace")).hexdigest()[:12]


def _start_time(pid: int) -> str | None:
    """Return the start time of process ``pid`` (Linux: ticks since boot), "0" where unknown, None if it is gone.

    A zombie (state ``Z``: killed or exited, not yet reaped by its parent) or a dying
    process (``X``) is gone: it will never acknowledge its claims.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        if fields[0] in (b"Z", b"X"):
            return None
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
