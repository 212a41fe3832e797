"""The memos, keyed by what a history *is*, and the bounded tables the others are built from: none
changes a result.

* :func:`message_key` says what a message is as one number (type, id, content, calls, extra
  fields, usage), so a conversation loaded from a checkpoint, new objects equal to the old
  ones, is recognised; :func:`message_keys` keys a list, reusing the keys of the last lists
  keyed; :func:`chain_digest` is the same across processes, for a state carried in a checkpoint;
* :func:`call_points` are the history lengths at which an agent loop calls the model, and
  :class:`ReplayMemo` the states of recent replays of one strategy object (the default, the
  ladder, ``dedupe_outputs``), found again by :class:`HistoryKey`; :func:`describes` checks a
  state against the history it claims to describe before it is resumed;
* the head cache (:func:`recall_head`, :func:`remember_head`): a compacted head of a
  conversation, shared by the epoch strategies, bounded by entries and characters;
* :class:`IdentityMemo` and :class:`SizedCache`, the bounded tables of the token counter's,
  the summary's and the default's per-message memos; :func:`memoized`, the one way a module
  remembers a function's results; :func:`running_chars`, the report's character totals.

The one switch: every memo and cache here, and every one made with it, is on unless the
environment variable ``PROMPTSTRAT_CACHES`` is ``off`` when the package is imported. While off
(:func:`caches_off`, :func:`set_caches`), every memo misses and stores nothing, so a result is
computed from the messages alone: it is the same, byte for byte, as with the caches on (a cache
is an optimisation only; ``tests/test_caches.py`` checks it). :func:`clear_caches` forgets what
every one of them holds.

Everything holds the caller's messages weakly and is bounded; it is thread-safe (single dict
operations under the GIL, eviction under a lock). Must not decide anything: the strategies do.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import marshal
import operator
import os
import sys
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Generic, NamedTuple, ParamSpec, Protocol, TypeVar, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages.recorded_calls import message_chars

_DEREF = weakref.ref.__call__
"""Dereference a weak reference, as a C function ``map`` can call without a Python frame."""


# ---- the one switch ------------------------------------------------------------------------


_caches_on = os.environ.get("PROMPTSTRAT_CACHES", "").strip().lower() != "off"
"""Whether memos and caches are used: read from ``PROMPTSTRAT_CACHES`` once, at import."""

_every_cache: weakref.WeakSet[Any] = weakref.WeakSet()
"""Every live memo or cache object made here (each has ``clear()``), for :func:`clear_caches`."""


class _Memoized(NamedTuple):
    """A function made with :func:`memoized`: where it is bound, itself, its remembering form."""

    module: str
    name: str
    plain: Callable[..., Any]
    remembered: Any
    """Its ``functools.lru_cache``."""


_memoized: list[_Memoized] = []
"""Every function made with :func:`memoized`."""


def caches_enabled() -> bool:
    """Return whether memos and caches are used (``PROMPTSTRAT_CACHES=off`` at import: not)."""
    return _caches_on


def set_caches(on: bool) -> bool:
    """Turn every memo and cache of the package on or off, process-wide; return the previous
    setting.

    Off, each misses and stores nothing; what they held before stays, and is used again when
    they are turned back on (it was right then and still is).
    """
    global _caches_on
    before, _caches_on = _caches_on, bool(on)
    for made in _memoized:  # bind the form the switch asks for where the module calls it
        setattr(sys.modules[made.module], made.name, made.remembered if on else made.plain)
    return before


@contextlib.contextmanager
def caches_off() -> Iterator[None]:
    """Run the block with every memo and cache off, then restore the setting found."""
    before = set_caches(False)
    try:
        yield
    finally:
        set_caches(before)


P = ParamSpec("P")
R = TypeVar("R")


def memoized(maxsize: int | None) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Return a decorator remembering a module-level function's results by its (hashable) arguments,
    at most ``maxsize`` of them (``functools.lru_cache``), obeying the switch and
    :func:`clear_caches`.

    The switch binds the module's name to the remembering function or to the plain one (so a
    call adds no frame): call it through its own module, not a name imported elsewhere.
    """

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        remembered = functools.lru_cache(maxsize)(function)
        _memoized.append(_Memoized(function.__module__, function.__name__, function, remembered))
        return cast(Callable[P, R], remembered) if _caches_on else function

    return decorate


