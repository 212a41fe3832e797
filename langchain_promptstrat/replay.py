"""Replay saved transcripts call by call: what would each strategy have sent and cost on *my* runs?

The prompt of the call that produced the assistant message at position ``i`` was
``messages[:i]``, so a replay applies each strategy to each of these histories in order and
measures them as the simulated run does (:func:`~langchain_promptstrat.simulate.simulate` with
``prompts=``). Each file is replayed with fresh strategies, its per-call figures concatenated
per strategy; a file a folder holds that cannot be read is skipped with a note, one named
explicitly raises. A transcript's saved ``tools`` are counted and given to the strategies; a
usage file beside it (``NAME.usage.json``, or in ``../usage/``), else the usage on its answers,
adds what the provider billed: a note beside the ``none`` row, and with ``bill="provider"`` the
figures of every row.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.defaults import BILLS
from langchain_promptstrat.errors import ConfigError, PromptStratError
from langchain_promptstrat.simulate import (
    SIMULATED_MAX_TOKENS,
    SimulationResult,
    StrategyEntry,
    default_rows,
    simulate,
)
from langchain_promptstrat.simulate.output import PER_CALL
from langchain_promptstrat.tokens.usage import BilledInput, billed_input, read_usage_file

TRANSCRIPT_SUFFIXES = (".json", ".jsonl")
"""File endings a folder is searched for (``.traj.json`` ends in ``.json``)."""
USAGE_SUFFIX = ".usage.json"
"""A usage sidecar beside a transcript (the provider's billed tokens per answer), not a transcript
itself."""

_MAX_NOTES_PER_FILE = 3


def usage_beside(path: Path, given: Path | None = None) -> list[BilledInput | None] | None:
    """Return the entries of ``path``'s usage file (``given``, a file or a folder holding
    ``NAME.usage.json``; else beside it, else in ``../usage/``), or None."""
    name = path.name.rsplit(".", 1)[0] + USAGE_SUFFIX
    if given is not None and given.is_file():
        return read_usage_file(given)
    found = next(
        (
            d / name
            for d in ([given] if given else [path.parent, path.parent.parent / "usage"])
            if (d / name).is_file()
        ),
        None,
    )
    return read_usage_file(found) if found is not None else None


def usage_of(
    path: Path | None, recorded: Sequence[BaseMessage], given: Path | None = None
) -> tuple[list[BilledInput | None], str] | None:
    """Return what the provider billed for each assistant message of ``recorded`` and where it was
    read, or None when nothing reports usage.

    The usage file comes first (:func:`usage_beside`; ``path`` None, standard input, has only
    ``given``); else each answer's own usage
    (:func:`~langchain_promptstrat.tokens.usage.billed_input`).

    Raises:
        ConfigError: The usage file cannot be read, or its entries are not one per assistant
            message.
    """
    answers = [m for m in recorded if isinstance(m, AIMessage)]
    try:
        entries = (
            usage_beside(path, given)
            if path is not None
            else read_usage_file(given)
            if given is not None
            else None
        )
    except (OSError, ValueError) as exc:
        raise ConfigError(f"usage file not read: {exc}") from None
    if entries is not None:
        if len(entries) != len(answers):
            raise ConfigError(
                f"usage file of {path or given}: {len(entries)} entries for {len(answers)} "
                "assistant messages (one each, in order)"
            )
        source = (
            given.name
            if given is not None and given.is_file()
            else (path.name.rsplit(".", 1)[0] if path else "") + USAGE_SUFFIX
        )
        return entries, source
    own = [billed_input(m) for m in answers]
    return (own, "its answers' usage_metadata") if any(own) else None


def _bill(
    result: SimulationResult, billed: Sequence[BilledInput | None], check: list[int], provider: bool
) -> None:
    """Add the provider's figures of each call that reports them to ``check``, beside the ``none``
    row's; with ``provider``, bill every row as the provider did.

    A call's ratio is the provider's input over the ``none`` row's count of the call (the whole
    history); every row's figures of that call are multiplied by it. The ``none`` row's cached
    tokens are the provider's own; every other row's are its cache rule's, times the share of the
    rule's that the provider served on the ``none`` row's prompt for that call (its evictions and
    misses, which no rule models, are taken to hit every row alike; 1 where the provider reported no
    cached figure or the rule caches nothing of that prompt).
    """
    none = result.baseline
    if none is None:  # no none row to compare with (bill="provider" always replays one)
        return
    for k, entry in enumerate(billed):
        if entry is None or not none.tokens[k]:
            continue
        rule = none.provider_cached_tokens[k] if none.provider_cached_tokens else 0
        figures = (1, entry.tokens, entry.cached or 0, none.tokens[k], none.cached_tokens[k], rule)
        check[:] = [a + b for a, b in zip(check, figures, strict=False)]
        if provider:
            ratio = entry.tokens / none.tokens[k]
            served = [
                1.0 if entry.cached is None or not s[k] else entry.cached / (s[k] * ratio)
                for s in _cached(none)
            ]
            for run in result.runs:
                run.tokens[k] = tokens = round(run.tokens[k] * ratio)
                for cached, share in zip(_cached(run), served, strict=False):
                    own = entry.cached if run is none else None
                    cached[k] = min(
                        tokens, round(cached[k] * ratio * share) if own is None else own
                    )
                if run.provider_written_tokens:
                    run.provider_written_tokens[k] = min(
                        tokens - run.provider_cached_tokens[k],
                        round(run.provider_written_tokens[k] * ratio),
                    )
                run.reuse[k] = run.cached_tokens[k] / tokens if tokens else 0.0


def _cached(run: Any) -> list[list[int]]:
    """Return a row's cached tokens per call: the prefix bound's, then the ``--cache`` rule's when
    one was asked for."""
    return [
        run.cached_tokens,
        *([run.provider_cached_tokens] if run.provider_cached_tokens else []),
    ]


def _bill_notes(check: list[int], calls: int, cache: str | None, provider: bool) -> list[str]:
    n, billed, cached, counted, prefix, rule = check
    under_rule = (
        f", {rule / counted:.1%} under the {cache} rule" if cache and cache != "prefix" else ""
    )
    notes = [
        f"provider's bill ({n:,} of {calls:,} calls report usage): input {billed:,} tokens, "
        f"{cached / billed:.1%} cached; "
        f"the none row counts {counted / billed:.3f}x that input, {prefix / counted:.1%} cached "
        f"as the prefix bound{under_rule}"
    ]
    if provider:
        notes.append(
            "billed as the provider billed: each call's tokens in every row times the provider's "
            "input over the none "
            "row's count of it; the none row's cached tokens are the provider's, the other rows' "
            f"the {cache or 'prefix'} "
            f"rule's; {calls - n:,} of {calls:,} calls report no usage and keep the package's count"
        )
    return notes


def transcript_prompts(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Return the prompt of every model call in ``messages``: the history before each assistant
    message after the first message."""
    return [list(messages[:i]) for i, m in enumerate(messages) if i and isinstance(m, AIMessage)]


