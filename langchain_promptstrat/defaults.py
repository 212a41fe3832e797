"""The package's default values: the simulation's, the token counter's, the cache rules.

The core modules that use them (``simulate``, ``tokens``, ``cache_rules``) import them from
here, and the CLI shows them in its help. They live in a module that imports nothing (a
leaf, checked by tests/test_architecture.py), so ``promptstrat apply --help`` (and
``stats``, ``simulate``) can print them without loading LangChain or tiktoken. Must not
import anything of the package or any third-party module; nothing but these constants
belongs here.
"""

from __future__ import annotations


DEFAULT_TOOL_CALLS = 400
"""Tool calls of the simulated agent run."""

DEFAULT_CACHED_FRACTION = 0.1
"""Share of the input price billed for cached input tokens."""

DEFAULT_MAX_TOKENS = 60_000
"""Token target of the peers and of our ladder strategies.

A 400-call run (seed 0) reaches about 200,000 tokens unchanged and passes 60,000 at its
80th of 245 model calls, so the peers act on two thirds of it; ``shorten_tools`` with its
defaults settles around 30,000.
"""

DEFAULT_ENCODING = "cl100k_base"
"""tiktoken encoding a :class:`~langchain_promptstrat.tokens.TokenCounter` uses when none is named."""

CACHE_RULES = ("prefix", "openai", "anthropic")
"""The cache rules ``simulate --cache`` knows (see :mod:`langchain_promptstrat.cache_rules`)."""
