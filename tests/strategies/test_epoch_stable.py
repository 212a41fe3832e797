"""Specification of shorten_tools_epoch_stable: epochs that keep the front of the prompt
byte-identical.

Forward positions (1 = oldest output) throughout, as in ``test_epoch.py``, whose
conversation builders are reused: with one call per step, call ``k`` of ``run_of`` is at
forward position ``k + 1``. The regions read: forward ``<= drop_edge`` dropped,
``<= compaction_edge`` shortened, the rest whole.
"""

from __future__ import annotations

from typing import Any

import pytest
from conversations import agent_conversations, ai_step, as_ai, as_tool, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from test_epoch import (
    ARG,
    Serialiser,
    by_region,
    fates,
    growing_conversation,
    notices,
    output_of,
    run_of,
    serialise,
    spec,
)

from langchain_promptstrat import Settings, check_tool_pairs, get_strategy
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.messages import (
    handle_text,
    index_tool_calls,
    is_real_user_message,
    mark_of,
    split_turns,
)
from langchain_promptstrat.messages.history_memo import clear_caches
from langchain_promptstrat.report import Compacted
from langchain_promptstrat.strategies.epoch_stable import (
    ShortenToolsEpochStable,
    count_edges,
    front_drop_edge,
    shorten_tools_epoch_stable,
    stable_boundary,
)
from langchain_promptstrat.strategies.sliding_window import layout
from langchain_promptstrat.testing import iter_agent_run
from langchain_promptstrat.truncation import shorten_string

SMALL = Settings(
    stable_tool_call_threshold=10,
    stable_full_tool_calls=2,
    stable_epoch_size=5,
    stable_max_compacted_tool_calls=8,
    stable_front_drop_chunk=4,
)
"""Epochs T = 11..15 (edge 8), 16..20 (edge 13, drop 8), 21..25 (edge 18, drop 12), 26..30 (edge 23,
drop 16)."""


def stable(messages: list[BaseMessage], s: Settings = SMALL) -> Compacted:
    return shorten_tools_epoch_stable(messages, settings=s)


# --------------------------------------------------------------------------- the edges


class TestFrontDropEdge:
    def test_nothing_is_dropped_while_the_shortened_region_fits(self) -> None:
        """With the defaults (at most 240 shortened, chunks of 120) edges up to 240 drop nothing."""
        assert [front_drop_edge(e, Settings()) for e in (0, 100, 240)] == [0, 0, 0]

    def test_the_front_goes_in_whole_chunks(self) -> None:
        """Edges 241..360 drop the oldest 120, 361..480 the oldest 240: 121 to 240 calls stay
        shortened."""
        s = Settings()
        assert [front_drop_edge(e, s) for e in (241, 300, 360, 361, 480, 481)] == [
            120,
            120,
            120,
            240,
            240,
            360,
        ]

    def test_a_chunk_larger_than_the_bound_never_drops_past_the_edge(self) -> None:
        """With at most 4 shortened and chunks of 10, edge 5 drops 5 (not 10) and edge 12 drops
        10."""
        s = Settings(stable_max_compacted_tool_calls=4, stable_front_drop_chunk=10)
        assert (front_drop_edge(5, s), front_drop_edge(12, s)) == (5, 10)

    def test_no_shortened_region_drops_everything_frozen(self) -> None:
        """A maximum of 0 shortened calls drops every frozen call."""
        assert front_drop_edge(37, Settings(stable_max_compacted_tool_calls=0)) == 37


