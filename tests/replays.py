"""The default's replay driven by hand, for the tests that compare replays: each model call's edges
asked of the default's rule, as the strategy itself answers them."""

from __future__ import annotations

from typing import cast

from langchain_core.messages import BaseMessage

from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.costs import Costs
from langchain_promptstrat.strategies.epoch_machinery.history_replay import Replay, replay_history
from langchain_promptstrat.strategies.epoch_stable import STRATEGY_NAME, Edges, advance


def default_replay(
    start: Replay[Edges] | None,
    history: list[BaseMessage],
    budget: int,
    settings: Settings,
    costs: Costs,
) -> Replay[Edges]:
    """Return the default's replay of ``history``'s model calls under ``budget``, resumed from
    ``start`` when it describes the history."""
    questions = replay_history(
        start, history, budget, settings, costs, first=Edges(), strategy=STRATEGY_NAME
    )
    try:
        while True:
            question = next(questions)
            question.answer = advance(question.edges, question.steps, question.budget, settings)
    except StopIteration as finished:
        return cast(Replay[Edges], finished.value)
