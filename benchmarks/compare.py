"""Print our strategies side by side with trim_messages and ClearToolUsesEdit on simulated agent
runs.

Every row replays the same prompts with the same token counter; the peers get the same
token target. The definitions of every column are in ``langchain_promptstrat.simulate``.

    python benchmarks/compare.py                      # 400 tool calls, seed 0
    python benchmarks/compare.py --calls 400 --seeds 0 1 2 --max-tokens 60000
    python benchmarks/compare.py --json > compare.json

The same figures as ``promptstrat simulate --compare``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from langchain_promptstrat.errors import PromptStratError
from langchain_promptstrat.simulate import (
    DEFAULT_CACHED_FRACTION,
    DEFAULT_TOOL_CALLS,
    SIMULATED_MAX_TOKENS,
    format_table,
    plot,
    result_to_json,
    simulate,
)


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
        "--seeds", type=int, nargs="+", default=[0], help="one run per seed (default: 0)"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=SIMULATED_MAX_TOKENS,
        help="token target of the peers and of our strategies that take one (default %(default)s)",
    )
    parser.add_argument(
        "--strategies",
        default=None,
        help="our strategies, space-separated (a comma joins a pipeline); default: every built-in "
        "plus none",
    )
    parser.add_argument(
        "--cached-fraction",
        type=float,
        default=DEFAULT_CACHED_FRACTION,
        help="share of the input price billed for cached tokens (default %(default)s)",
    )
    parser.add_argument(
        "--price-per-mtok",
        type=float,
        default=None,
        help="input price in dollars per million tokens, to show dollars",
    )
    parser.add_argument(
        "--plot",
        metavar="PREFIX",
        default=None,
        help="also write PREFIX-seed<N>.png per seed (needs matplotlib)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document with every seed's figures instead of tables",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run one comparison per seed and print it; return the exit status."""
    args = parse_args(argv)
    strategies = args.strategies.split() if args.strategies else None
    documents = []
    try:
        for seed in args.seeds:
            started = time.perf_counter()
            result = simulate(
                strategies,
                n_tool_calls=args.calls,
                seed=seed,
                peers=True,
                max_tokens=args.max_tokens,
                cached_fraction=args.cached_fraction,
                price_per_mtok=args.price_per_mtok,
            )
            elapsed = time.perf_counter() - started
            if args.plot:
                plot(result, f"{args.plot}-seed{seed}.png")
            if args.json:
                documents.append({**result_to_json(result), "wall_seconds": elapsed})
                continue
            if seed != args.seeds[0]:
                print()
            print(format_table(result))
            print(
                f"wall time: {elapsed:.1f} s (replays, token counts and cache comparison included)"
            )
    except PromptStratError as exc:
        print(f"compare.py: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(documents, sys.stdout, indent=1)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
