"""What the default's rule reads: each message's tokens, whole and shortened (:class:`Costs`), and
the history's calls as prefix sums by forward position (:class:`StepCosts`).

Knows no strategy: the shortened form and the notice's strategy name come in as arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat.messages import CountTokens, Fate, ToolCallRecord, ToolIndex
from langchain_promptstrat.messages.history_memo import IdentityMemo, memoized
from langchain_promptstrat.strategies.epoch_machinery.notice import compaction_notice
from langchain_promptstrat.strategies.epoch_machinery.shortened_form import ShortenedForm
from langchain_promptstrat.tokens import message_counter, missing_call_id_tokens


class Costs:
    """Per-message tokens for one counter, whole and shortened, remembered weakly by message object
    (never changing a result)."""

    limit = 200_000

    def __init__(self, counter: CountTokens) -> None:
        self.counter = counter
        self.count_one = message_counter(counter)
        self._seen: IdentityMemo[int] = IdentityMemo(self.limit)
        self._short: IdentityMemo[int] = IdentityMemo(self.limit)

    def whole(self, message: BaseMessage) -> int:
        tokens = self._seen.get(message)
        if tokens is None:
            tokens = self.count_one(message) + missing_call_id_tokens(message, self.counter)
            self._seen.put(message, tokens)
        return tokens

    def shortened(
        self,
        message: BaseMessage,
        form: ShortenedForm,
        record: ToolCallRecord | None = None,
        numbers: Mapping[str, int] | None = None,
    ) -> int:
        """Return the tokens of ``message`` shortened by ``form``: a tool output (``record`` is its
        call), or an assistant message with every call shortened (``numbers``: their ids ->
        numbers)."""
        tokens = self._short.get(message)
        if tokens is not None:
            return tokens
        short: BaseMessage | None
        if isinstance(message, ToolMessage):
            short = form(message, record) if record is not None else message
        else:
            short = form.calls(message, numbers or {})  # type: ignore[arg-type]
        tokens = self.whole(short) if short is not None else 0
        self._short.put(message, tokens)
        return tokens

    def __call__(self, messages: Sequence[BaseMessage], /) -> int:
        return sum(map(self.whole, messages))

    def notice(self, handles: bool, strategy: str) -> int:
        """Return what the estimate reserves for the compaction notice of ``strategy``: the most a
        notice costs.

        That is the notice of :data:`NOTICE_CALLS` calls (handles or not, as ``handles`` says).
        """
        return max(map(self.whole, _largest_notices(handles, strategy)))


NOTICE_CALLS = 99_999
"""The most calls whose notice the reserve is sure to cover (each count at most five digits)."""


@memoized(2)
def _largest_notices(handles: bool, strategy: str) -> tuple[BaseMessage, ...]:
    """Return the notices with the longest counts, each one call or :data:`NOTICE_CALLS`.

    The same objects every time, so a :class:`Costs` counts them once.
    """
    last = {NOTICE_CALLS - 1: Fate.DROP}  # calls NOTICE_CALLS-NOTICE_CALLS dropped
    return tuple(
        compaction_notice(shortened, dropped, strategy=strategy, fates=last, handles=handles)
        for shortened in (1, NOTICE_CALLS)
        for dropped in (1, NOTICE_CALLS)
    )


@dataclass
class StepCosts:
    """The history's calls as prefix sums by forward position: what the rule's estimate reads.

    ``whole``/``short``: each call's cost kept whole or shortened (its output plus its share of
    the assistant message); ``loose_before[f]``: the messages outside any step (user messages,
    plain assistant text) before output ``f``; ``fixed``: the system block and the task.
    """

    fixed: int = 0
    whole: list[int] = field(default_factory=lambda: [0])
    short: list[int] = field(default_factory=lambda: [0])
    loose_before: list[int] = field(default_factory=lambda: [0])
    loose_after: int = 0
    """Loose tokens after the newest output, not yet closed by a later output."""
    ends: list[int] = field(default_factory=list)
    """Forward positions that end a step, ascending."""
    keys: set[str] = field(default_factory=set)
    """Repeat keys of the calls seen so far."""
    last_ai: int = -1
    notice: int = 0
    """What the compaction notice costs at most (:meth:`Costs.notice`): reserved once any is cut."""

    def copy(self) -> StepCosts:
        return StepCosts(
            self.fixed,
            list(self.whole),
            list(self.short),
            list(self.loose_before),
            self.loose_after,
            list(self.ends),
            set(self.keys),
            self.last_ai,
            self.notice,
        )

    @property
    def total(self) -> int:
        return len(self.whole) - 1

    def estimate(self, compaction: int, drop: int, head: int) -> int:
        """Return the estimated tokens of the prompt with these edges: ``head+1 .. drop`` dropped,
        ``.. compaction`` shortened, the notice if any."""
        t = self.total
        h = min(head, drop)
        loose = (
            self.loose_before[t] + self.loose_after - self.loose_before[drop] + self.loose_before[h]
        )
        notice = self.notice if compaction else 0
        kept_short = self.short[h] + self.short[compaction] - self.short[drop]
        return self.fixed + loose + notice + kept_short + self.whole[t] - self.whole[compaction]

    def end_edges(self) -> list[int]:
        """Return every step end, the newest output included."""
        t = self.total
        return self.ends + [t] if t and (not self.ends or self.ends[-1] != t) else list(self.ends)

    def add(
        self,
        messages: Sequence[BaseMessage],
        start: int,
        stop: int,
        index: ToolIndex,
        costs: Costs,
        task: int | None,
        system: int,
        form: ShortenedForm,
    ) -> None:
        """Add the costs of ``messages[start:stop]`` (``index`` is their tool-call index)."""
        completed_per_ai, call_of_output = index.completed_per_ai, index.call_of_output
        for i in range(start, stop):
            message = messages[i]
            if i < system or i == task:
                self.fixed += costs.whole(message)
                continue
            number = call_of_output.get(i) if isinstance(message, ToolMessage) else None
            if number is None:
                if isinstance(message, AIMessage) and completed_per_ai.get(i, 0):
                    continue  # its cost goes to its calls, as their outputs arrive
                self.loose_after += costs.whole(message)
                continue
            record = index.calls[number]
            ai = messages[record.ai_index]
            n = completed_per_ai.get(record.ai_index, 0)
            numbers = {index.calls[n].id: n + 1 for n in index.calls_per_ai[record.ai_index]}
            ai_whole, ai_short = costs.whole(ai), costs.shortened(ai, form, numbers=numbers)
            first = record.ai_index != self.last_ai
            share_whole = ai_whole // n + (ai_whole % n if first else 0)
            share_short = ai_short // n + (ai_short % n if first else 0)
            t = self.total
            if first and t and (not self.ends or self.ends[-1] != t):
                self.ends.append(t)
            self.last_ai = record.ai_index
            self.loose_before.append(self.loose_before[t] + self.loose_after)
            self.loose_after = 0
            whole = costs.whole(message) + share_whole
            key = record.key
            # a repeated call may stay whole in the shortened region (the newest occurrence is
            # protected): count it whole
            short = (
                whole if key in self.keys else costs.shortened(message, form, record) + share_short
            )
            self.keys.add(key)
            self.whole.append(self.whole[t] + whole)
            self.short.append(self.short[t] + short)
