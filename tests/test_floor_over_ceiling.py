"""A prompt whose floor alone is over the ceiling: sent, said in every report, warned once.

The floor is what no strategy drops: the system prompt, the task, the newest user message and
the newest step, its outputs shortened. Under a ceiling smaller than that, the README's "never
exceeds the context ceiling" cannot hold; the package sends the floor and says so, where a
user looks: the report (``floor_over_ceiling``), the ``langchain_promptstrat`` logger, the CLI.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from langchain_promptstrat import PromptStrategyMiddleware, pre_model_hook
from langchain_promptstrat.messages import check_tool_pairs
from langchain_promptstrat.registry import apply_strategies
from langchain_promptstrat.testing import ScriptedChatModel, iter_agent_run, make_sized_tool
from langchain_promptstrat.tokens import TokenCounter

FLOOR_WARNING = "the prompt's floor is over the context ceiling"
CEILING = 100
"""Over the system prompt and the task of the simulated run (about 60 tokens), under any of its
steps, even shortened."""


def prompts_of_one_run(calls: int = 8) -> list[list[BaseMessage]]:
    """Return the prompts of one simulated run whose task no other test uses (warnings are
    remembered per conversation)."""
    return list(iter_agent_run(calls, seed=3, task=f"Find why uploads fail ({uuid.uuid4()})."))


def floor_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "langchain_promptstrat" and FLOOR_WARNING in r.getMessage()
    ]


def test_every_call_over_the_ceiling_says_so_in_its_report_and_the_logger_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each model call of a run whose floor is over the ceiling reports floor_over_ceiling with the
    tokens sent; the logger warns once for the run, not once per call (an agent's loop would bury
    it); the prompt keeps its pairs."""
    counter = TokenCounter()
    with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
        for prompt in prompts_of_one_run()[1:]:
            sent, reports = apply_strategies(prompt, max_tokens=CEILING)
            bounded = next(r for r in reports if r.strategy == "shorten_tools_epoch_stable").details
            assert bounded["floor_over_ceiling"] is True and bounded["met"] is False
            assert (
                bounded["tokens_after"] == counter(sent) > CEILING and check_tool_pairs(sent) == []
            )
    (warning,) = floor_warnings(caplog)
    assert f"against a ceiling of {CEILING}" in warning and "raise max_tokens" in warning


def test_a_prompt_under_the_ceiling_carries_no_such_field_and_warns_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Only a floor over the ceiling is flagged: a prompt the default brought under it has no
    floor_over_ceiling."""
    with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
        _, reports = apply_strategies(prompts_of_one_run()[-1], max_tokens=100_000)
    details = next(r for r in reports if r.strategy == "shorten_tools_epoch_stable").details
    assert (
        details["met"] is True
        and "floor_over_ceiling" not in details
        and floor_warnings(caplog) == []
    )


def test_another_conversation_or_another_ceiling_is_warned_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Once per conversation and ceiling: a second run, or the same run under a new ceiling, is a
    new warning."""
    first, second = prompts_of_one_run()[-1], prompts_of_one_run()[-1]
    with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
        for prompt, ceiling in (
            (first, CEILING),
            (first, CEILING),
            (second, CEILING),
            (first, CEILING + 1),
        ):
            apply_strategies(prompt, max_tokens=ceiling)
    assert len(floor_warnings(caplog)) == 3


def test_the_pre_model_hook_sends_the_floor_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    """The hook of create_react_agent or a StateGraph gives the model the floor, pairs intact, and
    warns once."""
    hook = pre_model_hook(max_tokens=CEILING)
    with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
        for prompt in prompts_of_one_run()[1:]:
            sent = hook({"messages": prompt}, {})["llm_input_messages"]
            assert (
                isinstance(sent[-1], ToolMessage)
                and check_tool_pairs(sent) == []
                and TokenCounter()(sent) > CEILING
            )
    assert len(floor_warnings(caplog)) == 1


def test_the_middleware_warns_once_for_a_run_whose_floor_is_over_its_ceiling(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """create_agent with PromptStrategyMiddleware(max_tokens=400) and a 6,000-character tool (its
    schema 321 tokens, counted too): every request after a tool call is the floor, over 400 tokens,
    and the run's log holds one warning."""
    ceiling = 400
    model = ScriptedChatModel.long_run(6)
    agent = create_agent(
        model,
        [make_sized_tool("fetch", sizes=6_000)],
        system_prompt="sys",
        middleware=[PromptStrategyMiddleware(max_tokens=ceiling)],
    )
    task: dict[str, Any] = {"messages": [HumanMessage(f"Find why uploads fail ({uuid.uuid4()}).")]}
    with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
        agent.invoke(task, {"recursion_limit": 100})
    assert all(check_tool_pairs(call) == [] for call in model.calls)
    assert isinstance(model.calls[-1][-1], ToolMessage)
    (warning,) = floor_warnings(caplog)
    assert f"against a ceiling of {ceiling}" in warning
