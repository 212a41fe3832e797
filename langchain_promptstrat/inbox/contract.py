"""The inbox contract every backend keeps: the protocols, and the records that cross them.

Two roles, two small protocols:

* An :class:`InboxBackend` is the inbox of **one** conversation (a save file, a LangGraph
  thread): it lists the pending notices in name order, claims one atomically (taking it
  out of the pending set and recording its delivery in the history, as one step), posts,
  and requests an abort. :class:`~langchain_promptstrat.inbox.directory.DirectoryInbox` (two
  directories) and :class:`~langchain_promptstrat.inbox.postgres.PostgresInbox` (two
  tables) are the two backends.
* An :class:`InboxProvider` hands out the backend of any conversation:
  ``for_thread(thread_id)`` and ``for_save_file(save_file)``. The ``DirectoryInbox``
  class is one (its classmethods); ``PostgresInboxes(dsn)`` is the database's.

A backend is bound to one conversation because everything that reads or writes an inbox
(the strategy, the LangGraph node, the CLI) works on one conversation at a time, while
the thread it serves is only known per run, from the run's config: the strategy and the
adapters therefore take a provider (``backend=PostgresInboxes(dsn)``) and ask it for the
run's inbox, or a bound backend when every run shares one conversation.

The contract (the suite ``tests/test_inbox_backends.py`` runs it against every backend):

1. ``pending()`` lists names sorted by code point; a conversation never posted to has
   none, and reading creates nothing.
2. ``claim(name)`` gives a pending notice to exactly one caller, whatever the number of
   readers and processes, and records it in the history with its posting time; a name
   already taken in the history becomes ``stem.N.ext`` (first free N), never overwriting.
   It returns None when another reader took it first; it raises ``OSError`` (usually
   :class:`~langchain_promptstrat.errors.InboxError`) when it cannot claim, and then the
   notice is still pending (for the directory backend: unless the reader died between
   its rename and its link, see :mod:`~langchain_promptstrat.inbox.directory`).
3. ``post`` refuses a name that is pending, the reserved ``abort``, hidden or path-like
   names and empty content; ``request_abort`` writes ``abort`` and refuses a second one.
4. The history (``delivered_entries``) keeps every delivered notice with its posting time.
5. Leases (:class:`LeasingInbox`, both built-in backends): ``lease(name)`` claims a notice
   for this process without recording its delivery; ``acknowledge(token, name)`` records
   it; ``in_flight()`` lists the claims not yet acknowledged, with their owner;
   ``take_over(lease)`` gives a claim to the caller, exactly one of any number of callers,
   keeping its token; ``ready()`` lists the pending names a pickup may take now. A claim
   is acknowledged at most once, and a notice is pending, in flight or delivered, never
   two of them and never none.

The records (:class:`Claimed`, :class:`InboxEntry`, :class:`Lease`) are plain data, the
same for every backend. This module holds no backend and touches no file or table; which
inbox serves a run is :mod:`~langchain_promptstrat.inbox.locate`'s business.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from typing_extensions import TypeIs

from langchain_promptstrat.inbox.owners import owner_state

__all__ = [
    "ABORT_FILE",
    "PREVIEW_BYTES",
    "PREVIEW_CHARS",
    "Claimed",
    "InboxBackend",
    "InboxEntry",
    "InboxProvider",
    "Lease",
    "LeasingInbox",
    "is_inbox_backend",
]

ABORT_FILE = "abort"
"""The reserved notice name (exact, case-sensitive) that asks the run to stop."""

PREVIEW_BYTES = 240
"""Bytes of a notice a listing reads for its preview."""
PREVIEW_CHARS = 80
"""Characters a preview shows at most (the last one an ellipsis when the notice is longer)."""


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



@runtime_checkable
class InboxBackend(Protocol):
    """The inbox of one conversation: pending notices, the atomic claim, the history, the writers."""

    @property
    def location(self) -> str:
        """Return a human-readable name of where the pending notices lie (a directory, a table and thread)."""
        ...

    def pending(self) -> list[str]:
        """Return the names of the pending notices, sorted by code point."""
        ...

    def pending_entries(self) -> list[InboxEntry]:
        """Return the pending notices with their posting times and sizes, in delivery order."""
        ...

    def delivered_entries(self) -> list[InboxEntry]:
        """Return the history: every delivered notice under its history name, oldest posting time first."""
        ...

    def claim(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Take pending notice ``name`` and record its delivery, atomically; None when another reader took it."""
        ...

    def post(self, content: str | bytes, *, name: str | None = None) -> Path | str:
        """Post a notice and return where it lies; refuses a pending name, ``abort`` and empty content."""
        ...

    def request_abort(self, reason: str = "") -> Path | str:
        """Post the reserved ``abort`` notice holding ``reason`` and return where it lies."""
        ...


@runtime_checkable
class LeasingInbox(InboxBackend, Protocol):
    """A backend that can claim a notice, deliver it, and record the delivery later: no notice lost to a crash."""

    def ready(self) -> list[str]:
        """Return the pending names a pickup may take now (complete, within the size limit), in delivery order."""
        ...

    def lease(self, name: str, *, need_content: bool = True) -> Claimed | None:
        """Claim pending notice ``name`` for this process, returning it with its token; None when another reader took it."""
        ...

    def in_flight(self, *, with_head: bool = False) -> list[Lease]:
        """Return the claims not yet acknowledged, with their owners (``with_head``: and their first bytes, for listings)."""
        ...

    def take_over(self, lease: Lease, *, need_content: bool = True) -> Claimed | None:
        """Make ``lease`` this process's claim and return the notice; None when it is gone or another reader took it."""
        ...

    def acknowledge(self, token: str, name: str | None = None) -> Path | str | None:
        """Record claim ``token`` as delivered and return its history location; None when it is not in flight."""
        ...


@runtime_checkable
class InboxProvider(Protocol):
    """Hands out the inbox backend of any conversation, named by thread id or by save file."""

    def for_thread(self, thread_id: str) -> InboxBackend:
        """Return the inbox of LangGraph thread ``thread_id``."""
        ...

    def for_save_file(self, save_file: str | os.PathLike[str]) -> InboxBackend:
        """Return the inbox of the conversation saved to ``save_file``."""
        ...


def is_inbox_backend(value: object) -> TypeIs[InboxBackend]:
    """Return whether ``value`` is a backend bound to one conversation (rather than a provider).

    A class is never a bound backend (``DirectoryInbox`` the class is the directory
    provider); an object with ``claim`` and ``pending`` is.
    """
    return not isinstance(value, type) and isinstance(value, InboxBackend)

