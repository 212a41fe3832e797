"""A conversation loaded again (new message objects, equal content) is the same conversation for the
replaying strategies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, ToolMessage, messages_from_dict, messages_to_dict

from langchain_promptstrat.messages.history_memo import keys_computed
from langchain_promptstrat.strategies.dedupe_outputs import DedupeOutputs
from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.testing import iter_agent_run
from langchain_promptstrat.tokens import TokenCounter

STRATEGIES: dict[str, Callable[..., Any]] = {
    "shorten_tools_epoch_stable": lambda counter=None: ShortenToolsEpochStable(
        max_tokens=12_000, token_counter=counter
    ),
    "ladder": lambda counter=None: CompactionLadder(
        ["tool_results", "sliding_window"], max_tokens=12_000, token_counter=counter
    ),
    "dedupe_outputs": lambda counter=None: DedupeOutputs(),
}
COUNTING = ["shorten_tools_epoch_stable", "ladder"]
"""The strategies that count tokens (a replay from the first call counts every message)."""


class CountingCounter(TokenCounter):
    """The default counter, counting the messages it is asked about."""

    asked = 0

    def count_message(self, message: BaseMessage) -> int:
        self.asked += 1
        return super().count_message(message)


def reloaded(messages: list[BaseMessage]) -> list[BaseMessage]:
    return messages_from_dict(messages_to_dict(messages))


def warmed(
    name: str, seed: int, calls: int | None = None, counter: TokenCounter | None = None
) -> tuple[Any, list[list[BaseMessage]]]:
    """Return a strategy object that has seen the seeded 150-call run call by call (its first
    ``calls`` prompts, else all), and the prompts."""
    prompts = list(iter_agent_run(150, seed=seed))
    warm = STRATEGIES[name](counter) if counter is not None else STRATEGIES[name]()
    for prompt in prompts[:calls]:
        warm.compact(list(prompt))
    return warm, prompts


def digest_of(result: Any) -> tuple[list[Any], dict[str, Any]]:
    return [m.model_dump() for m in result.messages], result.report.as_dict()


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_a_reloaded_conversation_gets_the_prompt_and_report_of_the_warm_one(name: str) -> None:
    """A checkpoint hands the strategy equal new objects: the warm object must answer exactly as for
    the objects it saw."""
    warm, prompts = warmed(name, seed=3, calls=-1)
    expected = STRATEGIES[name]().compact(list(prompts[-1]))
    again = warm.compact(reloaded(prompts[-1]))
    assert digest_of(again) == digest_of(expected)
    assert digest_of(warm.compact(reloaded(prompts[-1]) + [])) == digest_of(expected)


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_an_old_message_changed_under_the_same_id_is_not_taken_for_the_remembered_one(
    name: str,
) -> None:
    """LangGraph replaces a message by id: a reloaded history with an old output rewritten must be
    replayed, not recalled."""
    warm, prompts = warmed(name, seed=4)
    changed = reloaded(prompts[-1])
    k = next(i for i, m in enumerate(changed) if isinstance(m, ToolMessage))
    changed[k] = changed[k].model_copy(update={"content": "rewritten " * 2_000})
    assert digest_of(warm.compact(changed)) == digest_of(STRATEGIES[name]().compact(list(changed)))


@pytest.mark.parametrize("name", COUNTING)
def test_a_reloaded_conversation_resumes_the_remembered_replay_instead_of_counting_again(
    name: str,
) -> None:
    """The replay memo finds equal new objects by their keys: the warm object counts almost nothing,
    a fresh one every message."""
    counter = CountingCounter()
    warm, prompts = warmed(name, seed=3, counter=counter)
    history = reloaded(prompts[-1])
    counter.asked = 0
    warm.compact(history)
    fresh_counter = CountingCounter()
    STRATEGIES[name](fresh_counter).compact(reloaded(prompts[-1]))
    assert fresh_counter.asked >= len(history)
    assert counter.asked <= len(history) // 10


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_each_message_of_a_reloaded_conversation_is_keyed_once_for_every_memo_of_the_call(
    name: str,
) -> None:
    """The replay memo and the report's counts key the same history: computing its keys once is what
    keeps a reload cheap."""
    warm, prompts = warmed(name, seed=3)
    history = reloaded(prompts[-1])
    before = keys_computed()
    warm.compact(history)
    assert keys_computed() - before == len(history)
    before = keys_computed()
    warm.compact(list(history))
    assert keys_computed() == before


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_extending_a_reloaded_conversation_leaves_what_was_remembered_for_its_earlier_call(
    name: str,
) -> None:
    """A retry from an earlier call (the original objects again) must get that call's prompt, not
    one extended by the reload."""
    warm, prompts = warmed(name, seed=5, calls=-1)
    warm.compact(reloaded(prompts[-1]))
    assert digest_of(warm.compact(list(prompts[-2]))) == digest_of(
        STRATEGIES[name]().compact(list(prompts[-2]))
    )
