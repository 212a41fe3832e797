"""Offline, deterministic test doubles: a scripted tool-calling chat model, a sized tool, and
synthetic agent runs (the same seed gives the same messages, ids included)."""

from __future__ import annotations

from langchain_promptstrat.testing.scripted_model import ScriptedChatModel as ScriptedChatModel
from langchain_promptstrat.testing.tools import (
    build_agent_run as build_agent_run,
)
from langchain_promptstrat.testing.tools import (
    iter_agent_run as iter_agent_run,
)
from langchain_promptstrat.testing.tools import make_sized_tool as make_sized_tool
