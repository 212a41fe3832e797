"""The rung protocol: a rung's plan is a generator that yields requests (model calls) and ends with a :class:`Rewrite`.

One plan serves the sync and the async path: :func:`run_plan` answers its requests
synchronously, :func:`arun_plan` with ``await``; :func:`done` is the plan of a rung that
needs nothing from outside.

Must not know any rung, ladder or model: it only drives generators.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, NamedTuple, Protocol, TypeVar

from langchain_core.messages import BaseMessage

__all__ = ["Plan", "Rewrite", "RungRequest", "arun_plan", "done", "run_plan"]


class Rewrite(NamedTuple):
    """A rung's answer: the rewritten messages (None when it declines) and what it did."""

    messages: list[BaseMessage] | None
    details: dict[str, Any]


class RungRequest(Protocol):
    """Something a rung needs answered from outside (a model call), sync or async.

    A rung's plan yields requests and receives their answers, so one plan serves the sync
    and the async path. ``ask`` and ``aask`` return the answer or the exception raised,
    never raise.
    """

    def ask(self) -> Any: ...

    async def aask(self) -> Any: ...


Plan = Generator[RungRequest, Any, Rewrite]
_Outcome = TypeVar("_Outcome")  # a rung's plan ends with a Rewrite, a ladder's with a Compacted


def run_plan(plan: Generator[RungRequest, Any, _Outcome]) -> _Outcome:
    """Return the outcome of ``plan``, answering its requests synchronously."""
    try:
        request = next(plan)
        while True:
            request = plan.send(request.ask())
    except StopIteration as stop:
        outcome: _Outcome = stop.value
        return outcome


async def arun_plan(plan: Generator[RungRequest, Any, _Outcome]) -> _Outcome:
    """Return the outcome of ``plan``, answering its requests with ``await``."""
    try:
        request = next(plan)
        while True:
            request = plan.send(await request.aask())
    except StopIteration as stop:
        outcome: _Outcome = stop.value
        return outcome


def done(outcome: Rewrite) -> Plan:
    """Return a plan that needs nothing from outside and ends with ``outcome``."""
    return outcome
    yield  # a generator: rungs without model calls share the model-calling rungs' protocol
