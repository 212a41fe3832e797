"""``promptstrat simulate``: parse, replay (:mod:`langchain_promptstrat.simulate`,
:mod:`~langchain_promptstrat.replay` for transcripts), print.

What can be refused (the plot's file type, directory, matplotlib) is refused before the replay
runs, and the plot is written through a temporary file so a failure never leaves half a file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_promptstrat.cli.common import (
    UsageError,
    add_counter_options,
    positive_int,
    token_counter,
)
from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.text_table import terminal_width

if TYPE_CHECKING:
    from langchain_promptstrat.simulate import SimulationResult

# LangChain, LangGraph and tiktoken are imported by the commands that use them, not here:
# `promptstrat --help` and `--version` answer without them (tests/test_cli_startup.py).

__all__ = ["add_simulate_commands"]


def simulate(*args: Any, **kwargs: Any) -> SimulationResult:
    """Run :func:`langchain_promptstrat.simulate.simulate` (imported on first use)."""
    from langchain_promptstrat.simulate import simulate as run

    return run(*args, **kwargs)


def plot(*args: Any, **kwargs: Any) -> Any:
    """Run :func:`langchain_promptstrat.simulate.plot` (imported on first use)."""
    from langchain_promptstrat.simulate import plot as draw

    return draw(*args, **kwargs)


def _number(wanted: str, accept: Callable[[float], bool]) -> Callable[[str], float]:
    """Return an argparse type reading a number that ``accept`` takes (not a number never is), else
    saying it ``must be {wanted}``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not accept(value):
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}")
        return value

    return parse


def add_simulate_commands(commands: argparse._SubParsersAction[Any], detailed: bool = True) -> None:
    """Add ``simulate`` to ``commands`` (without its options unless ``detailed``: enough for
    ``--help``)."""
    sim = commands.add_parser(
        "simulate",
        help="replay a long simulated agent run through each strategy; print tokens, cache reuse "
        "and cost",
        description=(
            "Build a realistic long agent run (tool calls, output sizes, repeats and user turns "
            "drawn from "
            "--seed), apply each strategy before every model call, and print per strategy: model "
            "calls, "
            "prompt tokens sent, peak prompt tokens, cache reuse (mean share of each prompt that "
            "is a "
            "byte-identical prefix of the previous one), estimated cost with cached input billed "
            "at "
            "--cached-fraction, and the time spent in the strategy. No model, network or key is "
            "used."
        ),
    )
    if not detailed:
        return
    from langchain_promptstrat.ceiling import DEFAULT_MAX_TOKENS
    from langchain_promptstrat.defaults import (
        BILLS,
        CACHE_RULES,
        DEFAULT_CACHED_FRACTION,
        DEFAULT_TOOL_CALLS,
        LONG_RUN_CALLS,
        MAX_SIMULATED_CALLS,
        SIMULATED_MAX_TOKENS,
    )

    sim.add_argument(
        "strategies",
        nargs="*",
        metavar="STRATEGY|FILE",
        help="strategy names; a comma joins a pipeline, e.g. shorten_tools,inbox (default: none "
        "and every "
        "built-in strategy a replay can build). An argument naming an existing file or folder is "
        "a saved "
        "transcript to replay instead of the simulated run: OpenAI chat JSON/JSONL, LangChain "
        "message dicts, "
        "an Anthropic Messages API body or a mini-swe-agent .traj.json; a folder gives its *.json "
        "and *.jsonl "
        "files; the figures are summed over every model call of every file",
    )
    calls = _number(
        f"a whole number of tool calls from 1 to {MAX_SIMULATED_CALLS:,} "
        "(a run's prompts grow with the square of its calls)",
        lambda v: v.is_integer() and 1 <= v <= MAX_SIMULATED_CALLS,
    )
    sim.add_argument(
        "--calls",
        type=lambda text: int(calls(text)),
        default=DEFAULT_TOOL_CALLS,
        metavar="N",
        help=f"tool calls of the simulated run, at most {MAX_SIMULATED_CALLS:,} (default: "
        f"{DEFAULT_TOOL_CALLS}; from {LONG_RUN_CALLS:,} on, progress is shown on standard error)",
    )
    sim.add_argument(
        "--seed", type=int, default=0, metavar="N", help="seed of the simulated run (default: 0)"
    )
    sim.add_argument(
        "--compare",
        action="store_true",
        help="also replay the peers: trim_messages and ClearToolUsesEdit at --max-tokens, and "
        "SWE-agent's "
        "observation masking (LastNObservations n=10, with and without polling=5)",
    )
    sim.add_argument(
        "--max-tokens",
        type=positive_int,
        default=SIMULATED_MAX_TOKENS,
        metavar="N",
        help="token target of the peers and of strategies that take one (default: "
        f"{SIMULATED_MAX_TOKENS:,}, "
        "simulate's own; apply and stats use $PROMPTSTRAT_MAX_TOKENS, else "
        f"{DEFAULT_MAX_TOKENS:,})",
    )
    fraction = _number("a number between 0 and 1", lambda v: 0 <= v <= 1)
    price = _number("a non-negative number of dollars", lambda v: math.isfinite(v) and v >= 0)
    sim.add_argument(
        "--cached-fraction",
        type=fraction,
        default=DEFAULT_CACHED_FRACTION,
        metavar="F",
        help="share of the input price billed for cached input tokens (default: "
        f"{DEFAULT_CACHED_FRACTION})",
    )
    sim.add_argument(
        "--price-per-mtok",
        type=price,
        metavar="USD",
        help="input price per million tokens; adds a cost in dollars",
    )
    sim.add_argument(
        "--cache",
        choices=CACHE_RULES,
        default="prefix",
        help="also show what a provider's cache would serve and bill: openai (automatic prefix "
        "cache, "
        "from 1,024 tokens in 128-token steps) or anthropic (cache_control breakpoints, 20-block "
        "lookback, writes at 1.25x); prefix (default) shows only the upper bound",
    )
    sim.add_argument(
        "--bill",
        choices=BILLS,
        default="package",
        help="provider: replaying transcripts that carry usage (NAME.usage.json beside them, or "
        "usage_metadata "
        "on their answers), scale each call's tokens in every row by the provider's billed input "
        "over the none "
        "row's count of it; the none row's cached tokens are the provider's, the others' "
        "--cache's; calls "
        "without usage keep the package's count (default: package)",
    )
    sim.add_argument(
        "--breakpoints",
        action="store_true",
        help="also replay each strategy with Anthropic cache breakpoints marked (system, previous "
        "and "
        "current compaction edges, tail; rows named STRATEGY+breakpoints) beside the same strategy "
        "with AnthropicPromptCachingMiddleware's placement (system and tail); use with --cache "
        "anthropic",
    )
    add_counter_options(sim)
    sim.add_argument(
        "--mirror",
        choices=("openai", "anthropic", "mixed"),
        help="also record the tool calls as a provider integration does (OpenAI additional_kwargs, "
        "Anthropic tool_use blocks, or a mix per step)",
    )
    sim.add_argument(
        "--plot",
        metavar="FILE.png",
        help="draw prompt tokens and cache reuse per call for each strategy, and (replayed "
        "transcripts) cost "
        "against next-action recall, one point per strategy (needs matplotlib)",
    )
    sim.add_argument(
        "--json", action="store_true", help="print the figures as JSON, per-call figures included"
    )
    sim.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on standard error (default: only when it is a terminal)",
    )
    sim.set_defaults(func=_simulate)


