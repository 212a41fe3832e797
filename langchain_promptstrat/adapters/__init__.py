"""The graph front ends over the core: the LangGraph hook, inbox node and ``read_back`` tool
(``langgraph``), the ``create_agent`` middleware (``middleware``).

Nothing in the core imports them (``tests/test_architecture.py``).
"""
