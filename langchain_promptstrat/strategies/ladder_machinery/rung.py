"""The :class:`Rung` base (a token-target strategy usable alone or in a ladder) and one pass of rungs over a prompt.

:func:`ladder_pass` asks each rung in turn while the prompt is over target and takes a
rewrite only when it counts fewer tokens; :class:`LadderPass` is what the pass did. A rung
on its own runs a one-rung pass; :class:`~langchain_promptstrat.strategies.ladder.CompactionLadder`
runs passes of several, at its watermark.

Must not hold a concrete rung (each is its own strategy module: ``tool_results``,
``sliding_window``, ``summary``) nor the watermark (``ladder``, ``replay``).
"""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import AsyncCallbackManagerForChainRun
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from langchain_promptstrat.strategy import PromptStrategy, emit_report
from langchain_promptstrat.messages import coerce_messages
from langchain_promptstrat.report import Compacted, StrategyReport, make_report
from langchain_promptstrat.settings import SettingKey, Settings
from langchain_promptstrat.strategies.ladder_machinery.plan import Plan, RungRequest, arun_plan, run_plan
from langchain_promptstrat.strategies.ladder_machinery.vocabulary import CountTokens, tally
from langchain_promptstrat.tokens import as_token_counter

__all__ = ["LadderPass", "PlannedStrategy", "Rung", "RungOptions", "ladder_pass"]


class PlannedStrategy(PromptStrategy):
    """A strategy whose work is a plan that may call a chat model: async calls await it on the event loop.

    Subclasses give :meth:`acompact`; ``ainvoke`` awaits it (no thread hop, so a summary's
    model call is awaited), emits the report and returns the messages. The sync path is the
    base's, through :meth:`compact`. Shared by :class:`Rung` and the ``CompactionLadder``.
    """

    @abstractmethod
    async def acompact(self, messages: list[BaseMessage]) -> Compacted:
        """Return :meth:`compact` of ``messages``, awaiting any model call."""

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> list[BaseMessage]:
        """Return the transformed messages, awaiting any model call (no thread hop)."""
        return await self._acall_with_config(self._ainvoke, input, config, run_type="prompt")

    async def _ainvoke(self, input: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig) -> list[BaseMessage]:
        result = await self.acompact(coerce_messages(input))
        emit_report(result, config)
        return result.messages


class RungOptions(TypedDict, total=False):
    """The options every built-in rung takes; each is a setting (a ladder's own target and counter win)."""

    max_tokens: Annotated[int | None, SettingKey("ladder_max_tokens")]
    keep_steps: Annotated[int | None, SettingKey("keep_steps")]


class Rung(PlannedStrategy):
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
