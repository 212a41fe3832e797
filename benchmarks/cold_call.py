"""Where a cold call's time goes: the default list and ``trim_messages`` on a conversation never
seen, with the text each side hands the tokenizer and the time spent inside it.

One process; for each side: the package's token caches forgotten, the history deserialized, one
call timed, the tokenizer's ``encode_ordinary`` counted (calls, characters, milliseconds). The
rest of a side's time is its own work. Ours runs first for an even seed, the peer first for an odd
one; the medians of the seeds are printed.

    python benchmarks/cold_call.py [--calls 150 1000] [--seeds 5] [--ceiling 32000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from front_ends import forget_token_caches, reloaded, trim_with

from langchain_promptstrat.registry import apply_strategies, resolve_strategies
from langchain_promptstrat.testing import iter_agent_run
from langchain_promptstrat.tokens import TokenCounter


class CountedEncoder:
    """The tokenizer's core, counting what it is asked to encode."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = self.chars = 0
        self.seconds = 0.0

    def encode_ordinary(self, text: str) -> Any:
        started = time.perf_counter()
        try:
            return self.inner.encode_ordinary(text)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1
            self.chars += len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def one_side(side: str, history: list[Any], ceiling: int, spy: CountedEncoder) -> list[float]:
    """Return ``[ms, encodings, characters, ms encoding]`` of one cold call of ``side``."""
    forget_token_caches()
    again = reloaded(history)
    strategies = resolve_strategies(None)
    trim = trim_with(TokenCounter(), ceiling)

    def call() -> Any:
        if side == "ours":
            return apply_strategies(again, strategies, max_tokens=ceiling)
        return trim(again)

    spy.calls = spy.chars = 0
    spy.seconds = 0.0
    started = time.perf_counter()
    call()
    spent = time.perf_counter() - started
    return [1000 * spent, spy.calls, spy.chars, 1000 * spy.seconds]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[150, 1_000])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--ceiling", type=int, default=32_000)
    args = parser.parse_args(argv)
    encoding = TokenCounter().encoding
    spy = CountedEncoder(encoding._core_bpe)
    encoding._core_bpe = spy
    warm = [list(p) for p in iter_agent_run(40, seed=99)][-1]  # imports and first use aside
    apply_strategies(warm, resolve_strategies(None), max_tokens=args.ceiling)
    print("tool calls  side            ms   encodings   characters   ms encoding   ms other work")
    for calls in args.calls:
        found: dict[str, list[list[float]]] = {"ours": [], "trim_messages": []}
        for seed in range(args.seeds):
            history = [list(p) for p in iter_agent_run(calls, seed=seed)][-1]
            order = ["ours", "trim_messages"] if seed % 2 == 0 else ["trim_messages", "ours"]
            for side in order:
                found[side].append(one_side(side, history, args.ceiling, spy))
        for side, rows in found.items():
            ms, encodings, chars, encoding_ms = (
                statistics.median(c) for c in zip(*rows, strict=True)
            )
            print(
                f"{calls:>10,}  {side:<13} {ms:7.1f}   {encodings:9,.0f}   {chars:10,.0f}"
                f"   {encoding_ms:11.1f}   {ms - encoding_ms:13.1f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
