"""Repeated calls: which of the completed calls repeat an older one, which stay whole.

An agent that calls the same tool with the same arguments again is telling us it needs
that result: the growing schedule widens an epoch that holds a repeat
(:func:`~langchain_promptstrat.strategies.epoch_machinery.boundary.increment_schedule`),
and the newest occurrence of a repeated call stays whole (:func:`protected_calls`). The
completed calls, oldest output first, with their forward positions and repeat keys, are
the tool-call index's (:attr:`~langchain_promptstrat.messages.ToolIndex.completed`).

Must not decide fates (``decisions`` does).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_promptstrat.messages import ToolCallRecord

__all__ = ["protected_calls", "repeat_positions"]


def repeat_positions(calls: Sequence[ToolCallRecord]) -> list[int]:
    """Return the forward position of every occurrence of a key after its first, ascending."""
    seen: set[str] = set()
    positions: list[int] = []
    for call in calls:
        if call.key in seen:
            positions.append(call.forward)
        else:
            seen.add(call.key)
    return positions


def protected_calls(calls: Sequence[ToolCallRecord]) -> frozenset[int]:
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
