"""CompactionLadder: token-target rungs run cheapest first, with a low watermark; and what its rungs
share.

While the prompt counts more than ``max_tokens``, the next rung (``tool_results``,
``sliding_window``, ``summary``) is asked once for a rewrite, taken only when it counts fewer
tokens (:func:`ladder_pass`); a target no rung reaches leaves the smallest prompt reached
with ``met: False``. With a low watermark (``low_tokens``, default 70% of ``max_tokens``) the
history's own model calls are replayed, so the cut holds still between compaction events
and the provider's prefix cache hits::

    prompt(first call) = the history so far
    prompt(next call)  = prompt(previous call) + the messages added since,
                         unless that counts more than max_tokens: then the rungs run on it
                         with low_tokens as their target (a *compaction event*)

The replay resumes from the replay engine's memo (``messages/history_memo``). The rungs share
this module's marks, the numbers their placeholders and notes give the calls for ``read_back``
(:func:`call_span`), the plan protocol (a plan yields model requests and ends with a
:class:`Rewrite`, run sync or async) and the :class:`Rung` base.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from abc import abstractmethod
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, NamedTuple, NoReturn, Protocol, TypedDict, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForChainRun
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from typing_extensions import Self, Unpack

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.messages import (
    READ_BACK_TOOL,
    CountTokens,
    ToolIndex,
    coerce_messages,
    mark_of,
    message_chars,
    range_text,
    recorded_calls,
)
from langchain_promptstrat.messages.history_memo import (
    EMPTY_HISTORY,
    HistoryKey,
    ReplayMemo,
    call_points,
    history_key,
)
from langchain_promptstrat.registry import (
    get_strategy,
    split_strategy_names,
)  # rungs may be given by registry key
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import SettingKey, Settings, settings_with_options
from langchain_promptstrat.strategy import PromptStrategy, emit_report
from langchain_promptstrat.tokens import TokenCounter, as_token_counter, message_counter
from langchain_promptstrat.tokens.usage import Calibration, calibration_for

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

    def compact(
        self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None
    ) -> Compacted:
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


class RungOptions(TypedDict, total=False):
    """The options every built-in rung takes; each is a setting (a ladder's own target and counter
    win)."""

    max_tokens: Annotated[int | None, SettingKey("ladder_max_tokens")]
    keep_steps: Annotated[int | None, SettingKey("keep_steps")]


class Rung(PlannedStrategy):
    """Base of the token-target rungs: a plan toward a target, usable alone (``max_tokens``, its
    ``token_counter``) or in a ladder (the ladder's)."""

    options = RungOptions

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        token_counter: Any = None,
        **options: Unpack[RungOptions],
    ) -> None:
        """Build the rung; an option left at None comes from ``settings``, else the environment,
        else its default.

        Args:
            settings: Thresholds shared with other strategies (default: read from the
                environment now); the options below win over it.
            token_counter: None (cl100k_base), a ``TokenCounter``, a chat model or any
                ``messages -> int`` callable (a ladder uses its own).

        Raises:
            ConfigError: A value is out of range, or a keyword is not one of these options.
        """
        super().__init__(settings_with_options(type(self), settings, options))
        self.token_counter: CountTokens = as_token_counter(token_counter)

    @property
    def max_tokens(self) -> int:
        """Return the target this rung aims at when used on its own."""
        return self.settings.ladder_max_tokens

    @abstractmethod
    def plan(self, messages: Sequence[BaseMessage], *, target: int, counter: CountTokens) -> Plan:
        """Return a plan (a generator) that ends with this rung's :class:`Rewrite` of
        ``messages``."""

    def rewrite(
        self, messages: Sequence[BaseMessage], *, target: int | None = None, counter: Any = None
    ) -> list[BaseMessage] | None:
        """Return this rung's rewrite of ``messages`` toward ``target`` (default ``max_tokens``), or
        None when it declines."""
        count = self.token_counter if counter is None else as_token_counter(counter)
        return run_plan(
            self.plan(
                list(messages), target=self.max_tokens if target is None else target, counter=count
            )
        ).messages

    def _compaction(self, messages: list[BaseMessage]) -> Generator[RungRequest, Any, Compacted]:
        done_pass = yield from ladder_pass(
            messages, [self], target=self.max_tokens, counter=self.token_counter
        )
        return _pass_compacted(self.strategy_name, messages, done_pass, self.max_tokens)


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
        outcome = yield from rung.plan(current, target=target, counter=counter)
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


