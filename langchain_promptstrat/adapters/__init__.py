"""Thin adapters: the Runnable base, LangGraph hooks and nodes, the create_agent middleware."""
