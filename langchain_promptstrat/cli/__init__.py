"""The ``promptstrat`` command: parse, call, print; nothing else.

``simulate`` replays a long simulated agent run through strategies and prints what each
sends and costs; ``apply`` and ``stats`` read a conversation file; ``inbox`` steers a running
agent. Every error the package raises on purpose (and any ``OSError``) is printed as one
line, ``promptstrat: error: ...``, with exit status 2 and no traceback; a warning is one
line too, ``promptstrat: warning: ...``. ``apply`` that meets an abort request in the inbox
exits with status 3 (``promptstrat: aborted: ...``): the agent was asked to stop; the notices
it consumed before the abort are printed at the end of the conversation, never swallowed.

The modules: ``entry`` (the parser and :func:`main`, the console script's target),
``simulate_command``, ``conversation_commands`` (``apply``, ``stats``),
``inbox_commands``, and ``common`` (program name, exit codes, the one-line error, shared
options). The defaults the help shows live in :mod:`langchain_promptstrat.defaults`,
which imports nothing, so ``--help`` never loads LangChain.
"""

from __future__ import annotations

from langchain_promptstrat.cli.entry import build_parser, main

__all__ = ["build_parser", "main"]
