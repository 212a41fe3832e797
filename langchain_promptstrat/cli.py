"""The ``promptstrat`` command: parse, call, print; nothing else.

``simulate`` replays a long simulated agent run through strategies and prints what each
sends and costs; ``apply`` and ``stats`` read a conversation file; ``inbox`` steers a running
agent. Every error the package raises on purpose (and any ``OSError``) is printed as one
line, ``promptstrat: error: ...``, with exit status 2 and no traceback; a warning is one
line too, ``promptstrat: warning: ...``. ``apply`` that meets an abort request in the inbox
exits with status 3 (``promptstrat: aborted: ...``): the agent was asked to stop.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import secrets
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

from langchain_promptstrat.errors import InboxAborted, InvalidMessagesError, PromptStratError
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV, resolve_save_file
from langchain_promptstrat.inbox.postgres import PostgresInboxes
from langchain_promptstrat.inbox.postgres_connection import DSN_ENV
from langchain_promptstrat.ceiling import DEFAULT_CEILING, resolve_ceiling
from langchain_promptstrat.text_table import fit_lines, render_table, terminal_width

if TYPE_CHECKING:
    from langchain_promptstrat.inbox.contract import InboxBackend
    from langchain_promptstrat.report import StrategyReport
    from langchain_promptstrat.simulate import SimulationResult
    from langchain_promptstrat.tokens import TokenCounter

# LangChain, LangGraph and tiktoken are imported by the commands that use them, not here:
# `promptstrat --help` and `--version` answer without them (tests/test_cli_startup.py).


def simulate(*args: Any, **kwargs: Any) -> SimulationResult:
    """Run :func:`langchain_promptstrat.simulate.simulate` (imported on first use)."""
    from langchain_promptstrat.simulate import simulate as run

    return run(*args, **kwargs)


def plot(*args: Any, **kwargs: Any) -> Any:
    """Run :func:`langchain_promptstrat.simulate.plot` (imported on first use)."""
    from langchain_promptstrat.simulate import plot as draw

    return draw(*args, **kwargs)


__all__ = ["build_parser", "main"]

PROG = "promptstrat"
EXIT_ERROR = 2
EXIT_ABORTED = 3
"""``apply`` found an abort request in the inbox: not a usage error, the agent was asked to stop."""


class _UsageError(Exception):
    """A command line argparse rejected; printed as one line like every other error."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see {self.prog} --help)")


def build_parser(detailed: bool = True, command: str | None = None) -> argparse.ArgumentParser:
    """Return the ``promptstrat`` parser; each command group adds its subcommands with a ``func`` default.

    ``detailed=False`` leaves out the commands' options (and the imports their defaults
    need): enough to answer ``promptstrat --help`` and ``--version`` at once. A
    ``command`` (the first word of the command line) details only its own group, so
    ``promptstrat inbox ...`` (its help included) never imports LangChain for the options
    of ``simulate`` or ``stats``.
    """
    parser = _Parser(prog=PROG, description="Prompt strategies for long LangChain and LangGraph agent runs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
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


# --------------------------------------------------------------------------- option values


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}")
    return value


def _price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a non-negative number of dollars, got {text!r}")
    return value


def _add_counter_options(parser: argparse.ArgumentParser) -> None:
    from langchain_promptstrat.cli_defaults import DEFAULT_ENCODING

    counter = parser.add_mutually_exclusive_group()
    counter.add_argument("--encoding", metavar="NAME", help=f"tiktoken encoding that counts tokens (default: {DEFAULT_ENCODING})")
    counter.add_argument("--model", metavar="NAME", help="count tokens with this model's encoding (o200k_base for current OpenAI models)")


def _token_counter(args: argparse.Namespace) -> TokenCounter:
    from langchain_promptstrat.tokens import TokenCounter

    return TokenCounter(args.encoding, model=args.model)


# --------------------------------------------------------------------------- simulate