class TestStableBoundary:
    def edges(self, total: int, s: Settings = Settings()) -> tuple[int, int, int, int]:
        state = stable_boundary(total, s)
        assert state is not None
        return state.epoch.pinned_total, state.compaction_edge, state.drop_edge, state.front_total

    def test_default_schedule(self) -> None:
        """Threshold 120, epochs of 80, 20 whole: edges 100, 180, 260, 340, 420 with drops 0, 0,
        120, 120, 240."""
        assert stable_boundary(120, Settings()) is None
        expected = {
            121: (120, 100, 0, 120),
            200: (120, 100, 0, 120),
            201: (200, 180, 0, 120),
            281: (280, 260, 120, 280),
            361: (360, 340, 120, 280),
            441: (440, 420, 240, 440),
        }
        assert {t: self.edges(t) for t in expected} == expected

    def test_the_front_holds_for_every_call_between_front_drops(self) -> None:
        """From T=281 to T=440 the drop edge stays 120 and front_total 280 while the compaction edge
        advances once."""
        seen = {self.edges(t)[1:] for t in range(281, 441)}
        assert seen == {(260, 120, 280), (340, 120, 280)}

    def test_each_epoch_froze_its_calls_and_protection_is_decided_at_the_later_of_that_and_front(
        self,
    ) -> None:
        """At T=400 (edge 340, front since 280) calls up to 100 were frozen at 120, to 180 at 200,
        to 260 at 280, to 340 at 360.

        A repeat's protection is decided then, or at the last front drop if later: that is
        what keeps a newer occurrence from changing the front between drops.
        """
        edges = count_edges(stable_boundary(400, Settings()))
        assert edges.segments == ((100, 120), (180, 200), (260, 280), (340, 360))
        assert [edges.decided_at(f, 400) for f in (50, 100, 101, 181, 261, 340)] == [
            280,
            280,
            280,
            280,
            360,
            360,
        ]

    @pytest.mark.parametrize(
        "overrides",
        [
            {"stable_full_tool_calls": 0, "stable_max_compacted_tool_calls": 0},
            {"stable_epoch_size": 0},
        ],
    )
    def test_nothing_changes_when_disabled(self, overrides: dict[str, Any]) -> None:
        """Both windows at 0, or an epoch size of 0, switch compaction off at any length."""
        assert stable_boundary(10_000, Settings(**overrides)) is None


# --------------------------------------------------------------------------- regions


class TestRegions:
    def test_first_epoch_shortens_without_dropping(self) -> None:
        """At T=12 forward 1..8 are shortened and 9..12 whole; nothing is dropped yet."""
        assert by_region(stable(run_of(12)).messages, 12) == (
            [9, 10, 11, 12],
            list(range(1, 9)),
            [],
        )

    def test_second_epoch_drops_a_chunk_from_the_front(self) -> None:
        """At T=17 (edge 13) the shortened region would hold 13 > 8 calls: the oldest 8 (two chunks
        of 4) go."""
        assert by_region(stable(run_of(17)).messages, 17) == (
            [14, 15, 16, 17],
            [9, 10, 11, 12, 13],
            list(range(1, 9)),
        )

    def test_shortened_pair_uses_sizes_200_and_400(self) -> None:
        """A shortened call carries shorten_string of its argument to 200 and of its output within
        400 (the output's handle takes its room), each with its handle."""
        result = stable(run_of(12)).messages
        rec = next(r for r in index_tool_calls(result).calls if r.id == "call_5")
        output_handle, arguments_handle = handle_text(6), handle_text(6, arguments=True)
        assert rec.args["query"] == shorten_string(f"q5 {ARG}", 200) + " " + arguments_handle
        assert (
            result[rec.output_index or 0].content
            == shorten_string(output_of(5), 400 - len(output_handle) - 1) + "\n" + output_handle
        )

    def test_at_the_threshold_nothing_changes(self) -> None:
        """T = threshold returns the same messages and no notice."""
        msgs = run_of(10)
        result = stable(msgs)
        assert all(a is b for a, b in zip(result.messages, msgs, strict=False)) and len(
            result.messages
        ) == len(msgs)
        assert result.report.details["compaction_edge"] is None and not result.report.changed

    @pytest.mark.parametrize("mirror", ["openai", "anthropic", "both"])
    def test_parallel_steps_in_every_format_keep_their_pairs(self, mirror: str) -> None:
        """Steps of 3 calls straddling both edges are edited in every place a call is recorded,
        pairs intact."""
        result = stable(run_of(17, width=3, mirror=mirror)).messages
        assert not check_tool_pairs(result)
        assert by_region(result, 17) == ([14, 15, 16, 17], [9, 10, 11, 12, 13], list(range(1, 9)))

    def test_pending_calls_at_the_end_are_left_alone(self) -> None:
        """A last AIMessage whose calls have no output yet is kept as it is and changes no
        decision."""
        pending = ai_step([spec(99)], 99, mirror="plain")
        result = stable(run_of(12) + [pending])
        assert result.messages[-1] is pending and result.report.details["prefix_change"] is None
        assert fates(result.messages[:-1]) == fates(stable(run_of(12)).messages)


