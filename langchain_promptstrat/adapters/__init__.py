"""Thin adapters over the core: the LangGraph pre-model hook and inbox node, the ``create_agent`` middleware.

They import the core (``strategy``, ``registry``, ``inbox``, ...) and nothing in the core
imports them (``tests/test_architecture.py``). The Runnable surface is the core's own
(:class:`~langchain_promptstrat.strategy.PromptStrategy`).
"""
