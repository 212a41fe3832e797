"""Memory: a process that runs many conversations does not keep finished ones alive."""

from __future__ import annotations

import gc
import tracemalloc
import weakref

import pytest
from langchain_core.messages import BaseMessage

from langchain_promptstrat import prepare_prompt
from langchain_promptstrat.messages.history_memo import IdentityMemo, SizedCache
from langchain_promptstrat.testing import build_agent_run

# Every strategy with a cache of its own: the epoch heads and repeat keys, the report's
# character memo, the truncation cache, and the token counter the ladder uses.
STRATEGIES = (
    "shorten_tools_epoch_stable,shorten_tools_epoch_increment,shorten_tools,"
    "tool_results,sliding_window"
)


def _run_and_discard(seed: int, refs: list[weakref.ref[BaseMessage]]) -> int:
    """Call the strategies as an agent loop would over one long run, then drop the run; return its
    content size."""
    run = build_agent_run(300, seed=seed, output_bytes=(10_000, 40_000))
    for end in range(200, len(run) + 1, 200):
        prepare_prompt(run[:end], STRATEGIES)
    refs.extend(weakref.ref(m) for m in run)
    return sum(len(m.content) for m in run if isinstance(m.content, str))


def test_ten_discarded_long_runs_leave_no_message_alive_and_little_memory() -> None:
    """After ten 300-call runs are dropped, none of their messages lives and the caches hold a few
    MB, not the runs."""
    refs: list[weakref.ref[BaseMessage]] = []
    _run_and_discard(0, refs)  # loads the encoding and warms the import-time state
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        content = sum(_run_and_discard(seed, refs) for seed in range(1, 11))
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    alive = sum(1 for ref in refs if ref() is not None)
    assert alive == 0, f"{alive} messages of discarded runs are still alive"
    assert content > 50_000_000  # the runs were long enough for a leak to show
    assert retained < 20_000_000, f"{retained / 1e6:.1f} MB retained"


class _Obj:
    """A weakly referenceable stand-in for a message."""


def test_identity_memo_forgets_an_entry_when_its_object_dies() -> None:
    """An entry lives only as long as its object: the memo never keeps it alive."""
    memo: IdentityMemo[int] = IdentityMemo(10)
    obj = _Obj()
    memo.put(obj, 7)
    assert memo.get(obj) == 7
    del obj
    gc.collect()
    assert len(memo) == 0


def test_identity_memo_misses_when_a_checked_field_was_replaced() -> None:
    """A check value replaced by a different one (a replaced content) is a miss."""
    memo: IdentityMemo[int] = IdentityMemo(10)
    obj, first, second = _Obj(), ["a"], ["b"]
    memo.put(obj, 1, first)
    assert memo.get(obj, first) == 1
    assert memo.get(obj, second) is None


def test_identity_memo_is_bounded_by_its_entry_count() -> None:
    """Past max_entries the oldest entries go."""
    memo: IdentityMemo[int] = IdentityMemo(3)
    objs = [_Obj() for _ in range(5)]
    for i, obj in enumerate(objs):
        memo.put(obj, i)
    assert len(memo) == 3
    assert memo.get(objs[0]) is None and memo.get(objs[4]) == 4


def test_sized_cache_is_bounded_by_the_total_size_of_its_entries() -> None:
    """Entries are evicted oldest first until their sizes fit; one larger than the bound is not
    kept."""
    cache: SizedCache[str, int] = SizedCache(100)
    for i in range(10):
        cache.put(f"k{i}", i, 30)
    assert cache.size <= 100 and len(cache) == 3
    assert cache.get("k9") == 9 and cache.get("k0") is None
    cache.put("huge", 1, 101)
    assert cache.get("huge") is None


def test_the_epoch_head_cache_is_bounded_by_the_characters_it_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Compacted heads of many conversations never hold more characters than the bound, however few
    heads that is."""
    from langchain_promptstrat.messages import history_memo as caches

    caches.clear_caches()
    runs = [build_agent_run(200, seed=seed) for seed in range(6)]
    prepare_prompt(runs[0], "shorten_tools_epoch")
    one_head = caches._heads.size
    assert one_head > 0
    bound = int(2.5 * one_head)  # room for about two heads of this size
    monkeypatch.setattr(caches._heads, "max_size", bound)
    for run in runs[1:]:
        prepare_prompt(run, "shorten_tools_epoch")
        assert 0 < caches._heads.size <= bound
    assert len(caches._heads) <= 3  # the character bound, not the count of 64, evicted
    caches.clear_caches()
    assert caches._heads.size == 0


def test_a_long_lived_bounded_default_keeps_no_finished_conversation_alive() -> None:
    """One ShortenToolsEpochStable object, as a hook or middleware keeps for a server's life, holds
    no message of a finished run."""
    from langchain_promptstrat import ShortenToolsEpochStable

    strategy = ShortenToolsEpochStable(max_tokens=30_000)
    refs: list[weakref.ref[BaseMessage]] = []
    for seed in range(4):
        run = build_agent_run(150, seed=seed)
        for end in range(100, len(run) + 1, 100):
            strategy.compact(run[:end])
        refs.extend(weakref.ref(m) for m in run)
        del run
    gc.collect()
    alive = sum(1 for ref in refs if ref() is not None)
    assert alive == 0, f"{alive} messages of finished runs are kept alive by the strategy object"


def test_a_long_lived_ladder_keeps_no_finished_conversation_alive() -> None:
    """One watermark CompactionLadder, as a hook or middleware keeps for a server's life, holds no
    message of a finished run."""
    from langchain_promptstrat.strategies.ladder import CompactionLadder

    ladder = CompactionLadder(["tool_results", "sliding_window"], max_tokens=20_000)
    refs: list[weakref.ref[BaseMessage]] = []
    events = 0
    for seed in range(4):
        run = build_agent_run(150, seed=seed)
        for end in range(100, len(run) + 1, 100):
            events = max(events, ladder.compact(run[:end]).report.as_dict()["events"])
        refs.extend(weakref.ref(m) for m in run)
        del run
    gc.collect()
    alive = sum(1 for ref in refs if ref() is not None)
    assert events > 0  # the remembered prompts held edited copies as well as the caller's messages
    assert alive == 0, f"{alive} messages of finished runs are kept alive by the ladder"
    # the replays of the dropped runs stay, bounded (a run loaded again from a checkpoint resumes
    # from them), holding no message
    assert len(ladder._memo) <= CompactionLadder.memo_size


def test_the_ladder_memo_is_bounded_by_the_characters_of_its_edited_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ladder's remembered replays never hold more characters of edited copies than memo_chars,
    and the prompts do not change."""
    from langchain_promptstrat.strategies.ladder import CompactionLadder

    runs = [build_agent_run(150, seed=seed) for seed in range(6)]
    ladder = CompactionLadder(["tool_results", "sliding_window"], max_tokens=20_000)
    ladder.compact(runs[0])
    one = ladder._memo.chars()
    assert one > 0  # the rungs' edited copies are the ladder's own
    bound = int(2.5 * one)  # room for about two replays of this size
    monkeypatch.setattr(CompactionLadder, "memo_chars", bound)
    for run in runs[1:]:
        result = ladder.compact(run)
        assert (
            result.messages
            == CompactionLadder(["tool_results", "sliding_window"], max_tokens=20_000)
            .compact(run)
            .messages
        )
        held = ladder._memo.chars()
        assert 0 < held <= bound
    assert len(ladder._memo) <= 3  # the character bound, not the count of 8, evicted
