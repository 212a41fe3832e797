"""Repeated calls: the completed calls with their forward positions and repeat keys, which of them repeat, which stay whole.

An agent that calls the same tool with the same arguments again is telling us it needs
that result: the growing schedule widens an epoch that holds a repeat
(:func:`~langchain_promptstrat.strategies.epoch_machinery.boundary.increment_schedule`),
and the newest occurrence of a repeated call stays whole (:func:`protected_calls`).

Must not decide fates (``decisions`` does) nor keep a cache of its own (the repeat key of
each arguments object is remembered in ``caches``).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from langchain_promptstrat.messages import CompletedCall, ToolIndex
from langchain_promptstrat.strategies.epoch_machinery.caches import _repeat_key

__all__ = ["CompletedCall", "completed_calls", "protected_calls", "repeat_positions"]


_FORWARD = operator.itemgetter(1)


def completed_calls(index: ToolIndex) -> list[CompletedCall]:
    """Return the completed calls of ``index``, oldest output first."""
    total = index.total_outputs
    out = [
        CompletedCall(number, total - record.position + 1, _repeat_key(record))
        for number, record in enumerate(index.calls)
        if record.position is not None
    ]
    out.sort(key=_FORWARD)  # outputs may answer a step's calls in any order
    return out


def repeat_positions(calls: Sequence[CompletedCall]) -> list[int]:
    """Return the forward position of every occurrence of a key after its first, ascending."""
    seen: set[str] = set()
    positions: list[int] = []
    for call in calls:
        if call.key in seen:
            positions.append(call.forward)
        else:
            seen.add(call.key)
    return positions


def protected_calls(calls: Sequence[CompletedCall]) -> frozenset[int]:
    """Return the numbers of the calls that stay whole: the newest occurrence of each repeated key.

    An agent that calls the same tool with the same arguments again is telling us it needs
    that result; keeping its newest occurrence whole stops it from asking a third time.
    """
    newest: dict[str, int] = {}
    count: dict[str, int] = {}
    for call in calls:
        newest[call.key] = call.number
        count[call.key] = count.get(call.key, 0) + 1
    return frozenset(newest[k] for k, n in count.items() if n >= 2)
