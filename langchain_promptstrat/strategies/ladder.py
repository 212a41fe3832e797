"""CompactionLadder: token-target rungs run cheapest first, with a low watermark.

While the prompt counts more than ``max_tokens``, the next rung (``tool_results``,
``sliding_window``, ``summary``) is asked once for a rewrite, taken only when it counts fewer
tokens (``ladder_pass``); a target no rung reaches leaves the smallest prompt reached with
``met: False``. With a low watermark (``low_tokens``,
default 70% of ``max_tokens``) the history's own model calls are replayed, so the cut holds
still between compaction events and the provider's prefix cache hits::

    prompt(first call) = the history so far
    prompt(next call)  = prompt(previous call) + the messages added since,
                         unless that counts more than max_tokens: then the rungs run on it
                         with low_tokens as their target (a *compaction event*)

The replay resumes from the replay engine's memo (``messages/history_memo``). What the rungs
share is :mod:`~langchain_promptstrat.strategies.ladder_machinery.rungs`; a rung named by its
registry key is built through the registry, which no rung imports.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from langchain_core.messages import BaseMessage
from typing_extensions import Self

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.messages import (
    CountTokens,
    message_chars,
)
from langchain_promptstrat.messages.history_memo import (
    EMPTY_HISTORY,
    HistoryKey,
    ReplayMemo,
    call_points,
    history_key,
)
from langchain_promptstrat.registry import get_strategy  # rungs may be given by registry key
from langchain_promptstrat.report import Compacted
from langchain_promptstrat.settings import Settings, settings_with_options
from langchain_promptstrat.strategies.ladder_machinery.rungs import (
    LadderPass,
    PlannedStrategy,
    Rung,
    RungRequest,
    ladder_pass,
    ladder_result,
    pass_result,
    tokens_argument,
)
from langchain_promptstrat.strategy import (
    split_strategy_names,
)
from langchain_promptstrat.tokens import TokenCounter, as_token_counter, message_counter
from langchain_promptstrat.tokens.usage import Calibration, calibration_for

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
        self.max_tokens = tokens_argument("max_tokens", max_tokens)
        ratio = self.settings.ladder_low_ratio  # at most 1, as Settings declares it
        low = (
            int(self.max_tokens * ratio)
            if low_tokens is None
            else tokens_argument("low_tokens", low_tokens)
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
            return pass_result(
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
        return ladder_result(
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
