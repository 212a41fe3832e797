"""Does the default keep the ceiling on the provider's count? Calls over it, cost and recall,
without and with usage.

Each real transcript with a usage file (``usage/`` of ``get_realruns.REALRUNS``) gives, for every
answer, the provider's ratio: its billed input over the package's count of the messages
before it (see ``benchmarks/provider_counts.py``). The bounded default
(``shorten_tools_epoch_stable``) is replayed call by call at 16,000 and 32,000 tokens and at
its no-settings ceiling, twice: ``before``, its answers carry no usage (the package as it
was without calibration); ``after``, each answer carries the usage the provider would have
reported for the prompt the strategy sent: that call's ratio times the package's count of
it, so the strategy learns the ratio as it would live. A call is *over* when its prompt, on
the provider's count (the package's count times the call's ratio), exceeds the ceiling. Cost
(cached input at 0.1, the prefix shared with the previous prompt cached) is relative to
sending everything; recall is next-action recall (``langchain_promptstrat.simulate.recall``).

    python benchmarks/provider_ceiling.py            # what get_realruns.py fetched
    python benchmarks/provider_ceiling.py 14000      # other ceilings
"""

from __future__ import annotations

import sys
from collections import defaultdict

from langchain_core.messages import AIMessage, BaseMessage
from provider_counts import REALRUNS

from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.replay import find_transcripts, usage_beside
from langchain_promptstrat.simulate import estimated_cost, shared_prefix_length
from langchain_promptstrat.simulate.recall import CallTargets, TermIndex, recall_counts
from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.text_table import render_table
from langchain_promptstrat.tokens import TokenCounter

count = TokenCounter()


def replay(
    messages: list[BaseMessage], ratios: list[float | None], ceiling: int | None, learn: bool
) -> tuple[int, int, float, float, int, int]:
    """Return (calls, calls over, cost, cost of sending everything, references counted, recalled) of
    one transcript."""
    strategy = ShortenToolsEpochStable(max_tokens=ceiling)
    limit = strategy.ceiling().tokens
    history: list[BaseMessage] = []
    index, previous, none_previous = TermIndex(), [], []
    calls = over = counted = recalled = 0
    cost = none_cost = 0.0
    answers = iter(ratios)
    for i, message in enumerate(messages):
        if i and isinstance(message, AIMessage):
            ratio = next(answers)
            sent = strategy.compact(history).messages
            tokens = count(sent)
            calls += 1
            over += ratio is not None and ratio * tokens > limit
            cost += estimated_cost(tokens, count(sent[: shared_prefix_length(previous, sent)]))
            none_cost += estimated_cost(count(history), count(none_previous))
            found = recall_counts(CallTargets.of(history, message, index), history, sent, index)
            counted, recalled = counted + found.counted, recalled + found.recalled
            previous, none_previous = sent, list(history)
            if learn and ratio is not None:
                billed = round(ratio * tokens)
                message = message.model_copy(
                    update={
                        "usage_metadata": {
                            "input_tokens": billed,
                            "output_tokens": 0,
                            "total_tokens": billed,
                        }
                    }
                )
        elif isinstance(message, AIMessage):
            next(answers)
        history.append(message)
    return calls, over, cost, none_cost, counted, recalled


def main() -> int:
    folder = REALRUNS / "converted"
    if not folder.is_dir():
        raise SystemExit(f"No transcripts at {folder}")
    totals: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0, 0, 0])
    for path, _ in find_transcripts([folder]):
        billed = usage_beside(path)
        if billed is None:
            continue
        read = read_conversation(str(path))
        messages = [*read.messages, *read.pending]
        answer_at = [i for i, m in enumerate(messages) if isinstance(m, AIMessage)]
        ratios = [
            b.tokens / count(messages[:i]) if b is not None and i else None
            for i, b in zip(answer_at, billed, strict=False)
        ]
        family = path.name.split("__", 1)[0]
        for ceiling in [int(a) for a in sys.argv[1:]] or [16_000, 32_000, None]:
            for mode in ("before", "after"):
                figures = replay(messages, ratios, ceiling, learn=mode == "after")
                total = totals[(family, f"{ceiling:,}" if ceiling else "no settings", mode)]
                for k, value in enumerate(figures):
                    total[k] += value
    rows = [
        [
            family,
            ceiling,
            mode,
            f"{int(t[0]):,}",
            f"{int(t[1]):,}",
            f"{t[2] / t[3]:.3f}",
            f"{t[5] / t[4]:.3f}" if t[4] else "-",
        ]
        for (family, ceiling, mode), t in totals.items()
    ]
    print(
        "\n".join(
            render_table(
                [
                    "family",
                    "ceiling",
                    "usage",
                    "calls",
                    "over (provider's count)",
                    "cost",
                    "recall",
                ],
                rows,
            )
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