def add_simulate_commands(commands: argparse._SubParsersAction[Any], detailed: bool = True) -> None:
    """Add ``simulate`` to ``commands`` (without its options unless ``detailed``: enough for ``--help``)."""
    sim = commands.add_parser(
        "simulate",
        help="replay a long simulated agent run through each strategy; print tokens, cache reuse and cost",
        description=(
            "Build a realistic long agent run (tool calls, output sizes, repeats and user turns drawn from "
            "--seed), apply each strategy before every model call, and print per strategy: model calls, "
            "prompt tokens sent, peak prompt tokens, cache reuse (mean share of each prompt that is a "
            "byte-identical prefix of the previous one), estimated cost with cached input billed at "
            "--cached-fraction, and the time spent in the strategy. No model, network or key is used."
        ),
    )
    if not detailed:
        return
    from langchain_promptstrat.cli_defaults import CACHE_RULES
    from langchain_promptstrat.cli_defaults import DEFAULT_CACHED_FRACTION, DEFAULT_MAX_TOKENS, DEFAULT_TOOL_CALLS

    sim.add_argument(
        "strategies", nargs="*", metavar="STRATEGY|FILE",
        help="strategy names; a comma joins a pipeline, e.g. shorten_tools,inbox (default: none and every "
        "built-in strategy a replay can build). An argument naming an existing file or folder is a saved "
        "transcript to replay instead of the simulated run: OpenAI chat JSON/JSONL, LangChain message dicts, "
        "an Anthropic Messages API body or a mini-swe-agent .traj.json; a folder gives its *.json and *.jsonl "
        "files; the figures are summed over every model call of every file",
    )
    sim.add_argument("--calls", type=_positive_int, default=DEFAULT_TOOL_CALLS, metavar="N",
                     help=f"tool calls of the simulated run (default: {DEFAULT_TOOL_CALLS})")
    sim.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the simulated run (default: 0)")
    sim.add_argument("--compare", action="store_true",
                     help="also replay the peers: trim_messages and ClearToolUsesEdit at --max-tokens")
    sim.add_argument("--max-tokens", type=_positive_int, default=DEFAULT_MAX_TOKENS, metavar="N",
                     help=f"token target of the peers and of strategies that take one (default: {DEFAULT_MAX_TOKENS})")
    sim.add_argument("--cached-fraction", type=_fraction, default=DEFAULT_CACHED_FRACTION, metavar="F",
                     help=f"share of the input price billed for cached input tokens (default: {DEFAULT_CACHED_FRACTION})")
    sim.add_argument("--price-per-mtok", type=_price, metavar="USD",
                     help="input price per million tokens; adds a cost in dollars")
    sim.add_argument("--cache", choices=CACHE_RULES, default="prefix",
                     help="also show what a provider's cache would serve and bill: openai (automatic prefix cache, "
                     "from 1,024 tokens in 128-token steps) or anthropic (cache_control breakpoints, 20-block "
                     "lookback, writes at 1.25x); prefix (default) shows only the upper bound")
    sim.add_argument("--breakpoints", action="store_true",
                     help="also replay each strategy with Anthropic cache breakpoints marked (system, previous and "
                     "current compaction edges, tail; rows named STRATEGY+breakpoints) beside the same strategy "
                     "with AnthropicPromptCachingMiddleware's placement (system and tail); use with --cache anthropic")
    _add_counter_options(sim)
    sim.add_argument("--mirror", choices=("openai", "anthropic", "mixed"),
                     help="also record the tool calls as a provider integration does (OpenAI additional_kwargs, "
                     "Anthropic tool_use blocks, or a mix per step)")
    sim.add_argument("--plot", metavar="FILE.png",
                     help="draw prompt tokens and cache reuse per call for each strategy (needs matplotlib)")
    sim.add_argument("--json", action="store_true", help="print the figures as JSON, per-call figures included")
    sim.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="a progress bar on standard error (default: only when it is a terminal)")
    sim.set_defaults(func=_simulate)


_PLOT_EXTRA = "plotting needs matplotlib, which is not installed: pip install 'langchain-promptstrat[plot]'"


def _plot_target(name: str) -> Path:
    """Return the plot's path once matplotlib, the file type and the directory are known to work.

    Checked before the replay, so a long run never ends in an error it could have shown first.
    """
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise _UsageError(_PLOT_EXTRA) from None
    path = Path(name)
    kinds = FigureCanvasBase.get_supported_filetypes()
    kind = path.suffix.lower().lstrip(".")
    if kind not in kinds:
        raise _UsageError(f"cannot plot to {name!r}: name a file ending in {', '.join('.' + k for k in sorted(kinds))}")
    if path.is_dir():
        raise _UsageError(f"cannot plot to {name!r}: it is a directory")
    if not path.parent.is_dir():
        raise _UsageError(f"cannot plot to {name!r}: directory {str(path.parent)!r} does not exist")
    return path


