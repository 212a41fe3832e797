"""What the stable strategy's rule reads: each message's tokens (:class:`Costs`) and each call's, as prefix sums (:class:`StepCosts`).

The stable strategy's replay prices every call of the history kept whole and shortened
before every model call; remembering each message's cost (weakly, bounded) makes a
growing conversation cost only its new messages, and the prefix sums give the estimated
prompt for any pair of edges in O(1) (:meth:`StepCosts.estimate`).

Must not decide anything: it only counts (the rule is ``stable_rule``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langchain_promptstrat._memo import IdentityMemo
from langchain_promptstrat.messages import ToolIndex, edit_ai_message, recorded_calls, shorten_tool_output
from langchain_promptstrat.strategies.epoch_machinery.shortened_form import Call, ShortenedForm
from langchain_promptstrat.strategies.ladder_machinery.vocabulary import CountTokens, message_counter
from langchain_promptstrat.tokens import missing_call_id_tokens

__all__ = ["NOTICE_TOKENS", "Costs", "StepCosts"]


NOTICE_TOKENS = 90
"""What the estimate reserves for the compaction notice (its text is about 80 tokens)."""


class Costs:
    """Per-message token costs for one counter: content, tool calls and call ids, remembered by message object.

    The memos hold messages weakly and at most ``limit`` of them (a strategy object lives as
    long as the hook or middleware that holds it, so it must never keep a finished
    conversation alive); they never change a result, only how fast it comes.
    """

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

    def shortened(self, message: BaseMessage, form: ShortenedForm, record: Call | None = None) -> int:
        """Return the tokens of ``message`` once shortened by ``form``: a tool output (``record`` is its call), or an assistant message with every call shortened.

        ``form`` is one strategy's, the same for every call of a message, so the tokens are
        remembered per message.
        """
        tokens = self._short.get(message)
        if tokens is not None:
            return tokens
        short: BaseMessage | None
        if isinstance(message, ToolMessage):
            short = form(message, record) if record is not None else shorten_tool_output(message)
        else:
            short = edit_ai_message(message, shorten=[call_id for call_id, _, _ in recorded_calls(message)])  # type: ignore[arg-type]
            if short is not None:
                short = form.narration(short)
        tokens = self.whole(short) if short is not None else 0
        self._short.put(message, tokens)
        return tokens

    def __call__(self, messages: Sequence[BaseMessage], /) -> int:
        return sum(map(self.whole, messages))


@dataclass
class StepCosts:
    """The history's calls as prefix sums, in forward positions (1 = oldest output): what the rule's estimate reads.

    ``whole``/``short`` are prefix sums of each call's cost kept whole or shortened (its
    output plus its share of the assistant message), ``loose_before[f]`` the tokens of the
    messages that are not part of a step (user messages, plain assistant text) placed
    before output ``f``; ``fixed`` the system block and the task, always sent.
    """

    fixed: int = 0
    whole: list[int] = field(default_factory=lambda: [0])
    short: list[int] = field(default_factory=lambda: [0])
    loose_before: list[int] = field(default_factory=lambda: [0])
    loose_after: int = 0
    """Loose tokens after the newest output (position ``T``), not yet closed by a later output."""
    ends: list[int] = field(default_factory=list)
    """Forward positions that end a step, ascending."""
    keys: set[str] = field(default_factory=set)
    """Repeat keys of the calls seen so far."""
    last_ai: int = -1

    def copy(self) -> StepCosts:
        return StepCosts(
            self.fixed, list(self.whole), list(self.short), list(self.loose_before), self.loose_after,
            list(self.ends), set(self.keys), self.last_ai,
        )

    @property
    def total(self) -> int:
        return len(self.whole) - 1

    def estimate(self, compaction: int, drop: int, head: int) -> int:
        """Return the estimated tokens of the prompt with these edges (the notice included when anything is frozen).

        Positions ``head+1 .. drop`` are dropped, ``.. compaction`` shortened, the rest whole.
        """
        t = self.total
        h = min(head, drop)
        loose = self.loose_before[t] + self.loose_after - self.loose_before[drop] + self.loose_before[h]
        notice = NOTICE_TOKENS if compaction else 0
        kept_short = self.short[h] + self.short[compaction] - self.short[drop]
        return self.fixed + loose + notice + kept_short + self.whole[t] - self.whole[compaction]

    def end_edges(self) -> list[int]:
        """Return every step end, the newest output included."""
        t = self.total
        return self.ends + [t] if t and (not self.ends or self.ends[-1] != t) else list(self.ends)

    def add(
        self, messages: Sequence[BaseMessage], start: int, stop: int, index: ToolIndex, costs: Costs, task: int | None, system: int,
        form: ShortenedForm,
    ) -> None:
        """Add the costs of ``messages[start:stop]`` (``index`` is their tool-call index; ``form`` shortens a call)."""
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
            ai_whole, ai_short = costs.whole(ai), costs.shortened(ai, form)
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
            # a repeated call may stay whole in the shortened region (the newest occurrence is protected): count it whole
            short = whole if key in self.keys else costs.shortened(message, form, record) + share_short
            self.keys.add(key)
            self.whole.append(self.whole[t] + whole)
            self.short.append(self.short[t] + short)
