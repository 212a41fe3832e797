"""How the providers' own input counts compare with the package's count of the same messages.

Each answer of a real transcript that carries usage (``NAME.usage.json`` beside it, see
:mod:`langchain_promptstrat.tokens.usage`) says what the provider billed for the request
that produced it: every message before it, plus the tool schemas and the request's framing.
For each such answer past the fifth this script divides that figure by ``TokenCounter()`` of
the messages before it, and prints, per provider family (the file name's part before
``__``), the median, the 5th and 95th percentiles, and the share of calls the package
undercounts by more than the default's 2% margin (``stable_token_margin``).

    python benchmarks/provider_counts.py                         # what get_realruns.py fetched
    python benchmarks/provider_counts.py --folder DIR --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from get_realruns import REALRUNS
from langchain_core.messages import AIMessage

from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.replay import find_transcripts, usage_beside
from langchain_promptstrat.text_table import render_table
from langchain_promptstrat.tokens import TokenCounter
from langchain_promptstrat.tokens.usage import BilledInput

SKIP_FIRST = 5
MARGIN = 0.02


def ratios(transcript: Path, usage: list[BilledInput | None], counter: TokenCounter) -> list[float]:
    """Return provider ÷ package for each answer of ``transcript`` past the fifth whose usage was
    reported."""
    read = read_conversation(str(transcript))
    messages = [*read.messages, *read.pending]
    answers = [i for i, m in enumerate(messages) if isinstance(m, AIMessage)]
    if len(usage) != len(answers):
        raise SystemExit(
            f"{transcript}: {len(usage)} usage entries for {len(answers)} assistant messages"
        )
    out = []
    for n, (index, billed) in enumerate(zip(answers, usage, strict=False)):
        if n >= SKIP_FIRST and billed is not None and index > 0:
            out.append(billed.tokens / counter(messages[:index]))
    return out


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--folder",
        type=Path,
        default=REALRUNS / "converted",
        help="transcripts (default %(default)s)",
    )
    parser.add_argument(
        "--usage",
        type=Path,
        default=None,
        help="folder of NAME.usage.json files (default: --folder, then ../usage)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        raise SystemExit(f"No transcripts at {args.folder}")
    counter = TokenCounter()
    families: dict[str, list[float]] = defaultdict(list)
    runs: dict[str, int] = defaultdict(int)
    for path, _ in find_transcripts([args.folder]):
        usage = usage_beside(path, args.usage)
        if usage is None:
            continue
        family = path.name.split("__", 1)[0]
        families[family] += ratios(path, usage, counter)
        runs[family] += 1
    rows = {
        family: {
            "runs": runs[family],
            "calls": len(values),
            "median": statistics.median(values),
            "p5": percentile(values, 0.05),
            "p95": percentile(values, 0.95),
            "undercounted": sum(v > 1 + MARGIN for v in values) / len(values),
        }
        for family, values in sorted(families.items())
        if values
    }
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(
        "provider's input tokens ÷ the package's count of the messages, calls past the "
        f"{SKIP_FIRST}th"
    )
    print(
        "\n".join(
            render_table(
                [
                    "family",
                    "runs",
                    "calls",
                    "median",
                    "5th pct",
                    "95th pct",
                    f"undercounted > {MARGIN:.0%}",
                ],
                [
                    [
                        f,
                        str(r["runs"]),
                        str(r["calls"]),
                        f"{r['median']:.3f}",
                        f"{r['p5']:.3f}",
                        f"{r['p95']:.3f}",
                        f"{r['undercounted']:.0%}",
                    ]
                    for f, r in rows.items()
                ],
            )
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