class TestProtection:
    def test_newest_occurrence_of_a_repeat_in_the_shortened_region_stays_whole(self) -> None:
        """Call 6 (forward 7, in the shortened region at T=12) repeats call 0, so it stays whole
        while call 0 is shortened."""
        f = fates(stable(run_of(12, repeat_of={6: 0})).messages)
        assert (f[6], f[0]) == ("whole", "short")

    def test_a_newer_occurrence_leaves_the_front_alone_until_the_next_front_drop(self) -> None:
        """Calls 7 and 12 repeat call 0: call 7 stays whole through the advance at T=16 and is
        shortened at the front drop at T=21."""
        s = SMALL.replace(
            stable_max_compacted_tool_calls=14, stable_front_drop_chunk=6
        )  # drops: none at edge 13, 6 at edge 18
        repeats = {7: 0, 12: 0}
        advance = stable(run_of(16, repeat_of=repeats), s)
        assert (
            fates(advance.messages)[7] == "whole"
            and advance.report.details["prefix_change"] == "middle"
        )
        drop = stable(run_of(21, repeat_of=repeats), s)
        assert (fates(drop.messages)[7], fates(drop.messages)[12]) == ("short", "whole")
        assert drop.report.details["prefix_change_reason"] == "front_drop"

    def test_a_call_frozen_after_a_front_drop_is_decided_against_its_own_epoch(self) -> None:
        """Call 21 repeats call 0 and is frozen at pinned 25: a newer occurrence at forward 25
        counts, one at 27 waits for the next drop."""
        s = SMALL.replace(
            stable_max_compacted_tool_calls=14, stable_front_drop_chunk=12
        )  # T=26..30: edge 23, drop 12 since T=21
        seen = stable(run_of(27, repeat_of={21: 0, 24: 0}), s)
        assert seen.report.details["front_total"] == 20 and fates(seen.messages)[21] == "short"
        assert fates(stable(run_of(27, repeat_of={21: 0, 26: 0}), s).messages)[21] == "whole"

    def test_a_protected_call_in_the_dropped_region_stays_whole(self) -> None:
        """Call 3 repeats call 1; at T=17 forward 1..8 are dropped, but call 3 (forward 4) comes
        back whole."""
        whole, _, dropped = by_region(stable(run_of(17, repeat_of={3: 1})).messages, 17)
        assert 4 in whole and dropped == [1, 2, 3, 5, 6, 7, 8]


# --------------------------------------------------------------------------- the notice


