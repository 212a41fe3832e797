"""Replay saved transcripts call by call: what would each strategy have sent and cost on *my* runs?

The prompt of the call that produced the assistant message at position ``i`` was
``messages[:i]``, so a replay applies each strategy to each of these histories in order and
measures them as the simulated run does (:func:`~langchain_promptstrat.simulate.simulate` with
``prompts=``). Each file is replayed with fresh strategies, its per-call figures concatenated
per strategy; a file a folder holds that cannot be read is skipped with a note, one named
explicitly raises. A transcript's saved ``tools`` are counted and given to the strategies; a
usage file beside it (``NAME.usage.json``, or in ``../usage/``) adds what the provider billed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.errors import ConfigError, PromptStratError
from langchain_promptstrat.simulate import DEFAULT_MAX_TOKENS, SimulationResult, StrategyEntry, default_rows, simulate
from langchain_promptstrat.tokens.usage import BilledInput, read_usage_file

TRANSCRIPT_SUFFIXES = (".json", ".jsonl")
"""File endings a folder is searched for (``.traj.json`` ends in ``.json``)."""
USAGE_SUFFIX = ".usage.json"
"""A usage sidecar beside a transcript (the provider's billed tokens per answer), not a transcript itself."""

_MAX_NOTES_PER_FILE = 3


def usage_beside(path: Path, folder: Path | None = None) -> list[BilledInput | None] | None:
    """Return the entries of ``path``'s usage file (``NAME.usage.json`` in ``folder``, else beside it, else in ``../usage/``), or None."""
    name = path.name.rsplit(".", 1)[0] + USAGE_SUFFIX
    found = next((d / name for d in ([folder] if folder else [path.parent, path.parent.parent / "usage"]) if (d / name).is_file()), None)
    return read_usage_file(found) if found is not None else None


def _add_bill(bill: list[int], recorded: list[BaseMessage], billed: list[BilledInput | None], result: SimulationResult) -> None:
    """Add to ``bill`` the provider's figures of the calls that report them and the ``none`` row's for the same calls."""
    answers = [i for i, m in enumerate(recorded) if isinstance(m, AIMessage)]
    none = result.baseline
    if none is None or len(billed) != len(answers):
        return
    calls = [b for i, b in zip(answers, billed) if i]  # the calls transcript_prompts replays
    for k, entry in enumerate(calls):
        if entry is not None:
            rule = none.provider_cached_tokens[k] if none.provider_cached_tokens else 0
            figures = (1, entry.tokens, entry.cached or 0, none.tokens[k], none.cached_tokens[k], rule)
            bill[:] = [a + b for a, b in zip(bill, figures)]


def _bill_note(bill: list[int], calls: int, cache: str | None) -> str:
    n, billed, cached, counted, prefix, rule = bill
    under_rule = f", {rule / counted:.1%} under the {cache} rule" if cache and cache != "prefix" else ""
    return (f"provider's bill ({n:,} of {calls:,} calls report usage): input {billed:,} tokens, {cached / billed:.1%} cached; "
            f"the none row counts {counted / billed:.3f}x that input, {prefix / counted:.1%} cached as the prefix bound{under_rule}")


def transcript_prompts(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Return the prompt of every model call in ``messages``: the history before each assistant message after the first message."""
    return [list(messages[:i]) for i, m in enumerate(messages) if i and isinstance(m, AIMessage)]


def transcript_answers(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return the answer of every model call in ``messages``: each assistant message after the first message (one per :func:`transcript_prompts` prompt)."""
    return [m for i, m in enumerate(messages) if i and isinstance(m, AIMessage)]


def find_transcripts(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[Path, bool]]:
    """Return the files to replay, each with whether it was named explicitly; folders give their transcripts, sorted."""
    found: list[tuple[Path, bool]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            inside = sorted(
                p for p in path.rglob("*")
                if p.is_file() and p.name.endswith(TRANSCRIPT_SUFFIXES) and not p.name.endswith(USAGE_SUFFIX)
            )
            if not inside:
                raise ConfigError(f"{path}: no transcript files ({', '.join('*' + s for s in TRANSCRIPT_SUFFIXES)}) in this folder")
            found += [(p, False) for p in inside]
        else:
            found.append((path, True))
    return found


def _merge(results: list[SimulationResult], files: list[str], notes: list[str]) -> SimulationResult:
    first = results[0]
    runs = first.runs
    for other in results[1:]:
        for run, more in zip(runs, other.runs):
            for name in ("tokens", "cached_tokens", "reuse", "seconds", "degenerate", "provider_cached_tokens", "provider_written_tokens", "recall"):
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
    **options: Any,
) -> SimulationResult:
    """Return every strategy's replay of the transcripts in ``paths`` (files or folders), aggregated over files.

    ``options`` are those of :func:`~langchain_promptstrat.simulate.simulate` (``cache``,
    ``peers``, ``max_tokens``, ``token_counter``...), except ``prompts``, ``n_tool_calls``
    and ``seed``; ``tools``, when given, replaces every file's own. Raises
    :class:`ConfigError` when no file gives a model call.
    """
    if strategies is None:
        strategies = default_rows(settings=options.get("settings"), max_tokens=options.get("max_tokens", DEFAULT_MAX_TOKENS))
    tools = options.pop("tools", None)
    results: list[SimulationResult] = []
    files: list[str] = []
    notes: list[str] = []
    bill = [0] * 6
    for path, named in find_transcripts(paths):
        try:
            conversation = read_conversation(str(path))
        except (PromptStratError, OSError) as exc:
            if named:
                raise
            notes.append(f"skipped {path}: {exc}")
            continue
        recorded = [*conversation.messages, *conversation.pending]
        prompts = transcript_prompts(recorded)
        shown = conversation.notes[:_MAX_NOTES_PER_FILE]
        more = len(conversation.notes) - len(shown)
        notes += [f"{path.name}: {n}" for n in shown] + ([f"{path.name}: {more} more notes"] if more > 0 else [])
        if not prompts:
            notes.append(f"{path.name}: no model call to replay (no assistant message after the first message)")
            continue
        tools_here = conversation.tools if tools is None else tools
        results.append(simulate(strategies, prompts=prompts, next_actions=transcript_answers(recorded), tools=tools_here, **options))
        files.append(str(path))
        try:
            billed = usage_beside(path)
        except (OSError, ValueError) as exc:
            notes.append(f"{path.name}: usage file not read: {exc}")
            billed = None
        if billed is not None:
            _add_bill(bill, recorded, billed, results[-1])
    if not results:
        raise ConfigError(f"no model call to replay in {', '.join(map(str, paths))}")
    merged = _merge(results, files, notes)
    if bill[0]:
        merged.notes.append(_bill_note(bill, merged.model_calls, options.get("cache")))
    return merged