def transcript_answers(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return the answer of every model call in ``messages``: each assistant message after the first
    message (one per :func:`transcript_prompts` prompt)."""
    return [m for i, m in enumerate(messages) if i and isinstance(m, AIMessage)]


def find_transcripts(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[Path, bool]]:
    """Return the files to replay, each with whether it was named explicitly; folders give their
    transcripts, sorted."""
    found: list[tuple[Path, bool]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            inside = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.name.endswith(TRANSCRIPT_SUFFIXES)
                and not p.name.endswith(USAGE_SUFFIX)
            )
            if not inside:
                raise ConfigError(
                    f"{path}: no transcript files "
                    f"({', '.join('*' + s for s in TRANSCRIPT_SUFFIXES)}) in this folder"
                )
            found += [(p, False) for p in inside]
        else:
            found.append((path, True))
    return found


def _merge(results: list[SimulationResult], files: list[str], notes: list[str]) -> SimulationResult:
    first = results[0]
    for other in results[1:]:
        for run, more in zip(first.runs, other.runs, strict=False):
            for name in PER_CALL:
                getattr(run, name).extend(getattr(more, name))
    first.model_calls = sum(r.model_calls for r in results)
    first.recall_measured = all(r.recall_measured for r in results)
    first.tool_schemas = [pair for r in results for pair in r.tool_schemas]
    first.files = files
    first.notes = [*notes, *dict.fromkeys(n for r in results for n in r.notes)]
    return first


def simulate_files(
    paths: Sequence[str | os.PathLike[str]],
    strategies: Sequence[StrategyEntry] | None = None,
    bill: str = "package",
    **options: Any,
) -> SimulationResult:
    """Return every strategy's replay of the transcripts in ``paths`` (files or folders), aggregated
    over files.

    ``options`` are those of :func:`~langchain_promptstrat.simulate.simulate` (``cache``, ``peers``,
    ``max_tokens``, ``token_counter``...), except ``prompts``, ``n_tool_calls`` and ``seed``;
    ``tools``, when given, replaces every file's own. Where a file carries usage (:func:`usage_of`)
    a note compares the provider's bill with the ``none`` row; ``bill="provider"`` also bills every
    row as the provider did, a ``none`` row added when missing.

    Raises:
        ConfigError: No file gives a model call, an unknown ``bill``, or ``bill="provider"`` where
            no call reports usage.
    """
    if bill not in BILLS:
        raise ConfigError(f"unknown bill {bill!r}; known: {', '.join(BILLS)}")
    if strategies is None:
        strategies = default_rows(
            settings=options.get("settings"),
            max_tokens=options.get("max_tokens", SIMULATED_MAX_TOKENS),
        )
    if bill == "provider" and "none" not in strategies:
        strategies = ["none", *strategies]  # each call's ratio is over the none row's count
    tools = options.pop("tools", None)
    replays: list[tuple[Path, list[BaseMessage], Any, list[BilledInput | None] | None]] = []
    notes: list[str] = []
    for path, named in find_transcripts(paths):
        try:
            conversation = read_conversation(str(path))
        except (PromptStratError, OSError) as exc:
            if named:
                raise
            notes.append(f"skipped {path}: {exc}")
            continue
        recorded = [*conversation.messages, *conversation.pending]
        shown = conversation.notes[:_MAX_NOTES_PER_FILE]
        more = len(conversation.notes) - len(shown)
        notes += [f"{path.name}: {n}" for n in shown] + (
            [f"{path.name}: {more} more notes"] if more > 0 else []
        )
        if not transcript_prompts(recorded):
            notes.append(
                f"{path.name}: no model call to replay (no assistant message after the first "
                "message)"
            )
            continue
        try:
            usage = usage_of(path, recorded)
        except ConfigError as exc:
            notes.append(f"{path.name}: {exc}")
            usage = None
        answers = [i for i, m in enumerate(recorded) if isinstance(m, AIMessage)]
        calls = (
            [b for i, b in zip(answers, usage[0], strict=False) if i] if usage else None
        )  # the calls transcript_prompts replays
        replays.append((path, recorded, conversation.tools if tools is None else tools, calls))
    if not replays:
        raise ConfigError(f"no model call to replay in {', '.join(map(str, paths))}")
    if bill == "provider" and not any(calls for *_, calls in replays):
        raise ConfigError(
            f"cannot bill as the provider billed: no model call in {', '.join(map(str, paths))} "
            "reports usage "
            f"(a NAME{USAGE_SUFFIX} beside the file, or usage_metadata on its answers)"
        )
    results: list[SimulationResult] = []
    check = [0] * 6
    for _, recorded, tools_here, calls in replays:
        results.append(
            simulate(
                strategies,
                prompts=transcript_prompts(recorded),
                next_actions=transcript_answers(recorded),
                tools=tools_here,
                **options,
            )
        )
        if calls is not None:
            _bill(results[-1], calls, check, bill == "provider")
    merged = _merge(results, [str(path) for path, *_ in replays], notes)
    merged.bill = bill
    if check[0]:
        merged.notes += _bill_notes(
            check, merged.model_calls, options.get("cache"), bill == "provider"
        )
    return merged