def register_cache(cache: Any) -> None:
    """Let :func:`clear_caches` call ``cache.clear()`` while it lives (held weakly): for a memo a
    module keeps that is not one of the tables here (it must also obey :func:`caches_enabled`)."""
    _every_cache.add(cache)


# ---- what a message is, as one number ------------------------------------------------------


RECENT_LISTS = 8
"""How many keyed lists :func:`message_keys` remembers (the oldest goes first)."""

_SEARCHED = 3
"""How many of the newest lists a message not in the list it extends is looked for in (the prompt
built from the history just keyed)."""

_get: Callable[[Mapping[str, Any], str], Any] = cast(Any, dict.get)
"""``dict.get`` as a C function ``map`` can call (typed for what it is given here)."""


def _calls_key(calls: Any) -> Any:
    """Return a hash of a list of tool calls: of its marshal bytes (in C), else of its repr."""
    try:
        return hash(
            marshal.dumps(calls, 2)
        )  # version 2 writes no back-references: equal values, equal bytes
    except (
        ValueError,
        TypeError,
    ):  # a value marshal cannot write (a custom object in the arguments)
        return hash(repr(calls))


def _compute(
    messages: Sequence[BaseMessage],
    fields: Sequence[Mapping[str, Any]],
    read: tuple[list[Any], list[Any], list[Any]] | None = None,
) -> list[int]:
    """Return the key of each message (``fields`` are their ``vars``), in passes over the list (most
    of them in C).

    ``read`` is their ``content``, ``tool_calls`` and ``additional_kwargs`` when the caller has them
    already.
    """
    contents, calls, extras = (
        read
        if read is not None
        else (
            _column(fields, "content"),
            _column(fields, "tool_calls"),
            _column(fields, "additional_kwargs"),
        )
    )
    if not set(map(type, contents)) <= {str}:
        contents = [c if type(c) is str else repr(c) for c in contents]
    columns = (
        _keyed(extras, repr),
        _keyed(calls, _calls_key),
        _keyed(_column(fields, "invalid_tool_calls"), _calls_key),
        _keyed(
            _column(fields, "usage_metadata"), repr
        ),  # the ceiling reads the usage an answer reports
    )
    ids, call_ids, names = (_column(fields, name) for name in ("id", "tool_call_id", "name"))
    try:
        return list(
            map(
                hash,
                zip(map(type, messages), ids, contents, call_ids, names, *columns, strict=False),
            )
        )
    except TypeError:  # an unhashable id or name: by its repr
        ids, call_ids, names = (
            [v if type(v) in _PLAIN else repr(v) for v in values]
            for values in (ids, call_ids, names)
        )
        return list(
            map(
                hash,
                zip(map(type, messages), ids, contents, call_ids, names, *columns, strict=False),
            )
        )


def _column(fields: Sequence[Mapping[str, Any]], name: str) -> list[Any]:
    return list(map(_get, fields, repeat(name)))


def _keyed(values: list[Any], how: Callable[[Any], Any]) -> Iterable[Any]:
    """Return ``how(value)`` for each value that is not empty, else None (most messages have none of
    these fields)."""
    return [how(v) if v else None for v in values] if any(values) else repeat(None)


_PLAIN = (str, type(None))


def compute_keys(messages: Sequence[BaseMessage]) -> list[int]:
    """Return ``[message_key(m) for m in messages]``, computed, not looked up (for the few new
    messages of a known history)."""
    return _compute(messages, list(map(vars, messages)))


