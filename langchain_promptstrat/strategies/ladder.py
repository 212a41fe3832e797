"""CompactionLadder: token-target rungs run cheapest first, with a low watermark for the cache.

A ladder holds rungs, cheapest first (the reference's ladder is ``tool_results``,
``sliding_window``, ``summary``), and a target, ``max_tokens``. While the prompt counts more
tokens than the target, the next rung is asked for a rewrite; a rung may decline, and what
it answers is taken only when it counts fewer tokens than before (otherwise the same size
would be written back for ever). Each rung taken is reported as ``{strategy, before,
after}``. A target no rung can reach leaves the smallest valid prompt reached, with ``met:
False`` in the report; each rung is asked at most once per pass, so the ladder never loops.

Recomputing that from the full history on every call (``low_tokens == max_tokens``, the
reference's behaviour) moves the cut by a message or two per call, so the provider's prompt
cache misses everything after it. With a low watermark (``low_tokens``, by default
``ladder_low_ratio`` = 70% of ``max_tokens``) the prompt is instead defined by replaying the
history's own model calls::

    prompt(first call) = the history so far
    prompt(next call)  = prompt(previous call) + the messages added since,
                         unless that counts more than max_tokens: then the rungs run on it
                         with low_tokens as their target (a *compaction event*)

The model calls of an agent run are read off the history (:func:`call_points`: after a
step's last output, after a user message), so the prompt is a pure function of the history:
two processes, a restart or a resumed thread compute the same prompt (with ``summary``,
provided the model answers the same), and nothing is stored. Between two events each
prompt starts with the previous one, message for message. After an event that reached
``low_tokens`` the next one comes only once the history has grown by more than
``max_tokens - low_tokens``, so events are rare. ``max_tokens`` stays a hard ceiling: a
prompt above it is always compacted, unless it is already at the rungs' floor.

The replay costs one pass over the history plus one ladder pass per past event, each on a
prompt of about ``max_tokens``. A small per-ladder memo of recent replays (keyed by the
identity of the message objects, which the package treats as immutable) lets a growing
conversation resume where the previous call stopped; it never changes a result.
"""

from __future__ import annotations

import operator
import os
import threading
from abc import abstractmethod
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, NoReturn, Protocol, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForChainRun
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from langchain_promptstrat.strategy import PromptStrategy, emit_report
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.messages import coerce_messages, mark_of
from langchain_promptstrat.registry import get_strategy  # rungs may be given by registry key
from langchain_promptstrat.report import Compacted, StrategyReport, make_report
from langchain_promptstrat.settings import Settings, settings_with_options
from langchain_promptstrat.tokens import TokenCounter, as_token_counter

__all__ = [
    "NOTE_KIND",
    "PLACEHOLDER_KIND",
    "SUMMARY_KIND",
    "CompactionLadder",
    "CountTokens",
    "LadderPass",
    "Plan",
    "Rewrite",
    "Rung",
    "RungRequest",
    "arun_plan",
    "call_points",
    "done",
    "kind_of",
    "ladder_pass",
    "list_overhead",
    "message_counter",
    "represented",
    "run_plan",
    "tally",
]

NOTE_KIND = "ladder_note"
"""``kind`` of the mark on the note that stands where the sliding window dropped messages."""
PLACEHOLDER_KIND = "ladder_placeholder"
"""``kind`` of the mark on a tool output that ``tool_results`` replaced by a placeholder."""
SUMMARY_KIND = "summary"
"""``kind`` of the mark on a message written by ``summary``."""

CountTokens = Callable[[Sequence[BaseMessage]], int]


# --------------------------------------------------------------------------- shared vocabulary


def kind_of(message: BaseMessage) -> str | None:
    """Return the ``kind`` of this package's mark on ``message``, or None for an unmarked message."""
    m = mark_of(message)
    return m.get("kind") if m else None


def represented(message: BaseMessage) -> int:
    """Return how many original messages ``message`` stands for: a note or summary counts what it replaced."""
    m = mark_of(message)
    if m and m.get("kind") == NOTE_KIND:
        return int(m.get("dropped", 1))
    if m and m.get("kind") == SUMMARY_KIND:
        return int(m.get("messages", 1))
    return 1


