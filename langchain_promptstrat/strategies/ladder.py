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
prompt of about ``max_tokens``. A small per-ladder memo of recent replays (the replay
engine's :class:`~langchain_promptstrat.messages.history_memo.ReplayMemo`,
keyed by what the history is, so a conversation loaded again from a checkpoint is found
too) lets a growing conversation resume where the previous call stopped; it never changes
a result, and it holds no caller's message (a prompt is remembered as indices into the
history plus the rungs' edited copies), so a finished conversation is not kept alive.

This module holds the ladder: its options and the watermark's rule. What it shares with
its rungs (the marks' kinds and token shares, the plan protocol, the :class:`Rung` base and
one pass, the call points it replays) lives in
:mod:`langchain_promptstrat.strategies.ladder_machinery`, and its public names are
re-exported here; each rung is its own strategy module. Must not hold machinery a rung
needs: that belongs there.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from langchain_core.messages import BaseMessage

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.messages import message_chars
from langchain_promptstrat.strategy_names import get_strategy, split_strategy_names  # rungs may be given by registry key
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings, settings_with_options
from langchain_promptstrat.strategies.ladder_machinery.plan import Plan, Rewrite, RungRequest, arun_plan, done, run_plan
from langchain_promptstrat.messages.history_memo import EMPTY_HISTORY, HistoryKey, ReplayMemo, call_points, history_key
from langchain_promptstrat.strategies.ladder_machinery.rung import LadderPass, PlannedStrategy, Rung, _counts, _pass_report, ladder_pass
from langchain_promptstrat.strategies.ladder_machinery.vocabulary import (
    NOTE_KIND,
    PLACEHOLDER_KIND,
    SUMMARY_KIND,
    CountTokens,
    _Tally,
    kind_of,
    list_overhead,
    message_counter,
    represented,
    tally,
)
from langchain_promptstrat.tokens import as_token_counter
from langchain_promptstrat.tokens.usage import Calibration, calibration_for

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


class CompactionLadder(PlannedStrategy):
    """A token budget: rungs run cheapest first while over ``max_tokens``, with a low watermark.

    ``CompactionLadder([ToolResults(), Summary(model), SlidingWindow()], max_tokens=120_000)``
    (the summary before the window, which would otherwise drop what it summarises).
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
    memo_chars = 8_000_000
    """Characters of edited copies the remembered replays may hold together (they hold the caller's messages only weakly)."""

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
        super().__init__(settings_with_options(type(self), settings, unknown, reads=("ladder_low_ratio",)))
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
        self._memo: ReplayMemo[_Replay] = ReplayMemo(self.memo_size)

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
        prior = calibration_for(None, messages)
        start = self._memo.recall(messages)
        if start is None or start.calibration.prior != prior.prior:
            start = _Replay(EMPTY_HISTORY, (), (), 0, base, base, 0, None, None, prior)
        prompt, tokens, history_tokens = start.prompt(messages), start.tokens, start.history_tokens
        picks, copies, chars = list(start.picks), start.copies, start.chars
        events, last_event, done_length, last_pass = start.events, start.last_event, start.history.length, start.last_pass
        calibration = start.calibration  # the targets hold on the provider's count, learned from the answers' usage
        for point in call_points(messages, after=done_length):
            if done_length:  # the answer to the previous call point, whose prompt counted ``tokens``
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
                last_pass = yield from ladder_pass(prompt, self.rungs, target=calibration.budget(self.low_tokens), counter=counter)
                picks, new_copies = _encode_prompt(prompt, picks, last_pass.messages)
                copies, chars = tuple(new_copies), sum(map(message_chars, new_copies))
                prompt, tokens = list(last_pass.messages), last_pass.tokens
                events, last_event = events + 1, point
        # by key, and without the pass's prompt: the memo must not keep a finished conversation alive
        history = history_key(messages, start.history)
        kept_pass = dataclasses.replace(last_pass, messages=[]) if last_pass is not None else None
        replay = _Replay(history, tuple(picks), copies, chars, tokens, history_tokens, events, last_event, kept_pass, calibration)
        self._memo.remember(replay, chars, max_chars=self.memo_chars)

        if not isinstance(counter, _Tally):  # the replay added per-message shares; report the counter's own figures
            history_tokens, tokens = counter(messages), counter(prompt)
        report = make_report(
            self.strategy_name, messages, prompt,
            **_counts(last_pass),
            target=self.max_tokens,
            low_tokens=self.low_tokens,
            tokens_before=history_tokens,
            tokens_after=tokens,
            met=tokens <= calibration.budget(self.max_tokens),
            rungs=last_pass.taken if last_pass else [],
            asked=last_pass.asked if last_pass else [],
            watermark=True,
            event=last_pass is not None,
            events=events,
            last_event=last_event,
            **calibration.report(self._memo),
        )
        return Compacted(prompt, report)

    def forget(self) -> None:
        """Drop the remembered replays (results do not change; the next call replays from scratch)."""
        self._memo.forget()

    # ---- PromptStrategy --------------------------------------------------------------

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return the prompt for ``messages`` under the budget, and the report."""
        return run_plan(self._run(list(messages)))

    async def acompact(self, messages: list[BaseMessage]) -> Compacted:
        """Return :meth:`compact` of ``messages``, awaiting any model call."""
        return await arun_plan(self._run(list(messages)))


@dataclass(frozen=True)
class _Replay:
    """Where a replay stands after the call point ``len(history)``: the prompt built so far and its counts.

    It holds no message of the caller, so a remembered replay never keeps a finished
    conversation alive: the history is its key (:class:`HistoryKey`: weak references and each
    message's key), and the prompt is encoded as :attr:`picks` into the history plus
    the replay's own edited copies (:attr:`copies`, ``chars`` characters of them).
    """

    history: HistoryKey
    picks: tuple[int, ...]
    """The prompt: ``history[pick]`` for a pick >= 0, ``copies[-pick - 1]`` for a negative one."""
    copies: tuple[BaseMessage, ...]
    chars: int
    """Characters of :attr:`copies` (what remembering this replay costs)."""
    tokens: int
    history_tokens: int
    events: int
    last_event: int | None
    last_pass: LadderPass | None
    """The pass of an event at the history's own length, without its messages (None when that call did not compact)."""
    calibration: Calibration

    def prompt(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """Return the prompt for ``messages``, whose first ``history.length`` messages equal the history's."""
        pool = list(messages[: self.history.length])
        pool += reversed(self.copies)  # pool[-k - 1] is copies[k]: one C-level lookup per pick
        return list(map(pool.__getitem__, self.picks))


def _encode_prompt(prompt: Sequence[BaseMessage], picks: Sequence[int], rewritten: Sequence[BaseMessage]) -> tuple[list[int], list[BaseMessage]]:
    """Return the picks and copies of ``rewritten``, a rung pass's output for ``prompt`` (encoded by ``picks``).

    A message of ``rewritten`` that is one of the history's messages in ``prompt`` keeps its
    pick; anything else (an edited copy, a note, a summary) is the replay's own copy.
    """
    where = {id(m): p for m, p in zip(prompt, picks) if p >= 0}
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
    if isinstance(rungs, str):  # a blank string is left to the "needs at least one rung" error below
        items = split_strategy_names(rungs, source="the ladder's rung list") if rungs.strip() else []
    else:
        items = list(rungs)
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
