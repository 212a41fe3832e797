"""Offline test doubles: a scripted tool-calling chat model, a sized tool, and builders
of long, realistic agent conversations.

Everything here is deterministic: the same arguments and seed give the same messages,
ids included, in every process (no ``hash()``, no uuids, no clock). Nothing needs a
network or an API key, so tests, benchmarks, ``promptstrat simulate`` and notebooks
can replay agent runs of hundreds or thousands of tool calls in seconds.

Two ways to get a long run:

* :func:`build_agent_run` / :func:`iter_agent_run` build the message list directly,
  fast (5,000 tool calls well under a second), without running any agent.
* :meth:`ScriptedChatModel.long_run` plus :func:`make_sized_tool` drive a real
  ``langchain.agents.create_agent`` or ``langgraph.prebuilt.create_react_agent``
  graph end to end, so middleware and hooks run exactly as in production.

Import from here; the modules behind it are ``scripted_model`` (the chat model),
``agent_run`` (the run builders), ``tools`` (the simulated tools and the sized tool) and
``text_pools`` (the synthetic text they share). This module only re-exports.
"""

from __future__ import annotations

from langchain_promptstrat.testing.agent_run import Mirror, build_agent_run, iter_agent_run
from langchain_promptstrat.testing.scripted_model import DEFAULT_FINAL_ANSWER, ScriptedChatModel, ScriptStep
from langchain_promptstrat.testing.tools import make_sized_tool

__all__ = [
    "DEFAULT_FINAL_ANSWER",
    "Mirror",
    "ScriptStep",
    "ScriptedChatModel",
    "build_agent_run",
    "iter_agent_run",
    "make_sized_tool",
]
