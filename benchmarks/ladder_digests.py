"""Record, or check against a record, a digest of every prompt and report the watermark ladder
sends.

A change to how ``CompactionLadder`` remembers its replays must not change a single byte of
what it sends. This script calls one ``CompactionLadder(["tool_results", "sliding_window"],
max_tokens=...)`` per run before every model call, as an agent would (so each call resumes
the previous call's replay from the memo), on the seeded normal and heavy runs and on the
real transcripts (``get_realruns.REALRUNS``), and writes a SHA-256 of each prompt (message
types and every field, as JSON) and of each report. Every ``--again-every``-th call is also
asked twice more from the same object, for the same history (a memo hit at its own length)
and for an earlier call's history (a hit on an older replay, a branch); every
``--fresh-every``-th call is also computed by a fresh ladder (no memo), which must give the
same bytes. With ``--no-handles`` the ladder is built with the ``read_back_handles`` setting
off: its placeholders and notes name no ``read_back``, as they did before they had handles.

    python benchmarks/ladder_digests.py record /tmp/ladder.json     # on the code before the change
    python benchmarks/ladder_digests.py check /tmp/ladder.json      # after: exit 1 on any
    difference python benchmarks/ladder_digests.py check --no-handles /tmp/ladder.json   # handles
    off
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.replay import find_transcripts, transcript_prompts
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.testing import iter_agent_run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prompt_digests import REALRUNS, RUNS, SEEDS, digest, record_or_check, report_digest  # noqa: E402

TARGETS = (20_000, 60_000)
REAL_TARGETS = (8_000, 16_000, 32_000)


def ladder(max_tokens: int, settings: Settings | None = None) -> CompactionLadder:
    rungs = ["tool_results", "sliding_window"]
    return CompactionLadder(rungs, max_tokens=max_tokens, settings=settings)


def cases(calls: int) -> Iterator[tuple[str, list[list[BaseMessage]], int]]:
    """Yield ``(name, prompts, max_tokens)`` for every run of the record."""
    for run, options in RUNS.items():
        for seed in SEEDS:
            prompts = list(iter_agent_run(calls, seed=seed, **options))
            for target in TARGETS:
                yield f"{run}/seed{seed}/{target}", prompts, target
    if REALRUNS.is_dir():
        for path, _ in find_transcripts([REALRUNS]):
            prompts = transcript_prompts(read_conversation(str(path)).messages)
            for target in REAL_TARGETS:
                yield f"real/{path.parent.name}/{path.name}/{target}", prompts, target


def compute(
    calls: int, again_every: int, fresh_every: int, settings: Settings | None = None
) -> dict[str, list[list[str]]]:
    """Return ``{case: [[prompt digest, report digest], ...]}``, checking the fresh-object calls on
    the way."""
    out: dict[str, list[list[str]]] = {}
    for name, prompts, target in cases(calls):
        strategy = ladder(target, settings)
        rows: list[list[str]] = []

        def ask(
            history: list[BaseMessage], strategy: Any = strategy, rows: list[list[str]] = rows
        ) -> list[str]:
            result = strategy.compact(list(history))
            rows.append([digest(result.messages), report_digest(result.report)])
            return rows[-1]

        for n, prompt in enumerate(prompts):
            row = ask(prompt)
            if again_every and n % again_every == again_every - 1:
                ask(prompt)  # the same history again: the replay remembered at its own length
                ask(
                    prompts[n // 2]
                )  # an earlier history of the same conversation: an older replay, or none
            if fresh_every and n % fresh_every == fresh_every - 1:
                fresh = ladder(target, settings).compact(list(prompt))
                if [digest(fresh.messages), report_digest(fresh.report)] != row:
                    raise SystemExit(f"{name} call {n}: a fresh ladder sends different bytes")
        out[name] = rows
        print(f"{name}: {len(rows)} prompts", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["record", "check"])
    parser.add_argument("file")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--again-every", type=int, default=7)
    parser.add_argument("--fresh-every", type=int, default=40)
    parser.add_argument(
        "--no-handles",
        action="store_true",
        help="the ladder with the read_back_handles setting off",
    )
    args = parser.parse_args(argv)
    settings = Settings.load(read_back_handles=False) if args.no_handles else None
    now = compute(args.calls, args.again_every, args.fresh_every, settings)
    return record_or_check(args.mode, args.file, now)


if __name__ == "__main__":
    sys.exit(main())