def message_key(message: BaseMessage) -> int:
    """Return a hash of what a strategy reads of ``message``: type, id, content, name, call id, tool
    calls, extra fields, usage.

    Read from the fields directly (a pydantic attribute miss costs microseconds). Equal
    messages have equal keys whether or not they are the same objects.
    """
    return _compute([message], [vars(message)])[0]


@dataclass(eq=False)
class _Keyed:
    """One list keyed by :func:`message_keys`: its messages (weakly), the field objects keyed, the
    keys, and where each message is."""

    refs: list[weakref.ref[BaseMessage]]
    contents: list[Any]
    calls: list[Any]
    extras: list[Any]
    keys: list[int]
    where: dict[int, int]
    """The position of each message in the list, by ``id`` (checked against :attr:`refs` before
    use)."""
    watch: weakref.ref[BaseMessage] | None = None
    """A weak reference to the newest message (its own conversation's, unlike a shared system
    message) that forgets the list."""

    def shares_start(
        self, messages: Sequence[BaseMessage], fields: Sequence[Mapping[str, Any]]
    ) -> bool:
        """Return whether ``messages`` and this list start with the same objects, holding the same
        field objects, up to the shorter's end."""
        return (
            self.refs[0]() is messages[0]
            and all(map(operator.is_, map(_DEREF, self.refs), messages))
            and all(map(operator.is_, self.contents, map(_get, fields, repeat("content"))))
            and all(map(operator.is_, self.calls, map(_get, fields, repeat("tool_calls"))))
            and all(map(operator.is_, self.extras, map(_get, fields, repeat("additional_kwargs"))))
        )