class TestNotice:
    def test_notice_sits_right_after_the_last_shortened_step(self) -> None:
        """At T=12 (edge 8) the notice follows call 7's output and precedes call 8's step."""
        result = stable(run_of(12)).messages
        (i,) = notices(result)
        assert as_tool(result[i - 1]).tool_call_id == "call_7" and "call_8" in {
            c["id"] for c in as_ai(result[i + 1]).tool_calls
        }

    def test_notice_never_separates_a_call_from_its_outputs(self) -> None:
        """With steps of 3 and the edge inside a step, the notice follows the step's last output."""
        result = stable(run_of(12, width=3)).messages
        (i,) = notices(result)
        assert [as_tool(m).tool_call_id for m in result[i - 3 : i]] == [
            "call_6",
            "call_7",
            "call_8",
        ]
        assert not check_tool_pairs(result)

    def test_notice_says_what_was_shortened_and_removed(self) -> None:
        """At T=17: 5 shortened, 8 removed, the tools did run, and not to repeat."""
        result = stable(run_of(17))
        text = result.messages[notices(result.messages)[0]].content
        assert "5 older tool calls and their results were shortened" in text
        assert "8 older tool calls and their results were removed" in text
        assert "does not mean the tool never ran" in text and "Do not repeat a call" in text

    def test_notice_is_marked_and_never_a_real_user_message(self) -> None:
        """The notice is recognisable, is no real user message, starts no turn, and is no
        sliding-window anchor."""
        result = stable(run_of(12)).messages
        notice = result[notices(result)[0]]
        assert (mark_of(notice) or {}).get(
            "strategy"
        ) == "shorten_tools_epoch_stable" and not is_real_user_message(notice)
        assert [t.start for t in split_turns(result)] == [1] and layout(
            result, keep_steps=1
        ).anchor == 1

    def test_notice_comes_before_a_user_message_that_follows_the_boundary(self) -> None:
        """A real user message right after the last shortened step stays after the notice."""
        msgs = run_of(12)
        j = next(
            i
            for i, m in enumerate(msgs)
            if isinstance(m, ToolMessage) and m.tool_call_id == "call_7"
        )
        msgs.insert(j + 1, HumanMessage("and also"))
        result = stable(msgs).messages
        i = notices(result)[0]
        assert result[i + 1].content == "and also" and not check_tool_pairs(result)

    def test_a_stale_notice_in_the_input_is_replaced(self) -> None:
        """Compacting an already compacted prompt grown past the next edge keeps exactly one notice,
        and its stubs are not cut again."""
        once = stable(run_of(12)).messages
        again = stable(once + run_of(16)[-8:])
        assert len(notices(again.messages)) == 1
        stubs = {
            m.tool_call_id: m.content
            for m in once
            if isinstance(m, ToolMessage) and "[whole: read_back" in str(m.content)
        }
        assert stubs and all(
            m.content == stubs[m.tool_call_id]
            for m in again.messages
            if isinstance(m, ToolMessage) and m.tool_call_id in stubs
        )


# --------------------------------------------------------------------------- reports


class TestReport:
    def test_report_carries_the_regions(self) -> None:
        """At T=23 of SMALL: epoch 2, pinned 20, 3 new calls, edge 18, drop 12, front since 20."""
        d = stable(run_of(23)).report.as_dict()
        expected = {
            "epoch_index": 2,
            "pinned_total": 20,
            "new_calls": 3,
            "epoch_size": 5,
            "keep_full": 5,
            "compaction_edge": 18,
            "drop_edge": 12,
            "front_total": 20,
            "shortened": 6,
            "dropped": 12,
            "protected": 0,
            "repeats": 0,
            "notice": True,
        }
        assert {k: d[k] for k in expected} == expected

    @pytest.mark.parametrize(
        "total, region, reason",
        [
            (11, "front", "compaction_started"),
            (12, None, None),
            (16, "front", "front_drop"),
            (17, None, None),
            (21, "front", "front_drop"),
        ],
    )
    def test_each_change_names_its_region_and_reason(
        self, total: int, region: str | None, reason: str | None
    ) -> None:
        """The first compaction and every front drop are front changes; calls within an epoch change
        nothing."""
        d = stable(run_of(total)).report.details
        assert (d["prefix_change"], d["prefix_change_reason"]) == (region, reason)

    def test_an_advance_without_a_front_drop_is_a_middle_change(self) -> None:
        """With room for 100 shortened calls, T=16 only moves the compaction edge: middle, boundary
        moved, front not."""
        s = SMALL.replace(stable_max_compacted_tool_calls=100)
        d = stable(run_of(16), s).report.details
        assert (
            d["prefix_change"],
            d["prefix_change_reason"],
            d["boundary_moved"],
            d["front_moved"],
        ) == ("middle", "advance", True, False)

    def test_a_user_message_after_the_answer_changes_nothing(self) -> None:
        """A final answer and a new user message add no output: the previous call saw the same T."""
        d = stable(run_of(16) + [AIMessage("Done."), HumanMessage("now this")]).report.details
        assert d["prefix_change"] is None and d["boundary_moved"] is False

    def test_the_strategy_keeps_no_memory_between_conversations(self) -> None:
        """Interleaving two conversations gives each the reports it gets alone."""
        strategy = ShortenToolsEpochStable(SMALL)
        a = [run_of(n) for n in range(9, 30)]
        b = [run_of(n, width=2, text="hm") for n in range(9, 30)]
        alone = [strategy.compact(m).report for m in a]
        mixed = [strategy.compact(m).report for pair in zip(a, b, strict=False) for m in pair][::2]
        assert mixed == alone


