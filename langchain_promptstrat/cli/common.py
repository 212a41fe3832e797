"""What every ``promptstrat`` command shares: the program name, exit codes, the one-line error,
option values.

Must stay light: nothing here imports LangChain, LangGraph or tiktoken at module level
(``--help`` answers without them, tests/test_cli_startup.py).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, NoReturn

from langchain_promptstrat.defaults import DEFAULT_ENCODING
from langchain_promptstrat.errors import PromptStratError

if TYPE_CHECKING:
    from langchain_promptstrat.tokens import TokenCounter

PROG = "promptstrat"
EXIT_ERROR = 2
EXIT_ABORTED = 3
"""``apply`` found an abort request in the inbox: not a usage error, the agent was asked to stop."""


class UsageError(Exception):
    """A command line argparse rejected; printed as one line like every other error."""


class Parser(argparse.ArgumentParser):
    """An argparse parser whose rejection is a :class:`UsageError`, never argparse's usage dump."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def one_line(exc: BaseException) -> str:
    """Return the error as the one line the CLI prints (an ``OSError`` with the file it names)."""
    if (
        isinstance(exc, OSError)
        and not isinstance(exc, PromptStratError)
        and exc.filename is not None
    ):
        text = f"{exc.strerror or exc}: {exc.filename}"
    else:
        text = str(exc)
    return " ".join(text.split())


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def add_counter_options(parser: argparse.ArgumentParser) -> None:
    counter = parser.add_mutually_exclusive_group()
    counter.add_argument(
        "--encoding",
        metavar="NAME",
        help=f"tiktoken encoding that counts tokens (default: {DEFAULT_ENCODING})",
    )
    counter.add_argument(
        "--model",
        metavar="NAME",
        help="count tokens with this model's encoding (o200k_base for current OpenAI models)",
    )


def token_counter(args: argparse.Namespace) -> TokenCounter:
    from langchain_promptstrat.tokens import (
        TokenCounter,
    )  # loads tiktoken: only when a command runs

    return TokenCounter(args.encoding, model=args.model)
