"""What every ``promptstrat`` command shares: the program name, exit codes, the one-line error, shared options.

Holds the argparse parser class that turns a rejected command line into a
:class:`UsageError` (printed as one line like every other error, never argparse's usage
dump), :func:`one_line` that flattens an error to the line the CLI prints, and the option
values and token-counter options more than one command takes. Must stay light: nothing
here may import LangChain, LangGraph or tiktoken at module level, and no command logic
belongs here.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, NoReturn

from langchain_promptstrat.errors import PromptStratError

if TYPE_CHECKING:
    from langchain_promptstrat.tokens import TokenCounter

# Imports inside functions exist only to keep `promptstrat --help` (and each command's
# --help) from loading LangChain, LangGraph or tiktoken (tests/test_cli_startup.py).

__all__ = [
    "EXIT_ABORTED",
    "EXIT_ERROR",
    "PROG",
    "Parser",
    "UsageError",
    "add_counter_options",
    "one_line",
    "positive_int",
    "token_counter",
]

PROG = "promptstrat"
EXIT_ERROR = 2
EXIT_ABORTED = 3
"""``apply`` found an abort request in the inbox: not a usage error, the agent was asked to stop."""


class UsageError(Exception):
    """A command line argparse rejected; printed as one line like every other error."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, PromptStratError) and exc.filename is not None:
        text = f"{exc.strerror or exc}: {exc.filename}"
    else:
        text = str(exc)
    return " ".join(text.split())


# --------------------------------------------------------------------------- option values


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def add_counter_options(parser: argparse.ArgumentParser) -> None:
    from langchain_promptstrat.defaults import DEFAULT_ENCODING

    counter = parser.add_mutually_exclusive_group()
    counter.add_argument("--encoding", metavar="NAME", help=f"tiktoken encoding that counts tokens (default: {DEFAULT_ENCODING})")
    counter.add_argument("--model", metavar="NAME", help="count tokens with this model's encoding (o200k_base for current OpenAI models)")


def token_counter(args: argparse.Namespace) -> TokenCounter:
    from langchain_promptstrat.tokens import TokenCounter

    return TokenCounter(args.encoding, model=args.model)
