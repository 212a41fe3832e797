"""The one head cache: the compacted head of a conversation, remembered by what its messages are.

Only the head of a prompt, up to its last shortened or dropped call, is compacted, and
between two moves of an epoch strategy's boundary every model call compacts the same head
the same way. So a compacted head (:class:`Head`) is remembered and reused, by the epoch
strategies (:func:`apply_frozen`: the fates applied to the messages before the last frozen
output) and by the stable strategy (``epoch_stable.frozen_prompt``: the head with its notice and counts
for one position of the edges).

An entry is found by what its head was built from: a key (the decisions: the fates, or the
edges, and the shortened form) and the messages it read, recognised when they are the same
objects (weak references, checked in C) or equal ones (the keys of
:func:`~langchain_promptstrat.messages.keys.message_keys` the replay engine keys a history
by): a conversation loaded again from a checkpoint is the same conversation. An entry holds
no message of the caller (the messages passed through are indices into the input; the
edited copies are its own, like every edited copy sharing its unchanged fields with the
original), the cache is bounded by entries and by the characters of the copies, and it is
thread-safe. A miss recomputes exactly what a hit returns: :func:`clear_caches` forgets
everything, for measurements.

Must not decide anything: the strategies' rules do.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

from langchain_promptstrat.messages import Fate, ToolIndex, apply_fates, message_chars
from langchain_promptstrat.messages.keys import message_key
from langchain_promptstrat.messages.history_memo import HistoryKey, history_key

__all__ = ["Head", "apply_frozen", "clear_caches", "encode_head", "recall_head", "remember_head"]


@dataclass
class Head:
    """A compacted head: ``(source[:at] + copies)[pick]`` for each pick, with the notice that follows it and its counts.

    A hit hands back the same copies and notice objects, which also lets the report measure
    only the new messages of a prompt that extends the previous one.
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
    """The tokens of the head and its notice for the last counter that counted them, weakly (the strategy counts them
    once and writes them here, so a conversation loaded again, which finds its head, does not count its head again)."""

    def messages(self, source: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Return the compacted head for ``source`` (whose first ``at`` messages are those it was built from)."""
        pool = list(source[: self.at])
        pool += self.copies
        return list(map(pool.__getitem__, self.picks))


def encode_head(
    source: Sequence[BaseMessage], at: int, messages: Sequence[BaseMessage], notice: BaseMessage | None = None,
    shortened: int = 0, dropped: int = 0, protected: int = 0,
) -> Head:
    """Return ``messages`` (a compacted ``source[:at]``) as a :class:`Head`: the messages passed through as indices, the others copies."""
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


_SIZE = 64
_CHARS = 16_000_000
"""At most this many characters of edited copies are kept, whatever the number of heads: a
server holding many long conversations keeps a bounded amount of memory."""
_heads: OrderedDict[Hashable, _Entry] = OrderedDict()
_heads_chars = 0
_lock = threading.Lock()
_DEREF = weakref.ref.__call__


def _slot(messages: Sequence[BaseMessage], length: int, key: Hashable) -> Hashable:
    return (key, length, message_key(messages[0]), message_key(messages[length - 1]))


def recall_head(messages: Sequence[BaseMessage], length: int, key: Hashable, check: Any = None) -> Head | None:
    """Return the head remembered under ``key`` (and an equal ``check``) for a history starting with ``messages[:length]``, else None."""
    if length == 0:
        return None
    slot = _slot(messages, length, key)
    with _lock:
        entry = _heads.get(slot)
        if entry is not None:
            _heads.move_to_end(slot)
    if entry is None or entry.check != check:
        return None
    if all(map(operator.is_, map(_DEREF, entry.history.refs), messages[:length])):
        return entry.head
    history = history_key(messages[:length])
    if history.keys != entry.history.keys:
        return None
    entry.history = history  # equal objects: found by identity next time
    return entry.head


def remember_head(messages: Sequence[BaseMessage], length: int, key: Hashable, head: Head, check: Any = None) -> None:
    """Remember ``head``, built from ``messages[:length]``, under ``key`` and ``check``, unless it holds too many characters."""
    global _heads_chars
    if length == 0 or head.chars > _CHARS:
        return
    slot = _slot(messages, length, key)
    entry = _Entry(check, history_key(messages[:length]), head)
    with _lock:
        replaced = _heads.pop(slot, None)
        if replaced is not None:
            _heads_chars -= replaced.head.chars
        _heads[slot] = entry
        _heads_chars += head.chars
        while len(_heads) > _SIZE or _heads_chars > _CHARS:
            _heads_chars -= _heads.popitem(last=False)[1].head.chars


def apply_frozen(messages: list[BaseMessage], index: ToolIndex, fates: Mapping[int, Fate]) -> list[BaseMessage]:
    """Return ``messages`` with ``fates`` applied (a call and its output share one), reusing the compacted head of an earlier call.

    Only the head of the list, up to the last shortened or dropped output, changes; within
    an epoch it gets the same fates every call, so it is compacted once and then reused
    while its input messages are the same.
    """
    if not fates:
        return list(messages)
    end = max(index.calls[number].output_index or 0 for number in fates) + 1  # fates name answered calls only
    key = "apply_frozen"
    head = recall_head(messages, end, key, fates)
    if head is None:
        head_in = messages[:end]
        head_out = apply_fates(head_in, index, {number: (fate, fate) for number, fate in fates.items()})
        remember_head(messages, end, key, encode_head(head_in, end, head_out), dict(fates))
        return head_out + messages[end:]
    return head.messages(messages) + messages[end:]


def clear_caches() -> None:
    """Forget every remembered head (for measurements; results never depend on them)."""
    global _heads_chars
    with _lock:
        _heads.clear()
        _heads_chars = 0
