"""``promptstrat inbox post|abort|ls|setup`` (:data:`INBOX_ACTIONS`): steer a running agent through
its inbox, directory or PostgreSQL.

Parses and prints only: the store comes from ``--save-file``/``--thread``/``--root``/``--dsn``.
Imports no LangChain or LangGraph, even lazily: a script posting notices pays no start-up
cost for the agent's libraries (tests/test_cli_startup.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

from langchain_promptstrat.cli.common import EXIT_ERROR, PROG, Parser, UsageError
from langchain_promptstrat.inbox.contract import (
    InboxEntry,
    Lease,
    LeasingInbox,
    NoticeStore,
    notice_limits,
    printable_text,
)
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV, resolve_save_file
from langchain_promptstrat.inbox.postgres import DSN_ENV, PostgresInboxes

if TYPE_CHECKING:
    from langchain_promptstrat.inbox.contract import InboxBackend

INBOX_ACTIONS = {
    "post": ("deliver a notice", "deliver a notice to the agent's next model call"),
    "abort": ("ask it to stop", "ask the agent to stop at its next model call"),
    "ls": (
        "list its notices",
        "list pending, in-flight (claimed, not yet recorded) and delivered notices with their "
        "times",
    ),
    "setup": (
        "create the PostgreSQL tables",
        "create the PostgreSQL inbox's tables (once per database)",
    ),
}
"""Each ``inbox`` action: the few words ``promptstrat --help`` gives it, and its own line in
``promptstrat inbox``'s list."""


def add_inbox_commands(commands: argparse._SubParsersAction[Any], detailed: bool = True) -> None:
    """Add ``inbox`` and its actions (:data:`INBOX_ACTIONS`) to ``commands`` (the actions only when
    ``detailed``)."""
    summary = ", ".join(f"{name} ({words})" for name, (words, _) in INBOX_ACTIONS.items())
    inbox = commands.add_parser("inbox", help=f"steer a running agent through its inbox: {summary}")
    if not detailed:
        return
    actions = inbox.add_subparsers(dest="inbox_command", metavar="ACTION", parser_class=Parser)
    inbox.set_defaults(
        func=lambda args: _list_actions(inbox)
    )  # no action named: an action's own default replaces it

    def action(
        name: str,
        func: Callable[[argparse.Namespace], int],
        help_suffix: str = "",
        *,
        target: bool = True,
    ) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(
            name, help=INBOX_ACTIONS[name][1] + help_suffix
        )
        if target:
            group = parser.add_mutually_exclusive_group(required=True)
            group.add_argument(
                "--save-file",
                metavar="PATH",
                help="the conversation's save file; its inbox is the .inbox sibling",
            )
            group.add_argument(
                "--thread",
                metavar="THREAD_ID",
                help="a LangGraph thread id; its inbox lies under --root",
            )
            parser.add_argument(
                "--root",
                metavar="DIR",
                help=f"the inbox root for --thread (default: ${INBOX_ROOT_ENV})",
            )
        parser.add_argument(
            "--dsn",
            metavar="DSN",
            help=f"use the PostgreSQL inbox in this database (default: ${DSN_ENV}; "
            "without either, the directory inbox)",
        )
        parser.set_defaults(func=func)
        return parser

    post = action("post", _inbox_post)
    post.add_argument(
        "content", nargs="?", help="the notice text (default: read standard input; '-' too)"
    )
    post.add_argument(
        "--name",
        help="file name of the notice (default: UTC time and a random suffix, in arrival order)",
    )
    action("abort", _inbox_abort).add_argument(
        "--reason", default="", help="why; shown to whoever runs the agent"
    )
    action("ls", _inbox_ls, " (--json: with a preview)").add_argument(
        "--json",
        action="store_true",
        help="print a JSON array: state (pending, in-flight, delivered), name, posted and "
        "delivered "
        "(UTC, ISO 8601), size in bytes, preview; for in-flight claims also owner, claimed, "
        "age_seconds "
        "and claim (held, dead, expired)",
    )
    action("setup", _inbox_setup, target=False)


def _list_actions(inbox: argparse.ArgumentParser) -> int:
    """Print ``promptstrat inbox``'s usage and one line per action on standard error; return the
    usage error's status."""
    width = max(map(len, INBOX_ACTIONS))
    lines = [inbox.format_usage().strip(), "actions:"]
    lines += [f"  {name:<{width}}  {line}" for name, (_, line) in INBOX_ACTIONS.items()]
    lines.append(f"{PROG}: error: choose an action (see {inbox.prog} ACTION --help)")
    print("\n".join(lines), file=sys.stderr)
    return EXIT_ERROR


def _dsn(args: argparse.Namespace) -> str:
    return args.dsn if args.dsn is not None else os.environ.get(DSN_ENV, "")


