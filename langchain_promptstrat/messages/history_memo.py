"""The replay engine: the history's model calls (:func:`call_points`) and one memo of earlier replays, keyed by what the history is.

A strategy whose prompt depends on the history's earlier calls replays them: its state
after the call at history length ``p`` is a function of ``messages[:p]`` alone, so a state
remembered for a call point resumes the replay. :class:`ReplayMemo` finds a state again for
a history whose first messages are the same objects or *equal* ones (a conversation loaded
from a checkpoint is the same conversation), by :func:`message_keys`; it holds no message
alive. :class:`IdentityMemo` and :class:`SizedCache` are the bounded tables the other memos
are built from; all are thread-safe (single dict operations under the GIL, eviction under a
lock). Must not decide anything: the strategies' steps do.
"""

from __future__ import annotations

import dataclasses
import operator
import threading
import weakref
from collections.abc import Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.keys import compute_keys, message_keys


def call_points(messages: Sequence[BaseMessage], after: int = 0) -> list[int]:
    """Return the history lengths after ``after`` at which an agent loop calls the model, oldest first.

    Never between a call and its outputs, nor after the assistant's own message; the full
    history always. Every prefix has the same call points up to its length.
    """
    n = len(messages)
    points = [
        e for e in range(max(after + 1, 1), n)
        if not isinstance(messages[e], ToolMessage) and not isinstance(messages[e - 1], AIMessage)
    ]
    if n > after:
        points.append(n)
    return points


def is_call_point(messages: Sequence[BaseMessage], length: int) -> bool:
    """Return whether ``length`` is one of :func:`call_points` of ``messages``, in O(1)."""
    n = len(messages)
    if length == n:
        return n > 0
    return 0 < length < n and not isinstance(messages[length], ToolMessage) and not isinstance(messages[length - 1], AIMessage)


class HistoryKey(NamedTuple):
    """What a remembered state was built on: the messages, weakly, and their :func:`~langchain_promptstrat.messages.keys.message_key`, in order."""

    refs: tuple[weakref.ref[BaseMessage], ...]
    keys: list[int]

    @property
    def length(self) -> int:
        return len(self.refs)


EMPTY_HISTORY = HistoryKey((), [])
"""The key of the empty history, where every replay starts."""
_DEREF = weakref.ref.__call__
"""Dereference a weak reference, as a C function ``map`` can call without a Python frame."""


def history_key(messages: Sequence[BaseMessage], start: HistoryKey | None = None) -> HistoryKey:
    """Return the key of ``messages``, extending ``start`` (the key of a prefix equal to their first messages) when given."""
    start = start or EMPTY_HISTORY
    length = start.length
    if length and start.refs[0]() is messages[0] and start.refs[-1]() is messages[length - 1]:  # the same objects: key the new ones
        return HistoryKey(start.refs + tuple(map(weakref.ref, messages[length:])), start.keys + compute_keys(messages[length:]))
    return HistoryKey(tuple(map(weakref.ref, messages)), message_keys(messages))


def describes(history: HistoryKey, messages: Sequence[BaseMessage]) -> bool:
    """Return whether ``history`` is the key of the first messages of ``messages`` (the same objects, or equal ones): checked before a state is resumed."""
    n = history.length
    if n > len(messages):
        return False
    if all(map(operator.is_, map(_DEREF, history.refs), messages[:n])):
        return True
    return message_keys(messages)[:n] == history.keys


class _Remembered(Protocol):
    """A state of a replay: a dataclass whose ``history`` field says what it was built on."""

    @property
    def history(self) -> HistoryKey: ...


S = TypeVar("S", bound=_Remembered)


class ReplayMemo(Generic[S]):
    """The states of recent replays of one strategy object, each for a call point of some history (never changes a result)."""

    def __init__(self, size: int) -> None:
        """Remember at most ``size`` states (the oldest goes first)."""
        self.size = size
        self._items: list[tuple[S, int, int | None]] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def chars(self) -> int:
        """Return the characters the remembered states declared (their own edited copies)."""
        return sum(chars for _, chars, _ in self._items)

    def recall(self, messages: Sequence[BaseMessage], budget: int | None = None) -> S | None:
        """Return the remembered state (made for ``budget``) of the longest call point of ``messages`` whose history equals their first messages, else None.

        The same objects are recognised by identity, equal ones by their keys; a state found
        by its keys comes back as a copy holding the new objects.
        """
        found = self._find(messages, budget)
        return found[1] if found is not None else None

    def take(self, messages: Sequence[BaseMessage]) -> S | None:
        """Return and forget the state :meth:`recall` would return: for a strategy that extends its state in place."""
        found = self._find(messages, None)
        if found is None:
            return None
        with self._lock:
            self._items = [item for item in self._items if item[0] is not found[0]]
        return found[1]

    def _find(self, messages: Sequence[BaseMessage], budget: int | None) -> tuple[S, S] | None:
        """Return the state :meth:`recall` finds, as remembered and as returned (the same, or a copy holding ``messages``)."""
        with self._lock:
            items = [state for state, _, made_for in self._items if made_for == budget]
        n = len(messages)
        items = [s for s in items if s.history.length <= n and is_call_point(messages, s.history.length)]
        items.sort(key=lambda state: state.history.length, reverse=True)
        for state in items:  # the usual hit: the previous call of the same conversation, the same objects
            if all(map(operator.is_, map(_DEREF, state.history.refs), messages)):
                return state, state
        if not items:
            return None
        keys = message_keys(messages)
        for state in items:  # a conversation loaded again: equal objects
            history = state.history
            if keys[:history.length] == history.keys:
                rekeyed = HistoryKey(tuple(map(weakref.ref, messages[:history.length])), history.keys)
                return state, cast(S, dataclasses.replace(cast(Any, state), history=rekeyed))
        return None

    def remember(self, state: S, chars: int = 0, max_chars: int | None = None, budget: int | None = None) -> None:
        """Remember ``state`` (holding ``chars`` characters of its own; made for ``budget``), forgetting the oldest beyond the size or ``max_chars``."""
        if max_chars is not None and chars > max_chars:
            return
        with self._lock:
            items = [*self._items[-(self.size - 1):], (state, chars, budget)] if self.size > 0 else []
            if max_chars is not None:
                total = sum(c for _, c, _ in items)
                while total > max_chars:
                    total -= items.pop(0)[1]
            self._items = items

    def forget(self) -> None:
        with self._lock:
            self._items = []


K = TypeVar("K")
V = TypeVar("V")

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

    ``check`` values (the object's own attributes) given to :meth:`put` are compared on
    :meth:`get`, so an object whose fields were replaced (``message.content = ...``) is a miss.
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
        """Return the value remembered for ``obj`` with the same (or equal) ``check`` objects, else None."""
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
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K, default: Any = None) -> Any:
        entry = self._entries.get(key)
        return default if entry is None else entry[0]

    def put(self, key: K, value: V, size: int) -> None:
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
                self.size -= entries.pop(next(iter(entries)))[1]
            entries[key] = (value, size)
            self.size += size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.size = 0

