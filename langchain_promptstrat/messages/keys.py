"""What a message *is*, as one number: the key every memo of a history is found by.

A conversation loaded from a checkpoint (every run of a LangGraph server thread, a new
process) arrives as new objects equal to the ones a strategy saw before. A memo keyed by
identity misses on it and redoes the work of every earlier call; a memo keyed by
:func:`message_key` finds it.

:func:`message_keys` gives the keys of a whole list and remembers them for the last few
lists (:data:`RECENT_LISTS`), so the memos that key the same history in one model call
(the replay's, the report's) compute each key once, and a list that extends one keyed
before (the next call of the same conversation) costs a few passes in C over it plus the
new messages; a prompt built from a history (its messages in other places, among edited
copies) finds their keys in the newest lists. A remembered list holds its messages weakly
(one weak reference each, no callback) and the field objects it keyed strongly, until its
last message is collected or newer lists push it out. A miss computes the key a hit
would have returned: nothing here changes a result.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import operator
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, cast

from langchain_core.messages import BaseMessage

__all__ = ["RECENT_LISTS", "chain_digest", "compute_keys", "keys_computed", "message_key", "message_keys"]

RECENT_LISTS = 8
"""How many keyed lists :func:`message_keys` remembers (the oldest goes first)."""

_SEARCHED = 3
"""How many of the newest lists a message not in the list it extends is looked for in (the prompt built from the history just keyed)."""

_get: Callable[[Mapping[str, Any], str], Any] = cast(Any, dict.get)
"""``dict.get`` as a C function ``map`` can call (typed for what it is given here)."""
_is = operator.is_
_deref = weakref.ref.__call__
"""Dereference a weak reference, as a C function ``map`` can call without a Python frame."""


def _calls_key(calls: Any) -> Any:
    """Return a hash of a list of tool calls: of its marshal bytes (in C), else of its repr."""
    try:
        return hash(marshal.dumps(calls, 2))  # version 2 writes no back-references: equal values, equal bytes
    except (ValueError, TypeError):  # a value marshal cannot write (a custom object in the arguments)
        return hash(repr(calls))


def _compute(
    messages: Sequence[BaseMessage], fields: Sequence[Mapping[str, Any]], read: tuple[list[Any], list[Any], list[Any]] | None = None,
) -> list[int]:
    """Return the key of each message (``fields`` are their ``vars``), in passes over the list (most of them in C).

    ``read`` is their ``content``, ``tool_calls`` and ``additional_kwargs`` when the caller has them already.
    """
    contents, calls, extras = read if read is not None else (_column(fields, "content"), _column(fields, "tool_calls"), _column(fields, "additional_kwargs"))
    if not set(map(type, contents)) <= {str}:
        contents = [c if type(c) is str else repr(c) for c in contents]
    columns = (_keyed(extras, repr), _keyed(calls, _calls_key), _keyed(_column(fields, "invalid_tool_calls"), _calls_key))
    ids, call_ids, names = (_column(fields, name) for name in ("id", "tool_call_id", "name"))
    try:
        return list(map(hash, zip(map(type, messages), ids, contents, call_ids, names, *columns)))
    except TypeError:  # an unhashable id or name: by its repr
        ids, call_ids, names = ([v if type(v) in _PLAIN else repr(v) for v in values] for values in (ids, call_ids, names))
        return list(map(hash, zip(map(type, messages), ids, contents, call_ids, names, *columns)))


def _column(fields: Sequence[Mapping[str, Any]], name: str) -> list[Any]:
    return list(map(_get, fields, repeat(name)))


def _keyed(values: list[Any], how: Callable[[Any], Any]) -> Iterable[Any]:
    """Return ``how(value)`` for each value that is not empty, else None (most messages have none of these fields)."""
    return [how(v) if v else None for v in values] if any(values) else repeat(None)


_PLAIN = (str, type(None))


def compute_keys(messages: Sequence[BaseMessage]) -> list[int]:
    """Return ``[message_key(m) for m in messages]``, computed, not looked up (for the few new messages of a known history)."""
    return _compute(messages, list(map(vars, messages)))


def message_key(message: BaseMessage) -> int:
    """Return a hash of what a strategy reads of ``message``: type, id, content, name, call id, tool calls, extra fields.

    Read from the fields directly (a pydantic attribute miss costs microseconds); string
    values are hashed as they are (in C, and cached by the string), tool calls by their
    marshal bytes, others by their repr. Equal messages have equal keys whether or not they
    are the same objects.
    """
    return _compute([message], [vars(message)])[0]


@dataclass(eq=False)
class _Keyed:
    """One list keyed by :func:`message_keys`: its messages (weakly), the field objects keyed, the keys, and where each message is."""

    refs: list[weakref.ref[BaseMessage]]
    contents: list[Any]
    calls: list[Any]
    extras: list[Any]
    keys: list[int]
    where: dict[int, int]
    """The position of each message in the list, by ``id`` (checked against :attr:`refs` before use)."""
    watch: weakref.ref[BaseMessage] | None = None
    """A weak reference to the newest message (its own conversation's, unlike a shared system message) that forgets the list."""

    def shares_start(self, messages: Sequence[BaseMessage], fields: Sequence[Mapping[str, Any]]) -> bool:
        """Return whether ``messages`` and this list start with the same objects, holding the same field objects, up to the shorter's end."""
        return (
            self.refs[0]() is messages[0]
            and all(map(_is, map(_deref, self.refs), messages))
            and all(map(_is, self.contents, map(_get, fields, repeat("content"))))
            and all(map(_is, self.calls, map(_get, fields, repeat("tool_calls"))))
            and all(map(_is, self.extras, map(_get, fields, repeat("additional_kwargs"))))
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
        best = next((item for item in sorted(items, key=_length, reverse=True) if item.shares_start(messages, fields)), None)
        done = min(len(best.refs), len(messages)) if best is not None else 0
        if best is not None and done == len(messages):  # the same list again (another memo of this call), or a start of it
            return best.keys[:done]
        tail, new = fields[done:], messages[done:]
        contents, calls, extras = _column(tail, "content"), _column(tail, "tool_calls"), _column(tail, "additional_kwargs")
        found = self._found(new, contents, calls, extras, items[: -_SEARCHED - 1 : -1]) if tail else []
        if found.count(None) == len(found):  # none known (a conversation loaded again, or only new messages)
            computed = _compute(new, tail, (contents, calls, extras))
        else:
            missing = [i for i, k in enumerate(found) if k is None]
            fill = iter(_compute([new[i] for i in missing], [tail[i] for i in missing]))
            computed = [next(fill) if k is None else k for k in found]
        self.computed += found.count(None)  # a diagnostic: an update lost between threads is harmless
        keys = best.keys + computed if best is not None else computed
        try:
            refs = list(map(weakref.ref, new))
        except TypeError:  # not weakly referenceable: keyed, not remembered
            return list(keys)
        if best is not None:
            where = best.where.copy()
            where.update(zip(map(id, new), range(done, len(messages))))
            entry = _Keyed(best.refs + refs, best.contents + contents, best.calls + calls, best.extras + extras, keys, where)
        else:
            entry = _Keyed(refs, contents, calls, extras, keys, dict(zip(map(id, messages), range(len(messages)))))
        self._remember(entry)
        return list(keys)

    @staticmethod
    def _found(messages: Sequence[BaseMessage], contents: list[Any], calls: list[Any], extras: list[Any], items: list[_Keyed]) -> list[int | None]:
        """Return each message's key from a remembered list holding the same object with the same fields, else None."""
        found: list[int | None] = [None] * len(messages)
        ids = list(map(id, messages))
        for item in items:
            positions = list(map(item.where.get, ids))
            if positions.count(None) == len(positions):
                continue
            refs, keys = item.refs, item.keys
            for i, p in enumerate(positions):
                if (
                    p is not None and found[i] is None and refs[p]() is messages[i] and item.contents[p] is contents[i]
                    and item.calls[p] is calls[i] and item.extras[p] is extras[i]
                ):
                    found[i] = keys[p]
        return found

    def _remember(self, entry: _Keyed) -> None:
        """Remember ``entry`` (the oldest beyond the size goes), until its last message is collected."""
        items, held = self.items, weakref.ref(entry)

        def forget(_: object) -> None:  # no lock: it may run in a garbage collection inside a locked region
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


def _length(item: _Keyed) -> int:
    return len(item.refs)


_recent = _RecentLists(RECENT_LISTS)


def message_keys(messages: Sequence[BaseMessage]) -> list[int]:
    """Return ``[message_key(m) for m in messages]``, reusing the keys of the lists keyed recently.

    A list that starts with the objects of one keyed before (with the same ``content``,
    ``tool_calls`` and ``additional_kwargs`` objects) reuses its keys after a few passes in
    C; a message found in another remembered list reuses its key there; only the others are
    computed. The result is what :func:`message_key` gives for each message.
    """
    return _recent.keys(messages)


def keys_computed() -> int:
    """Return how many message keys :func:`message_keys` has computed in this process (the others were found again).

    A diagnostic: it grows by the messages that had to be hashed, so a caller can see how
    much of a history was found in the lists keyed before rather than computed.
    """
    return _recent.computed


def chain_digest(start: bytes, messages: Sequence[BaseMessage]) -> bytes:
    """Return the digest of a history extended by ``messages``, ``start`` being that of the messages before them (``b""`` for none).

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
        h.update(json.dumps(rest, sort_keys=True, default=repr, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if isinstance(content, str):
            h.update(b"\x00")
            h.update(content.encode("utf-8", "surrogatepass"))
        digest = h.digest()
    return digest
