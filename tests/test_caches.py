"""The one cache switch: every memo and cache of the package is an optimisation only.

``PROMPTSTRAT_CACHES=off`` (at import) or :func:`~langchain_promptstrat.messages.history_memo.
caches_off` turns every memo off; a prompt or report computed that way must be the same, byte for
byte, as with the caches on, and the memos must really store nothing while off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage

from langchain_promptstrat import prepare_prompt
from langchain_promptstrat.messages import history_memo
from langchain_promptstrat.registry import get_strategy
from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.testing import iter_agent_run

CEILINGS = (8_000, 20_000, 60_000)


def _text(messages: Sequence[BaseMessage]) -> str:
    """Return the messages as the provider adapter would see them: type and every field, as JSON."""
    data = [[type(m).__name__, m.model_dump()] for m in messages]
    return json.dumps(data, sort_keys=True, default=repr)


def _sample(prompts: list[list[BaseMessage]], ceiling: int) -> list[str]:
    """Return every prompt and report of one run, each front end called before every model call
    with one object per run (so a memo can resume the previous call)."""
    builders: list[Callable[[], Any]] = [
        lambda: ShortenToolsEpochStable(max_tokens=ceiling),
        lambda: CompactionLadder(["tool_results", "sliding_window"], max_tokens=ceiling),
        lambda: get_strategy("shorten_tools_epoch"),
        lambda: get_strategy("dedupe_outputs"),
    ]
    out: list[str] = []
    for build in builders:
        strategy = build()
        for prompt in prompts:
            result = strategy.compact(list(prompt))
            out += [_text(result.messages), json.dumps(result.report.as_dict(), default=repr)]
    out += [_text(prepare_prompt(list(prompt), max_tokens=ceiling)) for prompt in prompts]
    return out


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10_000), ceiling=st.sampled_from(CEILINGS))
def test_every_prompt_and_report_is_the_same_with_caches_off(seed: int, ceiling: int) -> None:
    """A cache is an optimisation only: the default, the ladder, the epoch strategy, dedupe and the
    default list give the same bytes with every memo off as with them on (then on again)."""
    prompts = list(iter_agent_run(45, seed=seed))
    on = _sample(prompts, ceiling)
    with history_memo.caches_off():
        off = _sample(prompts, ceiling)
    again = _sample(prompts, ceiling)
    assert off == on
    assert again == on


def _held() -> dict[str, int]:
    """Return how many entries each memo and cache of the package holds, by kind."""
    held = {
        f"{type(cache).__name__}#{i}": len(cache)
        for i, cache in enumerate(list(history_memo._every_cache))
    }
    held |= {
        f"memoized {made.name}": made.remembered.cache_info().currsize
        for made in history_memo._memoized
    }
    held["message_keys"] = len(history_memo._recent.items)
    return held


def test_no_memo_or_cache_stores_anything_while_caches_are_off() -> None:
    """The switch really turns every cache off: a run under it leaves every memo empty, and the same
    run with caches on fills them (so the check can fail)."""
    prompts = list(iter_agent_run(30, seed=5))
    history_memo.clear_caches()
    with history_memo.caches_off():
        assert not history_memo.caches_enabled()
        kept = _sample(prompts, 8_000)  # the strategy objects live on while we look
        held = _held()
        assert held and not any(held.values()), {k: v for k, v in held.items() if v}
    assert history_memo.caches_enabled()
    kept = _sample(prompts, 8_000)
    filled = _held()
    assert kept and any(filled.values())
    for name in ("memoized _reads", "message_keys"):
        assert filled[name] > 0, name


def test_the_environment_variable_turns_caches_off_at_import() -> None:
    """``PROMPTSTRAT_CACHES=off`` in the environment turns the caches off for the whole process, as
    the digest checks run it; any other value leaves them on."""
    code = "from langchain_promptstrat.messages import history_memo; print(history_memo._caches_on)"
    answers = []
    for value in ("off", "OFF", "on", ""):
        env = {**os.environ, "PROMPTSTRAT_CACHES": value}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        answers.append(done.stdout.strip())
    assert answers == ["False", "False", "True", "True"]
