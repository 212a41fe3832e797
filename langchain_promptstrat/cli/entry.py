"""The ``promptstrat`` entry point: the top-level parser and :func:`main`, which turns every error into one line and an exit status.

:func:`build_parser` adds each command group from its own module (``simulate_command``,
``conversation_commands``, ``inbox_commands``), detailed only for the group the command
line names, so ``--help`` answers without importing what other groups' options need.
:func:`main` runs the chosen command and is the one place that catches: the package's
errors, ``OSError`` and argparse's rejections print as ``promptstrat: error: ...`` with
exit status 2, warnings as one ``promptstrat: warning: ...`` line. No command logic here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from langchain_promptstrat.cli.common import EXIT_ERROR, PROG, Parser, UsageError, one_line
from langchain_promptstrat.cli.conversation_commands import add_conversation_commands
from langchain_promptstrat.cli.inbox_commands import add_inbox_commands
from langchain_promptstrat.cli.simulate_command import add_simulate_commands
from langchain_promptstrat.errors import PromptStratError

# Imports inside functions exist only to keep `promptstrat --help` (and each command's
# --help) from loading LangChain, LangGraph or tiktoken (tests/test_cli_startup.py).

__all__ = ["build_parser", "main"]


def build_parser(detailed: bool = True, command: str | None = None) -> argparse.ArgumentParser:
    """Return the ``promptstrat`` parser; each command group adds its subcommands with a ``func`` default.

    ``detailed=False`` leaves out the commands' options (and the imports their defaults
    need): enough to answer ``promptstrat --help`` and ``--version`` at once. A
    ``command`` (the first word of the command line) details only its own group, so
    ``promptstrat inbox ...`` (its help included) never imports LangChain for the options
    of ``simulate`` or ``stats``.
    """
    parser = Parser(prog=PROG, description="Prompt strategies for long LangChain and LangGraph agent runs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    add_simulate_commands(commands, detailed and command in (None, "simulate"))
    add_conversation_commands(commands, detailed and command in (None, "apply", "stats"))
    add_inbox_commands(commands, detailed and command in (None, "inbox"))
    return parser


def _version() -> str:
    """Return the installed distribution's version (importlib.metadata: no package import needed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("langchain-promptstrat")
    except PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``promptstrat`` with ``argv`` (default ``sys.argv[1:]``) and return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(detailed=not _top_level_only(argv), command=argv[0] if argv else None)
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


def _top_level_only(argv: list[str]) -> bool:
    """Return whether ``argv`` asks only the top-level parser (``--help``, ``--version``, nothing)."""
    return not argv or all(arg in ("-h", "--help", "--version") for arg in argv)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: str | None = None) -> None:
    print(f"{PROG}: warning: {one_line(Exception(str(message)))}", file=sys.stderr)
