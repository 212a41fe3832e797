"""Cost against next-action recall on the shared real transcripts: every strategy and every peer,
one run.

Replays every transcript in ``converted/`` of the real transcripts (``get_realruns.REALRUNS``),
or in the folders given, call by call through each strategy and peer with the same token
counter, and prints, per row, the cost
(cached input billed at 0.1) as a multiple of sending everything, the mean prompt, and
next-action recall, old recall, outputs-only recall and the share of lost outputs-only
references a handle in the prompt can recover (defined in
``langchain_promptstrat.simulate.recall``), plus whether the row is on the frontier (no other
row costs less *and* recalls more outputs-only references at once).

Every row of ours is applied as the front ends apply it (``apply_in_order``: the prompt floor,
references kept true). Rows: ``none``; the default list
(``dedupe_outputs,shorten_tools_epoch_stable``; a replay has no inbox) with no settings (its
ceiling: the model profile, else 111,616 tokens), and the bounded default alone; the reference
strategies (no ceiling); then at each ``--targets`` (32,000 and 16,000): the default list and the
bounded default alone with ``max_tokens``, the ladder (``CompactionLadder`` with the rungs
``tool_results,sliding_window`` and its low watermark), and the peers ``trim_messages`` and
``ClearToolUsesEdit`` at that target, and the default list with the ``read_back_handles`` setting
off (the line under the table: what handles and notes add to the mean prompt); observation masking
(SWE-agent's ``LastNObservations``, n=10, with and without ``polling=5``) takes no target and is
listed once.

    python benchmarks/recall.py                      # the README's table (about 2 minutes) python
    benchmarks/recall.py --json out.json      # also the figures as JSON python benchmarks/recall.py
    --bill provider      # cost on the providers' own bills (the usage files) python
    benchmarks/recall.py my/transcripts/      # your own runs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from get_realruns import REALRUNS, no_transcripts
from langchain_core.messages import BaseMessage

from langchain_promptstrat.defaults import BILLS
from langchain_promptstrat.replay import simulate_files
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.simulate import DEFAULT_LIST_ROW, SimulationResult, StrategyRun
from langchain_promptstrat.strategies.dedupe_outputs import DedupeOutputs
from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.text_table import render_table

DEFAULT = DEFAULT_LIST_ROW  # the default list without the inbox (a replay has none)
BOUNDED = "shorten_tools_epoch_stable"
LADDER_RUNGS = "tool_results,sliding_window"
UNBOUNDED = ["shorten_tools", "shorten_tools_epoch", "shorten_tools_epoch_increment"]
NO_HANDLES = Settings.load(read_back_handles=False)


def rows_of(
    result: SimulationResult, target: str, keep: set[str] | None = None
) -> list[dict[str, Any]]:
    """Return one row per run of ``result`` (all but ``none`` unless asked), with its cost relative
    to that result's ``none``."""
    base = result.baseline
    assert base is not None, "every replay includes none"
    rows = []
    for run in result.runs:
        if keep is not None and run.name not in keep:
            continue
        rows.append(row(run, target, base.cost(result.cached_fraction), result.cached_fraction))
    return rows


def row(run: StrategyRun, target: str, base_cost: float, cached_fraction: float) -> dict[str, Any]:
    recall = run.recall_summary() or {}
    return {
        "strategy": f"{run.name} (peer)" if run.kind == "peer" else run.name,
        "target": target,
        "cost_vs_none": run.cost(cached_fraction) / base_cost if base_cost else 0.0,
        "mean_tokens": run.mean_tokens,
        "peak_tokens": run.peak_tokens,
        "recall": recall.get("recall"),
        "old_recall": recall.get("old_recall"),
        "outputs_only_recall": recall.get("outputs_only_recall"),
        "recoverable": recall.get("recoverable"),
        "degenerate": run.degenerate_calls,
        "references": (
            recall.get("references"),
            recall.get("old_references"),
            recall.get("outputs_only_references"),
        ),
    }