def _plot_target(name: str) -> Path:
    """Return the plot's path once matplotlib, the file type and the directory are known to work.

    Checked before the replay, so a long run never ends in an error it could have shown first.
    """
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise UsageError(
            f"plotting needs matplotlib, which is not installed: {install_hint('plot')}"
        ) from None
    path = Path(name)
    kinds = FigureCanvasBase.get_supported_filetypes()
    kind = path.suffix.lower().lstrip(".")
    if kind not in kinds:
        raise UsageError(
            f"cannot plot to {name!r}: name a file ending in "
            f"{', '.join('.' + k for k in sorted(kinds))}"
        )
    if path.is_dir():
        raise UsageError(f"cannot plot to {name!r}: it is a directory")
    if not path.parent.is_dir():
        raise UsageError(f"cannot plot to {name!r}: directory {str(path.parent)!r} does not exist")
    return path


def _write_plot(result: Any, path: Path) -> None:
    """Write the plot to a temporary sibling, then rename it, so a failure never leaves half a
    file."""
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
        if os.sep in name or name.endswith(
            (".json", ".jsonl")
        ):  # meant as a transcript: say what is missing
            raise UsageError(
                f"no such file or folder: {name!r} (a strategy name has neither '/' nor a .json "
                "suffix)"
            )
    if args.bill != "package" and not files:
        raise UsageError(
            f"--bill {args.bill} replays transcripts that carry usage: name a file or folder"
        )
    common: dict[str, Any] = dict(
        token_counter=token_counter(args),
        cached_fraction=args.cached_fraction,
        peers=args.compare,
        max_tokens=args.max_tokens,
        progress=args.progress,
        price_per_mtok=args.price_per_mtok,
        cache=args.cache,
    )
    strategies: Any = names or None
    if args.breakpoints:
        from langchain_promptstrat.simulate import default_strategy_names, with_cache_breakpoints

        plain = names or default_strategy_names(max_tokens=args.max_tokens)
        strategies = [
            *plain,
            *with_cache_breakpoints(
                [n for n in plain if n != "none"],
                max_tokens=args.max_tokens,
                token_counter=common["token_counter"],
            ),
        ]
    if files:
        from langchain_promptstrat.replay import simulate_files

        result = simulate_files(files, strategies, bill=args.bill, **common)
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

    print(
        json.dumps(result_to_json(result), indent=2)
        if args.json
        else format_table(result, terminal_width())
    )
    if plot_path is not None:
        print(f"plot written to {plot_path}", file=sys.stderr)
    return 0
