"""Offline, deterministic test doubles: a scripted tool-calling chat model, a sized tool, and builders of long agent conversations.

The same arguments and seed give the same messages, ids included, in every process; no
network or API key. :func:`build_agent_run` / :func:`iter_agent_run` build a run directly;
:meth:`ScriptedChatModel.long_run` with :func:`make_sized_tool` drives a real agent graph.
Import from here (``scripted_model``, ``tools``, ``text_pools`` are behind it).
"""

from __future__ import annotations

from langchain_promptstrat.testing.scripted_model import DEFAULT_FINAL_ANSWER as DEFAULT_FINAL_ANSWER
from langchain_promptstrat.testing.scripted_model import ScriptedChatModel as ScriptedChatModel, ScriptStep as ScriptStep
from langchain_promptstrat.testing.tools import Mirror as Mirror, build_agent_run as build_agent_run
from langchain_promptstrat.testing.tools import iter_agent_run as iter_agent_run, make_sized_tool as make_sized_tool
