"""References on the shared real transcripts: what the default list's leave untrue, what is sent.

Replays every transcript in ``../shared/realruns/converted`` (or the folders given) call by call
through the default list (``dedupe_outputs`` then ``shorten_tools_epoch_stable``), at no
ceiling given (111,616 tokens), 32,000 and 16,000, twice: the two strategies applied one after
the other, and through ``apply_in_order``, the apply path of every front end. For every
``--every``-th model call it counts, in each prompt, the references to lines another output
shows (``[12 lines as in the output of call_ab12 (bash) above]``), those that do not resolve
(:func:`~langchain_promptstrat.messages.references.unresolved_references`) and those that say
their lines are not shown; then the tokens the apply path's prompt has more or fewer than the
two strategies' (the most one prompt gained, the mean) and the prompts over their ceiling.

    python benchmarks/references.py              # about a minute a ceiling
    python benchmarks/references.py my/runs/ --every 1
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from langchain_core.messages import BaseMessage, ToolMessage

from langchain_promptstrat.ceiling import DEFAULT_MAX_TOKENS
from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.messages.references import references, unresolved_references
from langchain_promptstrat.replay import find_transcripts, transcript_prompts
from langchain_promptstrat.strategies.dedupe_outputs import DedupeOutputs
from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.strategy import apply_in_order
from langchain_promptstrat.text_table import render_table
from langchain_promptstrat.tokens import TokenCounter

REALRUNS = Path(
    os.environ.get("PROMPTSTRAT_REALRUNS")
    or Path(__file__).resolve().parents[1].parent / "shared" / "realruns"
)
COUNT = TokenCounter()


def kinds(history: Sequence[BaseMessage], prompt: Sequence[BaseMessage]) -> tuple[int, int]:
    """Return how many references of ``prompt`` say their lines are above, how many not shown."""
    stored = {m.tool_call_id: m.content for m in history if isinstance(m, ToolMessage)}
    above = not_shown = 0
    for message in prompt:
        text = message.content
        if (
            isinstance(message, ToolMessage)
            and isinstance(text, str)
            and isinstance(stored.get(message.tool_call_id), str)
        ):
            found = references(text, stored[message.tool_call_id])  # type: ignore[arg-type]
            above += sum(1 for r in found if r.shown)
            not_shown += sum(1 for r in found if not r.shown)
    return above, not_shown


def measure(paths: Sequence[Path], ceiling: int | None, every: int) -> list[str]:
    """Return one table row: the two strategies alone, then the apply path, at ``ceiling``."""
    figures = dict.fromkeys(
        ("calls", "alone", "alone_unresolved", "above", "not_shown", "unresolved", "over"), 0
    )
    added: list[int] = []
    for path in paths:
        alone = [DedupeOutputs(), ShortenToolsEpochStable(max_tokens=ceiling, token_counter=COUNT)]
        applied = [
            DedupeOutputs(),
            ShortenToolsEpochStable(max_tokens=ceiling, token_counter=COUNT),
        ]
        for k, history in enumerate(transcript_prompts(read_conversation(str(path)).messages)):
            raw = alone[1].compact(alone[0].compact(history).messages).messages
            sent = apply_in_order(applied, history)[0]
            if k % every:
                continue
            figures["calls"] += 1
            figures["alone"] += kinds(history, raw)[0]
            figures["alone_unresolved"] += unresolved_references(history, raw)
            above, not_shown = kinds(history, sent)
            figures["above"] += above
            figures["not_shown"] += not_shown
            figures["unresolved"] += unresolved_references(history, sent)
            figures["over"] += COUNT(sent) > (ceiling or DEFAULT_MAX_TOKENS)
            added.append(COUNT(sent) - COUNT(raw))
    mean = sum(added) / len(added) if added else 0.0
    return [
        f"{ceiling:,}" if ceiling else f"none ({DEFAULT_MAX_TOKENS:,})",
        f"{figures['calls']:,}",
        f"{figures['alone']:,}",
        f"{figures['alone_unresolved']:,}",
        f"{figures['above']:,}",
        f"{figures['not_shown']:,}",
        f"{figures['unresolved']:,}",
        f"{max(added, default=0):+,}",
        f"{mean:+,.1f}",
        f"{figures['over']:,}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "paths",
        nargs="*",
        help="transcript files or folders (default: ../shared/realruns/converted)",
    )
    parser.add_argument(
        "--every",
        type=int,
        default=5,
        help="count every N-th model call (default 5; all are replayed)",
    )
    parser.add_argument(
        "--ceilings",
        type=int,
        nargs="*",
        default=[32_000, 16_000],
        help="besides none (default 32000 16000)",
    )
    args = parser.parse_args(argv)
    folder = REALRUNS / "converted"
    if not args.paths and not folder.is_dir():
        print(
            f"no transcripts at {folder}: run benchmarks/get_realruns.py, name a folder or set "
            "PROMPTSTRAT_REALRUNS",
            file=sys.stderr,
        )
        return 2
    paths = [path for path, _ in find_transcripts(args.paths or [folder])]
    columns = [
        "ceiling",
        "calls counted",
        "references (alone)",
        "unresolved (alone)",
        "above (sent)",
        "not shown (sent)",
        "unresolved (sent)",
        "most tokens added",
        "tokens added, mean",
        "over ceiling",
    ]
    rows = [measure(paths, ceiling, args.every) for ceiling in [None, *args.ceilings]]
    print(
        f"{len(paths)} transcripts, every {args.every}th model call; alone: dedupe_outputs then "
        "shorten_tools_epoch_stable, one after the other; sent: the same through apply_in_order."
    )
    print("\n".join(render_table(columns, rows, None)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