class _Tally:
    """A :class:`TokenCounter` that remembers each message object's count for one call.

    A ladder pass counts the same messages several times (before and after each rung);
    the counter's own cache still has to work out what each message sends, this one is a
    dictionary lookup. It holds the messages it counted, so an ``id`` is never reused
    while it lives.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._seen: dict[int, tuple[BaseMessage, int]] = {}

    def count_message(self, message: BaseMessage) -> int:
        hit = self._seen.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        tokens = self.counter.count_message(message)
        self._seen[id(message)] = (message, tokens)
        return tokens

    def __call__(self, messages: Sequence[BaseMessage], /) -> int:
        return sum(map(self.count_message, messages))


def tally(counter: CountTokens) -> CountTokens:
    """Return ``counter`` remembering per-message counts for one call when it is a sum of messages."""
    return _Tally(counter) if isinstance(counter, TokenCounter) else counter


def list_overhead(counter: CountTokens) -> int:
    """Return what ``counter`` counts for an empty list (0 for a :class:`TokenCounter`)."""
    return 0 if isinstance(counter, (TokenCounter, _Tally)) else counter([])


def message_counter(counter: CountTokens) -> Callable[[BaseMessage], int]:
    """Return a function giving one message's share of ``counter``'s count of a list.

    Rungs decide with these shares (prefix sums over thousands of messages); the ladder
    checks every decision with ``counter`` itself. A :class:`TokenCounter` is exactly the
    sum of its messages; another counter is taken as a fixed list overhead (its count of
    an empty list) plus per-message counts.
    """
    if isinstance(counter, (TokenCounter, _Tally)):
        return counter.count_message
    base = counter([])

    def count_one(message: BaseMessage) -> int:
        return counter([message]) - base

    return count_one


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


# --------------------------------------------------------------------------- a rung


class Rung(PromptStrategy):
    """Base of the token-target rungs: a plan toward a target, usable alone or in a ladder.

    On its own, a rung aims at ``max_tokens`` (default: the ``ladder_max_tokens`` setting)
    with its own ``token_counter`` (default: one shared cl100k_base :class:`TokenCounter`),
    acts only while over target, and its rewrite is kept only when it counts fewer tokens.
    Inside a :class:`CompactionLadder` the ladder's target and counter are used instead.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        max_tokens: int | None = None,
        token_counter: Any = None,
        **setting_overrides: Any,
    ) -> None:
        super().__init__(settings, ladder_max_tokens=max_tokens, **setting_overrides)
        self.token_counter: CountTokens = as_token_counter(token_counter)

    @property
    def max_tokens(self) -> int:
        """Return the target this rung aims at when used on its own."""
        return self.settings.ladder_max_tokens

    @abstractmethod
    def plan(self, messages: Sequence[BaseMessage], *, target: int, counter: CountTokens) -> Plan:
        """Return a plan (a generator) that ends with this rung's :class:`Rewrite` of ``messages``."""

    def rewrite(self, messages: Sequence[BaseMessage], *, target: int | None = None, counter: Any = None) -> list[BaseMessage] | None:
        """Return this rung's rewrite of ``messages`` toward ``target``, or None when it declines."""
        return run_plan(self._plan_for(messages, target, counter)).messages

    async def arewrite(self, messages: Sequence[BaseMessage], *, target: int | None = None, counter: Any = None) -> list[BaseMessage] | None:
        """Return :meth:`rewrite` of ``messages``, awaiting any model call."""
        return (await arun_plan(self._plan_for(messages, target, counter))).messages

    def _plan_for(self, messages: Sequence[BaseMessage], target: int | None, counter: Any) -> Plan:
        count = tally(self.token_counter if counter is None else as_token_counter(counter))
        return self.plan(list(messages), target=self.max_tokens if target is None else target, counter=count)

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return ``messages`` with this rung applied once toward ``max_tokens``, and a report."""
        return run_plan(self._single(messages))

    async def acompact(self, messages: list[BaseMessage]) -> Compacted:
        """Return :meth:`compact` of ``messages``, awaiting any model call."""
        return await arun_plan(self._single(messages))

    def _single(self, messages: list[BaseMessage]) -> Generator[RungRequest, Any, Compacted]:
        done_pass = yield from ladder_pass(messages, [self], target=self.max_tokens, counter=tally(self.token_counter))
        return Compacted(done_pass.messages, _pass_report(self.strategy_name, messages, done_pass, self.max_tokens))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> list[BaseMessage]:
        """Return the transformed messages, awaiting any model call (no thread hop)."""
        return await self._acall_with_config(self._ainvoke, input, config, run_type="prompt")

    async def _ainvoke(self, input: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig) -> list[BaseMessage]:
        result = await self.acompact(coerce_messages(input))
        emit_report(result, config)
        return result.messages


# --------------------------------------------------------------------------- one pass


@dataclass
class LadderPass:
    """The outcome of one pass of the rungs: the prompt, its count and what each rung did."""

    messages: list[BaseMessage]
    tokens_before: int
    tokens: int
    taken: list[dict[str, Any]] = field(default_factory=list)
    """``{strategy, before, after}`` for each rung whose rewrite was taken, in order."""
    asked: list[dict[str, Any]] = field(default_factory=list)
    """Every rung asked: ``{strategy, outcome, ...details}``; outcome taken, declined or not_smaller."""


def ladder_pass(
    messages: Sequence[BaseMessage], rungs: Sequence[Rung], *, target: int, counter: CountTokens
) -> Generator[RungRequest, Any, LadderPass]:
    """Run ``rungs`` in order on ``messages`` while over ``target``; return the :class:`LadderPass`.

    A rung's rewrite is taken only when it counts fewer tokens than the prompt it was
    given; each rung is asked at most once, so the pass ends after ``len(rungs)`` steps.
    """
    current = list(messages)
    tokens = before = counter(current)
    result = LadderPass(current, before, tokens)
    for rung in rungs:
        if tokens <= target:
            break
        outcome = yield from rung.plan(current, target=target, counter=counter)
        entry = {"strategy": rung.strategy_name, **outcome.details}
        if outcome.messages is None:
            result.asked.append({**entry, "outcome": "declined"})
            continue
        after = counter(outcome.messages)
        if after >= tokens:
            result.asked.append({**entry, "outcome": "not_smaller", "before": tokens, "after": after})
            continue
        result.asked.append({**entry, "outcome": "taken", "before": tokens, "after": after})
        result.taken.append({"strategy": rung.strategy_name, "before": tokens, "after": after})
        current, tokens = outcome.messages, after
    result.messages, result.tokens = current, tokens
    return result


def _pass_report(name: str, messages: Sequence[BaseMessage], done_pass: LadderPass, target: int, **extra: Any) -> StrategyReport:
    return make_report(
        name, messages, done_pass.messages,
        **_counts(done_pass),
        target=target,
        tokens_before=done_pass.tokens_before,
        tokens_after=done_pass.tokens,
        met=done_pass.tokens <= target,
        rungs=done_pass.taken,
        asked=done_pass.asked,
        **extra,
    )


def _counts(done_pass: LadderPass | None) -> dict[str, int]:
    """Return the report's ``shortened`` (outputs cleared) and ``dropped`` (messages dropped) of a pass."""
    taken = [a for a in (done_pass.asked if done_pass else []) if a["outcome"] == "taken"]
    return {
        "shortened": sum(a.get("replaced", 0) for a in taken),
        "dropped": sum(a.get("dropped", 0) for a in taken),
    }