# --------------------------------------------------------------------------- cache stability


@st.composite
def stable_settings(draw: st.DrawFn, *, roomy: bool = False) -> Settings:
    """Draw small windows so a short conversation crosses several advances and front drops.

    ``roomy`` gives the shortened region room for several advances between front drops.
    """
    return Settings(
        stable_tool_call_threshold=draw(st.integers(3, 12)),
        stable_full_tool_calls=draw(st.integers(0, 6)),
        stable_epoch_size=draw(st.integers(1, 6)),
        stable_max_compacted_tool_calls=draw(st.integers(8, 24) if roomy else st.integers(0, 10)),
        stable_front_drop_chunk=draw(st.integers(4, 12) if roomy else st.integers(1, 6)),
    )


def forward_of(prompt: list[BaseMessage]) -> dict[str, int]:
    """Return ``{call id: forward position}`` of the completed calls of ``prompt``."""
    return {r.id: r.forward for r in index_tool_calls(prompt).completed}


def front_length(output: list[BaseMessage], forward: dict[str, int], edge: int) -> int:
    """Return how many leading messages of ``output`` hold only calls at or below ``edge``: the
    front and the shortened region."""
    for i, m in enumerate(output):
        ids = (
            [m.tool_call_id]
            if isinstance(m, ToolMessage)
            else [c["id"] for c in getattr(m, "tool_calls", [])]
        )
        if notices([m]) or any(forward.get(x, 0) > edge for x in ids):
            return i
    return len(output)


def replay(
    prompts: list[list[BaseMessage]], s: Settings
) -> list[tuple[int, dict[str, Any], list[BaseMessage]]]:
    """Run the strategy on each prompt; return (messages shared with the previous output, report
    details, output)."""
    ser = Serialiser()
    out, previous = [], None
    for prompt in prompts:
        result = shorten_tools_epoch_stable(prompt, settings=s)
        current = ser(result.messages)
        shared = (
            0
            if previous is None
            else next(
                (i for i, (a, b) in enumerate(zip(previous, current, strict=False)) if a != b),
                min(len(previous), len(current)),
            )
        )
        out.append((shared, dict(result.report.details), result.messages))
        previous = current
    return out


