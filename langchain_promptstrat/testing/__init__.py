"""Offline test doubles (being split into modules: see scripted_model.py)."""

from __future__ import annotations

from langchain_promptstrat.testing.scripted_model import (
    DEFAULT_FINAL_ANSWER,
    Mirror,
    ScriptedChatModel,
    ScriptStep,
    build_agent_run,
    iter_agent_run,
    make_sized_tool,
)

__all__ = [
    "DEFAULT_FINAL_ANSWER",
    "Mirror",
    "ScriptStep",
    "ScriptedChatModel",
    "build_agent_run",
    "iter_agent_run",
    "make_sized_tool",
]
