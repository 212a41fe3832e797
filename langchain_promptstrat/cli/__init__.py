"""The ``promptstrat`` command: :func:`build_parser` and :func:`main`, which turns every error into one line and an exit status.

Each command group lives in its own module (``simulate_command``, ``conversation_commands``
for ``apply`` and ``stats``, ``inbox_commands``; ``common`` holds what they share) and is
detailed only when the command line names it, so ``--help`` never loads LangChain
(tests/test_cli_startup.py). An error is one line, ``promptstrat: error: ...``, exit status 2
(an abort request met by ``apply``: 3); what the commands print is in docs/cli.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from langchain_promptstrat.cli.common import EXIT_ERROR, PROG, Parser, UsageError, one_line
from langchain_promptstrat.cli.conversation_commands import add_conversation_commands
from langchain_promptstrat.cli.inbox_commands import add_inbox_commands
from langchain_promptstrat.cli.simulate_command import add_simulate_commands
from langchain_promptstrat.errors import PromptStratError

__all__ = ["build_parser", "main"]


def build_parser(detailed: bool = True, command: str | None = None) -> argparse.ArgumentParser:
    """Return the ``promptstrat`` parser: with ``detailed=False`` no command's options, else only the group ``command`` names (all without one)."""
    try:
        installed = version("langchain-promptstrat")
    except PackageNotFoundError:
        installed = "unknown (not installed)"
    parser = Parser(prog=PROG, description="Prompt strategies for long LangChain and LangGraph agent runs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    add_simulate_commands(commands, detailed and command in (None, "simulate"))
    add_conversation_commands(commands, detailed and command in (None, "apply", "stats"))
    add_inbox_commands(commands, detailed and command in (None, "inbox"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``promptstrat`` with ``argv`` (default ``sys.argv[1:]``) and return the exit status: 2 and one line on any error."""
    argv = sys.argv[1:] if argv is None else list(argv)
    top_level_only = all(arg in ("-h", "--help", "--version") for arg in argv)
    parser = build_parser(detailed=not top_level_only, command=argv[0] if argv else None)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            args = parser.parse_args(argv)
            func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
            if func is None:
                group = getattr(args, "command", None)
                raise UsageError(f"choose an action for {PROG} {group}" if group else "choose a command (see promptstrat --help)")
            return func(args)
        except SystemExit as exc:  # --help
            return exc.code if isinstance(exc.code, int) else 0
        except BrokenPipeError:  # the reader went away (| head): nothing left to tell it
            with contextlib.suppress(Exception):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            return 1
        except (UsageError, PromptStratError, OSError) as exc:
            print(f"{PROG}: error: {one_line(exc)}", file=sys.stderr)
            return EXIT_ERROR
        except KeyboardInterrupt:
            return 130


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: str | None = None) -> None:
    print(f"{PROG}: warning: {one_line(Exception(str(message)))}", file=sys.stderr)
