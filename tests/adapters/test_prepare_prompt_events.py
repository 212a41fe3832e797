"""prepare_prompt called inside a LangChain run reports each strategy as the run's `promptstrat`
event."""

from __future__ import annotations

import asyncio

from langchain_core.runnables import RunnableLambda

from langchain_promptstrat import prepare_prompt
from langchain_promptstrat.testing import build_agent_run


def test_prepare_prompt_inside_a_run_emits_one_event_per_strategy():
    """A RunnableLambda calling prepare_prompt shows a promptstrat event for each strategy, as the
    Runnable does."""
    conversation = build_agent_run(40, seed=3)
    chain = RunnableLambda(lambda messages: prepare_prompt(messages, "shorten_tools,none"))

    async def collect():
        return [
            e
            async for e in chain.astream_events(conversation, version="v2")
            if e["event"] == "on_custom_event"
        ]

    events = asyncio.run(collect())
    assert [(e["name"], e["data"]["strategy"]) for e in events] == [
        ("promptstrat", "shorten_tools"),
        ("promptstrat", "none"),
    ]


def test_prepare_prompt_outside_a_run_dispatches_nothing_and_does_not_fail():
    """Outside any run there is nothing to attach an event to: the prompt is returned all the
    same."""
    conversation = build_agent_run(5, seed=3)
    assert prepare_prompt(conversation, "none") == conversation
