"""Time shorten_tools_epoch_increment per model call, next to langchain_core's trim_messages.

Run from the repository root::

    python benchmarks/bench_epoch.py            # sizes 100, 1000, 5000
    python benchmarks/bench_epoch.py 100 1000   # chosen sizes

For each size it builds a realistic agent run with ``langchain_promptstrat.testing.iter_agent_run``
(outputs of 0.2-20 KB, string arguments up to 600 characters, up to 3 parallel calls,
about 8 % repeated calls, a new user message every 60-120 calls) and picks, among the
prompts an agent loop sends, the last two consecutive ones that share an epoch and the
last pair across a boundary move. Default settings throughout.

* **ours cold**: the first of the in-epoch pair with every cache empty (truncations, repeat
  keys, compacted heads), as in a fresh process: every key and shortening is computed.
* **ours boundary**: the first call of a new epoch, right after the previous call of the
  loop: the compacted head is rebuilt, keys and most truncations are already known.
* **ours in epoch**: the second of the in-epoch pair, right after the first: the common
  case, which reuses the compacted head.
* **trim_messages**: ``trim_messages(strategy="last", token_counter=count_tokens_approximately)``
  on the same prompt as "in epoch", with ``max_tokens`` set to what our compacted prompt
  counts (``tokens out``), so both hand the model the same budget.

Every run takes each figure once, in turn, so background load hits all of them alike; the
table shows medians in milliseconds per call. ``ratio`` is trim_messages divided by ours in
epoch (above 1: we are faster); ``us/tool call`` (ours in epoch) shows the cost growing
linearly with the length of the conversation.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, trim_messages
from langchain_core.messages.utils import count_tokens_approximately

from langchain_promptstrat.messages.history_memo import clear_caches
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch import shorten_tools_epoch_increment
from langchain_promptstrat.testing import iter_agent_run

DEFAULT_SIZES = (100, 1_000, 5_000)


def timed(func: Callable[[], Any]) -> float:
    """Return the wall time of one call of ``func``, in milliseconds."""
    gc.collect()
    start = time.perf_counter()
    func()
    return (time.perf_counter() - start) * 1e3


class Prompts(NamedTuple):
    """Consecutive prompts of one agent run: across a boundary move, and inside one epoch."""

    before_boundary: list[BaseMessage]
    at_boundary: list[BaseMessage]
    in_epoch_first: list[BaseMessage]
    in_epoch_next: list[BaseMessage]


def pick_prompts(n_tool_calls: int, seed: int, settings: Settings) -> Prompts:
    """Return the last boundary move and the last pair of calls sharing an epoch of a run of
    ``n_tool_calls``."""
    window: list[list[BaseMessage]] = []
    for prompt in iter_agent_run(n_tool_calls, seed=seed):
        window = (window + [prompt])[-100:]
    pinned = [
        shorten_tools_epoch_increment(p, settings=settings).report.details["pinned_total"]
        for p in window
    ]
    same = max(
        (i for i in range(1, len(window)) if pinned[i] is not None and pinned[i] == pinned[i - 1]),
        default=None,
    )
    moved = max((i for i in range(1, len(window)) if pinned[i] != pinned[i - 1]), default=None)
    if same is None or moved is None:
        raise SystemExit(
            f"{n_tool_calls} tool calls do not reach a second call within an epoch; use a larger "
            "size"
        )
    return Prompts(window[moved - 1], window[moved], window[same - 1], window[same])


def measure(n_tool_calls: int, *, seed: int, runs: int) -> dict[str, Any]:
    """Return the median timings of one size; every figure is taken once in each run, in turn."""
    settings = Settings()
    prompts = pick_prompts(n_tool_calls, seed, settings)
    second = prompts.in_epoch_next
    result = shorten_tools_epoch_increment(second, settings=settings)
    budget = count_tokens_approximately(result.messages)

    def ours(messages: list[BaseMessage]) -> Callable[[], Any]:
        return lambda: shorten_tools_epoch_increment(messages, settings=settings)

    times: dict[str, list[float]] = {"cold": [], "boundary": [], "next": [], "trim": []}
    for _ in range(runs):
        clear_caches()
        times["cold"].append(timed(ours(prompts.in_epoch_first)))
        times["next"].append(timed(ours(second)))
        ours(prompts.before_boundary)()
        times["boundary"].append(timed(ours(prompts.at_boundary)))
        times["trim"].append(
            timed(
                lambda: trim_messages(
                    second,
                    max_tokens=budget,
                    strategy="last",
                    token_counter=count_tokens_approximately,
                )
            )
        )
    return {
        "tool_calls": result.report.tool_calls,
        "messages": len(second),
        "tokens": count_tokens_approximately(second),
        "budget": budget,
        "prefix_change": result.report.details["prefix_change"],
        **{k: statistics.median(v) for k, v in times.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "sizes",
        nargs="*",
        type=int,
        default=list(DEFAULT_SIZES),
        help="tool calls per conversation",
    )
    parser.add_argument("--runs", type=int, default=15, help="runs per figure (median)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    print(
        f"python {platform.python_version()} on {platform.machine()} ({os.cpu_count()} cpus); "
        f"median of {args.runs} runs; ms per call"
    )
    header = (
        f"{'tool calls':>10} {'messages':>8} {'tokens in':>9} {'tokens out':>10} "
        f"{'ours cold':>9} {'ours boundary':>13} {'ours in epoch':>13} {'trim_messages':>13} "
        f"{'ratio':>6} {'us/tool call':>12}"
    )
    print(header)
    print("-" * len(header))
    for size in args.sizes:
        r = measure(size, seed=args.seed, runs=args.runs)
        assert r["prefix_change"] is None, "the in-epoch prompts should share an epoch"
        print(
            f"{r['tool_calls']:>10,} {r['messages']:>8,} {r['tokens']:>9,} {r['budget']:>10,} "
            f"{r['cold']:>9.2f} {r['boundary']:>13.2f} {r['next']:>13.2f} {r['trim']:>13.2f} "
            f"{r['trim'] / r['next']:>5.1f}x {r['next'] * 1e3 / max(r['tool_calls'], 1):>12.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
