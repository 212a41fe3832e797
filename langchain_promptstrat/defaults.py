"""The package's default values: the simulation's, the token counter's, the cache rules.

A leaf (tests/test_architecture.py checks it), so the CLI's help prints them without loading
LangChain or tiktoken: must not import anything; nothing but these constants belongs here.
"""

from __future__ import annotations

DEFAULT_STRATEGIES: tuple[str, ...] = ("dedupe_outputs", "shorten_tools_epoch_stable", "inbox")
"""What ``prepare_prompt(messages)`` applies when neither the caller nor ``PROMPT_STRATEGY``
names a list."""

DEFAULT_TOOL_CALLS = 400
"""Tool calls of the simulated agent run."""

MAX_SIMULATED_CALLS = 10_000
"""The most tool calls ``simulate --calls`` builds a run of: its prompts grow with the square of
its calls (10,000 hold about 0.5 GB; 100 million would never finish)."""

LONG_RUN_CALLS = 2_000
"""A simulated run of at least this many tool calls shows its progress on standard error even
when that is not a terminal: building and replaying it take minutes."""

DEFAULT_CACHED_FRACTION = 0.1
"""Share of the input price billed for cached input tokens."""

SIMULATED_MAX_TOKENS = 60_000
"""Token target of the peers and of our ladder strategies (a 400-call run passes it at its 80th of
245 model calls)."""

DEFAULT_ENCODING = "cl100k_base"
"""tiktoken encoding a :class:`~langchain_promptstrat.tokens.TokenCounter` uses when none is
named."""

CACHE_RULES = ("prefix", "openai", "anthropic")
"""The cache rules ``simulate --cache`` knows (see :mod:`langchain_promptstrat.cache_rules`)."""

BILLS = ("package", "provider")
"""Whose count a replay of transcripts bills (``simulate --bill``): the package's, or the provider's
where a transcript carries usage."""
