"""Token-budget ladder against LangChain's trim_messages and ClearToolUsesEdit, side by side.

Run: ``python benchmarks/bench_ladder.py`` (offline; about a minute on one core).

1. One call on conversations of about 1,000 and 5,000 messages: the ladder without
   Summary (tool_results, sliding_window) against ``trim_messages`` with the same counter
   and target: time per call and what is kept.
2. A replayed growing agent run, one model call after every step: tokens sent, the peak
   prompt, and the share of each prompt that is a byte-identical prefix of the previous
   prompt (what a provider's prompt cache can reuse), for the ladder with and without its
   low watermark, ``trim_messages`` and ``ClearToolUsesEdit`` at the same target.

Every count is a real cl100k_base count (``TokenCounter``), shared by all contenders so the
per-message cache is warm for each of them alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence

from langchain.agents.middleware import ClearToolUsesEdit
from langchain_core.messages import BaseMessage, convert_to_openai_messages, trim_messages

from langchain_promptstrat import check_tool_pairs
from langchain_promptstrat.messages import is_real_user_message
from langchain_promptstrat.messages.history_memo import call_points
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.strategies.sliding_window import SlidingWindow
from langchain_promptstrat.strategies.tool_results import ToolResults
from langchain_promptstrat.testing import build_agent_run, iter_agent_run
from langchain_promptstrat.tokens import TokenCounter

COUNT = TokenCounter("cl100k_base")
Strategy = Callable[[list[BaseMessage]], list[BaseMessage]]


# --------------------------------------------------------------------------- contenders


def ladder(max_tokens: int, *, watermark: bool) -> CompactionLadder:
    low = None if watermark else max_tokens
    return CompactionLadder(
        [ToolResults(), SlidingWindow()], max_tokens=max_tokens, low_tokens=low, token_counter=COUNT
    )


def trim(max_tokens: int) -> Strategy:
    """trim_messages as LangChain documents it for chat history, starting on a user or assistant
    message."""

    def run(messages: list[BaseMessage]) -> list[BaseMessage]:
        return trim_messages(
            messages,
            max_tokens=max_tokens,
            token_counter=COUNT,
            strategy="last",
            include_system=True,
            start_on=("human", "ai"),
        )

    return run


def clear_tool_uses(max_tokens: int, clear_at_least: int = 0) -> Strategy:
    """ClearToolUsesEdit applied as ContextEditingMiddleware does, to a copy of the prompt."""
    edit = ClearToolUsesEdit(trigger=max_tokens, clear_at_least=clear_at_least)

    def run(messages: list[BaseMessage]) -> list[BaseMessage]:
        edited = list(messages)  # the edit replaces list items, it never mutates a message
        edit.apply(edited, count_tokens=COUNT)
        return edited

    return run


# --------------------------------------------------------------------------- measures


def wire(message: BaseMessage) -> bytes:
    """Return the bytes a provider receives for ``message`` (OpenAI format, keys sorted)."""
    return json.dumps(
        convert_to_openai_messages(message), sort_keys=True, ensure_ascii=False
    ).encode()


def common_prefix_tokens(
    previous: Sequence[bytes], current: Sequence[bytes], sizes: Sequence[int]
) -> int:
    """Return the tokens of ``current``'s leading messages byte-identical to ``previous``'s."""
    total = 0
    for a, b, size in zip(previous, current, sizes, strict=False):
        if a != b:
            break
        total += size
    return total


def cut_at_call_point(messages: list[BaseMessage], n: int) -> list[BaseMessage]:
    """Return the longest prefix of at most ``n`` messages that is a model call's prompt."""
    return messages[: max(p for p in call_points(messages) if p <= n)]


def per_call_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


# --------------------------------------------------------------------------- part 1