PROPERTY = settings(
    max_examples=75,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class TestCacheStability:
    @PROPERTY
    @given(prompts=growing_conversation(repeats=True), s=stable_settings())
    def test_every_prefix_break_is_announced_and_every_announcement_is_a_break(
        self, prompts: list[list[BaseMessage]], s: Settings
    ) -> None:
        """Each output starts with the previous one exactly when the report names no change, pairs
        stay intact, the input is untouched."""
        final = snapshot(prompts[-1])
        runs = replay(prompts, s)
        for (_, _, before), (shared, d, out) in zip(runs, runs[1:], strict=False):
            assert (shared == len(before)) == (d["prefix_change"] is None), d
            if d["prefix_change_reason"] == "front_drop":
                assert d["front_moved"] and d["boundary_moved"]
            if d["prefix_change_reason"] == "advance":
                assert d["boundary_moved"] and not d["front_moved"]
            assert not check_tool_pairs(out) and len(notices(out)) <= 1
        assert snapshot(prompts[-1]) == final

    @PROPERTY
    @given(prompts=growing_conversation(repeats=True), s=stable_settings(roomy=True))
    def test_the_front_is_byte_identical_between_front_drops(
        self, prompts: list[list[BaseMessage]], s: Settings
    ) -> None:
        """Unless a call reports a front change, every message holding only calls the previous call
        had frozen is unchanged, repeats or not."""
        runs = replay(prompts, s)
        for prompt, (_, before_d, before), (shared, d, _) in zip(
            prompts[:-1], runs, runs[1:], strict=False
        ):
            if d["prefix_change"] == "front" or not before_d["compaction_edge"]:
                continue
            assert shared >= front_length(
                before, forward_of(prompt), before_d["compaction_edge"]
            ), d

    def test_a_realistic_run_changes_its_front_twice_in_400_calls(self) -> None:
        """On a 400-call generated run with the defaults, the front changes at the first compaction
        and the one front drop only."""
        prompts = list(iter_agent_run(400, seed=7, mirror="mixed"))
        runs = replay(prompts, Settings())
        announced = [
            (i, d["prefix_change"], d["prefix_change_reason"])
            for i, (_, d, _) in enumerate(runs)
            if d["prefix_change"]
        ]
        breaks = [
            i
            for i, ((_, _, before), (shared, _, _)) in enumerate(
                zip(runs, runs[1:], strict=False), 1
            )
            if shared < len(before)
        ]
        assert breaks == [i for i, _, _ in announced]
        assert [reason for _, _, reason in announced] == [
            "compaction_started",
            "advance",
            "front_drop",
            "advance",
        ]
        assert all(not check_tool_pairs(out) for _, _, out in runs[-5:])

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(conversation=agent_conversations(max_calls=30), s=stable_settings())
    def test_pure_and_pairs_intact_on_any_conversation(
        self, conversation: list[BaseMessage], s: Settings
    ) -> None:
        """Input untouched, the same output twice, no pairing violation, at most one notice, never
        only system messages."""
        before = snapshot(conversation)
        first = shorten_tools_epoch_stable(conversation, settings=s).messages
        assert snapshot(conversation) == before
        assert shorten_tools_epoch_stable(conversation, settings=s).messages == first
        assert not check_tool_pairs(first) and len(notices(first)) <= 1
        assert [m for m in first if is_real_user_message(m)] == [
            m for m in conversation if is_real_user_message(m)
        ]


# --------------------------------------------------------------------------- caches


class TestCaches:
    def test_results_do_not_depend_on_the_caches(self) -> None:
        """Every third prompt of a growing run compacts to the same bytes with warm caches and after
        clearing them."""
        prompts = list(iter_agent_run(150, seed=3))[::3]
        s = SMALL.replace(
            stable_tool_call_threshold=20,
            stable_epoch_size=9,
            stable_max_compacted_tool_calls=40,
            stable_front_drop_chunk=20,
        )
        warm = [
            [serialise(m) for m in shorten_tools_epoch_stable(p, settings=s).messages]
            for p in prompts
        ]
        cold = []
        for p in prompts:
            clear_caches()
            cold.append([serialise(m) for m in shorten_tools_epoch_stable(p, settings=s).messages])
        assert warm == cold

    def test_a_repeat_after_the_boundary_is_part_of_what_the_remembered_head_was_built_from(
        self,
    ) -> None:
        """Two histories equal up to the boundary but not in a newer call the protection reads get
        their own heads.

        At T=12 calls up to forward 8 are frozen and their protection decided at T=10: call 6
        (forward 7) repeats call 1 and is shortened when call 9 repeats it again, else kept
        whole. A head remembered for the first history must not serve the second.
        """
        again, once = run_of(12, repeat_of={6: 1, 9: 1}), run_of(12, repeat_of={6: 1})
        clear_caches()
        assert fates(stable(again).messages)[6] == "short"
        assert fates(stable(once).messages)[6] == "whole"


# --------------------------------------------------------------------------- the strategy


class TestStrategy:
    def test_the_stable_strategy_bounds_the_default_list(self) -> None:
        """It met the cache goal on every measured seed, so DEFAULT_STRATEGIES applies it after
        pointing repeats back, then inbox."""
        from langchain_promptstrat import DEFAULT_STRATEGIES

        assert DEFAULT_STRATEGIES == ("dedupe_outputs", "shorten_tools_epoch_stable", "inbox")

    def test_registry_builds_the_strategy_with_its_settings(self) -> None:
        """get_strategy resolves the name to the class, which applies the pure function with its
        settings."""
        strategy = get_strategy("shorten_tools_epoch_stable", SMALL)
        assert isinstance(strategy, ShortenToolsEpochStable)
        assert strategy.invoke(run_of(17)) == stable(run_of(17)).messages

    def test_settings_come_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """STABLE_* variables set in the environment reach the strategy."""
        for env, value in {
            "STABLE_TOOL_CALL_THRESHOLD": "10",
            "STABLE_FULL_TOOL_CALLS": "2",
            "STABLE_EPOCH_SIZE": "5",
            "STABLE_MAX_COMPACTED_TOOL_CALLS": "8",
            "STABLE_FRONT_DROP_CHUNK": "4",
        }.items():
            monkeypatch.setenv(env, value)
        d = ShortenToolsEpochStable().compact(run_of(17)).report.details
        assert (d["compaction_edge"], d["drop_edge"]) == (13, 8)

    def test_a_chunk_of_zero_is_rejected(self) -> None:
        """A front drop of 0 calls would never bound the region: STABLE_FRONT_DROP_CHUNK must be >=
        1."""
        with pytest.raises(ConfigError, match="STABLE_FRONT_DROP_CHUNK"):
            Settings.load(environ={"STABLE_FRONT_DROP_CHUNK": "0"})

    def test_report_counts_agree_with_the_output(self) -> None:
        """The report's shortened and dropped counts match what the output shows."""
        result = stable(run_of(40, width=2))
        whole, short, dropped = by_region(result.messages, 40)
        assert (result.report.shortened, result.report.dropped) == (len(short), len(dropped))


class TestOnePassPerCall:
    def test_a_call_replays_the_history_once_even_when_its_edges_move(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Whether moved edges changed any byte is read from the replay's state for the previous
        call, not by running the strategy again.

        A fresh object (a conversation loaded in a new process) at a call where the edges
        move replays each model call of the history through the rule exactly once.
        """
        import langchain_promptstrat.strategies.epoch_stable as module
        from langchain_promptstrat.messages.history_memo import call_points

        prompts = list(iter_agent_run(160, seed=1))
        moved = [
            p
            for p in prompts
            if ShortenToolsEpochStable(max_tokens=20_000)
            .compact(p)
            .report.details["boundary_moved"]
        ]
        assert moved, "the run should move the compaction edge under a 20,000-token ceiling"
        steps = []
        original = module.advance

        def counted(*args: Any) -> Any:
            steps.append(1)
            return original(*args)

        monkeypatch.setattr(module, "advance", counted)
        for history in moved[-3:]:
            steps.clear()
            ShortenToolsEpochStable(max_tokens=20_000).compact(history)
            assert len(steps) == len(call_points(history))

    def test_the_docstring_quotes_the_lines_that_decide(self) -> None:
        """Each line of code the module docstring quotes to answer its three questions stands in the
        module as quoted."""
        import inspect
        import re

        import langchain_promptstrat.strategies.epoch_stable as module

        doc = module.__doc__ or ""
        code = " ".join(inspect.getsource(module).split(doc, 1)[1].split())
        quoted = [
            " ".join(q.split())
            for q in re.findall(r"``((?:[^`]|`(?!`))+?)``", doc)
            if any(c in q for c in "=(<")
        ]
        assert len(quoted) >= 5
        missing = [q for q in quoted if q not in code and not q.endswith("(...)")]
        assert missing == []

    def test_a_replay_carried_for_another_history_is_replayed_again_not_trusted(self) -> None:
        """The rule's state is a value advanced by the new calls; one that describes an edited
        conversation is not resumed.

        A front end may carry the replay of the previous call (say in the graph state): a
        history edited behind it must get the edges a replay from the first message gives.
        """
        from replays import default_replay

        from langchain_promptstrat.strategies.epoch_machinery.costs import Costs
        from langchain_promptstrat.tokens import as_token_counter

        prompts = list(iter_agent_run(160, seed=1))
        costs, s = Costs(as_token_counter(None)), Settings()
        earlier, history = list(prompts[-40]), list(prompts[-1])
        carried = default_replay(None, earlier, 20_000, s, costs)
        assert (
            default_replay(carried, history, 20_000, s, costs).edges
            == default_replay(None, history, 20_000, s, costs).edges
        )
        edited = list(history)
        k = next(i for i, m in enumerate(edited) if isinstance(m, ToolMessage))
        edited[k] = edited[k].model_copy(update={"content": "rewritten " * 3_000})
        assert (
            default_replay(carried, edited, 20_000, s, costs).edges
            == default_replay(None, edited, 20_000, s, costs).edges
        )
        assert (
            default_replay(carried, edited, 20_000, s, costs).edges
            != default_replay(None, history, 20_000, s, costs).edges
        )
