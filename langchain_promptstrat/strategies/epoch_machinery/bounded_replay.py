"""The stable strategy's replay: the history's model calls, each run through the rule, resumed from a memo of earlier calls.

At each call point of the history (:func:`~langchain_promptstrat.messages.history_memo.call_points`) the calls added since are
priced (:class:`~langchain_promptstrat.strategies.epoch_machinery.token_costs.StepCosts`)
and the rule's :func:`~langchain_promptstrat.strategies.epoch_machinery.stable_rule.advance`
moves the edges. :class:`Replay` is where a replay stands; :func:`replay_history` replays a
history, resuming from a replay the strategy's :class:`BoundedMemo` remembers for a prefix
of it. The edges only move forward, so the prompt is still a function of the history alone.

Must not decide an edge (``stable_rule`` does) nor build the prompt (``stable_prompt``),
nor keep a conversation alive (the history is held weakly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage

from langchain_promptstrat.messages import ToolIndex, leading_system_count, task_index
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.shortened_form import ShortenedForm
from langchain_promptstrat.strategies.epoch_machinery.stable_rule import Edges, advance
from langchain_promptstrat.strategies.epoch_machinery.token_costs import Costs, StepCosts
from langchain_promptstrat.messages.history_memo import EMPTY_HISTORY, HistoryKey, ReplayMemo, call_points, history_key
from langchain_promptstrat.strategies.ladder_machinery.vocabulary import CountTokens

__all__ = ["BoundedMemo", "Replay", "memo_costs", "previous_length", "replay_history"]


@dataclass
class Replay:
    """Where a replay of the ceiling stands after the call point ``len(history)``: the rule's edges and what feeds them."""

    history: HistoryKey
    """The history replayed so far, as the replay engine keys it (weakly, and by content)."""
    budget: int
    index: ToolIndex
    """The tool-call index of ``history``: a replay that resumes extends it by the new messages (see :func:`replay_history`)."""
    steps: StepCosts
    edges: Edges
    recent: list[tuple[int, Edges, int]] = field(default_factory=list)
    """``(call point, edges, outputs counted)`` after each of the last call points replayed."""
    previous_edges: tuple[int, int] = (0, 0)
    """The compaction and drop edges of the previous model call's prompt (see :func:`_edges_before`)."""
    previous: tuple[Edges, int] | None = None
    """The edges and outputs counted at the previous model call's history (everything before the newest assistant
    message), when that history is one of the recent call points: what its prompt is built from."""


class BoundedMemo(ReplayMemo[Replay]):
    """The recent replays of one strategy object (the replay engine's memo), and the token costs of its counter."""

    def __init__(self) -> None:
        super().__init__(8)
        self.costs: Costs | None = None
        """Per-message token costs for the counter last used (a cache: never changes a result)."""


def replay_history(source: list[BaseMessage], budget: int, settings: Settings, costs: Costs, memo: BoundedMemo | None) -> Replay:
    """Return the replay of ``source``'s call points under ``budget``: a pure function of the history.

    A replay remembered for a call point of ``source`` whose history equals the start of
    ``source`` (the same objects, or equal ones loaded again) resumes: only the messages after it are indexed,
    counted and replayed. That is safe because every prefix of a history has the same call
    points up to its length and the replay of a call point reads nothing after it, so the
    resumed replay is the one a replay from the first message would reach.
    """
    start = memo.recall(source, budget) if memo is not None else None
    if start is None:
        replay = Replay(EMPTY_HISTORY, budget, ToolIndex(), StepCosts(), Edges())
    else:
        replay = Replay(start.history, budget, start.index, start.steps.copy(), start.edges, list(start.recent), start.previous_edges, start.previous)
    done = replay.history.length
    index = replay.index = replay.index.extend(source)
    task = task_index(source)
    system = leading_system_count(source)
    steps, edges = replay.steps, replay.edges
    form = ShortenedForm(settings.stable_read_output_chars, settings.stable_narration_chars)
    for point in call_points(source, after=done):
        steps.add(source, done, point, index, costs, task, system, form)
        done = point
        edges = advance(edges, steps, budget, settings)
        replay.recent = [*replay.recent[-(_RECENT_POINTS - 1):], (point, edges, steps.total)]
    replay.edges = edges
    previous = previous_length(source)
    replay.previous_edges = _edges_before(replay, previous)
    replay.previous = next(((e, t) for point, e, t in reversed(replay.recent) if point == previous), None)
    replay.history = history_key(source, start.history if start is not None else None)
    if memo is not None:
        memo.remember(replay, budget=budget)
    return replay


_RECENT_POINTS = 16


def _edges_before(replay: Replay, previous: int) -> tuple[int, int]:
    """Return the edges at the previous model call (the newest call point at or before ``previous`` messages).

    Not simply those of the call point before the last: a history may hold call points where
    no model was called (a user message right after the tool outputs), and an edge that moved
    there still changed the prompt since the previous one.
    """
    for point, edges, _ in reversed(replay.recent):
        if point <= previous:
            return edges.compaction_edge, edges.drop_edge
    if len(replay.recent) < _RECENT_POINTS:  # every point was kept: the previous call came before any
        return 0, 0
    oldest = replay.recent[0][1]  # older than what is kept: the oldest edges known
    return oldest.compaction_edge, oldest.drop_edge


def previous_length(messages: Sequence[BaseMessage]) -> int:
    """Return the length of :func:`_previous_history` without copying it."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], AIMessage):
            return i
    return 0


def memo_costs(memo: BoundedMemo, counter: CountTokens) -> Costs:
    costs = memo.costs
    if costs is None or costs.counter is not counter:
        costs = memo.costs = Costs(counter)
    return costs
