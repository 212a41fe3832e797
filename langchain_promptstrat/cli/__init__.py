"""The ``promptstrat`` command: :func:`main`, its parser, and ``apply`` and ``stats``, the commands
that read a conversation file.

``simulate`` and ``inbox`` add their commands from their own modules; ``common`` holds what all
share. A group's options are built only when the command line names it, so ``--help`` never
loads LangChain (tests/test_cli_startup.py). An error is one line, ``promptstrat: error: ...``,
exit status 2 (an abort request met by ``apply``: 3). What each command prints: docs/cli.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from langchain_promptstrat.ceiling import DEFAULT_MAX_TOKENS, resolve_ceiling
from langchain_promptstrat.cli.common import (
    EXIT_ABORTED,
    EXIT_ERROR,
    PROG,
    Parser,
    UsageError,
    add_counter_options,
    one_line,
    positive_int,
    token_counter,
)
from langchain_promptstrat.cli.inbox_commands import add_inbox_commands
from langchain_promptstrat.cli.settings_command import add_settings_command
from langchain_promptstrat.cli.simulate_command import add_simulate_commands
from langchain_promptstrat.errors import InboxAborted, InvalidMessagesError, PromptStratError
from langchain_promptstrat.text_table import fit_lines, render_table, terminal_width

# LangChain, LangGraph and tiktoken are imported by the commands that use them, not here:
# `promptstrat --help` and `--version` answer without them (tests/test_cli_startup.py).

__all__ = ["build_parser", "main"]


def build_parser(detailed: bool = True, command: str | None = None) -> argparse.ArgumentParser:
    """Return the ``promptstrat`` parser: with ``detailed=False`` no command's options, else only
    the group ``command`` names (all without one)."""
    try:
        installed = version("langchain-promptstrat")
    except PackageNotFoundError:
        installed = "unknown (not installed)"
    parser = Parser(
        prog=PROG, description="Prompt strategies for long LangChain and LangGraph agent runs."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    add_simulate_commands(commands, detailed and command in (None, "simulate"))
    _add_conversation_commands(commands, detailed and command in (None, "apply", "stats"))
    add_inbox_commands(commands, detailed and command in (None, "inbox"))
    add_settings_command(commands, detailed and command in (None, "settings"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``promptstrat`` with ``argv`` (default ``sys.argv[1:]``) and return the exit status: 2
    and one line on any error."""
    argv = sys.argv[1:] if argv is None else list(argv)
    top_level_only = all(arg in ("-h", "--help", "--version") for arg in argv)
    parser = build_parser(detailed=not top_level_only, command=argv[0] if argv else None)
    package_logger, said = logging.getLogger("langchain_promptstrat"), _WarningLine()
    package_logger.addHandler(said)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            args = parser.parse_args(argv)
            func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
            if func is None:
                group = getattr(args, "command", None)
                raise UsageError(
                    f"choose an action for {PROG} {group}"
                    if group
                    else "choose a command (see promptstrat --help)"
                )
            return func(args)
        except SystemExit as exc:  # --help
            return exc.code if isinstance(exc.code, int) else 0
        except BrokenPipeError:  # the reader went away (| head): nothing left to tell it
            with contextlib.suppress(Exception):
                os.dup2(
                    os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno()
                )  # no second error at exit
            return 1
        except (UsageError, PromptStratError, OSError) as exc:
            print(f"{PROG}: error: {one_line(exc)}", file=sys.stderr)
            return EXIT_ERROR
        except KeyboardInterrupt:
            return 130
        finally:
            package_logger.removeHandler(said)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    print(f"{PROG}: warning: {one_line(Exception(str(message)))}", file=sys.stderr)


