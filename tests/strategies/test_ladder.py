"""Specification of CompactionLadder: the reference's one-shot ladder, and the low watermark that
holds it still.

Counts are real tiktoken counts (cl100k_base, which the package ships), so every target below
is derived from the counts of the messages it must keep.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from conversations import agent_conversations, ai_step, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from langchain_promptstrat import ConfigError, check_tool_pairs, prepare_prompt
from langchain_promptstrat.messages import (
    calls_named,
    index_tool_calls,
    is_real_user_message,
    mark_of,
)
from langchain_promptstrat.messages.history_memo import call_points
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.strategies.ladder_machinery.rungs import (
    NOTE_KIND,
    PLACEHOLDER_KIND,
    kind_of,
)
from langchain_promptstrat.strategies.sliding_window import SlidingWindow, note
from langchain_promptstrat.strategies.tool_results import ToolResults
from langchain_promptstrat.testing import ScriptedChatModel, build_agent_run
from langchain_promptstrat.tokens import TokenCounter

COUNT = TokenCounter("cl100k_base")
WORDS = (
    "cache token prompt agent tool output retry index schema query vector batch stream parser"
).split()


def text(seed: int, n_words: int) -> str:
    """Return ``n_words`` deterministic words (about one cl100k token each) varied by ``seed``."""
    return " ".join(
        f"{WORDS[(seed * 7 + i) % len(WORDS)]}{(seed + i) % 10}" for i in range(n_words)
    )


def turn(k: int) -> list:
    """Return an earlier turn of about 1,000 tokens: a question, five small tool steps, an
    answer."""
    msgs: list = [HumanMessage(f"Question {k}: {text(k, 20)}")]
    for j in range(5):
        call = 100 * k + j
        msgs += [
            ai_step([("search", {"q": text(call, 5)})], call, mirror="plain"),
            ToolMessage(text(call, 75), tool_call_id=f"call_{call}", name="search"),
        ]
    return msgs + [AIMessage(f"Answer {k}: {text(k, 30)}")]


def step(k: int) -> list:
    """Return one task step: a call and an output of about 150 tokens (below tool_results' 200)."""
    return [
        ai_step([("read_file", {"path": f"src/f{k}.py"})], 900 + k, mirror="plain"),
        ToolMessage(text(900 + k, 75), tool_call_id=f"call_{900 + k}", name="read_file"),
    ]


@pytest.fixture
def reference_run():
    """System message, the run's task, two earlier turns of ~1,000 tokens, the anchor, and a current
    turn of two steps."""
    system, old, older = SystemMessage("You are a careful agent."), turn(2), turn(1)
    task = HumanMessage("Task: keep the parser green.")
    anchor = HumanMessage("Current task: fix the failing parser test.")
    first, newest = step(1), step(2)
    for t in (older, old):
        assert 900 <= COUNT(t) <= 1100  # the premise of the reference example
    return {
        "system": system,
        "task": task,
        "older": older,
        "old": old,
        "anchor": anchor,
        "first": first,
        "newest": newest,
        "messages": [system, task, *older, *old, anchor, *first, *newest],
    }


def one_shot(max_tokens: int, handles: bool = True) -> CompactionLadder:
    """Return the reference ladder (no watermark) without Summary, its rungs' handles on or off."""
    settings = Settings.load(read_back_handles=handles)
    rungs = [ToolResults(settings), SlidingWindow(settings)]
    return CompactionLadder(
        rungs, max_tokens=max_tokens, low_tokens=max_tokens, token_counter=COUNT
    )


def window_note(dropped: int, calls: list[int], handles: bool):
    """Return the window's note for ``dropped`` messages holding ``calls``, named if handles."""
    return note(dropped, calls if handles else None)


HANDLES = pytest.mark.parametrize("handles", [True, False], ids=["handles on", "handles off"])
"""The reference's examples hold with handles on (the note names the calls that went) and off."""


class TestReferenceLadder:
    @HANDLES
    def test_room_for_task_and_one_turn_drops_exactly_the_oldest_turn_note_after_system(
        self, reference_run, handles
    ):
        """A target of system + note + newer turn + anchor + task keeps exactly that, the note right
        after the system message (naming the older turn's calls, 1-5, with handles on)."""
        r = reference_run
        kept = [
            r["system"],
            r["task"],
            window_note(len(r["older"]), [1, 5], handles),
            *r["old"],
            r["anchor"],
            *r["first"],
            *r["newest"],
        ]
        result = one_shot(COUNT(kept), handles).invoke(r["messages"])
        assert result == kept
        assert mark_kind_positions(result) == [2]

    @HANDLES
    def test_one_token_less_also_drops_the_newer_turn(self, reference_run, handles):
        """The note's own tokens are counted: one token under that target, both earlier turns go."""
        r = reference_run
        kept = [
            r["system"],
            r["task"],
            window_note(len(r["older"]), [1, 5], handles),
            *r["old"],
            r["anchor"],
            *r["first"],
            *r["newest"],
        ]
        result = one_shot(COUNT(kept) - 1, handles).invoke(r["messages"])
        both = window_note(len(r["older"]) + len(r["old"]), [1, 10], handles)
        assert result == [r["system"], r["task"], both, r["anchor"], *r["first"], *r["newest"]]

    @HANDLES
    def test_task_overrunning_target_drops_all_turns_and_oldest_step_note_after_anchor(
        self, reference_run, handles
    ):
        """When the task's steps alone overrun, every earlier turn and the oldest step go; the note
        follows the anchor."""
        r = reference_run
        gone = len(r["older"]) + len(r["old"]) + len(r["first"])
        expected = [
            r["system"],
            r["task"],
            r["anchor"],
            window_note(gone, [1, 11], handles),
            *r["newest"],
        ]
        assert (
            COUNT([r["system"], r["task"], r["anchor"], *r["first"], *r["newest"]])
            > COUNT(expected) + 10
        )
        result = one_shot(COUNT(expected) + 10, handles).compact(r["messages"])
        assert result.messages == expected
        assert result.report.details["met"] is True

    @HANDLES
    def test_target_zero_keeps_the_floor_and_says_the_target_was_not_met(
        self, reference_run, handles
    ):
        """Target 0 keeps system, anchor, note and the newest step, and the report says the target
        was missed."""
        r = reference_run
        result = one_shot(0, handles).compact(r["messages"])
        gone = len(r["older"]) + len(r["old"]) + len(r["first"])
        assert result.messages == [
            r["system"],
            r["task"],
            r["anchor"],
            window_note(gone, [1, 11], handles),
            *r["newest"],
        ]
        details = result.report.details
        assert details["met"] is False and details["tokens_after"] == COUNT(result.messages)
        assert [(s["strategy"], s["after"] < s["before"]) for s in details["rungs"]] == [
            ("sliding_window", True)
        ]

    @HANDLES
    @pytest.mark.parametrize("shape", ["note only", "system, note, anchor, newest step"])
    def test_a_conversation_that_is_already_only_a_note_is_left_alone(
        self, reference_run, shape, handles
    ):
        """When all the window could drop is its own note, no rung is taken and the messages come
        back equal."""
        r = reference_run
        earlier = window_note(17, [1, 8], handles)
        messages = (
            [earlier] if shape == "note only" else [r["system"], earlier, r["anchor"], *r["newest"]]
        )
        result = one_shot(0, handles).compact(messages)
        assert result.messages == messages
        assert result.report.details["rungs"] == [] and result.report.details["met"] is False

    @HANDLES
    def test_under_target_nothing_is_asked(self, reference_run, handles):
        """A prompt already under target comes back equal and no rung is even asked."""
        messages = reference_run["messages"]
        result = one_shot(COUNT(messages), handles).compact(messages)
        assert result.messages == messages and result.report.details["asked"] == []

    def test_rungs_run_cheapest_first_and_stop_once_under_target(self):
        """With large outputs, tool_results alone gets under target and the window is never
        asked."""
        run = build_agent_run(30, seed=1, user_turn_every=None, output_bytes=(2000, 4000))
        target = COUNT(run) // 2
        result = one_shot(target).compact(run)
        details = result.report.details
        assert [s["strategy"] for s in details["rungs"]] == ["tool_results"]
        assert [a["strategy"] for a in details["asked"]] == ["tool_results"]
        assert details["rungs"][0] == {
            "strategy": "tool_results",
            "before": COUNT(run),
            "after": COUNT(result.messages),
        }
        assert COUNT(result.messages) <= target

    def test_report_lists_each_rung_taken_with_before_and_after(self):
        """When both rungs are needed the report holds both, each after below its before,
        chained."""
        run = build_agent_run(30, seed=2, output_bytes=(2000, 4000))
        result = one_shot(3000).compact(run)
        rungs = result.report.details["rungs"]
        assert [s["strategy"] for s in rungs] == ["tool_results", "sliding_window"]
        assert rungs[0]["before"] == COUNT(run) and rungs[0]["after"] == rungs[1]["before"]
        assert rungs[1]["after"] == COUNT(result.messages) <= 3000
        (window_note,) = [m for m in result.messages if kind_of(m) == NOTE_KIND]
        assert (
            result.report.dropped == mark_of(window_note)["dropped"]
            and result.report.shortened >= 1
        )

    def test_strategy_list_spelling_gives_the_same_prompt_as_the_one_shot_ladder(self, monkeypatch):
        """prepare_prompt(msgs, "tool_results,sliding_window") applies each rung against the same
        target."""
        run = build_agent_run(30, seed=2, output_bytes=(2000, 4000))
        monkeypatch.setenv("PROMPTSTRAT_MAX_TOKENS", "3000")
        assert prepare_prompt(run, "tool_results,sliding_window") == one_shot(3000).invoke(run)

    def test_rungs_by_name_and_configuration_errors(self):
        """Rungs may be named; a non-rung, an empty list and low_tokens above max_tokens fail with
        ConfigError."""
        assert [
            r.strategy_name
            for r in CompactionLadder("tool_results, sliding_window", max_tokens=10).rungs
        ] == ["tool_results", "sliding_window"]
        with pytest.raises(ConfigError, match="cannot be a ladder rung"):
            CompactionLadder(["shorten_tools"], max_tokens=10)
        with pytest.raises(ConfigError, match="at least one rung"):
            CompactionLadder([], max_tokens=10)
        with pytest.raises(ConfigError, match="low_tokens=11 must be <= max_tokens=10"):
            CompactionLadder(["sliding_window"], max_tokens=10, low_tokens=11)
        with pytest.raises(ConfigError, match="summary needs a chat model"):
            CompactionLadder(["summary"], max_tokens=10)

    def test_the_summary_error_suggests_the_rung_order_the_readme_advises(self):
        """The README and the docs put the summary before the window (which would otherwise drop
        what it summarises); the error's example, the one a user copies, gives that order too."""
        root = Path(__file__).parents[2]
        readme = "\n".join(
            p.read_text() for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
        )

        def orders(text: str) -> list[list[str]]:
            """Return the rung classes of each rung list in ``text`` that holds both a Summary and a
            SlidingWindow."""
            lists = [
                re.findall(r"(\w+)\(", found)
                for found in re.findall(r"\[(?:\w+\([^()]*\),?\s*)+\]", text)
            ]
            return [rungs for rungs in lists if {"Summary", "SlidingWindow"} <= set(rungs)]

        with pytest.raises(ConfigError) as err:
            CompactionLadder(["summary"], max_tokens=10)
        advised, suggested = orders(readme), orders(str(err.value))
        assert advised and suggested, (advised, suggested)
        assert {tuple(rungs) for rungs in advised + suggested} == {
            ("ToolResults", "Summary", "SlidingWindow")
        }

    def test_low_tokens_defaults_to_the_ratio_setting(self, monkeypatch):
        """low_tokens is ladder_low_ratio x max_tokens: 0.7 by default, LADDER_LOW_RATIO from the
        environment."""
        monkeypatch.delenv("LADDER_LOW_RATIO", raising=False)
        assert CompactionLadder(["sliding_window"], max_tokens=1000).low_tokens == 700
        monkeypatch.setenv("LADDER_LOW_RATIO", "0.5")
        assert CompactionLadder(["sliding_window"], max_tokens=1000).low_tokens == 500
        monkeypatch.setenv("LADDER_LOW_RATIO", "1.5")
        with pytest.raises(ConfigError, match="LADDER_LOW_RATIO"):
            CompactionLadder(["sliding_window"], max_tokens=1000)


def mark_kind_positions(messages) -> list[int]:
    """Return the indices of the window's notes."""
    return [i for i, m in enumerate(messages) if kind_of(m) == NOTE_KIND]


def at_floor(ladder: CompactionLadder, messages) -> bool:
    """Return whether no rung of ``ladder`` can make ``messages`` any smaller, even aiming at 0
    tokens."""
    size = COUNT(messages)
    for rung in ladder.rungs:
        out = rung.rewrite(messages, max_tokens=0, counter=COUNT)
        if out is not None and COUNT(out) < size:
            return False
    return True


def newest_anchor(messages):
    """Return the newest real user message (a note is never an anchor)."""
    return next((m for m in reversed(messages) if is_real_user_message(m)), None)


class TestLadderProperties:
    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        conversation=agent_conversations(max_calls=30),
        share=st.floats(0, 1.1),
        handles=st.booleans(),
    )
    def test_under_target_or_at_floor_pairs_intact_input_untouched(
        self, conversation, share, handles
    ):
        """For any conversation and target the one-shot result is under target or no rung can
        shrink it; pairs and input intact; with handles off nothing names read_back."""
        target = int(COUNT(conversation) * share)
        ladder = one_shot(target, handles)
        before = snapshot(conversation)
        result = ladder.compact(conversation)
        out = result.messages
        assert snapshot(conversation) == before
        assert check_tool_pairs(out) == []
        assert COUNT(out) <= target or at_floor(ladder, out)
        assert result.report.details["met"] == (COUNT(out) <= target)
        assert len(mark_kind_positions(out)) <= 1
        assert out[: sum(isinstance(m, SystemMessage) for m in conversation)] == [
            m for m in conversation if isinstance(m, SystemMessage)
        ]
        assert newest_anchor(out) is newest_anchor(conversation)
        assert ladder.compact(conversation).messages == out
        assert handles or not names_read_back(out)