def _write_plot(result: Any, path: Path) -> None:
    """Write the plot to a temporary sibling, then rename it, so a failure never leaves half a file."""
    temporary = path.with_name(f".{path.stem}.{secrets.token_hex(4)}.tmp{path.suffix}")
    try:
        plot(result, temporary)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def _simulate(args: argparse.Namespace) -> int:
    plot_path = _plot_target(args.plot) if args.plot else None
    files = [a for a in args.strategies if os.path.exists(a)]
    names = [a for a in args.strategies if a not in files]
    for name in names:
        if os.sep in name or name.endswith((".json", ".jsonl")):  # meant as a transcript: say what is missing
            raise _UsageError(f"no such file or folder: {name!r} (a strategy name has neither '/' nor a .json suffix)")
    common: dict[str, Any] = dict(
        token_counter=_token_counter(args),
        cached_fraction=args.cached_fraction,
        peers=args.compare,
        max_tokens=args.max_tokens,
        progress=args.progress,
        price_per_mtok=args.price_per_mtok,
        cache=args.cache,
    )
    strategies: Any = names or None
    if args.breakpoints:
        from langchain_promptstrat.simulate import default_strategy_names
        from langchain_promptstrat.strategies.cache_breakpoints import with_cache_breakpoints

        plain = names or default_strategy_names(max_tokens=args.max_tokens)
        strategies = [*plain, *with_cache_breakpoints([n for n in plain if n != "none"], max_tokens=args.max_tokens,
                                                      token_counter=common["token_counter"])]
    if files:
        from langchain_promptstrat.replay import simulate_files

        result = simulate_files(files, strategies, **common)
    else:
        result = simulate(
            strategies,
            n_tool_calls=args.calls,
            seed=args.seed,
            run_options={"mirror": args.mirror} if args.mirror else None,
            **common,
        )
    if plot_path is not None:
        _write_plot(result, plot_path)
    from langchain_promptstrat.simulate import format_table, result_to_json

    print(json.dumps(result_to_json(result), indent=2) if args.json else format_table(result, terminal_width()))
    if plot_path is not None:
        print(f"plot written to {plot_path}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- apply, stats


def add_conversation_commands(commands: argparse._SubParsersAction[Any], detailed: bool = True) -> None:
    """Add ``apply`` and ``stats``, the commands that read a conversation file, to ``commands`` (options only when ``detailed``)."""
    formats = (
        "FILE holds a JSON array of messages, LangChain dicts ({\"type\": \"human\", \"data\": {...}}, as "
        "messages_to_dict writes them) or role dicts ({\"role\": \"user\", \"content\": ...}, OpenAI's "
        "format), or JSON lines, one message a line; '-' reads standard input. Errors name the position: "
        "'message N' counts from 0 as in the array, 'line N' from 1."
    )
    apply = commands.add_parser(
        "apply",
        help="apply strategies to a conversation file; the result as JSON on stdout, the report on stderr",
        description="Apply strategies to a conversation and print the messages the model would see, as a JSON "
        "array in the input's dict style; one report line per strategy goes to standard error. " + formats,
    )
    stats = commands.add_parser(
        "stats",
        help="count a conversation's messages, tool calls and tokens, and what each strategy would do",
        description="Print a conversation's messages by type, tool calls and tokens, then for each built-in "
        "strategy a replay can build: messages and tokens after it, calls shortened and dropped. " + formats,
    )
    if not detailed:
        return
    from langchain_promptstrat.cli_defaults import DEFAULT_MAX_TOKENS

    apply.add_argument("file", metavar="FILE", help="the conversation, or '-' for standard input")
    apply.add_argument("--strategy", metavar="SPEC",
                       help="comma-separated strategy names, applied in order (default: $PROMPT_STRATEGY, "
                       "then the default list)")
    apply.add_argument("--max-tokens", type=_positive_int, default=None, metavar="N",
                       help="context ceiling of the default strategy (default: $PROMPTSTRAT_MAX_TOKENS, else "
                       f"{DEFAULT_CEILING:,}; stats uses the same)")
    apply.add_argument("--save-file", metavar="PATH",
                       help="the conversation's save file: the inbox strategy delivers (and consumes) the notices "
                       "of its .inbox sibling")
    apply.set_defaults(func=_apply)

    stats.add_argument("file", metavar="FILE", help="the conversation, or '-' for standard input")
    stats.add_argument("--max-tokens", type=_positive_int, default=None, metavar="N",
                       help="token target of strategies that take one, the default strategy's ceiling included "
                       f"(default: $PROMPTSTRAT_MAX_TOKENS, else {DEFAULT_CEILING:,}, as for apply)")
    _add_counter_options(stats)
    stats.add_argument("--json", action="store_true", help="print the figures as JSON")
    stats.set_defaults(func=_stats)


def _report_line(report: StrategyReport) -> str:
    line = (
        f"{report.strategy}: messages {report.messages_in} -> {report.messages_out}, shortened {report.shortened}, "
        f"dropped {report.dropped}, chars {report.chars_before:,} -> {report.chars_after:,}"
    )
    if "delivered" in report.details:
        line += f", delivered {report.details['delivered']}"
    return line


def _read_conversation(source: str) -> Any:
    """Return the conversation file, each note on what was left or held out printed as one warning line."""
    from langchain_promptstrat.conversation_file import read_conversation

    conversation = read_conversation(source)
    for note in conversation.notes:
        print(f"{PROG}: warning: {source}: {_one_line(Exception(note))}", file=sys.stderr)
    return conversation


def _dump_or_refuse(messages: list[Any], style: str | None, what: str) -> str:
    """Return the JSON ``apply`` prints, or raise InvalidMessagesError when the messages cannot be written back."""
    from langchain_promptstrat.conversation_file import dump_messages

    try:
        output = dump_messages(messages, style)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise InvalidMessagesError(f"{what}: cannot be written back as JSON: {_one_line(exc).split(' Full ')[0]}") from None
    # A lone surrogate (valid in a JSON string escape, not in UTF-8) is written as its JSON
    # escape, so stdout always gets valid UTF-8 that reads back as the same string.
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", output)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _apply(args: argparse.Namespace) -> int:
    from langchain_promptstrat.registry import apply_strategies, resolve_strategies

    conversation = _read_conversation(args.file)
    # Everything that can be refused is refused before a strategy runs: the inbox
    # consumes its notices, and a refusal after that would lose them.
    _dump_or_refuse(conversation.messages, conversation.style, args.file)
    strategies = resolve_strategies(args.strategy)
    try:
        ceiling = resolve_ceiling(args.max_tokens)  # the same resolution as stats, so both use one ceiling
        messages, reports = apply_strategies(conversation.messages, strategies, save_file=args.save_file, max_tokens=ceiling.tokens)
    except InboxAborted as exc:
        print(f"{PROG}: aborted: the inbox holds an abort request: {exc.reason or '(no reason given)'}", file=sys.stderr)
        return EXIT_ABORTED
    output = _dump_or_refuse([*messages, *conversation.pending], conversation.style, "the result")
    sys.stdout.write(output + "\n")
    sys.stdout.flush()
    for report in reports:
        print(_report_line(report), file=sys.stderr)
    return 0


def _stats(args: argparse.Namespace) -> int:
    from langchain_promptstrat.messages import index_tool_calls
    from langchain_promptstrat.simulate import build_strategy, default_strategy_names

    conversation = _read_conversation(args.file)
    messages = conversation.messages
    counter = _token_counter(args)
    tokens = counter(messages)
    rows: list[dict[str, Any]] = []
    args.max_tokens = resolve_ceiling(args.max_tokens).tokens
    for name in default_strategy_names(max_tokens=args.max_tokens):
        strategy, _ = build_strategy(name, max_tokens=args.max_tokens, token_counter=counter)
        result = strategy.compact(list(messages))
        after = counter(result.messages)
        rows.append({
            "strategy": name,
            "messages": len(result.messages),
            "tokens": after,
            "share": after / tokens if tokens else 1.0,
            "shortened": result.report.shortened,
            "dropped": result.report.dropped,
        })
    by_type = dict(Counter(m.type for m in messages))  # in order of first appearance
    summary = {
        "file": args.file,
        "messages": len(messages),
        "by_type": by_type,
        "tool_calls": len(index_tool_calls(messages).calls),
        "tokens": tokens,
        "token_counter": {"encoding": counter.encoding_name, "exact": counter.exact},
        "max_tokens": args.max_tokens,
        "strategies": rows,
    }
    print(json.dumps(summary, indent=2) if args.json else _stats_table(summary, terminal_width()))
    return 0


def _stats_table(summary: dict[str, Any], width: int | None = None) -> str:
    kinds = ", ".join(f"{n:,} {kind}" for kind, n in summary["by_type"].items())
    exact = "exact" if summary["token_counter"]["exact"] else "approximate"
    head = [
        f"{summary['file']}: {summary['messages']:,} messages" + (f" ({kinds})" if kinds else ""),
        f"tool calls: {summary['tool_calls']:,}; tokens: {summary['tokens']:,} "
        f"({summary['token_counter']['encoding']}, {exact})",
        f"what each strategy would send (token target {summary['max_tokens']:,} for those that take one):",
    ]
    columns = ["strategy", "messages", "tokens", "of input", "shortened", "dropped"]
    cells = [
        [r["strategy"], f"{r['messages']:,}", f"{r['tokens']:,}", f"{100 * r['share']:.1f}%", f"{r['shortened']:,}",
         f"{r['dropped']:,}"]
        for r in summary["strategies"]
    ]
    return "\n".join([*fit_lines(head, width), "", *render_table(columns, cells, width)])


# --------------------------------------------------------------------------- inbox


def _add_target(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--save-file", metavar="PATH", help="the conversation's save file; its inbox is the .inbox sibling")
    target.add_argument("--thread", metavar="THREAD_ID", help="a LangGraph thread id; its inbox lies under --root")
    parser.add_argument("--root", metavar="DIR", help=f"the inbox root for --thread (default: ${INBOX_ROOT_ENV})")
    _add_dsn(parser)


def _add_dsn(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dsn", metavar="DSN",
                        help=f"use the PostgreSQL inbox in this database (default: ${DSN_ENV}; without either, "
                        "the directory inbox)")


def add_inbox_commands(commands: argparse._SubParsersAction[Any], detailed: bool = True) -> None:
    """Add ``inbox post``, ``inbox abort`` and ``inbox ls`` to ``commands`` (its actions only when ``detailed``)."""
    inbox = commands.add_parser("inbox", help="post notices to a running agent, ask it to stop, list its inbox")
    if not detailed:
        return
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

    ls = actions.add_parser(
        "ls", help="list pending, in-flight (claimed, not yet recorded) and delivered notices with their times "
        "(--json: with a preview)",
    )
    _add_target(ls)
    ls.add_argument("--json", action="store_true",
                    help="print a JSON array: state (pending, in-flight, delivered), name, posted and delivered "
                    "(UTC, ISO 8601), size in bytes, preview; for in-flight claims also owner, claimed, age_seconds "
                    "and claim (held, dead, expired)")
    ls.set_defaults(func=_inbox_ls)

    setup = actions.add_parser("setup", help="create the PostgreSQL inbox's tables (once per database)")
    _add_dsn(setup)
    setup.set_defaults(func=_inbox_setup)


def _dsn(args: argparse.Namespace) -> str:
    return args.dsn if args.dsn is not None else os.environ.get(DSN_ENV, "")


def _inbox(args: argparse.Namespace) -> InboxBackend:
    if args.save_file is not None and args.root is not None:
        raise _UsageError("--root goes with --thread, not with --save-file")
    if args.dsn is not None and args.root is not None:
        raise _UsageError("--root names a directory inbox and --dsn a PostgreSQL one; give one of them")
    dsn = _dsn(args) if args.root is None else ""
    if dsn:
        inboxes = PostgresInboxes(dsn)
        return inboxes.for_thread(args.thread) if args.thread is not None else inboxes.for_save_file(cast(str, args.save_file))  # one is required
    return DirectoryInbox.for_save_file(resolve_save_file(args.save_file, thread_id=args.thread, root=args.root))


def _inbox_setup(args: argparse.Namespace) -> int:
    dsn = _dsn(args)
    if not dsn:
        raise _UsageError(f"name the database: --dsn DSN or ${DSN_ENV}")
    inboxes = PostgresInboxes(dsn)
    inboxes.setup()
    print(f"inbox tables ready (schema version {inboxes.schema_version()})")
    return 0


def _inbox_post(args: argparse.Namespace) -> int:
    store = _inbox(args)
    if args.content in (None, "-"):
        buffer = getattr(sys.stdin, "buffer", None)  # bytes, so the check is ours, not the locale's
        data = buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8", "surrogateescape")
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _UsageError(f"standard input is not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x}); nothing posted") from None
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
"""What ``inbox ls`` says of an in-flight claim, by :attr:`Lease.state` (a claim of the listing process counts as held)."""


def _age(seconds: float) -> str:
    """Return a duration as a person reads it in a listing: ``42s``, ``17m``, ``5h``, ``3d``."""
    seconds = max(0.0, seconds)
    for unit, size, up_to in (("s", 1, 120), ("m", 60, 7200), ("h", 3600, 172800)):
        if seconds < up_to:
            return f"{seconds // size:.0f}{unit}"
    return f"{seconds // 86400:.0f}d"


def _inbox_ls(args: argparse.Namespace) -> int:
    from langchain_promptstrat.inbox.contract import InboxEntry, Lease, LeasingInbox

    store = _inbox(args)
    pending, delivered = store.pending_entries(), store.delivered_entries()
    # claimed by a reader, not yet recorded as delivered: listed so that a notice is never invisible
    claims: list[Lease] = store.in_flight(with_head=True) if isinstance(store, LeasingInbox) else []
    listed: list[tuple[str, InboxEntry, Lease | None]] = [
        *(("pending", entry, None) for entry in pending),
        *(("in-flight", InboxEntry(lease.name, lease.mtime, lease.size, head=lease.head), lease) for lease in claims),
        *(("delivered", entry, None) for entry in delivered),
    ]
    now = time.time()

    def claim(lease: Lease | None) -> dict[str, Any]:
        if lease is None:
            return {"owner": None, "claimed": None, "age_seconds": None, "claim": None}
        return {
            "owner": lease.owner,
            "claimed": _time(lease.leased_at),
            "age_seconds": round(max(0.0, now - lease.leased_at), 1),
            "claim": "held" if lease.state == "mine" else lease.state,
        }

    if args.json:
        print(json.dumps([
            {
                "state": state,
                "name": entry.name,
                "posted": _time(entry.mtime),
                "delivered": None if entry.delivered_at is None else _time(entry.delivered_at),
                "size": entry.size,
                "preview": entry.preview,
                **claim(lease),
            }
            for state, entry, lease in listed
        ], indent=2, ensure_ascii=False))
        return 0
    if not listed:
        print(f"no notices in {store.location}")
    for state, entry, lease in listed:
        line = f"{state:<9}  {_time(entry.mtime)}  {entry.name}"
        if lease is not None:
            line += f"  claimed {_age(now - lease.leased_at)} ago by {lease.owner} ({CLAIM_STATES[claim(lease)['claim']]})"
        print(line)
    return 0


# --------------------------------------------------------------------------- entry point


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
                raise _UsageError(f"choose an action for {PROG} {group}" if group else "choose a command (see promptstrat --help)")
            return func(args)
        except SystemExit as exc:  # --help
            return exc.code if isinstance(exc.code, int) else 0
        except BrokenPipeError:  # the reader went away (| head): nothing left to tell it
            with contextlib.suppress(Exception):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            return 1
        except (_UsageError, PromptStratError, OSError) as exc:
            print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
            return EXIT_ERROR
        except KeyboardInterrupt:
            return 130


def _top_level_only(argv: list[str]) -> bool:
    """Return whether ``argv`` asks only the top-level parser (``--help``, ``--version``, nothing)."""
    return not argv or all(arg in ("-h", "--help", "--version") for arg in argv)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: str | None = None) -> None:
    print(f"{PROG}: warning: {_one_line(Exception(str(message)))}", file=sys.stderr)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, PromptStratError) and exc.filename is not None:
        text = f"{exc.strerror or exc}: {exc.filename}"
    else:
        text = str(exc)
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
