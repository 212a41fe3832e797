"""The epoch strategies' caches: the repeat key of each arguments object, and the compacted head of each conversation.

Every call of an epoch takes the same decisions about the same old messages, so that
work is remembered. Both caches are keyed by object identity and check it on a hit; they
rely on messages not being edited in place, which this package assumes throughout
(LangChain and LangGraph replace messages, they do not mutate them). Both are bounded
(the key cache by the size of what it holds) and thread-safe, the head cache holds the
input messages only weakly (a finished conversation is not kept alive), and neither
changes a result: a miss recomputes exactly what a hit returns. The shortened strings
themselves are cached by content in ``truncate_string``, so even a miss (new message
objects with the same content, as after reloading a checkpoint) does not hash or cut the
same text twice.

Must not decide anything: what a hit returns is exactly what :func:`apply_frozen`
computes on a miss (:func:`clear_caches` forgets everything, for measurements).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, cast

from langchain_core.messages import BaseMessage

from langchain_promptstrat._memo import SizedCache
from langchain_promptstrat.messages import Fate, ToolCallRecord, ToolIndex, apply_fates, message_chars

from langchain_promptstrat.strategies.epoch_machinery.shortened_form import ShortenedForm

__all__ = ["apply_frozen", "clear_caches"]

_KEY_CACHE_CHARS = 2_000_000
_key_cache: SizedCache[int, tuple[Any, str, str]] = SizedCache(_KEY_CACHE_CHARS)


def _repeat_key(record: ToolCallRecord) -> str:
    """Return ``record.key``, serialising each arguments object once instead of on every call.

    The entry holds the arguments object (so its id cannot be reused while it is cached);
    the cache is bounded by the characters of the keys, which measure those arguments, so
    it cannot pin more than a few megabytes of a finished conversation.
    """
    args = record.args
    if not isinstance(args, (dict, list)):
        return record.key
    hit = _key_cache.get(id(args))
    if hit is not None and hit[0] is args and hit[1] == record.name:
        return hit[2]  # type: ignore[no-any-return]
    key = record.key
    _key_cache.put(id(args), (args, record.name, key), len(key) + 64)
    return key


class _Head(NamedTuple):
    sources: list[weakref.ref[BaseMessage]]
    fates: dict[int, Fate]
    form: Any
    """What shortened the outputs (None: the usual stub), compared on a hit like the fates."""
    output: list[BaseMessage | int]
    """The compacted head: edited copies, and the input index of each message passed through."""
    chars: int
    """Characters of the edited copies the entry holds (what it costs to keep)."""


_HEAD_CACHE_SIZE = 64
_HEAD_CACHE_CHARS = 16_000_000
"""At most this many characters of edited copies are kept, whatever the number of heads: a
server holding many long conversations keeps a bounded amount of memory."""
_head_cache: OrderedDict[tuple[int, int], _Head] = OrderedDict()
_head_cache_chars = 0
_head_lock = threading.Lock()


def _copies_chars(encoded: Sequence[BaseMessage | int]) -> int:
    """Return the characters of the edited copies in an encoded head (messages passed through cost nothing)."""
    return sum(message_chars(m) for m in encoded if not isinstance(m, int))


def apply_frozen(
    messages: list[BaseMessage], index: ToolIndex, fates: Mapping[int, Fate], form: ShortenedForm | None = None
) -> list[BaseMessage]:
    """Return ``messages`` with ``fates`` applied, reusing the compacted head of an earlier call.

    Only the head of the list, up to the last shortened or dropped output, changes; within
    an epoch it gets the same fates every call, so it is compacted once and then reused
    while its input messages are the same objects. ``form`` (the stable strategy's) shortens
    the outputs and narrations instead of the usual stubs (see
    :func:`~langchain_promptstrat.messages.apply_fates`); a hit needs an equal one.
    """
    if not fates:
        return list(messages)
    end = max(cast(int, index.calls[number].output_index) for number in fates) + 1  # fates name answered calls only
    head_in = messages[:end]
    key = (id(messages[0]), end)
    with _head_lock:
        head = _head_cache.get(key)
        if head is not None:
            _head_cache.move_to_end(key)
    if head is not None and head.fates == fates and head.form == form and all(ref() is m for ref, m in zip(head.sources, head_in)):
        return [head_in[x] if isinstance(x, int) else x for x in head.output] + messages[end:]
    head_out = apply_fates(
        head_in, index, {number: (fate, fate) for number, fate in fates.items()},
        shorten_output=form, shorten_narration=form.narration if form is not None and form.narration_chars > 0 else None,
    )
    position = {id(m): i for i, m in enumerate(head_in)}
    encoded: list[BaseMessage | int] = [position.get(id(m), m) for m in head_out]
    chars = _copies_chars(encoded)
    if chars <= _HEAD_CACHE_CHARS:
        global _head_cache_chars
        with _head_lock:
            replaced = _head_cache.pop(key, None)
            if replaced is not None:
                _head_cache_chars -= replaced.chars
            _head_cache[key] = _Head([weakref.ref(m) for m in head_in], dict(fates), form, encoded, chars)
            _head_cache_chars += chars
            while len(_head_cache) > _HEAD_CACHE_SIZE or _head_cache_chars > _HEAD_CACHE_CHARS:
                _head_cache_chars -= _head_cache.popitem(last=False)[1].chars
    return head_out + messages[end:]


def clear_caches() -> None:
    """Forget every remembered key and compacted head (for measurements; results never depend on them)."""
    global _head_cache_chars
    _key_cache.clear()
    with _head_lock:
        _head_cache.clear()
        _head_cache_chars = 0