# --------------------------------------------------------------------------- the watermark


def call_points(messages: Sequence[BaseMessage]) -> list[int]:
    """Return the history lengths at which an agent loop calls the model, oldest first.

    A prompt never ends between a call and its outputs, nor with the assistant's own
    message; the full history is always a call point. Every prefix of a history has the
    same call points up to its length, which is what makes the replay a function of the
    history alone.
    """
    n = len(messages)
    points = [
        e for e in range(1, n)
        if not isinstance(messages[e], ToolMessage) and not isinstance(messages[e - 1], AIMessage)
    ]
    if n:
        points.append(n)
    return points


@dataclass(frozen=True)
class _Replay:
    """Where a replay stands after the call point ``len(history)``: the prompt built so far and its counts."""

    history: tuple[BaseMessage, ...]
    prompt: tuple[BaseMessage, ...]
    tokens: int
    history_tokens: int
    events: int
    last_event: int | None
    last_pass: LadderPass | None
    """The pass of an event at the history's own length (None when that call did not compact)."""


# --------------------------------------------------------------------------- the ladder


class CompactionLadder(PromptStrategy):
    """A token budget: rungs run cheapest first while over ``max_tokens``, with a low watermark.

    ``CompactionLadder([ToolResults(), SlidingWindow(), Summary(model)], max_tokens=120_000)``.
    Rungs may also be given by registry name (``["tool_results", "sliding_window"]`` or
    ``"tool_results,sliding_window"``). ``low_tokens`` (default ``ladder_low_ratio`` x
    ``max_tokens``) is what an over-target prompt is compacted down to; ``low_tokens ==
    max_tokens`` turns the watermark off and gives the reference's one-shot ladder, recomputed
    from the full history on every call. ``token_counter``: None (cl100k_base), a
    :class:`TokenCounter`, a chat model or any ``messages -> int`` callable; the rungs use the
    ladder's target and counter, not their own.

    The report adds ``target``, ``low_tokens``, ``tokens_before`` (the full history),
    ``tokens_after``, ``met``, ``rungs`` (``{strategy, before, after}`` of the rungs taken at
    this call), ``asked``, and with the watermark ``event`` (this call compacted),
    ``events`` (compaction events in the history so far) and ``last_event`` (the history
    length at the latest one).
    """

    strategy_name = "ladder"
    memo_size = 8
    """Replays remembered per ladder, to resume a growing conversation (never changes a result)."""

    def __init__(
        self,
        rungs: Sequence[Rung | str] | str,
        /,
        *,
        max_tokens: int,
        low_tokens: int | None = None,
        token_counter: Any = None,
        settings: Settings | None = None,
        **unknown: NoReturn,
    ) -> None:
        """Build the ladder.

        Args:
            rungs: The rungs, cheapest first: ``Rung`` objects, registry names, or one
                comma-separated string of names (named rungs are built with ``settings``).
            max_tokens: The token target; once a prompt crosses it, it is compacted down to
                ``low_tokens``.
            low_tokens: What an over-target prompt is compacted down to; equal to
                ``max_tokens`` turns the watermark off. Default: setting
                ``ladder_low_ratio`` (0.7) x ``max_tokens``.
            token_counter: None (cl100k_base), a ``TokenCounter``, a chat model or any
                ``messages -> int`` callable; the rungs count with it too.
            settings: Thresholds shared with other strategies (default: read from the
                environment now), used for ``ladder_low_ratio`` and the rungs given by name.

        Raises:
            ConfigError: A value is out of range, no rung, or a keyword that is not one of
                these options.
        """
        super().__init__(settings_with_options(type(self), settings, {}, unknown, reads=("ladder_low_ratio",)))
        self.rungs: list[Rung] = _resolve_rungs(rungs, self.settings)
        self.max_tokens = _tokens_argument("max_tokens", max_tokens)
        ratio = self.settings.ladder_low_ratio
        if ratio > 1:
            raise ConfigError(
                f"ladder_low_ratio={ratio!r} must be <= 1 (settings key ladder_low_ratio, "
                "environment variable LADDER_LOW_RATIO); 1 turns the watermark off"
            )
        low = int(self.max_tokens * ratio) if low_tokens is None else _tokens_argument("low_tokens", low_tokens)
        if low > self.max_tokens:
            raise ConfigError(f"low_tokens={low} must be <= max_tokens={self.max_tokens}; equal turns the watermark off")
        self.low_tokens = low
        self.token_counter: CountTokens = as_token_counter(token_counter)
        self._memo: list[_Replay] = []
        self._memo_lock = threading.Lock()

    @property
    def watermark(self) -> bool:
        """Return whether compaction is held still between events (``low_tokens < max_tokens``)."""
        return self.low_tokens < self.max_tokens

    def __repr__(self) -> str:
        names = ", ".join(r.strategy_name for r in self.rungs)
        return f"CompactionLadder([{names}], max_tokens={self.max_tokens}, low_tokens={self.low_tokens})"

    # ---- the rule --------------------------------------------------------------------

    def _run(self, messages: list[BaseMessage]) -> Generator[RungRequest, Any, Compacted]:
        counter = tally(self.token_counter)
        if not self.watermark:
            done_pass = yield from ladder_pass(messages, self.rungs, target=self.max_tokens, counter=counter)
            report = _pass_report(self.strategy_name, messages, done_pass, self.max_tokens, low_tokens=self.low_tokens, watermark=False)
            return Compacted(done_pass.messages, report)

        count_one = message_counter(counter)
        base = list_overhead(counter)
        start = self._recall(messages)
        if start is None:
            start = _Replay((), (), base, base, 0, None, None)
        prompt, tokens, history_tokens = list(start.prompt), start.tokens, start.history_tokens
        events, last_event, done_length, last_pass = start.events, start.last_event, len(start.history), start.last_pass
        for point in call_points(messages):
            if point <= done_length:
                continue
            added = messages[done_length:point]
            prompt.extend(added)
            grown = sum(count_one(m) for m in added)
            tokens += grown
            history_tokens += grown
            done_length = point
            last_pass = None
            if tokens > self.max_tokens:
                last_pass = yield from ladder_pass(prompt, self.rungs, target=self.low_tokens, counter=counter)
                prompt, tokens = list(last_pass.messages), last_pass.tokens
                events, last_event = events + 1, point
        self._remember(_Replay(tuple(messages), tuple(prompt), tokens, history_tokens, events, last_event, last_pass))

        if not isinstance(counter, _Tally):  # the replay added per-message shares; report the counter's own figures
            history_tokens, tokens = counter(messages), counter(prompt)
        report = make_report(
            self.strategy_name, messages, prompt,
            **_counts(last_pass),
            target=self.max_tokens,
            low_tokens=self.low_tokens,
            tokens_before=history_tokens,
            tokens_after=tokens,
            met=tokens <= self.max_tokens,
            rungs=last_pass.taken if last_pass else [],
            asked=last_pass.asked if last_pass else [],
            watermark=True,
            event=last_pass is not None,
            events=events,
            last_event=last_event,
        )
        return Compacted(prompt, report)

    def _recall(self, messages: Sequence[BaseMessage]) -> _Replay | None:
        """Return the remembered replay of the longest prefix of ``messages`` that is one of its call points."""
        points = None
        with self._memo_lock:
            memo = list(self._memo)
        best: _Replay | None = None
        for replay in memo:
            length = len(replay.history)
            if length > len(messages) or (best is not None and length <= len(best.history)):
                continue
            if points is None:
                points = set(call_points(messages))
            if length in points and all(map(operator.is_, replay.history, messages)):
                best = replay
        return best

    def _remember(self, replay: _Replay) -> None:
        with self._memo_lock:
            self._memo = [*self._memo[-(self.memo_size - 1):], replay]

    def forget(self) -> None:
        """Drop the remembered replays (results do not change; the next call replays from scratch)."""
        with self._memo_lock:
            self._memo = []

    # ---- PromptStrategy --------------------------------------------------------------

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return the prompt for ``messages`` under the budget, and the report."""
        return run_plan(self._run(list(messages)))

    async def acompact(self, messages: list[BaseMessage]) -> Compacted:
        """Return :meth:`compact` of ``messages``, awaiting any model call."""
        return await arun_plan(self._run(list(messages)))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> list[BaseMessage]:
        """Return the transformed messages, awaiting any model call (no thread hop)."""
        return await self._acall_with_config(self._ainvoke, input, config, run_type="prompt")

    async def _ainvoke(self, input: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig) -> list[BaseMessage]:
        result = await self.acompact(coerce_messages(input))
        emit_report(result, config)
        return result.messages


def _tokens_argument(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name}={value!r} must be a whole number of tokens >= 0")
    return value


def _resolve_rungs(rungs: Sequence[Rung | str] | str, settings: Settings) -> list[Rung]:
    items: list[Any] = [p.strip() for p in rungs.split(",") if p.strip()] if isinstance(rungs, str) else list(rungs)
    resolved: list[Rung] = []
    for item in items:
        rung = get_strategy(item, settings) if isinstance(item, str) else item
        if not isinstance(rung, Rung):
            raise ConfigError(
                f"{item!r} cannot be a ladder rung: a rung aims at a token target "
                "(tool_results, sliding_window, summary, or a subclass of langchain_promptstrat.strategies.ladder.Rung)"
            )
        resolved.append(rung)
    if not resolved:
        raise ConfigError("a CompactionLadder needs at least one rung, e.g. [ToolResults(), SlidingWindow()]")
    return resolved