class _WarningLine(logging.Handler):
    """Prints a warning the package logs (a repaired floor, a floor over a ceiling) in one line."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        print(f"{PROG}: warning: {one_line(Exception(record.getMessage()))}", file=sys.stderr)


# --------------------------------------------------------------------------- apply and stats


def _add_conversation_commands(
    commands: argparse._SubParsersAction[Any], detailed: bool = True
) -> None:
    """Add ``apply`` and ``stats``, the commands that read a conversation file, to ``commands``
    (options only when ``detailed``)."""
    formats = (
        'FILE holds a JSON array of messages, LangChain dicts ({"type": "human", "data": {...}}, '
        "as "
        'messages_to_dict writes them) or role dicts ({"role": "user", "content": ...}, OpenAI\'s '
        "format), or JSON lines, one message a line; '-' reads standard input. Errors name the "
        "position: "
        "'message N' counts from 0 as in the array, 'line N' from 1."
    )
    apply = commands.add_parser(
        "apply",
        help="apply strategies to a conversation file; the result as JSON on stdout, the report "
        "on stderr",
        description="Apply strategies to a conversation and print the messages the model would "
        "see, as a JSON "
        "array in the input's dict style; one report line per strategy goes to standard error. "
        + formats,
    )
    stats = commands.add_parser(
        "stats",
        help="count a conversation's messages, tool calls and tokens, and what each strategy "
        "would do",
        description="Print a conversation's messages by type, tool calls and tokens, then for each "
        "built-in strategy a replay can build: messages and tokens after it, calls shortened and "
        "dropped; for a folder, the sums over its conversations. " + formats,
    )
    if not detailed:
        return
    for command in (apply, stats):
        command.epilog = (
            "The strategies read their settings from the environment: promptstrat settings prints "
            "each with its value and source, docs/settings.md says what each means."
        )
    apply.add_argument("file", metavar="FILE", help="the conversation, or '-' for standard input")
    stats.add_argument(
        "file",
        metavar="FILE",
        help="the conversation, '-' for standard input, or a folder: its *.json and *.jsonl files, "
        "in every folder below it too, each file that is not a conversation skipped with a warning",
    )
    apply.add_argument(
        "--strategy",
        metavar="SPEC",
        help="comma-separated strategy names, applied in order "
        "(default: $PROMPT_STRATEGY, then the default list)",
    )
    apply.add_argument(
        "--max-tokens",
        type=positive_int,
        default=None,
        metavar="N",
        help="context ceiling of the default "
        f"strategy (default: $PROMPTSTRAT_MAX_TOKENS, else {DEFAULT_MAX_TOKENS:,}; stats uses the "
        "same)",
    )
    apply.add_argument(
        "--save-file",
        metavar="PATH",
        help="the conversation's save file: the inbox strategy delivers "
        "(and consumes) the notices of its .inbox sibling",
    )
    apply.set_defaults(func=_apply)
    stats.add_argument(
        "--max-tokens",
        type=positive_int,
        default=None,
        metavar="N",
        help="token target of strategies that "
        "take one, the default strategy's ceiling included (default: $PROMPTSTRAT_MAX_TOKENS, else "
        f"{DEFAULT_MAX_TOKENS:,}, as for apply)",
    )
    stats.add_argument(
        "--usage",
        type=Path,
        metavar="PATH",
        help="what the provider billed for each answer: a "
        "NAME.usage.json file, or a folder of them (default: NAME.usage.json beside FILE or in "
        "../usage/, else "
        "the answers' own usage_metadata)",
    )
    add_counter_options(stats)
    stats.add_argument("--json", action="store_true", help="print the figures as JSON")
    stats.set_defaults(func=_stats)


def _read_conversation(source: str) -> Any:
    """Return the conversation file, each note on what was left or held out printed as one warning
    line."""
    from langchain_promptstrat.conversation_file import read_conversation

    conversation = read_conversation(source)
    for note in conversation.notes:
        print(f"{PROG}: warning: {source}: {one_line(Exception(note))}", file=sys.stderr)
    return conversation


def _dump_or_refuse(messages: list[Any], style: str | None, what: str) -> str:
    """Return the JSON ``apply`` prints, or raise InvalidMessagesError when the messages cannot be
    written back."""
    from langchain_promptstrat.conversation_file import dump_messages

    try:
        output = dump_messages(messages, style)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise InvalidMessagesError(
            f"{what}: cannot be written back as JSON: {one_line(exc).split(' Full ')[0]}"
        ) from None
    # A lone surrogate (valid in a JSON string escape, not in UTF-8) is written as its JSON
    # escape, so stdout always gets valid UTF-8 that reads back as the same string.
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", output)


def _apply(args: argparse.Namespace) -> int:
    from langchain_promptstrat.registry import apply_strategies, resolve_strategies

    conversation = _read_conversation(args.file)
    # Everything that can be refused is refused before a strategy runs: the inbox
    # consumes its notices, and a refusal after that would lose them.
    _dump_or_refuse(conversation.messages, conversation.style, args.file)
    strategies = resolve_strategies(args.strategy)
    try:
        ceiling = resolve_ceiling(
            args.max_tokens
        )  # the same resolution as stats, so both use one ceiling
        messages, reports = apply_strategies(
            conversation.messages, strategies, save_file=args.save_file, max_tokens=ceiling.tokens
        )
    except InboxAborted as exc:
        print(
            f"{PROG}: aborted: the inbox holds an abort request: "
            f"{exc.reason or '(no reason given)'}",
            file=sys.stderr,
        )
        if (
            exc.delivered
        ):  # consumed before the abort: shown, never lost (the strategies did not run)
            output = _dump_or_refuse(
                [*conversation.messages, *exc.delivered, *conversation.pending],
                conversation.style,
                "the result",
            )
            print(output, flush=True)
            count = len(exc.delivered)
            print(
                f"{PROG}: the {count} notice{'s' if count != 1 else ''} consumed before the abort "
                f"{'are' if count != 1 else 'is'} at the end of the conversation printed",
                file=sys.stderr,
            )
        return EXIT_ABORTED
    print(
        _dump_or_refuse([*messages, *conversation.pending], conversation.style, "the result"),
        flush=True,
    )
    for r in reports:
        delivered = f", delivered {r.details['delivered']}" if "delivered" in r.details else ""
        print(
            f"{r.strategy}: messages {r.messages_in} -> {r.messages_out}, shortened "
            f"{r.shortened}, dropped {r.dropped}, "
            f"chars {r.chars_before:,} -> {r.chars_after:,}{delivered}",
            file=sys.stderr,
        )
    return 0


def _stats(args: argparse.Namespace) -> int:
    from langchain_promptstrat.messages import index_tool_calls
    from langchain_promptstrat.messages.references import unresolved_references
    from langchain_promptstrat.replay import find_transcripts, usage_of
    from langchain_promptstrat.simulate import build_strategy, default_rows
    from langchain_promptstrat.strategy import PromptRequest, apply_in_order, split_strategy_names
    from langchain_promptstrat.tokens.usage import history_calibration

    transcripts = [] if args.file == "-" else find_transcripts([args.file])
    given = [("-", True)] if args.file == "-" else [(str(p), named) for p, named in transcripts]
    counter = token_counter(args)
    args.max_tokens = resolve_ceiling(args.max_tokens).tokens
    names = default_rows(max_tokens=args.max_tokens)
    names.insert(0, names.pop())  # the default list first (default_rows puts it last)
    by_type: Counter[str] = Counter()
    totals = {"messages": 0, "tool_calls": 0, "tokens": 0}
    figures = ("messages", "tokens", "shortened", "dropped", "unresolved_references")
    rows: dict[str, dict[str, Any]] = {
        name: {"strategy": name, **dict.fromkeys(figures, 0)} for name in names
    }
    pipelines = {  # built once for every file; the default list is a pipeline of two
        name: [
            build_strategy(part, max_tokens=args.max_tokens, token_counter=counter)[0]
            for part in split_strategy_names(name)
        ]
        for name in names
    }
    if args.usage is not None and not args.usage.exists():
        raise UsageError(f"--usage {str(args.usage)!r}: no such file or folder")
    usage: list[dict[str, Any]] = []
    files: list[str] = []
    for file, named in given:
        try:
            conversation = _read_conversation(file)
        except (PromptStratError, OSError) as exc:
            if named:  # the file asked for: its error is the command's
                raise
            said = one_line(exc)
            said = said if said.startswith(file) else f"{file}: {said}"
            print(f"{PROG}: warning: skipped {said}", file=sys.stderr)
            continue
        files.append(file)
        messages = conversation.messages
        recorded = [*messages, *conversation.pending]
        found = usage_of(None if file == "-" else Path(file), recorded, args.usage)
        if found is not None:
            calibration = history_calibration(recorded, found[0], counter)
            usage.append(
                {
                    "file": file,
                    "factor": round(calibration.factor, 4),
                    "source": f"{calibration.source} in {found[1]}",
                }
            )
        by_type.update(m.type for m in messages)  # in order of first appearance
        totals["messages"] += len(messages)
        totals["tool_calls"] += len(index_tool_calls(messages).calls)
        totals["tokens"] += counter(messages)
        for name, row in rows.items():
            # the front ends' one apply path: what they send, prompt floor and references included
            request = PromptRequest(max_tokens=args.max_tokens)
            after, reports = apply_in_order(pipelines[name], list(messages), request)
            for report in reports:
                row["shortened"] += report.shortened
                row["dropped"] += report.dropped
                if "usage_factor" in report.details:
                    factor = [report.details[k] for k in ("usage_factor", "usage_factor_source")]
                    row.setdefault("usage_factors", []).append(factor)
            row["messages"] += len(after)
            row["tokens"] += counter(after)
            row["unresolved_references"] += unresolved_references(messages, after)
    if not files:
        skipped = f"{len(given):,} files skipped"
        raise UsageError(f"{args.file}: no conversation in this folder ({skipped})")
    for row in rows.values():
        row["share"] = row["tokens"] / totals["tokens"] if totals["tokens"] else 1.0
    summary = {
        "file": args.file,
        "files": len(files),
        **totals,
        "by_type": dict(by_type),
        "token_counter": {"encoding": counter.encoding_name, "exact": counter.exact},
        "max_tokens": args.max_tokens,
        "usage": usage,
        "strategies": list(rows.values()),
    }
    print(json.dumps(summary, indent=2) if args.json else _stats_table(summary, terminal_width()))
    return 0


def _factors_text(factors: list[tuple[Any, str]], measured: str) -> str:
    """Return the provider's count over this package's in plain words, for the first three files.

    Empty without usage. ``stats --json`` keeps the factors and their sources as figures;
    docs/cli.md explains both.
    """
    if not factors:
        return ""
    said = []
    for factor, source in factors[:3]:
        used = re.match(r"usage \((\d+) answers\)(.*)", source)
        where = (
            f"the usage of {used[1]} answers{used[2]}"
            if used
            else f"the usual ratio of {source[6:]} models"
            if source.startswith("prior:")
            else source
        )
        said.append(f"{factor}x this package's count {measured} (from {where})")
    more = f" ... ({len(factors)} files)" if len(factors) > 3 else ""
    return "; ".join(said) + more


def _stats_table(summary: dict[str, Any], width: int | None = None) -> str:
    from langchain_promptstrat.simulate import DEFAULT_LIST_ROW
    from langchain_promptstrat.simulate.output import DEFAULT_MARK

    kinds = ", ".join(f"{n:,} {kind}" for kind, n in summary["by_type"].items())
    exact = "exact" if summary["token_counter"]["exact"] else "approximate"
    files = f"{summary['files']:,} transcripts, " if summary["files"] > 1 else ""
    factors: list[list[Any]] = next(
        (
            r["usage_factors"]
            for r in summary["strategies"]
            if r["strategy"] == DEFAULT_LIST_ROW and "usage_factors" in r
        ),
        [],
    )
    learned = _factors_text([(f, src) for f, src in factors], "for the default list's prompts")
    counted = _factors_text(
        [(u["factor"], u["source"]) for u in summary["usage"]],
        "for the whole history before each answer",
    )
    no_usage = "not in the file (no usage recorded); every figure is this package's count"
    no_answers = "(the file's answers carry no usage to learn the provider's from)"
    head = [
        f"{summary['file']}: {files}{summary['messages']:,} messages"
        + (f" ({kinds})" if kinds else ""),
        f"tool calls: {summary['tool_calls']:,}; tokens: {summary['tokens']:,} "
        f"({summary['token_counter']['encoding']}, {exact})",
        f"{DEFAULT_MARK}: {DEFAULT_LIST_ROW}, what an agent gets when it names no strategy (here "
        "without its inbox).",
        f"what each strategy would send (token target {summary['max_tokens']:,} for those that "
        "take one):",
        f"the provider's own count: {counted or no_usage}",
        f"apply keeps the ceiling on the provider's count: {learned}"
        if learned
        else f"apply keeps the ceiling on this package's count {no_answers}",
    ]
    cells = [
        [
            DEFAULT_MARK if r["strategy"] == DEFAULT_LIST_ROW else r["strategy"],
            f"{r['messages']:,}",
            f"{r['tokens']:,}",
            f"{100 * r['share']:.1f}%",
            f"{r['shortened']:,}",
            f"{r['dropped']:,}",
            f"{r['unresolved_references']:,}",
        ]
        for r in summary["strategies"]
    ]
    columns = [
        "strategy",
        "messages",
        "tokens",
        "of input",
        "shortened",
        "dropped",
        "unresolved refs",
    ]
    return "\n".join([*fit_lines(head, width), "", *render_table(columns, cells, width)])
