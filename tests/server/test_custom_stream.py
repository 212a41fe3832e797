"""Strategy reports on LangGraph's ``stream_mode="custom"``."""

from __future__ import annotations

import json

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent

from langchain_promptstrat import pre_model_hook
from langchain_promptstrat.testing import ScriptedChatModel, make_sized_tool


def test_every_model_call_streams_its_report_on_the_custom_stream():
    """A client of stream_mode="custom" (the SDK's choice on a server) sees one small report per
    strategy call."""
    model = ScriptedChatModel.long_run(5)
    agent = create_react_agent(
        model,
        [make_sized_tool()],
        pre_model_hook=pre_model_hook("shorten_tools"),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "c"}, "recursion_limit": 100}
    chunks = list(agent.stream({"messages": [("user", "go")]}, config, stream_mode="custom"))
    reports = [c["promptstrat"] for c in chunks if isinstance(c, dict) and "promptstrat" in c]
    assert len(reports) == model.cursor == 6
    assert all(
        r["strategy"] == "shorten_tools" and isinstance(r["chars_before"], int) for r in reports
    )
    assert max(len(json.dumps(r)) for r in reports) < 2000