def mark_frontier(rows: list[dict[str, Any]]) -> None:
    """Set ``frontier`` on each row no other row beats on cost and outputs-only recall at once."""
    for r in rows:
        only = r["outputs_only_recall"] or 0.0
        r["frontier"] = not any(
            o is not r
            and o["cost_vs_none"] <= r["cost_vs_none"]
            and (o["outputs_only_recall"] or 0.0) >= only
            and (o["cost_vs_none"] < r["cost_vs_none"] or (o["outputs_only_recall"] or 0.0) > only)
            for o in rows
        )


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "paths", nargs="*", help=f"transcript files or folders (default: {REALRUNS / 'converted'})"
    )
    parser.add_argument(
        "--targets",
        type=int,
        nargs="+",
        default=[32_000, 16_000],
        help="token targets (default: 32000 16000)",
    )
    parser.add_argument(
        "--bill",
        choices=BILLS,
        default="package",
        help="provider: each call scaled to the provider's bill "
        "where the transcript carries usage, as promptstrat simulate --bill provider (default: "
        "package)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    paths = args.paths or [str(REALRUNS / "converted")]
    if not args.paths and not (REALRUNS / "converted").is_dir():
        print(no_transcripts(REALRUNS / "converted"), file=sys.stderr)
        return 2

    dedupe, bounded = (
        DedupeOutputs(),
        ShortenToolsEpochStable(),
    )  # no settings: the ceiling is the model profile's, else 111,616

    def default_list(messages: list[BaseMessage]) -> list[BaseMessage]:
        # simulate applies it as every strategy, through apply_in_order (references kept true)
        return bounded.compact(dedupe.compact(messages).messages).messages

    first = simulate_files(
        paths,
        ["none", default_list, ShortenToolsEpochStable(), *UNBOUNDED],
        bill=args.bill,
        progress=False,
    )
    rows = rows_of(first, "-")
    rows[1]["strategy"] = f"{DEFAULT} (default list, no settings)"
    rows[2]["strategy"] = f"{BOUNDED} alone, no settings"
    masking_listed = False
    handle_costs = []
    for target in args.targets:
        ladder = CompactionLadder(LADDER_RUNGS, max_tokens=target)
        result = simulate_files(
            paths,
            ["none", DEFAULT, BOUNDED, ladder],
            bill=args.bill,
            peers=True,
            max_tokens=target,
            progress=False,
        )
        for r in rows_of(result, f"{target:,}"):
            if r["strategy"] == "none":
                continue
            if r["strategy"].startswith("LastNObservations"):
                if masking_listed:
                    continue
                r["target"] = "-"
            rows.append(r)
        masking_listed = True
        # the same default list with no handle nor note naming read_back: what handles add to a
        # prompt
        off = rows_of(
            simulate_files(
                paths, ["none", DEFAULT], max_tokens=target, settings=NO_HANDLES, progress=False
            ),
            f"{target:,}",
            {DEFAULT},
        )[0]
        off["strategy"] = f"{DEFAULT} (read_back_handles off)"
        rows.append(off)
        on = next(r for r in rows if r["strategy"] == DEFAULT and r["target"] == f"{target:,}")
        handle_costs.append((target, on["mean_tokens"] - off["mean_tokens"], on["mean_tokens"]))
    mark_frontier(rows)

    refs = rows[0]["references"]
    scaled = "; each call scaled to the provider bill" if args.bill == "provider" else ""
    print(
        f"Replayed {len(first.files)} transcripts, {first.model_calls:,} model calls; counter "
        f"{first.token_counter}; "
        "cached input billed at "
        f"{first.cached_fraction:g}{scaled}."
    )
    print(
        f"Next-action references: {refs[0]:,} counted, {refs[1]:,} old, {refs[2]:,} outputs-only "
        "(the same for every row)."
    )
    print()
    columns = [
        "strategy",
        "target",
        "cost/none",
        "mean prompt",
        "peak",
        "recall",
        "old recall",
        "outputs-only",
        "recoverable",
        "degenerate",
        "frontier",
    ]
    table = [
        [
            r["strategy"],
            r["target"],
            f"{r['cost_vs_none']:.2f}",
            f"{r['mean_tokens']:,.0f}",
            f"{r['peak_tokens']:,}",
            share(r["recall"]),
            share(r["old_recall"]),
            share(r["outputs_only_recall"]),
            share(r["recoverable"]),
            f"{r['degenerate']:,}",
            "yes" if r["frontier"] else "",
        ]
        for r in rows
    ]
    print("\n".join(render_table(columns, table, None)))
    for target, added, mean in handle_costs:
        print(
            f"Handles and notes at {target:,}: {added:+,.0f} tokens of a mean prompt of "
            f"{mean:,.0f} ({added / mean:+.2%}; the default list against itself with "
            "read_back_handles off)."
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
