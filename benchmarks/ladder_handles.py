"""What the token ladder's handles cost and recover on the shared real transcripts, on and off.

Replays every transcript in ``../shared/realruns/converted`` (or the folders given) call by
call, at each ``--targets`` (32,000 and 16,000), through ``tool_results`` alone,
``sliding_window`` alone, the two as one pipeline (the ladder without its watermark) and
``CompactionLadder`` of the two with its low watermark, each built once with the
``read_back_handles`` setting on and once off (off: for an agent without ``read_back``), and
prints per row the cost against sending everything, the mean prompt, recall, old recall,
outputs-only recall and **recoverable**: of the outputs-only references the prompt lost, the
share held by a call the prompt names for ``read_back`` (defined in
``langchain_promptstrat.simulate.recall``). Under the table, per strategy and target, what
handles change: cost, mean prompt, references recalled and outputs-only ones, on minus off.

    python benchmarks/ladder_handles.py                  # docs/performance.md's table (~4 minutes)
    python benchmarks/ladder_handles.py --json out.json  # also the rows as JSON
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from langchain_promptstrat.replay import simulate_files
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.simulate import StrategyEntry
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.text_table import render_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall import LADDER_RUNGS, REALRUNS, rows_of, share  # noqa: E402

RUNGS = ["tool_results", "sliding_window", LADDER_RUNGS]
WATERMARK = f"CompactionLadder[{LADDER_RUNGS}]"
COLUMNS = [
    "strategy",
    "target",
    "handles",
    "cost/none",
    "mean prompt",
    "recall",
    "old recall",
    "outputs-only",
    "recoverable",
]


def replay(paths: list[str], target: int, handles: bool) -> list[dict[str, Any]]:
    """Return the rows of the rungs, the pair and the ladder at ``target``, handles on or off."""
    settings = Settings.load(read_back_handles=handles)
    ladder = CompactionLadder(LADDER_RUNGS, max_tokens=target, settings=settings)
    strategies: list[StrategyEntry] = ["none", *RUNGS, ladder]
    result = simulate_files(paths, strategies, max_tokens=target, settings=settings, progress=False)
    rows = rows_of(result, f"{target:,}", {*RUNGS, ladder.strategy_name})
    for r in rows:
        r["strategy"] = WATERMARK if r["strategy"] == ladder.strategy_name else r["strategy"]
        r["handles"] = "on" if handles else "off"
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "paths",
        nargs="*",
        help="transcript files or folders (default: ../shared/realruns/converted)",
    )
    parser.add_argument(
        "--targets",
        type=int,
        nargs="+",
        default=[32_000, 16_000],
        help="token targets (default: 32000 16000)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    paths = args.paths or [str(REALRUNS / "converted")]
    if not args.paths and not (REALRUNS / "converted").is_dir():
        print(
            f"no transcripts at {REALRUNS / 'converted'}: download them "
            "(python benchmarks/get_realruns.py), name a folder or set PROMPTSTRAT_REALRUNS",
            file=sys.stderr,
        )
        return 2

    rows = [
        r
        for target in args.targets
        for handles in (True, False)
        for r in replay(paths, target, handles)
    ]
    table = [
        [
            r["strategy"],
            r["target"],
            r["handles"],
            f"{r['cost_vs_none']:.3f}",
            f"{r['mean_tokens']:,.0f}",
            share(r["recall"]),
            share(r["old_recall"]),
            share(r["outputs_only_recall"]),
            share(r["recoverable"]),
        ]
        for r in rows
    ]
    print("\n".join(render_table(COLUMNS, table, None)))
    counted, _, only = rows[0]["references"]
    print(
        f"\nWhat handles change (on minus off), of {counted:,} references counted and "
        f"{only:,} outputs-only:"
    )
    for on in (r for r in rows if r["handles"] == "on"):
        off = next(
            r
            for r in rows
            if r["handles"] == "off"
            and (r["strategy"], r["target"]) == (on["strategy"], on["target"])
        )
        recalled = round((on["recall"] - off["recall"]) * counted)
        recalled_only = round((on["outputs_only_recall"] - off["outputs_only_recall"]) * only)
        print(
            f"  {on['strategy']} at {on['target']}: "
            f"cost/none {on['cost_vs_none'] - off['cost_vs_none']:+.3f}, "
            f"mean prompt {on['mean_tokens'] - off['mean_tokens']:+,.0f} tokens, "
            f"recalled {recalled:+,}, outputs-only recalled {recalled_only:+,}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