class _RecentLists:
    """The last lists keyed, newest last; safe to share between threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: list[_Keyed] = []
        self.lock = threading.Lock()
        self.computed = 0
        """Keys computed so far (the others were found in a remembered list)."""

    def keys(self, messages: Sequence[BaseMessage]) -> list[int]:
        if not messages:
            return []
        fields = list(map(vars, messages))
        with self.lock:
            items = list(self.items)
        longest_first = sorted(items, key=lambda item: len(item.refs), reverse=True)
        best = next((item for item in longest_first if item.shares_start(messages, fields)), None)
        done = min(len(best.refs), len(messages)) if best is not None else 0
        if best is not None and done == len(
            messages
        ):  # the same list again (another memo of this call), or a start of it
            return best.keys[:done]
        tail, new = fields[done:], messages[done:]
        contents, calls, extras = (
            _column(tail, "content"),
            _column(tail, "tool_calls"),
            _column(tail, "additional_kwargs"),
        )
        found = self._found(new, contents, calls, extras, items[: -_SEARCHED - 1 : -1])
        if found.count(None) == len(
            found
        ):  # none known (a conversation loaded again, or only new messages)
            computed = _compute(new, tail, (contents, calls, extras))
        else:
            missing = [i for i, k in enumerate(found) if k is None]
            fill = iter(_compute([new[i] for i in missing], [tail[i] for i in missing]))
            computed = [next(fill) if k is None else k for k in found]
        self.computed += found.count(
            None
        )  # a diagnostic: an update lost between threads is harmless
        keys = best.keys + computed if best is not None else computed
        try:
            refs = list(map(weakref.ref, new))
        except TypeError:  # not weakly referenceable: keyed, not remembered
            return list(keys)
        if best is not None:
            where = best.where.copy()
            where.update(zip(map(id, new), range(done, len(messages)), strict=False))
            entry = _Keyed(
                best.refs + refs,
                best.contents + contents,
                best.calls + calls,
                best.extras + extras,
                keys,
                where,
            )
        else:
            entry = _Keyed(
                refs,
                contents,
                calls,
                extras,
                keys,
                dict(zip(map(id, messages), range(len(messages)), strict=False)),
            )
        self._remember(entry)
        return list(keys)

    @staticmethod
    def _found(
        messages: Sequence[BaseMessage],
        contents: list[Any],
        calls: list[Any],
        extras: list[Any],
        items: list[_Keyed],
    ) -> list[int | None]:
        """Return each message's key from a remembered list holding the same object with the same
        fields, else None."""
        found: list[int | None] = [None] * len(messages)
        ids = list(map(id, messages))
        for item in items:
            positions = list(map(item.where.get, ids))
            if positions.count(None) == len(positions):
                continue
            refs, keys = item.refs, item.keys
            for i, p in enumerate(positions):
                if (
                    p is not None
                    and found[i] is None
                    and refs[p]() is messages[i]
                    and item.contents[p] is contents[i]
                    and item.calls[p] is calls[i]
                    and item.extras[p] is extras[i]
                ):
                    found[i] = keys[p]
        return found

    def clear(self) -> None:
        with self.lock:
            self.items.clear()

    def _remember(self, entry: _Keyed) -> None:
        """Remember ``entry`` (the oldest beyond the size goes), until its last message is
        collected."""
        items, held = self.items, weakref.ref(entry)

        def forget(
            _: object,
        ) -> None:  # no lock: it may run in a garbage collection inside a locked region
            alive = held()
            try:
                if alive is not None:
                    items.remove(alive)
            except ValueError:  # pushed out already
                pass

        entry.watch = weakref.ref(entry.refs[-1](), forget)  # type: ignore[arg-type]  # alive: the caller holds it
        with self.lock:
            items.append(entry)
            del items[: max(0, len(items) - self.size)]


_recent = _RecentLists(RECENT_LISTS)


def message_keys(messages: Sequence[BaseMessage]) -> list[int]:
    """Return ``[message_key(m) for m in messages]``, reusing the keys of the lists keyed recently.

    A list that starts with the objects of one keyed before (holding the same ``content``,
    ``tool_calls`` and ``additional_kwargs`` objects) reuses its keys, and so does a message
    found in another remembered list; only the others are computed.
    """
    return _recent.keys(messages) if _caches_on else compute_keys(messages)


def keys_computed() -> int:
    """Return how many message keys :func:`message_keys` has computed in this process (a diagnostic:
    the others were found again)."""
    return _recent.computed


def chain_digest(start: bytes, messages: Sequence[BaseMessage]) -> bytes:
    """Return the digest of a history extended by ``messages``, ``start`` being that of the messages
    before them (``b""`` for none).

    Unlike :func:`message_key` (Python's ``hash``, salted per process) it is the same in every
    process, so a state carried in a checkpoint can say which history it describes. Every
    field a strategy may read is part of it; a value JSON cannot write is taken by its
    ``repr``, which at worst makes two equal histories differ (a state then recomputed, never
    a wrong one trusted).
    """
    digest = start
    for message in messages:
        fields = vars(message)
        content = fields.get("content")
        rest = {k: v for k, v in fields.items() if k != "content" or not isinstance(v, str)}
        h = hashlib.blake2b(digest, digest_size=16)
        h.update(type(message).__name__.encode())
        h.update(
            json.dumps(rest, sort_keys=True, default=repr, ensure_ascii=False).encode(
                "utf-8", "surrogatepass"
            )
        )
        if isinstance(content, str):
            h.update(b"\x00")
            h.update(content.encode("utf-8", "surrogatepass"))
        digest = h.digest()
    return digest


# ---- a history's model calls and the memo of their replays ---------------------------------


def call_points(messages: Sequence[BaseMessage], after: int = 0) -> list[int]:
    """Return the history lengths after ``after`` at which an agent loop calls the model, oldest
    first.

    Never between a call and its outputs, nor after the assistant's own message; the full
    history always. Every prefix has the same call points up to its length.
    """
    n = len(messages)
    points = [
        e
        for e in range(max(after + 1, 1), n)
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
    return (
        0 < length < n
        and not isinstance(messages[length], ToolMessage)
        and not isinstance(messages[length - 1], AIMessage)
    )


class HistoryKey(NamedTuple):
    """What a remembered state was built on: the messages, weakly, and their :func:`message_key`, in
    order."""

    refs: tuple[weakref.ref[BaseMessage], ...]
    keys: list[int]

    @property
    def length(self) -> int:
        return len(self.refs)


EMPTY_HISTORY = HistoryKey((), [])
"""The key of the empty history, where every replay starts."""


def history_key(messages: Sequence[BaseMessage], start: HistoryKey | None = None) -> HistoryKey:
    """Return the key of ``messages``, extending ``start`` (the key of a prefix equal to their first
    messages) when given."""
    start = start or EMPTY_HISTORY
    length = start.length
    if (
        length and start.refs[0]() is messages[0] and start.refs[-1]() is messages[length - 1]
    ):  # the same objects: key the new ones
        return HistoryKey(
            start.refs + tuple(map(weakref.ref, messages[length:])),
            start.keys + compute_keys(messages[length:]),
        )
    return HistoryKey(tuple(map(weakref.ref, messages)), message_keys(messages))


def describes(history: HistoryKey, messages: Sequence[BaseMessage]) -> HistoryKey | None:
    """Return ``history`` if it keys the first messages of ``messages`` (a copy holding them if new
    objects), else None.

    Checked before a remembered state is resumed: a conversation loaded again (equal, new objects)
    is the same history.
    """
    n = history.length
    if n > len(messages):
        return None
    if all(map(operator.is_, map(_DEREF, history.refs), messages)):
        return history
    if message_keys(messages)[:n] != history.keys:
        return None
    return HistoryKey(tuple(map(weakref.ref, messages[:n])), history.keys)


class _Remembered(Protocol):
    """A state of a replay: a dataclass whose ``history`` field says what it was built on."""

    @property
    def history(self) -> HistoryKey: ...


S = TypeVar("S", bound=_Remembered)


class ReplayMemo(Generic[S]):
    """The states of recent replays of one strategy object, each for a call point of some history
    (never changes a result)."""

    def __init__(self, size: int) -> None:
        """Remember at most ``size`` states (the oldest goes first)."""
        self.size = size
        self._items: list[tuple[S, int, int | None]] = []
        self._lock = threading.Lock()
        register_cache(self)

    def __len__(self) -> int:
        return len(self._items)

    def chars(self) -> int:
        """Return the characters the remembered states declared (their own edited copies)."""
        return sum(chars for _, chars, _ in self._items)

    def recall(self, messages: Sequence[BaseMessage], budget: int | None = None) -> S | None:
        """Return the remembered state (made for ``budget``) of the longest call point of
        ``messages`` whose history equals their first messages, else None.

        The same objects are recognised by identity, equal ones by their keys; a state found
        by its keys comes back as a copy holding the new objects.
        """
        found = self._find(messages, budget)
        return found[1] if found is not None else None

    def take(self, messages: Sequence[BaseMessage]) -> S | None:
        """Return and forget the state :meth:`recall` would return: for a strategy that extends its
        state in place."""
        found = self._find(messages, None)
        if found is None:
            return None
        with self._lock:
            self._items = [item for item in self._items if item[0] is not found[0]]
        return found[1]

    def _find(self, messages: Sequence[BaseMessage], budget: int | None) -> tuple[S, S] | None:
        """Return the state :meth:`recall` finds, as remembered and as returned (the same, or a copy
        holding ``messages``)."""
        if not _caches_on:
            return None
        with self._lock:
            items = [state for state, _, made_for in self._items if made_for == budget]
        n = len(messages)
        items = [
            s for s in items if s.history.length <= n and is_call_point(messages, s.history.length)
        ]
        items.sort(key=lambda state: state.history.length, reverse=True)
        for state in items:
            history = describes(state.history, messages)
            if (
                history is state.history
            ):  # the usual hit: the previous call of the same conversation, the same objects
                return state, state
            if history is not None:  # a conversation loaded again: equal objects
                return state, cast(S, dataclasses.replace(cast(Any, state), history=history))
        return None

    def remember(
        self, state: S, chars: int = 0, max_chars: int | None = None, budget: int | None = None
    ) -> None:
        """Remember ``state`` (holding ``chars`` characters of its own; made for ``budget``),
        forgetting the oldest beyond the size or ``max_chars``."""
        if not _caches_on or (max_chars is not None and chars > max_chars):
            return
        with self._lock:
            items = (
                [*self._items[-(self.size - 1) :], (state, chars, budget)] if self.size > 0 else []
            )
            if max_chars is not None:
                total = sum(c for _, c, _ in items)
                while total > max_chars:
                    total -= items.pop(0)[1]
            self._items = items

    def forget(self) -> None:
        with self._lock:
            self._items = []

    clear = forget


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
        register_cache(self)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, obj: Any, *check: Any) -> V | None:
        """Return the value remembered for ``obj`` with the same (or equal) ``check`` objects, else
        None."""
        if not _caches_on:
            return None
        entry = self._lookup(id(obj))
        if entry is not None and entry[0]() is obj and entry[1] == check:
            return entry[2]
        return None

    def put(self, obj: Any, value: V, *check: Any) -> None:
        """Remember ``value`` for ``obj`` (and these ``check`` objects), evicting the oldest entries
        past the bound."""
        if self.max_entries <= 0 or not _caches_on:
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
        """Hold entries whose sizes add up to at most ``max_size`` (and at most ``max_entries``); an
        entry larger than that is not kept."""
        self.max_size = max_size
        self.max_entries = max_entries
        self.size = 0
        self._entries: dict[K, tuple[V, int]] = {}
        self._lock = threading.Lock()
        register_cache(self)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key) if _caches_on else None
        return None if entry is None else entry[0]

    def put(self, key: K, value: V, size: int) -> None:
        if size > self.max_size or self.max_entries == 0 or not _caches_on:
            return
        with self._lock:
            entries = self._entries
            old = entries.pop(key, None)
            if old is not None:
                self.size -= old[1]
            while entries and (
                self.size + size > self.max_size
                or (self.max_entries is not None and len(entries) >= self.max_entries)
            ):
                self.size -= entries.pop(next(iter(entries)))[1]
            entries[key] = (value, size)
            self.size += size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.size = 0


# ---- the head cache of the epoch strategies ------------------------------------------------


@dataclass
class Head:
    """A compacted head: ``(source[:at] + copies)[pick]`` for each pick, with the notice that
    follows it and its counts.

    A hit hands back the same copy and notice objects.
    """

    at: int
    """How many input messages the picks index (the copies come after them)."""
    picks: list[int]
    copies: list[BaseMessage]
    notice: BaseMessage | None = None
    shortened: int = 0
    dropped: int = 0
    protected: int = 0
    chars: int = 0
    """Characters of the copies and the notice (what remembering this head costs)."""
    counted: tuple[weakref.ref[Any], int] | None = None
    """The tokens of the head and its notice for the last counter that counted them, weakly (the
    strategy counts them once and writes them here, so a conversation loaded again, which finds its
    head, does not count its head again)."""

    def messages(self, source: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Return the compacted head for ``source`` (whose first ``at`` messages are those it was
        built from)."""
        pool = list(source[: self.at])
        pool += self.copies
        return list(map(pool.__getitem__, self.picks))


def encode_head(
    source: Sequence[BaseMessage],
    at: int,
    messages: Sequence[BaseMessage],
    notice: BaseMessage | None = None,
    shortened: int = 0,
    dropped: int = 0,
    protected: int = 0,
) -> Head:
    """Return ``messages`` (a compacted ``source[:at]``) as a :class:`Head`: the messages passed
    through as indices, the others copies."""
    position = {id(m): i for i, m in enumerate(source[:at])}
    picks: list[int] = []
    copies: list[BaseMessage] = []
    for m in messages:
        i = position.get(id(m))
        if i is None:
            i = at + len(copies)
            copies.append(m)
        picks.append(i)
    chars = sum(map(message_chars, copies)) + (message_chars(notice) if notice is not None else 0)
    return Head(at, picks, copies, notice, shortened, dropped, protected, chars)


@dataclass
class _Entry:
    check: Any
    history: HistoryKey
    head: Head


_heads: SizedCache[Hashable, _Entry] = SizedCache(16_000_000, 64)
"""The compacted heads remembered: at most 64, holding at most this many characters of edited
copies."""


def _slot(messages: Sequence[BaseMessage], length: int, key: Hashable) -> Hashable:
    return (key, length, message_key(messages[0]), message_key(messages[length - 1]))


def recall_head(
    messages: Sequence[BaseMessage], length: int, key: Hashable, check: Any = None
) -> Head | None:
    """Return the head remembered under ``key`` (and an equal ``check``) for a history starting with
    ``messages[:length]``, else None."""
    entry = _heads.get(_slot(messages, length, key)) if length else None
    history = (
        describes(entry.history, messages) if entry is not None and entry.check == check else None
    )
    if entry is None or history is None:
        return None
    entry.history = history  # equal objects: found by identity next time
    return entry.head


def remember_head(
    messages: Sequence[BaseMessage], length: int, key: Hashable, head: Head, check: Any = None
) -> None:
    """Remember ``head``, built from ``messages[:length]``, under ``key`` and ``check``, unless it
    holds too many characters."""
    if length:
        _heads.put(
            _slot(messages, length, key),
            _Entry(check, history_key(messages[:length]), head),
            head.chars,
        )


# ---- the report's character totals -----------------------------------------------------------


class _RunningChars:
    """The character totals of the last lists measured (their message keys, no message): a list
    extending one is measured only after it."""

    size = 8

    def __init__(self) -> None:
        self._items: list[tuple[list[int], int]] = []
        self._lock = threading.Lock()
        register_cache(self)

    def __len__(self) -> int:
        return len(self._items)

    def total(self, messages: Sequence[BaseMessage]) -> int:
        """Return ``sum(map(message_chars, messages))``."""
        if not messages:
            return 0
        if not _caches_on:
            return sum(map(message_chars, messages))
        try:
            keys = message_keys(messages)
        except (TypeError, AttributeError):  # not a pydantic message: measured, not remembered
            return sum(map(message_chars, messages))
        with self._lock:
            items = sorted(
                self._items, key=lambda item: len(item[0]), reverse=True
            )  # the longest list it extends is the first that matches
        n = len(keys)
        best = next(
            (item for item in items if len(item[0]) <= n and item[0] == keys[: len(item[0])]), None
        )
        done = len(best[0]) if best is not None else 0
        total = (best[1] if best is not None else 0) + sum(map(message_chars, messages[done:]))
        with self._lock:
            self._items = [*self._items[-(self.size - 1) :], (keys, total)]
        return total

    def clear(self) -> None:
        with self._lock:
            self._items = []


_running_chars = _RunningChars()


def running_chars(messages: Sequence[BaseMessage]) -> int:
    """Return ``sum(map(message_chars, messages))``, measuring only what extends a list measured
    recently (a prompt and the history it was built from, call after call)."""
    return _running_chars.total(messages)


def clear_caches() -> None:
    """Forget what every memo and cache holds, here and in the functions made with
    :func:`memoized` (for measurements and tests; results never depend on them)."""
    for cache in list(_every_cache):
        cache.clear()
    for made in _memoized:
        made.remembered.cache_clear()
    _recent.clear()
