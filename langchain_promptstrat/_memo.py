"""Bounded memo tables that never keep a caller's conversation alive.

Strategies run before every model call on a conversation that only grows, so the same
objects are measured and shortened again and again; remembering that work is what keeps
them fast. A server runs many conversations for weeks, though, so a memo must neither grow
without bound nor hold the messages of a conversation that has finished:

* :class:`IdentityMemo` remembers a value per live object (a message) by identity. It
  holds the object only weakly and forgets the entry when the object is collected, so it
  never keeps a caller's message alive; its entry count is bounded.
* :class:`SizedCache` remembers values by an equal key (content, not identity) and is
  bounded by the total size of what it holds (characters), not by a count: a handful
  of 100 kB tool outputs cannot pin hundreds of megabytes.

Both are safe to share between threads: lookups and inserts are single dict operations
under the GIL, eviction runs under a lock, and the weakref callback takes no lock (it may
run during a garbage collection triggered inside a locked region).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Generic, TypeVar

__all__ = ["IdentityMemo", "SizedCache"]

K = TypeVar("K")
V = TypeVar("V")

_MISSING: Any = object()


class _KeyedRef(weakref.ref):  # type: ignore[type-arg]
    """A weak reference that remembers the memo key it was stored under."""

    __slots__ = ("key",)

    key: int

    def __new__(cls, obj: Any, callback: Any, key: int) -> _KeyedRef:
        self = super().__new__(cls, obj, callback)
        self.key = key
        return self

    def __init__(self, obj: Any, callback: Any, key: int) -> None:
        super().__init__(obj, callback)  # type: ignore[call-arg]  # weakref.ref takes them; typeshed omits __init__


class IdentityMemo(Generic[V]):
    """A value per live object, found by identity, holding the object only weakly.

    ``check`` values given to :meth:`put` are compared on :meth:`get` (identity first, then
    equality), so an object whose fields were replaced by different values
    (``message.content = ...``) is a miss. They should be
    the object's own attributes: they are held while the entry lives, and the entry dies
    with the object.
    """

    def __init__(self, max_entries: int) -> None:
        """Remember at most ``max_entries`` objects (the oldest entry goes first); 0 disables."""
        self.max_entries = max_entries
        self._entries: dict[int, tuple[_KeyedRef, tuple[Any, ...], V]] = {}
        self._lookup = self._entries.get  # bound once: get() is on every strategy's hot path
        self._lock = threading.Lock()
        entries = self._entries  # not self: the callback must not keep the memo alive

        def forget(ref: _KeyedRef) -> None:
            entry = entries.get(ref.key)
            if entry is not None and entry[0] is ref:
                entries.pop(ref.key, None)

        self._forget = forget

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, obj: Any, *check: Any) -> V | None:
        """Return the value remembered for ``obj`` with the same (or equal) ``check`` objects, else None.

        The tuple comparison tries identity first, so the usual hit costs no content comparison.
        """
        entry = self._lookup(id(obj))
        if entry is not None and entry[0]() is obj and entry[1] == check:
            return entry[2]
        return None

    def put(self, obj: Any, value: V, *check: Any) -> None:
        """Remember ``value`` for ``obj`` (and these ``check`` objects), evicting the oldest entries past the bound."""
        if self.max_entries <= 0:
            return
        key = id(obj)
        try:
            ref = _KeyedRef(obj, self._forget, key)
        except TypeError:  # not weakly referenceable: not remembered rather than kept alive
            return
        with self._lock:
            entries = self._entries
            while len(entries) >= self.max_entries:
                try:
                    entries.pop(next(iter(entries)))
                except (StopIteration, KeyError, RuntimeError):
                    break
            entries[key] = (ref, check, value)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()


class SizedCache(Generic[K, V]):
    """A value per equal key, bounded by the total size of the entries (oldest evicted first)."""

    def __init__(self, max_size: int, max_entries: int | None = None) -> None:
        """Hold entries whose sizes add up to at most ``max_size`` (and at most ``max_entries``); an entry larger than that is not kept."""
        self.max_size = max_size
        self.max_entries = max_entries
        self.size = 0
        self._entries: dict[K, tuple[V, int]] = {}
        self.lookup = self._entries.get
        """``lookup(key)``: the ``(value, size)`` stored under ``key``, or None (a C call, for hot paths)."""
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K, default: Any = None) -> Any:
        """Return the value stored under ``key``, else ``default``."""
        entry = self._entries.get(key)
        return default if entry is None else entry[0]

    def put(self, key: K, value: V, size: int) -> None:
        """Store ``value`` under ``key``, counting ``size`` against the bound."""
        if size > self.max_size or self.max_entries == 0:
            return
        with self._lock:
            entries = self._entries
            old = entries.pop(key, None)
            if old is not None:
                self.size -= old[1]
            while entries and (
                self.size + size > self.max_size or (self.max_entries is not None and len(entries) >= self.max_entries)
            ):
                _, (_, evicted) = _pop_oldest(entries)
                self.size -= evicted
            entries[key] = (value, size)
            self.size += size

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self.size = 0


def _pop_oldest(entries: dict[Any, Any]) -> tuple[Any, Any]:
    key = next(iter(entries))
    return key, entries.pop(key)