def one_call(sizes: Sequence[int], max_tokens: int, repeat: int) -> None:
    print(
        f"\n1. One call, target {max_tokens:,} tokens (median of {repeat} calls; counter cache "
        "warm for all)\n"
    )
    header = (
        f"{'messages':>8}  {'contender':<34} {'ms/call':>9} {'tokens kept':>12} "
        f"{'msgs kept':>10} {'task kept':>10} {'pairs ok':>9}"
    )
    print(header)
    print("-" * len(header))
    longest = build_agent_run(int(max(sizes) / 1.55) + 50, seed=7)
    for n in sizes:
        messages = cut_at_call_point(longest, n)
        COUNT(messages)  # warm the shared per-message cache once
        anchor = next(m for m in reversed(messages) if is_real_user_message(m))
        watermarked = ladder(max_tokens, watermark=True)
        contenders: list[tuple[str, Callable[[], list[BaseMessage]]]] = [
            (
                "ladder, one-shot (low = max)",
                lambda m=messages: ladder(max_tokens, watermark=False).invoke(m),
            ),
            (
                "ladder, watermark, cold replay",
                lambda w=watermarked, m=messages: (w.forget(), w.invoke(m))[1],
            ),
            ("ladder, watermark, warm (memo)", lambda w=watermarked, m=messages: w.invoke(m)),
            ("trim_messages", lambda m=messages: trim(max_tokens)(m)),
        ]
        print(
            f"{len(messages):>8}  {'(input)':<34} {'':>9} {COUNT(messages):>12,} "
            f"{len(messages):>10} {'':>10} {'':>9}"
        )
        for name, call in contenders:
            out = call()
            ms = per_call_ms(call, repeat)
            kept_task = any(m is anchor for m in out)
            print(
                f"{'':>8}  {name:<34} {ms:>9.1f} {COUNT(out):>12,} {len(out):>10} "
                f"{str(kept_task):>10} {str(not check_tool_pairs(out)):>9}"
            )


# --------------------------------------------------------------------------- part 2


def growing_run(n_tool_calls: int, max_tokens: int) -> None:
    low = int(max_tokens * 0.7)
    prompts = list(iter_agent_run(n_tool_calls, seed=11))[1:]  # a model call after every step
    print(
        f"\n2. Growing agent run: {n_tool_calls} tool calls, {len(prompts)} model calls, "
        f"history ends at {len(prompts[-1]):,} messages / {COUNT(prompts[-1]):,} tokens; target "
        f"{max_tokens:,}\n"
    )
    contenders: list[tuple[str, Strategy]] = [
        ("full history (no strategy)", list),
        (f"ladder, watermark (low {low:,})", ladder(max_tokens, watermark=True).invoke),
        ("ladder, one-shot (low = max)", ladder(max_tokens, watermark=False).invoke),
        ("trim_messages", trim(max_tokens)),
        ("ClearToolUsesEdit(trigger=T)", clear_tool_uses(max_tokens)),
        (
            f"ClearToolUsesEdit(.., clear_at_least={max_tokens - low:,})",
            clear_tool_uses(max_tokens, max_tokens - low),
        ),
    ]
    header = (
        f"{'contender':<44} {'tokens sent':>12} {'peak':>8} {'over T':>7} {'prefix reuse':>13} "
        f"{'calls w/ full prefix':>21} {'ms/call':>8}"
    )
    print(header)
    print("-" * len(header))
    for name, strategy in contenders:
        sent = peak = over = reused = full_prefix = 0
        elapsed = 0.0
        previous: list[bytes] = []
        for prompt in prompts:
            start = time.perf_counter()
            out = strategy(prompt)
            elapsed += time.perf_counter() - start
            sizes = [COUNT.count_message(m) for m in out]
            tokens = sum(sizes)
            current = [wire(m) for m in out]
            shared = common_prefix_tokens(previous, current, sizes)
            if previous and len(current) >= len(previous) and current[: len(previous)] == previous:
                full_prefix += 1
            sent += tokens
            reused += shared
            peak = max(peak, tokens)
            over += tokens > max_tokens
            previous = current
        print(
            f"{name:<44} {sent:>12,} {peak:>8,} {over:>7} {reused / sent:>12.1%} "
            f"{full_prefix:>10} / {len(prompts) - 1:<8} {elapsed / len(prompts) * 1000:>8.2f}"
        )
    print(
        "\nprefix reuse: tokens of each prompt whose leading messages are byte-identical (OpenAI "
        "wire format)\n"
        "to the previous prompt's, over all tokens sent. calls w/ full prefix: prompts that start "
        "with the\n"
        "whole previous prompt. over T: prompts above the target."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--max-tokens", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--run-calls", type=int, default=600)
    parser.add_argument("--run-max-tokens", type=int, default=50_000)
    args = parser.parse_args()
    print(f"counter: {COUNT!r}, exact: {COUNT.exact}")
    one_call(args.sizes, args.max_tokens, args.repeat)
    growing_run(args.run_calls, args.run_max_tokens)


if __name__ == "__main__":
    main()
