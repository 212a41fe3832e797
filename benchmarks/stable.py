"""Print shorten_tools_epoch_stable side by side with the default strategy and the peers, one table
per seed.

Every row replays the same simulated agent run (``langchain_promptstrat.simulate``: a model
call after every step, cached input billed at ``--cached-fraction`` of the price, the peers
at the same ``--max-tokens`` target), so the columns compare like with like:

* cache reuse: mean over model calls of the share of the prompt that repeats the previous
  prompt's leading messages byte for byte;
* price multiplier: cost over tokens sent (1.0 = nothing cached, ``--cached-fraction`` =
  everything cached);
* mean and peak prompt: tokens per model call;
* strategy time: wall time inside the strategy over the run.

Under each table, one line says whether shorten_tools_epoch_stable meets the goal of
issue 9 on that seed: cache reuse >= 95 %, price multiplier <= 0.15, and a mean prompt at
least as large as shorten_tools_epoch_increment's (the same or more context).

    python benchmarks/stable.py --seeds 0 1 2 --calls 400
"""

from __future__ import annotations

import argparse
import sys
import time

from langchain_promptstrat.errors import PromptStratError
from langchain_promptstrat.simulate import (
    DEFAULT_CACHED_FRACTION,
    DEFAULT_TOOL_CALLS,
    SIMULATED_MAX_TOKENS,
    SimulationResult,
    StrategyRun,
    simulate,
)
from langchain_promptstrat.text_table import render_table

STABLE = "shorten_tools_epoch_stable"
INCREMENT = "shorten_tools_epoch_increment"
DEFAULT_ROWS = ("none", STABLE, INCREMENT)

GOAL_REUSE = 0.95
GOAL_MULTIPLIER = 0.15


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Return the command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls",
        type=int,
        default=DEFAULT_TOOL_CALLS,
        help="tool calls of each simulated run (default %(default)s)",
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0, 1, 2], help="one run per seed (default: 0 1 2)"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=SIMULATED_MAX_TOKENS,
        help="token target of the peers (default %(default)s)",
    )
    parser.add_argument(
        "--cached-fraction",
        type=float,
        default=DEFAULT_CACHED_FRACTION,
        help="share of the input price billed for cached tokens (default %(default)s)",
    )
    return parser.parse_args(argv)


def _row(run: StrategyRun, cached_fraction: float) -> list[str]:
    s = run.summary(cached_fraction)
    label = f"{run.name} (peer)" if run.kind == "peer" else run.name
    return [
        label,
        f"{100 * s['cache_reuse']:.1f}%",
        f"{s['price_multiplier']:.3f}",
        f"{run.total_tokens / max(run.calls, 1):,.0f}",
        f"{s['peak_tokens']:,}",
        f"{s['cost_units']:,.0f}",
        f"{s['strategy_seconds']:.2f} s",
        f"{s['degenerate_calls']:,}",
    ]


def format_side_by_side(result: SimulationResult) -> str:
    """Return one aligned table: reuse, price multiplier, mean and peak prompt, cost and strategy
    time per row."""
    columns = [
        "strategy",
        "cache reuse",
        "price mult.",
        "mean prompt",
        "peak prompt",
        "cost (units)",
        "strategy time",
        "degenerate",
    ]
    rows = [_row(run, result.cached_fraction) for run in result.runs]
    return "\n".join(render_table(columns, rows))


def goal_line(result: SimulationResult) -> tuple[bool, str]:
    """Return whether the stable strategy meets the goal on this run, and the line that says so with
    its figures."""
    stable, increment = result.run(STABLE), result.run(INCREMENT)
    s = stable.summary(result.cached_fraction)
    mean, mean_increment = (
        stable.total_tokens / stable.calls,
        increment.total_tokens / increment.calls,
    )
    checks = [
        (
            s["cache_reuse"] >= GOAL_REUSE,
            f"reuse {100 * s['cache_reuse']:.2f}% >= {100 * GOAL_REUSE:.0f}%",
        ),
        (
            s["price_multiplier"] <= GOAL_MULTIPLIER,
            f"multiplier {s['price_multiplier']:.4f} <= {GOAL_MULTIPLIER}",
        ),
        (mean >= mean_increment, f"mean prompt {mean:,.0f} >= {mean_increment:,.0f} ({INCREMENT})"),
    ]
    met = all(ok for ok, _ in checks)
    figures = "; ".join(f"{text}{'' if ok else ' NOT MET'}" for ok, text in checks)
    cost_ratio = stable.cost(result.cached_fraction) / increment.cost(result.cached_fraction)
    return (
        met,
        f"seed {result.seed}: goal {'met' if met else 'not met'} -- {figures}; cost "
        f"{cost_ratio:.2f}x {INCREMENT}'s",
    )


def main(argv: list[str] | None = None) -> int:
    """Run one replay per seed, print its table and goal line, then a summary; return the exit
    status."""
    args = parse_args(argv)
    started = time.perf_counter()
    verdicts: list[bool] = []
    try:
        for seed in args.seeds:
            result = simulate(
                list(DEFAULT_ROWS),
                n_tool_calls=args.calls,
                seed=seed,
                peers=True,
                max_tokens=args.max_tokens,
                cached_fraction=args.cached_fraction,
                progress=False,
            )
            if seed != args.seeds[0]:
                print()
            print(
                f"seed {seed}: {result.n_tool_calls:,} tool calls, {result.model_calls:,} model "
                "calls; cached input at "
                f"{result.cached_fraction:g} of the price; peers at {result.max_tokens:,} tokens; "
                f"{result.token_counter}"
            )
            print(format_side_by_side(result))
            met, line = goal_line(result)
            verdicts.append(met)
            print(line)
            for note in result.notes:
                print(f"note: {note}")
    except PromptStratError as exc:
        print(f"stable.py: {exc}", file=sys.stderr)
        return 2
    print()
    print(
        f"goal met on every seed: {'yes' if all(verdicts) else 'no'} ({sum(verdicts)} of "
        f"{len(verdicts)})"
    )
    print(
        f"wall time: {time.perf_counter() - started:.1f} s (replays, token counts and cache "
        "comparison included)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
