"""What a conversation loaded again costs the replaying strategies, against the next call of a warm
object.

A LangGraph server thread or a new process hands the strategy the same conversation as
new message objects (deserialized from a checkpoint). This script replays the seeded
1,000-call run through one strategy object, call by call as an agent loop does, then
times, on the full history:

* ``warm next call``: the last call of that loop (the object saw the call before);
* ``reloaded, warm object``: the same history deserialized again
  (``messages_from_dict(messages_to_dict(history))``), on the same object;
* ``reloaded, fresh object``: that history on a new object (a new process).

Each reloaded prompt is checked byte for byte against the warm call's. Figures are the
median of ``--repeat`` runs of each, in milliseconds, for the bounded default
(``ShortenToolsEpochStable(max_tokens=60_000)``) and the watermark ladder
(``CompactionLadder(["tool_results", "sliding_window"], max_tokens=60_000)``).

    python benchmarks/reload.py
    python benchmarks/reload.py --calls 1000 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict

from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.testing import iter_agent_run

CEILING = 60_000
STRATEGIES: dict[str, Callable[[], Any]] = {
    "shorten_tools_epoch_stable": lambda: ShortenToolsEpochStable(max_tokens=CEILING),
    "ladder": lambda: CompactionLadder(["tool_results", "sliding_window"], max_tokens=CEILING),
}


def reloaded(history: list[BaseMessage]) -> list[BaseMessage]:
    """Return ``history`` as a checkpoint gives it back: equal messages, new objects."""
    return messages_from_dict(messages_to_dict(history))


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return 1000 * (time.perf_counter() - started), result


def measure(name: str, prompts: list[list[BaseMessage]], repeat: int) -> str:
    """Return one line of figures for the strategy ``name``; exit 1 when a reloaded prompt
    differs."""
    warm_ms, reload_ms, fresh_ms = [], [], []
    for _ in range(repeat):
        strategy = STRATEGIES[name]()
        for prompt in prompts[:-1]:
            strategy.compact(list(prompt))
        history = list(prompts[-1])
        ms, warm = timed(lambda s=strategy, h=history: s.compact(list(h)))
        warm_ms.append(ms)
        again = reloaded(history)
        ms, from_reload = timed(lambda s=strategy, h=again: s.compact(h))
        reload_ms.append(ms)
        fresh_history = reloaded(history)
        fresh = STRATEGIES[name]()
        ms, from_fresh = timed(lambda s=fresh, h=fresh_history: s.compact(h))
        fresh_ms.append(ms)
        for label, result in (("reloaded", from_reload), ("fresh", from_fresh)):
            if result.messages != warm.messages:
                raise SystemExit(f"{name}: the {label} history gives a different prompt")
    warm, reload, fresh = (statistics.median(x) for x in (warm_ms, reload_ms, fresh_ms))
    return (
        f"{name}: warm next call {warm:.1f} ms, reloaded on the warm object {reload:.1f} ms "
        f"({reload / warm:.1f}x), "
        f"reloaded on a fresh object {fresh:.1f} ms ({fresh / warm:.1f}x)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls",
        type=int,
        default=1_000,
        help="tool calls of the seeded run (default %(default)s)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of each measurement; the median is shown (default %(default)s)",
    )
    parser.add_argument(
        "--strategies", nargs="+", default=list(STRATEGIES), choices=list(STRATEGIES)
    )
    args = parser.parse_args(argv)
    prompts = list(iter_agent_run(args.calls, seed=0))
    print(
        f"{args.calls:,} tool calls, {len(prompts)} model calls, ceiling {CEILING:,}, median of "
        f"{args.repeat}"
    )
    for name in args.strategies:
        print(measure(name, prompts, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
