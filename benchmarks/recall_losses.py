"""Where a strategy's lost references went: for each outputs-only reference a prompt lost, what
became of the outputs that held it.

``benchmarks/recall.py`` says how many of the references the agent's next message made to
old tool outputs a strategy keeps; this script says why the others were lost, which is
what a change to the strategy's rule has to act on. It replays the shared real transcripts
(or the folders given) call by call through one strategy list, exactly as the recall
benchmark does, and for every lost *outputs-only* reference (defined in
``langchain_promptstrat.simulate.recall``) looks at the tool outputs of the history that held
it: gone from the prompt (**dropped**), still there as a copy without it (**shortened**), or
some of each (**both**). It prints the counts by cause and by age (tool outputs since the
newest holder).

    python benchmarks/recall_losses.py --target 16000              # the default list at 16k
    python benchmarks/recall_losses.py --target 32000 --strategies shorten_tools_epoch_stable
    python benchmarks/recall_losses.py my/transcripts/              # no --target: no settings
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from langchain_core.messages import BaseMessage, ToolMessage

from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.registry import get_strategy
from langchain_promptstrat.replay import find_transcripts, transcript_answers, transcript_prompts
from langchain_promptstrat.simulate import DEFAULT_LIST_ROW, build_strategy
from langchain_promptstrat.simulate.recall import (
    CallTargets,
    TermIndex,
    recall_counts,
    recalled_references,
)
from langchain_promptstrat.strategy import PromptStrategy, split_strategy_names

sys.path.insert(0, str(Path(__file__).resolve().parent))  # a test loads this file by its path
from get_realruns import REALRUNS, no_transcripts  # noqa: E402

AGE_BUCKET = 10
"""Ages are shown in buckets of this many tool outputs."""


@dataclass(frozen=True)
class LostReference:
    """An outputs-only reference a prompt lost, and what became of the tool outputs of the history
    that held it."""

    reference: str
    age: int
    """Tool outputs of the history after the newest one that holds it."""
    dropped: int
    """Holders the prompt no longer has at all (no output of the same ``tool_call_id``)."""
    shortened: int
    """Holders the prompt still has, as a copy that no longer holds the reference."""

    @property
    def cause(self) -> str:
        """``"dropped"``, ``"shortened"`` (every holder) or ``"both"``."""
        return (
            "both"
            if self.dropped and self.shortened
            else "dropped"
            if self.dropped
            else "shortened"
        )


def lost_references(
    targets: CallTargets,
    history: Sequence[BaseMessage],
    sent: Sequence[BaseMessage],
    index: TermIndex,
) -> list[LostReference]:
    """Return each outputs-only reference of ``targets`` that ``sent`` does not recall, with what
    became of its holders."""
    lost = sorted(targets.outputs_only - set(recalled_references(targets, history, sent, index)))
    if not lost:
        return []
    outputs = [m for m in history if isinstance(m, ToolMessage)]
    kept = {m.tool_call_id for m in sent if isinstance(m, ToolMessage)}
    found = []
    for ref in lost:
        holders = [i for i, m in enumerate(outputs) if ref in index.terms(m)]
        dropped = sum(1 for i in holders if outputs[i].tool_call_id not in kept)
        found.append(
            LostReference(ref, len(outputs) - 1 - holders[-1], dropped, len(holders) - dropped)
        )
    return found


def build(names: list[str], target: int | None) -> list[PromptStrategy]:
    """Return the strategies of ``names``, those that take one at ``target`` tokens (no target: each
    with its own ceiling)."""
    if target is None:
        return [get_strategy(name) for name in names]
    return [build_strategy(name, max_tokens=target)[0] for name in names]


def losses(
    paths: list[str], names: list[str], target: int | None
) -> tuple[Counter[str], Counter[int], int, int, int]:
    """Return the lost outputs-only references by cause and by age bucket, the files, the counted
    and the recalled ones."""
    causes: Counter[str] = Counter()
    ages: Counter[int] = Counter()
    files = counted = recalled = 0
    for path, _ in find_transcripts(paths):
        conversation = read_conversation(str(path))
        recorded = [*conversation.messages, *conversation.pending]
        strategies = build(names, target)  # fresh per file, as a replay does
        index = TermIndex()
        files += 1
        for prompt, answer in zip(
            transcript_prompts(recorded), transcript_answers(recorded), strict=False
        ):
            sent: list[BaseMessage] = list(prompt)
            for strategy in strategies:
                sent = strategy.compact(sent).messages
            targets = CallTargets.of(prompt, answer, index)
            if not targets.outputs_only:
                continue
            counts = recall_counts(targets, prompt, sent, index)
            counted += counts.outputs_only
            recalled += counts.outputs_only_recalled
            for lost in lost_references(targets, prompt, sent, index):
                causes[lost.cause] += 1
                ages[lost.age // AGE_BUCKET * AGE_BUCKET] += 1
    return causes, ages, files, counted, recalled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "paths", nargs="*", help=f"transcript files or folders (default: {REALRUNS / 'converted'})"
    )
    parser.add_argument(
        "--target",
        type=int,
        help="the token target of the strategies that take one (default: none, each its own "
        "ceiling)",
    )
    parser.add_argument(
        "--strategies", default=DEFAULT_LIST_ROW, help=f"a comma list (default: {DEFAULT_LIST_ROW})"
    )
    args = parser.parse_args(argv)
    paths = args.paths or [str(REALRUNS / "converted")]
    if not args.paths and not (REALRUNS / "converted").is_dir():
        print(no_transcripts(REALRUNS / "converted"), file=sys.stderr)
        return 2
    names = split_strategy_names(args.strategies, source="--strategies")
    causes, ages, files, counted, recalled = losses(paths, names, args.target)
    at = f"{args.target:,} tokens" if args.target else "no settings"
    print(
        f"{','.join(names)} at {at}, {files} transcripts: {counted:,} outputs-only references, "
        f"{recalled:,} recalled, {counted - recalled:,} lost"
    )
    print(
        "lost, by what became of the outputs that held them: "
        f"every holder dropped {causes['dropped']:,}, every holder shortened "
        f"{causes['shortened']:,}, "
        f"some of each {causes['both']:,}"
    )
    print(
        "lost, by tool outputs since the newest holder: "
        + ", ".join(f"{age}-{age + AGE_BUCKET - 1}: {n:,}" for age, n in sorted(ages.items()))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
