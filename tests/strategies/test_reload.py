"""A conversation loaded again (new message objects, equal content) is the same conversation for the replaying strategies."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage, ToolMessage, messages_from_dict, messages_to_dict

from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.testing import iter_agent_run

STRATEGIES = {
    "shorten_tools_epoch_stable": lambda: ShortenToolsEpochStable(max_tokens=12_000),
    "ladder": lambda: CompactionLadder(["tool_results", "sliding_window"], max_tokens=12_000),
}


def reloaded(messages: list[BaseMessage]) -> list[BaseMessage]:
    return messages_from_dict(messages_to_dict(messages))


def digest_of(result: Any) -> tuple[list[Any], dict[str, Any]]:
    return [m.model_dump() for m in result.messages], result.report.as_dict()


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_a_reloaded_conversation_gets_the_prompt_and_report_of_the_warm_one(name):
    """A checkpoint hands the strategy equal new objects: the warm object must answer exactly as for the objects it saw."""
    prompts = list(iter_agent_run(150, seed=3))
    warm = STRATEGIES[name]()
    for prompt in prompts[:-1]:
        warm.compact(list(prompt))
    expected = STRATEGIES[name]().compact(list(prompts[-1]))
    again = warm.compact(reloaded(prompts[-1]))
    assert digest_of(again) == digest_of(expected)
    assert digest_of(warm.compact(reloaded(prompts[-1]) + [])) == digest_of(expected)


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_an_old_message_changed_under_the_same_id_is_not_taken_for_the_remembered_one(name):
    """LangGraph replaces a message by id: a reloaded history with an old output rewritten must be replayed, not recalled."""
    prompts = list(iter_agent_run(150, seed=4))
    warm = STRATEGIES[name]()
    for prompt in prompts:
        warm.compact(list(prompt))
    changed = reloaded(prompts[-1])
    k = next(i for i, m in enumerate(changed) if isinstance(m, ToolMessage))
    changed[k] = changed[k].model_copy(update={"content": "rewritten " * 2_000})
    assert digest_of(warm.compact(changed)) == digest_of(STRATEGIES[name]().compact(list(changed)))