def names_read_back(messages) -> bool:
    """Return whether any field of any of ``messages`` names the read_back tool."""
    return "read_back" in json.dumps([m.model_dump() for m in messages], default=str)


def growing_prompts(ladder: CompactionLadder, conversation):
    """Yield (call point, result) for every model call of ``conversation`` replayed in order."""
    for point in call_points(conversation):
        yield point, ladder.compact(conversation[:point])


class TestWatermark:
    @settings(
        max_examples=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        conversation=agent_conversations(min_calls=5, max_calls=40),
        share=st.floats(0.05, 0.6),
        low_share=st.floats(0.3, 0.95),
        handles=st.booleans(),
    )
    def test_each_prompt_starts_with_the_previous_one_except_at_compaction_events(
        self, conversation, share, low_share, handles
    ):
        """Between events every prompt extends the previous one; events free at least max-low; max
        is a ceiling; with handles or without."""
        max_tokens = max(int(COUNT(conversation) * share), 1)
        low = int(max_tokens * low_share)
        settings = Settings.load(read_back_handles=handles)
        rungs = [ToolResults(settings), SlidingWindow(settings)]
        ladder = CompactionLadder(rungs, max_tokens=max_tokens, low_tokens=low, token_counter=COUNT)
        before = snapshot(conversation)
        previous, events, last_event = None, 0, None
        for point, result in growing_prompts(ladder, conversation):
            out, details = result.messages, result.report.details
            assert check_tool_pairs(out) == []
            assert COUNT(out) <= max_tokens or at_floor(ladder, out)
            if details["event"]:
                events += 1
                if last_event is not None and last_event[1] <= low:
                    assert (
                        COUNT(conversation[last_event[0] : point]) > max_tokens - low
                    )  # growth that crossed max again
                last_event = (point, COUNT(out))
            elif previous is not None:
                assert out[: len(previous)] == previous
            assert details["events"] == events
            previous = out
        assert snapshot(conversation) == before
        fresh = CompactionLadder(rungs, max_tokens=max_tokens, low_tokens=low, token_counter=COUNT)
        assert (
            fresh.compact(conversation).messages == previous
        )  # the memo of the growing replay changed nothing

    @settings(
        max_examples=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        conversation=agent_conversations(min_calls=5, max_calls=40),
        share=st.floats(0.05, 0.6),
        low_share=st.floats(0.3, 1.0),
    )
    def test_every_call_taken_away_is_named_for_read_back_by_its_number_in_the_history(
        self, conversation, share, low_share
    ):
        """At every model call of a growing run (later events see the notes and placeholders of
        earlier ones), each placeholder's handle is its own call's number in the stored
        conversation, and the window note's range holds exactly the calls that went: nothing the
        ladder takes away is out of read_back's reach, and no name points at a call still shown."""
        max_tokens = max(int(COUNT(conversation) * share), 1)
        low = int(max_tokens * low_share)
        rungs = ["tool_results", "sliding_window"]
        ladder = CompactionLadder(rungs, max_tokens=max_tokens, low_tokens=low, token_counter=COUNT)
        for point, result in growing_prompts(ladder, conversation):
            history, prompt = conversation[:point], result.messages
            numbers = {record.id: record.number + 1 for record in index_tool_calls(history).calls}
            shown = {m.tool_call_id for m in prompt if isinstance(m, ToolMessage)}  # or placeholder
            for m in prompt:
                if kind_of(m) == PLACEHOLDER_KIND:
                    assert calls_named(str(m.content)) == ({str(numbers[m.tool_call_id])}, [])
            notes = [str(m.content) for m in prompt if kind_of(m) == NOTE_KIND]
            ranged = {n for text in notes for a, b in calls_named(text)[1] for n in range(a, b + 1)}
            assert ranged == {n for call_id, n in numbers.items() if call_id not in shown}

    def test_event_compacts_down_to_the_low_watermark_and_holds_until_max_is_crossed(self):
        """On a long agent run each event lands at or under low_tokens and the prompt is append-only
        until the next."""
        run = list(build_agent_run(120, seed=3))
        ladder = CompactionLadder(
            [ToolResults(), SlidingWindow()],
            max_tokens=12_000,
            low_tokens=6_000,
            token_counter=COUNT,
        )
        previous, events = None, 0
        for _, result in growing_prompts(ladder, run):
            if result.report.details["event"]:
                events += 1
                assert COUNT(result.messages) <= 6_000
            elif previous is not None:
                assert result.messages[: len(previous)] == previous
            assert COUNT(result.messages) <= 12_000
            previous = result.messages
        # each event frees at least max - low = 6,000 tokens of growth, so events <= growth / 6,000
        assert 1 <= events <= COUNT(run) // 6_000

    def test_two_processes_compute_the_same_prompt_from_the_history_alone(self):
        """The watermark keeps no state: a fresh ladder (restart) equals one that saw every earlier
        call."""
        run = list(build_agent_run(80, seed=4))
        warm = CompactionLadder(
            [ToolResults(), SlidingWindow()], max_tokens=9_000, token_counter=COUNT
        )
        for _ in growing_prompts(warm, run[: len(run) // 2]):
            pass
        fresh = CompactionLadder(
            [ToolResults(), SlidingWindow()], max_tokens=9_000, token_counter=COUNT
        )
        assert warm.compact(run) == fresh.compact(run)
        assert warm.compact(run).report.details["events"] >= 2

    def test_recomputing_from_scratch_moves_the_boundary_where_the_watermark_holds_it(self):
        """Without the watermark more calls change the prompt's prefix than with it, on the same run
        and target."""
        run = list(build_agent_run(120, seed=3))

        def prefix_breaks(ladder) -> int:
            breaks, previous = 0, None
            for _, result in growing_prompts(ladder, run):
                if previous is not None and result.messages[: len(previous)] != previous:
                    breaks += 1
                previous = result.messages
            return breaks

        assert prefix_breaks(
            CompactionLadder(
                [ToolResults(), SlidingWindow()], max_tokens=12_000, token_counter=COUNT
            )
        ) * 3 < prefix_breaks(one_shot(12_000))

    def test_a_history_edited_in_the_middle_is_replayed_not_resumed(self):
        """The replay memo resumes only a history whose earlier messages are the very same
        objects."""
        run = list(build_agent_run(80, seed=4))
        warm = CompactionLadder(
            [ToolResults(), SlidingWindow()], max_tokens=9_000, token_counter=COUNT
        )
        warm.compact(run[:-4])
        # an output two thirds in: inside the prompt the ladder keeps, so the edit shows in it
        k = next(
            i for i, m in enumerate(run) if isinstance(m, ToolMessage) and i > 2 * len(run) // 3
        )
        edited = [
            *run[:k],
            run[k].model_copy(update={"content": "a different result " * 400}),
            *run[k + 1 :],
        ]
        fresh = CompactionLadder(
            [ToolResults(), SlidingWindow()], max_tokens=9_000, token_counter=COUNT
        )
        assert (
            warm.compact(edited).messages
            == fresh.compact(edited).messages
            != warm.compact(run).messages
        )

    def test_report_counts_are_the_counter_s_own_figures(self):
        """With the watermark, tokens_before and tokens_after are the counter's counts of the
        history and the prompt."""
        run = list(build_agent_run(80, seed=4))
        result = CompactionLadder(
            [ToolResults(), SlidingWindow()], max_tokens=9_000, token_counter=COUNT
        ).compact(run)
        details = result.report.details
        assert (details["tokens_before"], details["tokens_after"]) == (
            COUNT(run),
            COUNT(result.messages),
        )
        assert details["met"] is True and details["last_event"] in call_points(run)

    def test_any_message_list_counter_works(self):
        """A plain messages -> int callable (here count_tokens_approximately) sets the budget the
        same way."""
        run = list(build_agent_run(80, seed=4))
        ladder = CompactionLadder(
            [ToolResults(), SlidingWindow()],
            max_tokens=9_000,
            token_counter=count_tokens_approximately,
        )
        result = ladder.compact(run)
        assert (
            count_tokens_approximately(result.messages) <= 9_000
            and result.report.details["events"] >= 1
        )
        assert result.report.details["tokens_after"] == count_tokens_approximately(result.messages)
        assert check_tool_pairs(result.messages) == []

    def test_async_ladder_matches_the_sync_one(self):
        """ainvoke computes the same prompt as invoke."""
        run = list(build_agent_run(40, seed=5))
        ladder = CompactionLadder(
            [ToolResults(), SlidingWindow()], max_tokens=5_000, token_counter=COUNT
        )
        assert asyncio.run(ladder.ainvoke(run)) == ladder.invoke(run)

    def test_summary_in_the_ladder_is_asked_once_per_stretch_across_replays(self):
        """A Summary rung placed before the window summarises, and replays on later calls reuse its
        answers."""
        from langchain_promptstrat.strategies.summary import Summary

        model = ScriptedChatModel([f"summary {i}" for i in range(50)])
        ladder = CompactionLadder(
            [ToolResults(), Summary(model), SlidingWindow()], max_tokens=6_000, token_counter=COUNT
        )
        run = list(build_agent_run(60, seed=6, user_turn_every=(10, 15)))
        for _ in growing_prompts(ladder, run):
            pass
        asked = model.cursor
        fresh = CompactionLadder(
            [ToolResults(), ladder.rungs[1], SlidingWindow()], max_tokens=6_000, token_counter=COUNT
        )
        result = fresh.compact(run)
        assert asked >= 1 and model.cursor == asked
        assert any(kind_of(m) == "summary" for m in result.messages)
        assert check_tool_pairs(result.messages) == []
