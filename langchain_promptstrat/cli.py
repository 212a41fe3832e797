"""The ``promptstrat`` command: parse, call, print; nothing else.

Every error the package raises on purpose (and any ``OSError``) is printed as one line,
``promptstrat: error: ...``, with exit status 2 and no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import NoReturn

from langchain_promptstrat.errors import PromptStratError
from langchain_promptstrat.inbox_store import INBOX_ROOT_ENV, DirectoryInbox, resolve_save_file

__all__ = ["build_parser", "main"]

PROG = "promptstrat"
EXIT_ERROR = 2


class _UsageError(Exception):
    """A command line argparse rejected; printed as one line like every other error."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    """Return the ``promptstrat`` parser; each command group adds its subcommands with a ``func`` default."""
    parser = _Parser(prog=PROG, description="Prompt strategies for long LangChain and LangGraph agent runs.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add_inbox_commands(commands)
    return parser


# --------------------------------------------------------------------------- inbox


def _add_target(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--save-file", metavar="PATH", help="the conversation's save file; its inbox is the .inbox sibling")
    target.add_argument("--thread", metavar="THREAD_ID", help="a LangGraph thread id; its inbox lies under --root")
    parser.add_argument("--root", metavar="DIR", help=f"the inbox root for --thread (default: ${INBOX_ROOT_ENV})")


def add_inbox_commands(commands: argparse._SubParsersAction) -> None:
    """Add ``inbox post``, ``inbox abort`` and ``inbox ls`` to ``commands``."""
    inbox = commands.add_parser("inbox", help="post notices to a running agent, ask it to stop, list its inbox")
    actions = inbox.add_subparsers(dest="inbox_command", metavar="ACTION", parser_class=_Parser)

    post = actions.add_parser("post", help="deliver a notice to the agent's next model call")
    _add_target(post)
    post.add_argument("content", nargs="?", help="the notice text (default: read standard input; '-' too)")
    post.add_argument("--name", help="file name of the notice (default: UTC time and a random suffix, in arrival order)")
    post.set_defaults(func=_inbox_post)

    abort = actions.add_parser("abort", help="ask the agent to stop at its next model call")
    _add_target(abort)
    abort.add_argument("--reason", default="", help="why; shown to whoever runs the agent")
    abort.set_defaults(func=_inbox_abort)

    ls = actions.add_parser("ls", help="list pending and delivered notices with their times")
    _add_target(ls)
    ls.set_defaults(func=_inbox_ls)


def _inbox(args: argparse.Namespace) -> DirectoryInbox:
    if args.save_file is not None and args.root is not None:
        raise _UsageError("--root goes with --thread, not with --save-file")
    return DirectoryInbox.for_save_file(resolve_save_file(args.save_file, thread_id=args.thread, root=args.root))


def _inbox_post(args: argparse.Namespace) -> int:
    store = _inbox(args)
    content = sys.stdin.read() if args.content in (None, "-") else args.content
    print(store.post(content, name=args.name))
    return 0


def _inbox_abort(args: argparse.Namespace) -> int:
    print(_inbox(args).request_abort(args.reason))
    return 0


def _time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _inbox_ls(args: argparse.Namespace) -> int:
    store = _inbox(args)
    pending, delivered = store.pending_entries(), store.delivered_entries()
    if not pending and not delivered:
        print(f"no notices in {store.path}")
    for state, entries in (("pending", pending), ("delivered", delivered)):
        for entry in entries:
            print(f"{state:<9}  {_time(entry.mtime)}  {entry.name}")
    return 0


# --------------------------------------------------------------------------- entry point


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``promptstrat`` with ``argv`` (default ``sys.argv[1:]``) and return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        func = getattr(args, "func", None)
        if func is None:
            group = getattr(args, "command", None)
            raise _UsageError(f"choose an action for {PROG} {group}" if group else "choose a command (see promptstrat --help)")
        return func(args)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except (_UsageError, PromptStratError, OSError) as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, PromptStratError) and exc.filename is not None:
        text = f"{exc.strerror or exc}: {exc.filename}"
    else:
        text = str(exc)
    return " ".join(text.split())
