"""Specification of PromptStrategy as a LangChain Runnable: LCEL, batch, async, reports."""

from __future__ import annotations

import asyncio
import logging

import pytest
from conversations import ai_step
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda

from langchain_promptstrat import ShortenTools, check_tool_pairs

TIGHT = {"full_tool_outputs": 1, "max_tool_calls": 3, "max_tool_chars": 0}


@pytest.fixture
def agent_run():
    """A task then eight single-call steps with 2,000-character outputs."""
    msgs = [SystemMessage("sys"), HumanMessage("task")]
    for i in range(8):
        msgs += [
            ai_step([("f", {"q": str(i)})], i, mirror="plain"),
            ToolMessage("r" * 2000, tool_call_id=f"call_{i}"),
        ]
    return msgs


class TestRunnableInterface:
    def test_invoke_returns_a_new_message_list(self, agent_run):
        """invoke returns list[BaseMessage] with the rule applied."""
        out = ShortenTools(**TIGHT).invoke(agent_run)
        assert sum(isinstance(m, ToolMessage) for m in out) == 3 and check_tool_pairs(out) == []

    def test_batch_applies_to_each_input(self, agent_run):
        """batch transforms each conversation independently."""
        outs = ShortenTools(**TIGHT).batch([agent_run, agent_run[:4]])
        assert [sum(isinstance(m, ToolMessage) for m in o) for o in outs] == [3, 1]

    def test_ainvoke_and_astream_match_invoke(self, agent_run):
        """The async forms give the same output as invoke."""
        strategy = ShortenTools(**TIGHT)

        async def run():
            streamed = [chunk async for chunk in strategy.astream(agent_run)]
            return await strategy.ainvoke(agent_run), streamed

        out, streamed = asyncio.run(run())
        assert out == strategy.invoke(agent_run) and streamed == [out]

    def test_strategies_compose_with_pipe(self, agent_run):
        """Two strategies piped together apply in sequence."""
        chain = ShortenTools(**TIGHT) | ShortenTools(
            full_tool_outputs=0, max_tool_calls=1, max_tool_chars=0
        )
        assert sum(isinstance(m, ToolMessage) for m in chain.invoke(agent_run)) == 1

    def test_drops_into_an_lcel_chain_before_a_chat_model(self, agent_run):
        """prompt | strategy | model: the model receives the compacted messages."""
        seen = []
        model = FakeMessagesListChatModel(responses=[AIMessage("ok")])
        spy = RunnableLambda(lambda msgs: seen.append(msgs) or msgs)
        prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history")])
        answer = (prompt | ShortenTools(**TIGHT) | spy | model).invoke({"history": agent_run})
        assert answer.content == "ok"
        assert sum(isinstance(m, ToolMessage) for m in seen[0]) == 3

    def test_accepts_dicts_and_tuples(self):
        """Input in dict or tuple form is read with convert_to_messages."""
        out = ShortenTools().invoke([("system", "s"), {"role": "user", "content": "hi"}])
        assert [m.type for m in out] == ["system", "human"]


class TestReports:
    def test_report_is_logged_at_debug(self, agent_run, caplog):
        """Each call logs its report on the langchain_promptstrat logger at DEBUG."""
        with caplog.at_level(logging.DEBUG, logger="langchain_promptstrat"):
            ShortenTools(**TIGHT).invoke(agent_run)
        record = [r for r in caplog.records if r.name == "langchain_promptstrat"][0]
        assert (
            record.levelno == logging.DEBUG and "'dropped': 5" in record.getMessage()
        )  # 8 calls, max_tool_calls 3

    def test_report_reaches_astream_events_as_a_custom_event(self, agent_run):
        """Inside a run, the report is dispatched as the custom event 'promptstrat'."""
        chain = ShortenTools(**TIGHT) | RunnableLambda(lambda m: m)

        async def collect():
            return [
                e
                async for e in chain.astream_events(agent_run, version="v2")
                if e["event"] == "on_custom_event"
            ]

        events = asyncio.run(collect())
        assert [e["name"] for e in events] == ["promptstrat"]
        assert (
            events[0]["data"]["strategy"] == "shorten_tools"
            and events[0]["data"]["dropped"] == 8 - 3
        )  # calls - max_tool_calls

    def test_run_name_is_the_strategy_name(self):
        """Traces show the registry key as the run name."""
        assert ShortenTools().get_name() == "shorten_tools"