def _inbox(args: argparse.Namespace) -> InboxBackend:
    if args.save_file is not None and args.root is not None:
        raise UsageError("--root goes with --thread, not with --save-file")
    if args.dsn is not None and args.root is not None:
        raise UsageError(
            "--root names a directory inbox and --dsn a PostgreSQL one; give one of them"
        )
    dsn = _dsn(args) if args.root is None else ""
    if dsn:
        inboxes = PostgresInboxes(dsn)
        return (
            inboxes.for_thread(args.thread)
            if args.thread is not None
            else inboxes.for_save_file(cast(str, args.save_file))
        )  # one is required
    return DirectoryInbox.for_save_file(
        resolve_save_file(args.save_file, thread_id=args.thread, root=args.root)
    )


def _inbox_setup(args: argparse.Namespace) -> int:
    dsn = _dsn(args)
    if not dsn:
        raise UsageError(f"name the database: --dsn DSN or ${DSN_ENV}")
    inboxes = PostgresInboxes(dsn)
    inboxes.setup()
    print(f"inbox tables ready (schema version {inboxes.schema_version()})")
    return 0


def _inbox_post(args: argparse.Namespace) -> int:
    store = _inbox(args)
    if args.content in (None, "-"):
        buffer = getattr(sys.stdin, "buffer", None)  # bytes, so the check is ours, not the locale's
        over_cap = (
            notice_limits()[2] + 1
        )  # enough for the store to refuse it with its own sentence, no more in memory
        data = (
            buffer.read(over_cap)
            if buffer is not None
            else sys.stdin.read(over_cap).encode("utf-8", "surrogateescape")
        )
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"standard input is not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x}); "
                "nothing posted"
            ) from None
    else:
        content = args.content
    print(store.post(content, name=args.name))
    return 0


def _inbox_abort(args: argparse.Namespace) -> int:
    print(_inbox(args).request_abort(args.reason))
    return 0


def _time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


CLAIM_STATES = {
    "held": "owner alive, in lease",
    "dead": "owner gone: the next pickup takes it over",
    "expired": "lease ran out: the next pickup takes it over",
}
"""What ``inbox ls`` says of an in-flight claim, by :attr:`Lease.state` (a claim of the listing
process counts as held)."""


def _age(seconds: float) -> str:
    """Return a duration as a person reads it in a listing: ``42s``, ``17m``, ``5h``, ``3d``."""
    seconds = max(0.0, seconds)
    for unit, size, up_to in (("s", 1, 120), ("m", 60, 7200), ("h", 3600, 172800)):
        if seconds < up_to:
            return f"{seconds // size:.0f}{unit}"
    return f"{seconds // 86400:.0f}d"


def _inbox_ls(args: argparse.Namespace) -> int:
    store = _inbox(args)
    problem = store.delivery_problem() if isinstance(store, NoticeStore) else None
    if problem is not None:  # listed anyway, so that a notice stuck behind it is seen
        print(f"{PROG}: warning: {printable_text(store.location)}: {problem}", file=sys.stderr)
    pending, delivered = store.pending_entries(), store.delivered_entries()
    # claimed by a reader, not yet recorded as delivered: listed so that a notice is never invisible
    claims: list[Lease] = []
    if isinstance(store, LeasingInbox) and problem is None:
        claims = store.in_flight(with_head=True)
    listed: list[tuple[str, InboxEntry, Lease | None]] = [
        *(("pending", entry, None) for entry in pending),
        *(("in-flight", lease.entry, lease) for lease in claims),
        *(("delivered", entry, None) for entry in delivered),
    ]
    now = time.time()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "state": state,
                        "name": printable_text(entry.name),
                        "posted": _time(entry.mtime),
                        "delivered": None
                        if entry.delivered_at is None
                        else _time(entry.delivered_at),
                        "size": entry.size,
                        "preview": entry.preview,
                        "owner": lease and printable_text(lease.owner),
                        "claimed": lease and _time(lease.leased_at),
                        "age_seconds": lease and round(max(0.0, now - lease.leased_at), 1),
                        "claim": lease and lease.listed_state,
                    }
                    for state, entry, lease in listed
                ],
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    if not listed:
        print(f"no notices in {printable_text(store.location)}")
    for (
        state,
        entry,
        lease,
    ) in listed:  # names and owners come from whoever wrote the files: escaped, never raw
        line = f"{state:<9}  {_time(entry.mtime)}  {printable_text(entry.name)}"
        if lease is not None:
            owner, state = printable_text(lease.owner), CLAIM_STATES[lease.listed_state]
            line += f"  claimed {_age(now - lease.leased_at)} ago by {owner} ({state})"
        print(line)
    return 0
