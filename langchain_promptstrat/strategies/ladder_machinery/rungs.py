"""What the token-target rungs share: their marks, the call numbers their placeholders and notes
give for ``read_back`` (:func:`call_span`), the plan protocol (a plan yields model requests and
ends with a :class:`Rewrite`, run sync or async), the :class:`Rung` base, and one pass of the
rungs toward a target (:func:`ladder_pass`), which the ladder and the default's ceiling fallback
run.
"""

from __future__ import annotations

import inspect
from abc import abstractmethod
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForChainRun
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_promptstrat.ceiling import resolve_ceiling
from langchain_promptstrat.errors import ConfigError, warn_renamed
from langchain_promptstrat.messages import (
    READ_BACK_TOOL,
    CountTokens,
    ToolIndex,
    coerce_messages,
    mark_of,
    range_text,
    recorded_calls,
)
from langchain_promptstrat.options import RungOptions
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.strategy import (
    NO_REQUEST,
    PromptRequest,
    PromptStrategy,
    argument,
    emit_report,
)
from langchain_promptstrat.tokens import as_token_counter

NOTE_KIND = "ladder_note"
"""``kind`` of the mark on the note that stands where the sliding window dropped messages."""
PLACEHOLDER_KIND = "ladder_placeholder"
"""``kind`` of the mark on a tool output that ``tool_results`` replaced by a placeholder."""
SUMMARY_KIND = "summary"
"""``kind`` of the mark on a message written by ``summary``."""


def kind_of(message: BaseMessage) -> str | None:
    """Return the ``kind`` of this package's mark on ``message``, or None for an unmarked
    message."""
    m = mark_of(message)
    return m.get("kind") if m else None


def represented(message: BaseMessage) -> int:
    """Return how many original messages ``message`` stands for: a note or summary counts what it
    replaced."""
    m = mark_of(message) or {}
    if m.get("kind") == NOTE_KIND:
        return int(m.get("dropped", 1))
    if m.get("kind") == SUMMARY_KIND:
        return int(m.get("messages", 1))
    return 1


def call_span(
    message: BaseMessage, last: int, recorded: int | None = None
) -> tuple[int, int] | None:
    """Return the first and last number of the calls ``message`` records or stands for, or None.

    The numbers are those of the stored conversation, as ``read_back`` counts them (1 = first),
    ``last`` the number of the last call before ``message``. A rung may be given a list an
    earlier rung compacted, where a note or summary stands for the calls it replaced (its mark's
    ``calls``), so every call after it keeps its number. ``recorded``: how many calls
    ``message`` records, when the caller knows it (a :class:`ToolIndex`'s ``calls_per_ai``).
    """
    if isinstance(message, AIMessage):
        recorded = len(recorded_calls(message)) if recorded is None else recorded
        return (last + 1, last + recorded) if recorded else None
    if not isinstance(message, HumanMessage) or kind_of(message) not in (NOTE_KIND, SUMMARY_KIND):
        return None
    replaced = (mark_of(message) or {}).get("calls")
    return (replaced[0], replaced[1]) if replaced else None


def call_spans(
    messages: Sequence[BaseMessage], index: ToolIndex | None = None
) -> list[tuple[int, int] | None]:
    """Return :func:`call_span` of each of ``messages``, each after the calls of those before it.

    ``index``, the list's :class:`ToolIndex` when the caller has one, saves reading the calls
    of each message again.
    """
    spans: list[tuple[int, int] | None] = []
    last = 0
    for i, message in enumerate(messages):
        recorded = None if index is None else len(index.calls_per_ai.get(i, ()))
        span = call_span(message, last, recorded)
        spans.append(span)
        last = max(last, span[1]) if span else last
    return spans


def calls_among(
    spans: Sequence[tuple[int, int] | None], indices: Iterable[int]
) -> list[int] | None:
    """Return ``[first, last]``, the calls the messages at ``indices`` record or stand for, or None.

    ``spans`` is :func:`call_spans` of the messages.
    """
    found = [span for span in map(spans.__getitem__, indices) if span is not None]
    return [min(first for first, _ in found), max(last for _, last in found)] if found else None