def _compacted(
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


def _pass_compacted(
    name: str, messages: Sequence[BaseMessage], done_pass: LadderPass, target: int, **figures: Any
) -> Compacted:
    """Return :func:`_compacted` of one pass over the whole of ``messages`` toward ``target``."""
    tokens = done_pass.tokens
    return _compacted(
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


# --------------------------------------------------------------------------- the ladder


class CompactionLadder(PlannedStrategy):
    """A token budget: rungs run cheapest first while over ``max_tokens``, with a low watermark.

    ``CompactionLadder([ToolResults(), Summary(model), SlidingWindow()], max_tokens=120_000)``
    or ``CompactionLadder("tool_results,sliding_window", ...)``. The report adds ``target``,
    ``low_tokens``, ``tokens_before``, ``tokens_after``, ``met``, ``rungs`` (taken at this
    call), ``asked``, and with the watermark ``event``, ``events`` and ``last_event``.
    """

    strategy_name = "ladder"
    memo_size = 8
    """Replays remembered per ladder, to resume a growing conversation (never changes a result)."""
    memo_chars = 8_000_000
    """Characters of edited copies the remembered replays may hold together."""

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
        super().__init__(
            settings_with_options(type(self), settings, unknown, reads=("ladder_low_ratio",))
        )
        self.rungs: list[Rung] = _resolve_rungs(rungs, self.settings)
        self.max_tokens = _tokens_argument("max_tokens", max_tokens)
        ratio = self.settings.ladder_low_ratio  # at most 1, as Settings declares it
        low = (
            int(self.max_tokens * ratio)
            if low_tokens is None
            else _tokens_argument("low_tokens", low_tokens)
        )
        if low > self.max_tokens:
            raise ConfigError(
                f"low_tokens={low} must be <= max_tokens={self.max_tokens}; equal turns the "
                "watermark off"
            )
        self.low_tokens = low
        self.token_counter: CountTokens = as_token_counter(token_counter)
        self._memo: ReplayMemo[_Replay] = ReplayMemo(self.memo_size)

    def __repr__(self) -> str:
        names = ", ".join(r.strategy_name for r in self.rungs)
        tokens = f"max_tokens={self.max_tokens}, low_tokens={self.low_tokens}"
        return f"CompactionLadder([{names}], {tokens})"

    def __copy__(self) -> CompactionLadder:
        """Return a copy with a replay memo of its own.

        A copy may be given other settings or rungs, and what this one remembers was computed
        with its own.
        """
        copied = object.__new__(type(self))
        vars(copied).update(vars(self))
        copied.rungs = list(self.rungs)
        copied._memo = ReplayMemo(self.memo_size)
        return copied

    def without_read_back_handles(self) -> Self:
        """Return a copy whose rungs have the ``read_back_handles`` setting off too.

        This ladder itself when it and its rungs have it off already.
        """
        if not any(s.read_back_handles for s in (self.settings, *(r.settings for r in self.rungs))):
            return self
        copied = copy.copy(self)
        copied.settings = self.settings.replace(read_back_handles=False)
        copied.rungs = [rung.without_read_back_handles() for rung in self.rungs]
        return copied

    def forget(self) -> None:
        """Drop the remembered replays (results do not change; the next call replays from
        scratch)."""
        self._memo.forget()

    def _compaction(self, messages: list[BaseMessage]) -> Generator[RungRequest, Any, Compacted]:
        counter = self.token_counter
        if (
            self.low_tokens == self.max_tokens
        ):  # no watermark: the rungs run on the whole history at every call
            done_pass = yield from ladder_pass(
                messages, self.rungs, target=self.max_tokens, counter=counter
            )
            return _pass_compacted(
                self.strategy_name,
                messages,
                done_pass,
                self.max_tokens,
                low_tokens=self.low_tokens,
                watermark=False,
            )

        count_one = message_counter(counter)
        base = counter([])  # what the counter counts for an empty list
        prior = calibration_for(None, messages)
        start = self._memo.recall(messages)
        if start is None or start.calibration.prior != prior.prior:
            start = _Replay(EMPTY_HISTORY, (), (), 0, base, base, 0, None, None, prior)
        prompt, tokens, history_tokens = start.prompt(messages), start.tokens, start.history_tokens
        picks, copies, chars = list(start.picks), start.copies, start.chars
        events, last_event, done_length, last_pass = (
            start.events,
            start.last_event,
            start.history.length,
            start.last_pass,
        )
        calibration = (
            start.calibration
        )  # the targets hold on the provider's count, learned from the answers' usage
        for point in call_points(messages, after=done_length):
            if (
                done_length
            ):  # the answer to the previous call point, whose prompt counted ``tokens``
                calibration = calibration.observe(messages[done_length], tokens)
            added = messages[done_length:point]
            prompt.extend(added)
            picks.extend(range(done_length, point))
            grown = sum(count_one(m) for m in added)
            tokens += grown
            history_tokens += grown
            done_length = point
            last_pass = None
            if tokens > calibration.budget(self.max_tokens):
                last_pass = yield from ladder_pass(
                    prompt, self.rungs, target=calibration.budget(self.low_tokens), counter=counter
                )
                picks, new_copies = _encode_prompt(prompt, picks, last_pass.messages)
                copies, chars = tuple(new_copies), sum(map(message_chars, new_copies))
                prompt, tokens = list(last_pass.messages), last_pass.tokens
                events, last_event = events + 1, point
        # by key, and without the pass's prompt: the memo must not keep a finished conversation
        # alive
        history = history_key(messages, start.history)
        kept_pass = dataclasses.replace(last_pass, messages=[]) if last_pass is not None else None
        replay = _Replay(
            history,
            tuple(picks),
            copies,
            chars,
            tokens,
            history_tokens,
            events,
            last_event,
            kept_pass,
            calibration,
        )
        self._memo.remember(replay, chars, max_chars=self.memo_chars)

        if not isinstance(
            counter, TokenCounter
        ):  # the replay added per-message shares: report the counter's own
            history_tokens, tokens = counter(messages), counter(prompt)
        return _compacted(
            self.strategy_name,
            messages,
            prompt,
            last_pass,
            target=self.max_tokens,
            low_tokens=self.low_tokens,
            tokens_before=history_tokens,
            tokens_after=tokens,
            met=tokens <= calibration.budget(self.max_tokens),
            watermark=True,
            event=last_pass is not None,
            events=events,
            last_event=last_event,
            **calibration.report(self._memo),
        )


@dataclass(frozen=True)
class _Replay:
    """Where a replay stands after the call point ``len(history)``, holding no caller's message.

    The prompt is ``history[pick]`` for a pick >= 0, ``copies[-pick - 1]`` for a negative one;
    ``chars`` counts the copies (what remembering it costs); ``last_pass`` is the pass of an
    event at the history's own length, without its messages.
    """

    history: HistoryKey
    picks: tuple[int, ...]
    copies: tuple[BaseMessage, ...]
    chars: int
    tokens: int
    history_tokens: int
    events: int
    last_event: int | None
    last_pass: LadderPass | None
    calibration: Calibration

    def prompt(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Return the prompt for ``messages``, whose first ``history.length`` messages equal the
        history's."""
        pool = list(messages[: self.history.length])
        pool += reversed(self.copies)  # pool[-k - 1] is copies[k]: one C-level lookup per pick
        return list(map(pool.__getitem__, self.picks))


def _encode_prompt(
    prompt: Sequence[BaseMessage], picks: Sequence[int], rewritten: Sequence[BaseMessage]
) -> tuple[list[int], list[BaseMessage]]:
    """Return the picks and copies of ``rewritten``, a pass's output for ``prompt``: a history
    message keeps its pick, anything else is a copy."""
    where = {id(m): p for m, p in zip(prompt, picks, strict=False) if p >= 0}
    out: list[int] = []
    copies: list[BaseMessage] = []
    for message in rewritten:
        pick = where.get(id(message))
        if pick is None:
            copies.append(message)
            pick = -len(copies)
        out.append(pick)
    return out, copies


def _tokens_argument(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name}={value!r} must be a whole number of tokens >= 0")
    return value


def _resolve_rungs(rungs: Sequence[Rung | str] | str, settings: Settings) -> list[Rung]:
    items: list[Any]
    if isinstance(
        rungs, str
    ):  # a blank string is left to the "needs at least one rung" error below
        items = (
            split_strategy_names(rungs, source="the ladder's rung list") if rungs.strip() else []
        )
    else:
        items = list(rungs)
    resolved: list[Rung] = []
    for item in items:
        rung = get_strategy(item, settings) if isinstance(item, str) else item
        if not isinstance(rung, Rung):
            raise ConfigError(
                f"{item!r} cannot be a ladder rung: a rung aims at a token target "
                "(tool_results, sliding_window, summary, or a subclass of "
                "langchain_promptstrat.strategies.ladder.Rung)"
            )
        resolved.append(rung)
    if not resolved:
        raise ConfigError(
            "a CompactionLadder needs at least one rung, e.g. [ToolResults(), SlidingWindow()]"
        )
    return resolved
