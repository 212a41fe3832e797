"""Record, or check against a record, a digest of every prompt the default strategy sends.

A speed change to ``shorten_tools_epoch_stable`` must not change a single byte of what it
sends. This script replays the bounded default (``ShortenToolsEpochStable(max_tokens=...)``,
one object per run, called before every model call as an agent would) and the unbounded
function (``shorten_tools_epoch_stable`` without a ceiling) on the seeded normal and heavy
runs and on the real transcripts (``get_realruns.REALRUNS``), and writes a SHA-256 of each
prompt (message types and every field, as JSON) and of each report. Every ``--fresh-every``
th call is also computed by a fresh strategy object (no memo), which must give the same bytes.

    python benchmarks/prompt_digests.py record /tmp/digests.json     # on the code before the change
    python benchmarks/prompt_digests.py check /tmp/digests.json      # after: exit 1 on any
    difference

``--strategy NAME`` records another strategy the same way instead (``shorten_tools_epoch``,
``shorten_tools_epoch_increment``, ``dedupe_outputs``: one object per run, built by its registry
name with the default settings, called before every model call, a fresh object every
``--fresh-every``-th call), on the same runs without a ceiling.

``--default-list`` records the default list as the front ends apply it (``dedupe_outputs`` then
``shorten_tools_epoch_stable``, one pair of objects per run, through ``apply_strategies``: the
apply path of ``prepare_prompt``), on the same runs and ceilings, None being no ceiling given
(the default's own, 111,616 tokens), every prompt with every report.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from get_realruns import REALRUNS
from langchain_core.messages import BaseMessage

from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.registry import apply_strategies, get_strategy
from langchain_promptstrat.replay import find_transcripts, transcript_prompts
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.dedupe_outputs import DedupeOutputs
from langchain_promptstrat.strategies.epoch_stable import (
    ShortenToolsEpochStable,
    shorten_tools_epoch_stable,
)
from langchain_promptstrat.testing import iter_agent_run

RUNS: dict[str, dict[str, Any]] = {"normal": {}, "heavy": {"output_bytes": (1_200, 60_000)}}
SEEDS = (0, 1, 2)
CEILINGS = (60_000, 128_000)
REAL_CEILINGS = (16_000, 32_000, 60_000)


def digest(messages: Sequence[BaseMessage]) -> str:
    """Return the SHA-256 of the messages as the provider adapter would see them: type and every
    field."""
    data = [[type(m).__name__, m.model_dump()] for m in messages]
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=repr).encode()).hexdigest()


def report_digest(report: Any) -> str:
    return hashlib.sha256(
        json.dumps(report.as_dict(), sort_keys=True, default=repr).encode()
    ).hexdigest()


def cases(calls: int) -> Iterator[tuple[str, list[list[BaseMessage]], int | None]]:
    """Yield ``(name, prompts, ceiling)``: every run of the record (ceiling None: the unbounded
    function)."""
    for run, options in RUNS.items():
        for seed in SEEDS:
            prompts = list(iter_agent_run(calls, seed=seed, **options))
            for ceiling in (*CEILINGS, None):
                yield f"{run}/seed{seed}/{ceiling}", prompts, ceiling
    speed_run = list(iter_agent_run(1_000, seed=0))  # the speed benchmark's run
    yield "normal/seed0/1000calls/60000", speed_run, 60_000
    if REALRUNS.is_dir():
        for path, _ in find_transcripts([REALRUNS]):
            prompts = transcript_prompts(read_conversation(str(path)).messages)
            for ceiling in (*REAL_CEILINGS, None):
                yield f"real/{path.parent.name}/{path.name}/{ceiling}", prompts, ceiling


def compute(calls: int, fresh_every: int) -> dict[str, list[list[str]]]:
    """Return ``{case: [[prompt digest, report digest], ...]}``, checking the fresh-object calls on
    the way."""
    settings = (
        Settings.load()
    )  # the environment's (READ_BACK_HANDLES=0: the prompts without handles)
    out: dict[str, list[list[str]]] = {}
    for name, prompts, ceiling in cases(calls):
        strategy = ShortenToolsEpochStable(max_tokens=ceiling) if ceiling is not None else None
        rows = []
        for n, prompt in enumerate(prompts):
            if strategy is not None:
                result = strategy.compact(list(prompt))
            else:
                result = shorten_tools_epoch_stable(list(prompt), settings=settings)
            rows.append([digest(result.messages), report_digest(result.report)])
            if strategy is not None and fresh_every and n % fresh_every == fresh_every - 1:
                fresh = ShortenToolsEpochStable(max_tokens=ceiling).compact(list(prompt))
                if digest(fresh.messages) != rows[-1][0]:
                    raise SystemExit(
                        f"{name} call {n}: a fresh strategy object sends different bytes"
                    )
        out[name] = rows
        print(f"{name}: {len(rows)} prompts", file=sys.stderr)
    return out


def compute_named(name: str, calls: int, fresh_every: int) -> dict[str, list[list[str]]]:
    """Return ``{case: [[prompt digest, report digest], ...]}`` for the registry strategy ``name``
    (the runs without a ceiling)."""
    out: dict[str, list[list[str]]] = {}
    for case, prompts, ceiling in cases(calls):
        if ceiling is not None and not case.endswith("1000calls/60000"):
            continue
        strategy = get_strategy(name)
        rows = []
        for n, prompt in enumerate(prompts):
            result = strategy.compact(list(prompt))
            rows.append([digest(result.messages), report_digest(result.report)])
            if fresh_every and n % fresh_every == fresh_every - 1:
                fresh = get_strategy(name).compact(list(prompt))
                if digest(fresh.messages) != rows[-1][0]:
                    raise SystemExit(
                        f"{case} call {n}: a fresh strategy object sends different bytes"
                    )
        out[case] = rows
        print(f"{case}: {len(rows)} prompts", file=sys.stderr)
    return out


def compute_default_list(calls: int, fresh_every: int) -> dict[str, list[list[str]]]:
    """Return ``{case: [[prompt digest, report digest], ...]}`` of the default list, applied."""

    def apply(prompt: list[BaseMessage], pair: list[Any], ceiling: int | None) -> tuple[str, str]:
        messages, reports = apply_strategies(list(prompt), pair, max_tokens=ceiling)
        reported = hashlib.sha256("".join(report_digest(r) for r in reports).encode()).hexdigest()
        return digest(messages), reported

    out: dict[str, list[list[str]]] = {}
    for name, prompts, ceiling in cases(calls):
        pair = [DedupeOutputs(), ShortenToolsEpochStable()]
        rows = []
        for n, prompt in enumerate(prompts):
            rows.append(list(apply(prompt, pair, ceiling)))
            if fresh_every and n % fresh_every == fresh_every - 1:
                fresh = [DedupeOutputs(), ShortenToolsEpochStable()]
                if apply(prompt, fresh, ceiling)[0] != rows[-1][0]:
                    raise SystemExit(f"{name} call {n}: fresh objects send different bytes")
        out[name] = rows
        print(f"{name}: {len(rows)} prompts", file=sys.stderr)
    return out


def record_or_check(mode: str, file: str, now: dict[str, list[list[str]]]) -> int:
    """Write ``now`` to ``file`` (``record``), or compare it with the record there (``check``);
    return the exit status."""
    total = sum(len(rows) for rows in now.values())
    if mode == "record":
        Path(file).write_text(json.dumps(now))
        print(f"recorded {total} prompts in {len(now)} runs")
        return 0
    recorded = json.loads(Path(file).read_text())
    bad = 0
    for name, rows in recorded.items():
        mine = now.get(name)
        if mine is None:
            print(f"{name}: missing")
            bad += 1
            continue
        for n, (a, b) in enumerate(zip(rows, mine, strict=False)):
            if a[0] != b[0]:
                print(f"{name} call {n}: prompt differs")
                bad += 1
            elif a[1] != b[1]:
                print(f"{name} call {n}: report differs")
                bad += 1
        if len(rows) != len(mine):
            print(f"{name}: {len(rows)} recorded, {len(mine)} now")
            bad += 1
    print(f"compared {total} prompts and reports in {len(now)} runs: {bad} differences")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["record", "check"])
    parser.add_argument("file")
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--fresh-every", type=int, default=40)
    parser.add_argument(
        "--strategy", help="record this registry strategy instead of the default (see above)"
    )
    parser.add_argument(
        "--default-list",
        action="store_true",
        help="record the default list through the apply path (see above)",
    )
    args = parser.parse_args(argv)
    if args.default_list:
        now = compute_default_list(args.calls, args.fresh_every)
    elif args.strategy:
        now = compute_named(args.strategy, args.calls, args.fresh_every)
    else:
        now = compute(args.calls, args.fresh_every)
    return record_or_check(args.mode, args.file, now)


if __name__ == "__main__":
    sys.exit(main())