def read_back_range(calls: Sequence[int]) -> str:
    """Return how a note or summary names its calls ``[first, last]`` and the tool reading them."""
    how = f"{READ_BACK_TOOL}(call=N) gives the whole output of call N"
    return f"{range_text(calls[0], calls[1])} among them: {how}"


# --------------------------------------------------------------------------- the plan protocol


class Rewrite(NamedTuple):
    """A rung's answer: the rewritten messages (None when it declines) and what it did."""

    messages: list[BaseMessage] | None
    details: dict[str, Any]


class RungRequest(Protocol):
    """Something a rung's plan needs answered from outside (a model call); ``ask``/``aask`` return
    the answer or the exception, never raise."""

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


# --------------------------------------------------------------------------- rungs and one pass


class PlannedStrategy(PromptStrategy):
    """A strategy whose work is a plan that may call a chat model: ``compact`` answers it
    synchronously, ``ainvoke`` awaits it."""

    @abstractmethod
    def _compaction(
        self, messages: list[BaseMessage]
    ) -> Generator[RungRequest, Any, Compacted]: ...

    def apply(self, messages: list[BaseMessage], request: PromptRequest = NO_REQUEST) -> Compacted:
        """Return the prompt for ``messages`` and the report."""
        return run_plan(self._compaction(list(messages)))

    async def acompact(self, messages: list[BaseMessage]) -> Compacted:
        """Return :meth:`compact` of ``messages``, awaiting any model call (no thread hop)."""
        return await arun_plan(self._compaction(list(messages)))

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Return the transformed messages, awaiting any model call (no thread hop)."""
        return await self._acall_with_config(self._ainvoke, input, config, run_type="prompt")

    async def _ainvoke(
        self, input: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig
    ) -> list[BaseMessage]:
        result = await self.acompact(coerce_messages(input))
        emit_report(result, config)
        return result.messages


RUNG_MAX_TOKENS = 100_000
"""The target of a rung used on its own when neither its ``max_tokens`` nor the setting gives
one."""


def tokens_argument(name: str, value: Any) -> int:
    """Return ``value``, a number of tokens >= 0, or raise :class:`ConfigError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name}={value!r} must be a whole number of tokens >= 0")
    return value


class Rung(PlannedStrategy, RungOptions):
    """Base of the token-target rungs: a plan toward a target, usable alone (``max_tokens``, its
    ``token_counter``) or in a ladder (the ladder's)."""

    max_tokens: int = argument(
        default=None,
        doc="The token target when the rung is used on its own (0: rewrite all it may). Default: "
        "the ``max_tokens`` setting (``PROMPTSTRAT_MAX_TOKENS``), else 100,000; a ladder gives "
        "its own.",
    )
    token_counter: Any = argument(
        default=None,
        doc="None (cl100k_base), a ``TokenCounter``, a chat model or any ``messages -> int`` "
        "callable (a ladder uses its own).",
    )

    def __post_init__(self) -> None:
        given, setting = self.max_tokens, self.settings.max_tokens
        if given is not None:
            self.max_tokens = tokens_argument("max_tokens", given)
        elif setting is not None:
            self.max_tokens = resolve_ceiling(setting, settings=self.settings).tokens
        else:
            self.max_tokens = RUNG_MAX_TOKENS
        self.token_counter = as_token_counter(self.token_counter)

    @abstractmethod
    def plan(
        self, messages: Sequence[BaseMessage], *, max_tokens: int, counter: CountTokens
    ) -> Plan:
        """Return a plan (a generator) that ends with this rung's :class:`Rewrite` of
        ``messages``."""

    def rewrite(
        self,
        messages: Sequence[BaseMessage],
        *,
        max_tokens: int | None = None,
        counter: Any = None,
        target: int | None = None,
    ) -> list[BaseMessage] | None:
        """Return this rung's rewrite of ``messages`` toward ``max_tokens`` (default this rung's),
        or None when it declines; ``target`` is its old spelling (deprecated)."""
        if target is not None:
            warn_renamed("rewrite(target=)", "rewrite(max_tokens=)")
            max_tokens = target if max_tokens is None else max_tokens
        count = self.token_counter if counter is None else as_token_counter(counter)
        tokens = self.max_tokens if max_tokens is None else max_tokens
        return run_plan(rung_plan(self, list(messages), tokens, count)).messages

    def _compaction(self, messages: list[BaseMessage]) -> Generator[RungRequest, Any, Compacted]:
        done_pass = yield from ladder_pass(
            messages, [self], target=self.max_tokens, counter=self.token_counter
        )
        return pass_result(self.strategy_name, messages, done_pass, self.max_tokens)


def rung_plan(
    rung: Rung, messages: Sequence[BaseMessage], max_tokens: int, counter: CountTokens
) -> Plan:
    """Return ``rung``'s plan toward ``max_tokens``; a rung written against ``plan(messages, *,
    target, counter)`` is given ``target`` (deprecated, one release)."""
    if "target" in inspect.signature(rung.plan).parameters:
        warn_renamed(f"{type(rung).__name__}.plan(target=)", "plan(max_tokens=)")
        old: Any = rung.plan
        plan: Plan = old(messages, target=max_tokens, counter=counter)
        return plan
    return rung.plan(messages, max_tokens=max_tokens, counter=counter)


@dataclass
class LadderPass:
    """The outcome of one pass of the rungs: the prompt, its count, the rungs taken (``{strategy,
    before, after}``) and every rung asked."""

    messages: list[BaseMessage]
    tokens_before: int
    tokens: int
    taken: list[dict[str, Any]] = field(default_factory=list)
    asked: list[dict[str, Any]] = field(default_factory=list)
    """``{strategy, outcome, ...details}``; outcome taken, declined or not_smaller."""


def ladder_pass(
    messages: Sequence[BaseMessage], rungs: Sequence[Rung], *, target: int, counter: CountTokens
) -> Generator[RungRequest, Any, LadderPass]:
    """Return the :class:`LadderPass` of ``rungs`` asked in order, each once, while over ``target``;
    a rewrite is taken only when it counts fewer tokens."""
    current = list(messages)
    tokens = before = counter(current)
    result = LadderPass(current, before, tokens)
    for rung in rungs:
        if tokens <= target:
            break
        outcome = yield from rung_plan(rung, current, target, counter)
        entry = {"strategy": rung.strategy_name, **outcome.details}
        if outcome.messages is None:
            result.asked.append({**entry, "outcome": "declined"})
            continue
        after = counter(outcome.messages)
        if after >= tokens:
            result.asked.append(
                {**entry, "outcome": "not_smaller", "before": tokens, "after": after}
            )
            continue
        result.asked.append({**entry, "outcome": "taken", "before": tokens, "after": after})
        result.taken.append({"strategy": rung.strategy_name, "before": tokens, "after": after})
        current, tokens = outcome.messages, after
    result.messages, result.tokens = current, tokens
    return result


def ladder_result(
    name: str,
    messages: Sequence[BaseMessage],
    prompt: list[BaseMessage],
    done_pass: LadderPass | None,
    **figures: Any,
) -> Compacted:
    """Return ``prompt`` with the report of a ladder or a rung, ``figures`` added.

    ``shortened`` (outputs cleared) and ``dropped`` (messages dropped) sum the pass's taken rungs.
    """
    asked = done_pass.asked if done_pass else []
    taken = [a for a in asked if a["outcome"] == "taken"]
    return Compacted(
        prompt,
        make_report(
            name,
            messages,
            prompt,
            shortened=sum(a.get("replaced", 0) for a in taken),
            dropped=sum(a.get("dropped", 0) for a in taken),
            rungs=done_pass.taken if done_pass else [],
            asked=asked,
            **figures,
        ),
    )


def pass_result(
    name: str, messages: Sequence[BaseMessage], done_pass: LadderPass, target: int, **figures: Any
) -> Compacted:
    """Return :func:`_compacted` of one pass over the whole of ``messages`` toward ``target``."""
    tokens = done_pass.tokens
    return ladder_result(
        name,
        messages,
        done_pass.messages,
        done_pass,
        target=target,
        tokens_before=done_pass.tokens_before,
        tokens_after=tokens,
        met=tokens <= target,
        **figures,
    )
