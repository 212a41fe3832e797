"""Specification of shorten_tools_epoch and shorten_tools_epoch_increment.

Forward positions (1 = oldest output) are used throughout: with one call per step, call
``k`` of :func:`run_of` is at forward position ``k + 1``, and the reference's positions
(1 = newest) are ``T - forward + 1``. The regions then read: forward ``> pinned - full`` is
whole, forward ``> pinned - full - window`` is shortened, the rest is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conversations import agent_conversations, ai_step, as_tool, known, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
    messages_to_dict,
)

from langchain_promptstrat import Settings, ShortenTools, check_tool_pairs, get_strategy
from langchain_promptstrat.messages import (
    handle_text,
    index_tool_calls,
    is_real_user_message,
    mark_of,
    split_turns,
)
from langchain_promptstrat.messages.history_memo import clear_caches
from langchain_promptstrat.report import Compacted
from langchain_promptstrat.strategies.epoch import (
    ShortenToolsEpoch,
    ShortenToolsEpochIncrement,
    shorten_tools_epoch,
    shorten_tools_epoch_increment,
)
from langchain_promptstrat.strategies.epoch_machinery.frozen_region import (
    compacted_window,
    epoch_boundary,
    increment_schedule,
    repeat_positions,
)
from langchain_promptstrat.strategies.epoch_machinery.notice import (
    is_compaction_notice,
    notice_index,
)
from langchain_promptstrat.strategies.sliding_window import layout
from langchain_promptstrat.strategy import PromptStrategy
from langchain_promptstrat.testing import iter_agent_run
from langchain_promptstrat.truncation import shorten_string

STRATEGIES = {
    "shorten_tools_epoch": shorten_tools_epoch,
    "shorten_tools_epoch_increment": shorten_tools_epoch_increment,
}

WORKED = Settings(
    epoch_tool_call_threshold=100,
    epoch_full_tool_calls=10,
    epoch_compacted_tool_calls=40,
    epoch_size=10,
)
"""The reference's worked example."""

SMALL = Settings(
    epoch_tool_call_threshold=10,
    epoch_full_tool_calls=2,
    epoch_compacted_tool_calls=4,
    epoch_size=5,
)
"""Small windows: epochs cover T = 11..15, 16..20, ...; in the first, forward 9.. are whole, 5..8
shortened, 1..4 dropped."""

ARG = "a" * 600
"""A string argument longer than the 200 a shortened call keeps."""


def output_of(k: int) -> str:
    """Return the (unique, 1,000+ character) output of call ``k``: longer than the 400 a shortened
    output keeps."""
    return f"output of call {k}: " + "o" * 1000


def spec(k: int) -> tuple[str, dict[str, Any]]:
    """Return the (unique) name and arguments of call ``k``."""
    return ("search", {"query": f"q{k} {ARG}", "page": k})


def run_of(
    n: int,
    *,
    width: int = 1,
    repeat_of: dict[int, int] | None = None,
    text: str = "",
    mirror: str = "plain",
) -> list[BaseMessage]:
    """Return a system message, a task, then ``n`` calls in steps of ``width``; call ``k`` asks what
    call ``repeat_of[k]`` asked."""
    repeat_of = repeat_of or {}
    msgs: list[BaseMessage] = [SystemMessage("sys"), HumanMessage("task")]
    for first in range(0, n, width):
        ks = range(first, min(first + width, n))
        msgs.append(
            ai_step([spec(repeat_of.get(k, k)) for k in ks], first, mirror=mirror, text=text)
        )
        msgs.extend(ToolMessage(output_of(k), tool_call_id=f"call_{k}") for k in ks)
    return msgs


def fates(result: list[BaseMessage]) -> dict[int, str]:
    """Return ``{call number: "whole" | "short"}`` read from a result; dropped calls are absent.

    Asserts that the call and its output were given the same fate.
    """
    out: dict[int, str] = {}
    index = index_tool_calls(result)
    for rec in index.calls:
        k = int(rec.id.split("_")[1])
        call = "whole" if ARG in rec.args["query"] else "short"
        output = "whole" if result[rec.output_index or 0].content == output_of(k) else "short"
        assert call == output, f"call {k}: call {call}, output {output}"
        out[k] = call
    return out


def by_region(result: list[BaseMessage], n: int) -> tuple[list[int], list[int], list[int]]:
    """Return the forward positions (call number + 1) that are whole, shortened and dropped."""
    f = fates(result)
    whole = [k + 1 for k in range(n) if f.get(k) == "whole"]
    short = [k + 1 for k in range(n) if f.get(k) == "short"]
    dropped = [k + 1 for k in range(n) if k not in f]
    return whole, short, dropped


def notices(messages: list[BaseMessage]) -> list[int]:
    return [i for i, m in enumerate(messages) if is_compaction_notice(m)]


def serialise(message: BaseMessage) -> str:
    """Return the bytes a provider integration works from: every field but LangChain's local
    ``id``."""
    data = message_to_dict(message)
    data["data"].pop("id", None)
    return json.dumps(data, sort_keys=True, default=str)


class Serialiser:
    """Serialises each message object once (outputs share most messages from one call to the
    next)."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[BaseMessage, str]] = {}

    def __call__(self, messages: list[BaseMessage]) -> list[str]:
        out = []
        for m in messages:
            hit = self.seen.get(id(m))
            if hit is None or hit[0] is not m:
                hit = (m, serialise(m))
                self.seen[id(m)] = hit
            out.append(hit[1])
        return out


# --------------------------------------------------------------------------- the boundary


class TestEpochBoundary:
    def test_reference_worked_example(self) -> None:
        """Threshold 100, epoch 10: T=100 is untouched, 101..110 pin 100, 111 pins 110."""
        assert epoch_boundary(100, WORKED) is None
        # pinned = 100 + ((T - 100 - 1) // 10) * 10; new_calls = T - pinned
        expected = {101: (100, 1), 105: (100, 5), 110: (100, 10), 111: (110, 1)}
        for total, (pinned, new) in expected.items():
            state = known(epoch_boundary(total, WORKED))
            assert (state.pinned_total, state.new_calls) == (pinned, new), total

    def test_regions_follow_the_reference_formula(self) -> None:
        """keep_full = new_calls + full and truncate_to = keep_full + compacted (T=105: 15 and
        55)."""
        state = known(epoch_boundary(105, WORKED))
        assert (state.keep_full, state.truncate_to) == (5 + 10, 5 + 10 + 40)
        assert (state.frozen_edge, state.drop_edge) == (100 - 10, 100 - 10 - 40)

    def test_boundary_stays_put_until_the_epoch_is_full(self) -> None:
        """Calls 101..110 share pinned_total 100 and the same frozen edges, so the compacted prefix
        never changes."""
        states = [known(epoch_boundary(t, WORKED)) for t in range(101, 111)]
        assert {(s.pinned_total, s.frozen_edge, s.drop_edge, s.epoch_index) for s in states} == {
            (100, 90, 50, 0)
        }

    def test_defaults_are_the_references(self) -> None:
        """Defaults threshold 50, full 20, compacted 80, epoch 20: T=51..70 pin 50, T=71 pins 70."""
        s = Settings()
        assert epoch_boundary(50, s) is None
        assert (
            known(epoch_boundary(51, s)).pinned_total
            == known(epoch_boundary(70, s)).pinned_total
            == 50
        )
        assert known(epoch_boundary(71, s)).pinned_total == 70
        assert (
            known(epoch_boundary(51, s)).full,
            known(epoch_boundary(51, s)).compacted_window,
        ) == (20, 80)

    @pytest.mark.parametrize(
        "overrides",
        [
            {"epoch_full_tool_calls": 0, "epoch_compacted_tool_calls": 0},
            {"epoch_size": 0},
        ],
    )
    def test_nothing_changes_when_disabled(self, overrides: dict[str, Any]) -> None:
        """Both windows at 0, or an epoch size of 0, switch compaction off at any length."""
        assert epoch_boundary(10_000, Settings(**overrides)) is None
        assert increment_schedule(10_000, [], Settings(**overrides)) is None


class TestIncrementSchedule:
    def epochs(
        self, repeats: list[int], settings: Settings = Settings(), until: int = 900
    ) -> list[tuple[int, int, int]]:
        """Return (pinned_total, epoch_size, compacted_window) of each epoch met while T grows to
        ``until``."""
        seen: dict[int, tuple[int, int, int]] = {}
        for total in range(settings.epoch_tool_call_threshold + 1, until):
            s = known(increment_schedule(total, repeats, settings))
            seen[s.epoch_index] = (s.pinned_total, s.epoch_size, s.compacted_window)
        return [seen[i] for i in sorted(seen)]

    def test_epoch_sizes_grow_every_three_epochs_up_to_sixty(self) -> None:
        """Sizes are min(20 + (i // 3) * 10, 60): 20, 20, 20, 30, 30, 30, 40, ... 60, and stay at
        60."""
        epochs = self.epochs([])
        sizes = [size for _, size, _ in epochs]
        assert sizes[:16] == [20, 20, 20, 30, 30, 30, 40, 40, 40, 50, 50, 50, 60, 60, 60, 60]
        assert set(sizes[12:-1]) == {60}

    def test_compacted_window_grows_from_80_to_160(self) -> None:
        """The window is 80 + 2 * (size - 20), capped at 160: 80, 100, 120, 140, 160."""
        epochs = self.epochs([])
        assert [window for _, _, window in epochs[:15:3]] == [80, 100, 120, 140, 160]
        assert max(window for _, _, window in epochs) == 160

    def test_each_epoch_starts_where_the_previous_ended(self) -> None:
        """pinned_total advances by each epoch's size, from the threshold: 50, 70, 90, 110, 140,
        ..."""
        epochs = self.epochs([])
        assert [p for p, _, _ in epochs[:6]] == [50, 70, 90, 110, 140, 170]
        assert all(
            p + size == nxt for (p, size, _), (nxt, _, _) in zip(epochs, epochs[1:], strict=False)
        )

    def test_compacted_window_formula(self) -> None:
        """compacted_window(size) = min(80 + round(2.0 * (size - 20)), 160) with the defaults."""
        assert [compacted_window(size, Settings()) for size in (20, 30, 40, 50, 60, 70)] == [
            80,
            100,
            120,
            140,
            160,
            160,
        ]

    def test_rounding_is_half_away_from_zero(self) -> None:
        """With ratio 0.5 an epoch 5 longer grows the window by round(2.5) = 3, as the reference
        rounds."""
        assert compacted_window(25, Settings(epoch_increment_compacted_growth_ratio=0.5)) == 80 + 3

    def test_repeat_extends_the_current_epoch_once_and_carries_into_the_next(self) -> None:
        """Repeats at 55 and 60 make epoch 0 30 long (once, not twice); every later epoch is 10
        longer."""
        plain = self.epochs([])
        repeated = self.epochs([55, 60])
        assert repeated[0] == (50, 20 + 10, 80 + 2 * 10)
        # epoch i nominal: 20 + (i // 3) * 10 + 1 * 10 (one completed epoch held a repeat)
        assert [size for _, size, _ in repeated[1:7]] == [30, 30, 40, 40, 40, 50]
        assert [size for _, size, _ in plain[1:7]] == [20, 20, 30, 30, 30, 40]
        assert [p for p, _, _ in repeated[:4]] == [50, 80, 110, 140]

    def test_a_repeat_counts_once_it_has_happened(self) -> None:
        """At T=64 a repeat at 65 is in the future: epoch 0 is 20 long; at T=65 it is 30 long,
        window 100."""
        assert (
            known(increment_schedule(64, [65], Settings())).epoch_size,
            known(increment_schedule(64, [65], Settings())).compacted_window,
        ) == (20, 80)
        assert (
            known(increment_schedule(65, [65], Settings())).epoch_size,
            known(increment_schedule(65, [65], Settings())).compacted_window,
        ) == (30, 100)

    def test_a_repeat_past_the_nominal_end_never_moves_a_boundary_already_seen(self) -> None:
        """A repeat at 75 belongs to epoch 1 (70, 90]: epoch 0 still ends at 70, epoch 1 grows to
        30."""
        epochs = self.epochs([75])
        assert epochs[0] == (50, 20, 80)
        assert epochs[1] == (70, 30, 100)

    def test_no_extension_beyond_max_size(self) -> None:
        """With max_size equal to the initial size, a repeat changes neither the size nor the
        window."""
        capped = Settings(epoch_increment_max_size=20)
        assert self.epochs([55], capped, until=200) == self.epochs([], capped, until=200)
        assert {size for _, size, _ in self.epochs([55], capped, until=200)} == {20}

    def test_periodic_growth_off_when_epochs_per_increase_is_zero(self) -> None:
        """epochs_per_increase 0 keeps every epoch at the initial size when nothing repeats."""
        assert {
            size
            for _, size, _ in self.epochs(
                [], Settings(epoch_increment_epochs_per_increase=0), until=400
            )
        } == {20}


# --------------------------------------------------------------------------- repeats


class TestRepeats:
    def test_key_ignores_the_call_id_and_the_order_of_argument_keys(self) -> None:
        """Same tool and arguments in another key order, under a new id, is a repeat of the first
        call."""
        msgs = [
            HumanMessage("task"),
            ai_step([("grep", {"a": 1, "b": {"x": 1, "y": 2}})], 0, mirror="plain"),
            ToolMessage("r", tool_call_id="call_0"),
            ai_step([("grep", {"b": {"y": 2, "x": 1}, "a": 1})], 1, mirror="plain"),
            ToolMessage("r", tool_call_id="call_1"),
        ]
        assert repeat_positions(index_tool_calls(msgs).completed) == [2]

    def test_repeat_positions_are_forward_positions_of_every_later_occurrence(self) -> None:
        """Call 3 and call 6 repeat call 1: their forward positions 4 and 7 are the repeat
        positions."""
        calls = index_tool_calls(run_of(8, repeat_of={3: 1, 6: 1})).completed
        assert repeat_positions(calls) == [4, 7]

    def test_only_the_newest_occurrence_is_protected(self) -> None:
        """Of calls 1, 3 and 6 (one key), all frozen, only call 6 stays whole; a key seen once
        protects nothing."""
        result = shorten_tools_epoch(run_of(12, repeat_of={3: 1, 6: 1}), settings=SMALL)
        whole, short, dropped = by_region(result.messages, 12)
        assert result.report.protected == 1
        assert 7 in whole and {2, 4} <= set(dropped)


class TestProtection:
    def test_protected_call_in_the_shortened_region_stays_whole(self) -> None:
        """Call 6 (forward 7, shortened region 5..8) repeats call 0, so it stays whole; call 0 is
        dropped."""
        result = shorten_tools_epoch(run_of(12, repeat_of={6: 0}), settings=SMALL).messages
        whole, short, dropped = by_region(result, 12)
        assert 7 in whole and 7 not in short
        assert short == [5, 6, 8] and dropped == [1, 2, 3, 4]

    def test_protected_call_in_the_dropped_region_comes_back_whole(self) -> None:
        """Call 2 (forward 3, dropped region 1..4) repeats call 1, so it is kept whole while call 1
        is dropped."""
        result = shorten_tools_epoch(run_of(12, repeat_of={2: 1}), settings=SMALL).messages
        whole, _, dropped = by_region(result, 12)
        assert 3 in whole and dropped == [1, 2, 4]

    def test_third_occurrence_moves_protection_off_the_second(self) -> None:
        """When call 13 repeats calls 0 and 6, call 6 (forward 7) goes back to its region:
        shortened."""
        before = shorten_tools_epoch(run_of(13, repeat_of={6: 0}), settings=SMALL)
        after = shorten_tools_epoch(run_of(14, repeat_of={6: 0, 13: 0}), settings=SMALL)
        assert fates(before.messages)[6] == "whole" and fates(after.messages)[6] == "short"
        assert after.report.details["prefix_change"] == "repeat"
        assert after.report.details["boundary_moved"] is False
        assert (before.report.protected, after.report.protected) == (
            1,
            0,
        )  # call 13 is whole anyway


# --------------------------------------------------------------------------- regions and pairs


class TestRegions:
    @pytest.mark.parametrize("total, pinned", [(105, 100), (110, 100), (111, 110)])
    def test_worked_example_regions_by_forward_position(self, total: int, pinned: int) -> None:
        """Forward > pinned - 10 whole, pinned - 50 < forward <= pinned - 10 shortened, older
        dropped."""
        whole, short, dropped = by_region(
            shorten_tools_epoch(run_of(total), settings=WORKED).messages, total
        )
        assert whole == list(range(pinned - 10 + 1, total + 1))
        assert short == list(range(pinned - 50 + 1, pinned - 10 + 1))
        assert dropped == list(range(1, pinned - 50 + 1))

    def test_at_the_threshold_nothing_changes(self) -> None:
        """T = threshold returns the same messages and no notice."""
        msgs = run_of(100)
        result = shorten_tools_epoch(msgs, settings=WORKED)
        assert result.messages == msgs and all(
            a is b for a, b in zip(result.messages, msgs, strict=False)
        )
        assert result.report.details["pinned_total"] is None and not result.report.changed

    def test_shortened_pair_uses_sizes_200_and_400(self) -> None:
        """A shortened call carries shorten_string of its argument to 200 and of its output within
        400 (the output's handle takes its room), each with its handle."""
        result = shorten_tools_epoch(run_of(12), settings=SMALL).messages
        index = index_tool_calls(result)
        rec = next(r for r in index.calls if r.id == "call_5")
        output_handle, arguments_handle = handle_text(6), handle_text(6, arguments=True)
        assert (
            rec.args["query"] == shorten_string(f"q5 {ARG}", 200) + " " + arguments_handle
            and rec.args["page"] == 5
        )
        assert (
            result[rec.output_index or 0].content
            == shorten_string(output_of(5), 400 - len(output_handle) - 1) + "\n" + output_handle
        )

    def test_parallel_calls_have_their_own_positions_and_fates(self) -> None:
        """Steps of 3 calls straddle the edges: call 3 is dropped while 4 and 5 of its step are
        shortened."""
        result = shorten_tools_epoch(run_of(12, width=3), settings=SMALL).messages
        whole, short, dropped = by_region(result, 12)
        assert (whole, short, dropped) == ([9, 10, 11, 12], [5, 6, 7, 8], [1, 2, 3, 4])
        step = next(
            m
            for m in result
            if isinstance(m, AIMessage) and "call_4" in {c["id"] for c in m.tool_calls}
        )
        assert [c["id"] for c in step.tool_calls] == ["call_4", "call_5"]
        assert not check_tool_pairs(result)

    @pytest.mark.parametrize("mirror", ["openai", "anthropic", "both"])
    def test_every_place_a_call_is_recorded_is_edited(self, mirror: str) -> None:
        """Dropped calls vanish from tool_calls, OpenAI kwargs and tool_use blocks alike; pairs stay
        valid."""
        result = shorten_tools_epoch(run_of(12, width=3, mirror=mirror), settings=SMALL).messages
        assert not check_tool_pairs(result)
        assert by_region(result, 12)[2] == [1, 2, 3, 4]

    def test_pending_calls_at_the_end_are_left_alone(self) -> None:
        """A last AIMessage whose calls have no output yet is kept as it is and changes no
        decision."""
        pending = ai_step([spec(99)], 99, mirror="plain")
        done = shorten_tools_epoch(run_of(12), settings=SMALL)
        result = shorten_tools_epoch(run_of(12) + [pending], settings=SMALL)
        assert result.messages[-1] is pending
        assert fates(result.messages[:-1]) == fates(done.messages)
        assert result.report.details["prefix_change"] is None

    def test_an_assistant_message_left_empty_disappears(self) -> None:
        """A step whose calls are all dropped and that has no text leaves no AIMessage behind."""
        result = shorten_tools_epoch(run_of(12), settings=SMALL).messages
        assert sum(isinstance(m, AIMessage) for m in result) == 12 - 4

    def test_an_assistant_message_with_text_keeps_its_text(self) -> None:
        """A dropped step that also said something keeps its text, without calls."""
        result = shorten_tools_epoch(run_of(12, text="Looking."), settings=SMALL).messages
        ais = [m for m in result if isinstance(m, AIMessage)]
        assert (
            len(ais) == 12
            and [m.content for m in ais[:4]] == ["Looking."] * 4
            and not ais[0].tool_calls
        )


# --------------------------------------------------------------------------- the notice


class TestNotice:
    def test_notice_is_marked_and_never_a_real_user_message(self) -> None:
        """The notice is recognisable, is no real user message and starts no turn."""
        result = shorten_tools_epoch(run_of(12), settings=SMALL).messages
        (i,) = notices(result)
        notice = result[i]
        assert (
            isinstance(notice, HumanMessage)
            and (mark_of(notice) or {}).get("kind") == "compaction_notice"
        )
        assert not is_real_user_message(notice)
        assert [t.start for t in split_turns(result)] == [1]

    def test_notice_says_what_was_shortened_and_removed_and_what_not_to_do(self) -> None:
        """With 4 shortened and 4 dropped, the notice gives both counts, says tools did run, and not
        to repeat."""
        result = shorten_tools_epoch(run_of(12), settings=SMALL)
        text = result.messages[notices(result.messages)[0]].content
        assert (result.report.shortened, result.report.dropped) == (4, 4)
        assert "4 older tool calls and their results were shortened" in text
        assert "4 older tool calls and their results were removed" in text
        assert "does not mean the tool never ran" in text and "Do not repeat a call" in text

    def test_notice_follows_the_first_kept_step(self) -> None:
        """Calls 0..3 are dropped, so the notice comes right after step 4's output, before step
        5."""
        result = shorten_tools_epoch(run_of(12), settings=SMALL).messages
        i = notices(result)[0]
        assert as_tool(result[i - 1]).tool_call_id == "call_4"
        assert isinstance(result[i + 1], AIMessage)

    def test_notice_never_separates_a_call_from_its_outputs(self) -> None:
        """With parallel steps, the notice comes after the last output of the first kept step."""
        result = shorten_tools_epoch(run_of(15, width=3), settings=SMALL).messages
        i = notices(result)[0]
        assert [as_tool(m).tool_call_id for m in result[i - 2 : i]] == ["call_4", "call_5"]
        assert not check_tool_pairs(result)

    def test_notice_comes_before_a_user_message_that_follows_the_step(self) -> None:
        """A real user message after the first kept step stays after the notice."""
        msgs = run_of(12)
        j = next(
            i
            for i, m in enumerate(msgs)
            if isinstance(m, ToolMessage) and m.tool_call_id == "call_4"
        )
        msgs.insert(j + 1, HumanMessage("and also"))
        result = shorten_tools_epoch(msgs, settings=SMALL).messages
        i = notices(result)[0]
        assert result[i + 1].content == "and also" and not check_tool_pairs(result)

    def test_fallback_placement_without_a_tool_step(self) -> None:
        """With no step that calls a tool, the place is after the system block and the first user
        message."""
        assert (
            notice_index(
                [SystemMessage("s"), SystemMessage("t"), HumanMessage("u"), AIMessage("a")]
            )
            == 3
        )
        assert notice_index([AIMessage("a")]) == 0

    def test_no_notice_when_nothing_is_shortened_or_dropped(self) -> None:
        """Past the threshold, with full 10 at T=11 no call is old enough to freeze (edge 10 - 10 =
        0): no notice."""
        s = Settings(
            epoch_tool_call_threshold=10, epoch_full_tool_calls=10, epoch_compacted_tool_calls=5
        )
        result = shorten_tools_epoch(run_of(11), settings=s)
        assert not notices(result.messages) and result.report.details["notice"] is False

    def test_notice_text_is_identical_for_every_call_of_an_epoch(self) -> None:
        """T = 11..15 share one notice text; T = 16 (the next epoch) has another."""
        texts = {}
        for total in range(11, 17):
            result = shorten_tools_epoch(run_of(total), settings=SMALL).messages
            texts[total] = serialise(result[notices(result)[0]])
        assert len({texts[t] for t in range(11, 16)}) == 1 and texts[16] != texts[15]

    def test_a_stale_notice_in_the_input_is_replaced(self) -> None:
        """Compacting an output again keeps exactly one notice: the old one is not carried over."""
        once = shorten_tools_epoch(run_of(12), settings=SMALL).messages  # 8 outputs left
        again = shorten_tools_epoch(
            once + run_of(17)[-10:], settings=SMALL
        )  # + calls 12..16: T = 13
        assert again.report.details["pinned_total"] == 10 and len(notices(again.messages)) == 1

    def test_sliding_window_does_not_anchor_on_the_notice(self) -> None:
        """The sliding window's anchor stays the task message, though the notice is a newer
        user-role message."""
        result = shorten_tools_epoch(run_of(12), settings=SMALL).messages
        assert notices(result)[0] > 1 and layout(result, keep_steps=1).anchor == 1

    def test_shorten_tools_does_not_count_the_notice_as_a_user_turn(self) -> None:
        """shorten_tools protecting the current turn treats the output the same with or without the
        notice."""
        result = shorten_tools_epoch(run_of(14), settings=SMALL).messages
        strategy = ShortenTools(
            protect_current_turn=True, full_tool_outputs=1, max_tool_calls=6, max_tool_chars=0
        )
        with_notice = [m for m in strategy.invoke(result) if not is_compaction_notice(m)]
        without = strategy.invoke([m for m in result if not is_compaction_notice(m)])
        assert with_notice == without


# --------------------------------------------------------------------------- reports


class TestReport:
    def test_report_carries_the_epoch_figures(self) -> None:
        """At T=105 of the worked example: epoch 0, pinned 100, 5 new calls, size 10, window 40."""
        d = shorten_tools_epoch(run_of(105), settings=WORKED).report.as_dict()
        expected = {
            "epoch_index": 0,
            "pinned_total": 100,
            "new_calls": 5,
            "epoch_size": 10,
            "compacted_window": 40,
            "keep_full": 5 + 10,
            "truncate_to": 5 + 10 + 40,
        }
        assert {k: d[k] for k in expected} == expected
        # shortened: forward 100-10-40+1 .. 100-10 = 51..90; dropped: forward 1..50
        assert (d["shortened"], d["dropped"], d["repeats"], d["protected"]) == (40, 50, 0, 0)

    def test_boundary_moved_compares_with_the_previous_model_call(self) -> None:
        """At T=110 the boundary holds (previous call T=109); at T=111 it moved (previous call
        T=110)."""
        assert (
            shorten_tools_epoch(run_of(110), settings=WORKED).report.details["boundary_moved"]
            is False
        )
        moved = shorten_tools_epoch(run_of(111), settings=WORKED).report.details
        assert moved["boundary_moved"] is True and moved["prefix_change"] == "boundary"

    def test_first_compaction_is_a_boundary_move(self) -> None:
        """Going from T=100 (nothing compacted) to T=101 moves the boundary from none to 100."""
        d = shorten_tools_epoch(run_of(101), settings=WORKED).report.details
        assert d["boundary_moved"] is True and d["prefix_change"] == "boundary"

    def test_a_user_message_after_the_answer_changes_nothing(self) -> None:
        """A final answer and a new user message add no output: the previous call saw the same T."""
        msgs = run_of(111) + [AIMessage("Done."), HumanMessage("thanks, now this")]
        d = shorten_tools_epoch(msgs, settings=WORKED).report.details
        assert d["boundary_moved"] is False and d["prefix_change"] is None

    def test_repeat_that_widens_the_window_is_reported_as_a_repeat(self) -> None:
        """Call 12 repeating call 0 widens epoch 0's window, so dropped calls come back
        shortened."""
        s = Settings(
            epoch_tool_call_threshold=10,
            epoch_full_tool_calls=2,
            epoch_compacted_tool_calls=3,
            epoch_size=5,
            epoch_increment_repeat_increase=5,
            epoch_increment_compacted_growth_ratio=1.0,
            epoch_increment_epochs_per_increase=0,
        )
        before = shorten_tools_epoch_increment(run_of(12), settings=s)
        after = shorten_tools_epoch_increment(run_of(13, repeat_of={12: 0}), settings=s)
        # window 3 + round((10 - 5) * 1.0) = 8: drop edge 10 - 2 - 8 = 0, nothing dropped any more
        assert by_region(before.messages, 12)[2] == [1, 2, 3, 4, 5]
        assert by_region(after.messages, 13)[2] == []
        d = after.report.details
        assert (
            d["epoch_size"],
            d["compacted_window"],
            d["prefix_change"],
            d["boundary_moved"],
        ) == (10, 8, "repeat", False)

    def test_the_strategy_keeps_no_memory_between_conversations(self) -> None:
        """Interleaving two conversations gives each the reports it gets alone."""
        strategy = ShortenToolsEpochIncrement(SMALL)
        a = [run_of(n) for n in range(9, 25)]
        b = [run_of(n, width=2, text="hm") for n in range(9, 25)]
        alone = [strategy.compact(m).report for m in a]
        mixed = [strategy.compact(m).report for pair in zip(a, b, strict=False) for m in pair][::2]
        assert mixed == alone


# --------------------------------------------------------------------------- cache stability


@st.composite
def epoch_settings(draw: st.DrawFn, *, full_below_threshold: bool = False) -> Settings:
    """Draw small thresholds so a short conversation crosses many epochs."""
    threshold = draw(st.integers(3, 12))
    return Settings(
        epoch_tool_call_threshold=threshold,
        epoch_full_tool_calls=draw(st.integers(0, threshold - 1 if full_below_threshold else 6)),
        epoch_compacted_tool_calls=draw(st.integers(0, 8)),
        epoch_size=draw(st.integers(1, 5)),
        epoch_increment_epochs_per_increase=draw(st.integers(0, 3)),
        epoch_increment_size_increase=draw(st.integers(0, 3)),
        epoch_increment_repeat_increase=draw(st.integers(0, 4)),
        epoch_increment_max_size=draw(st.integers(1, 12)),
        epoch_increment_compacted_growth_ratio=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])),
        epoch_increment_max_compacted_tool_calls=draw(st.integers(0, 16)),
    )


@st.composite
def growing_conversation(draw: st.DrawFn, *, repeats: bool) -> list[list[BaseMessage]]:
    """Draw the prompts of an agent loop: each is the previous plus a step (1-3 calls) or an answer
    and a user message.

    Outputs are longer than 400 characters, so every change of fate changes bytes.
    """
    msgs: list[BaseMessage] = [SystemMessage("sys"), HumanMessage("task")]
    prompts = [list(msgs)]
    made: list[tuple[str, dict[str, Any]]] = []
    k = 0
    for _ in range(draw(st.integers(8, 36))):
        if draw(st.integers(0, 7)) == 0:
            msgs += [AIMessage(f"Answer after {k} calls."), HumanMessage(f"Now look at {k}.")]
        else:
            specs = []
            for j in range(draw(st.integers(1, 3))):
                if repeats and made and draw(st.integers(0, 4)) == 0:
                    specs.append(draw(st.sampled_from(made)))
                else:
                    specs.append(
                        (
                            "search",
                            {
                                "query": f"q{k + j} " + "a" * draw(st.sampled_from([5, 300])),
                                "page": k + j,
                            },
                        )
                    )
                    made.append(specs[-1])
            mirror = draw(st.sampled_from(["plain", "openai", "anthropic", "both"]))
            msgs.append(
                ai_step(specs, k, mirror=mirror, text=draw(st.sampled_from(["", "Checking."])))
            )
            msgs += [
                ToolMessage(output_of(k + j), tool_call_id=f"call_{k + j}")
                for j in range(len(specs))
            ]
            k += len(specs)
        prompts.append(list(msgs))
    return prompts


def replay(
    strategy: Callable[..., Compacted], prompts: list[list[BaseMessage]], settings: Settings
) -> list[tuple[bool, dict[str, Any], list[BaseMessage]]]:
    """Run the strategy on each prompt; return (output starts with the previous output, report
    details, output)."""
    ser = Serialiser()
    out, previous = [], None
    for prompt in prompts:
        result = strategy(prompt, settings=settings)
        current = ser(result.messages)
        kept = previous is None or current[: len(previous)] == previous
        out.append((kept, dict(result.report.details), result.messages))
        previous = current
    return out


PROPERTY = settings(
    max_examples=75,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
class TestCacheStability:
    @PROPERTY
    @given(prompts=growing_conversation(repeats=True), s=epoch_settings())
    def test_every_prefix_break_is_announced_and_every_announcement_is_a_break(
        self, name: str, prompts: list[list[BaseMessage]], s: Settings
    ) -> None:
        """Each output starts with the previous one, byte for byte, exactly when the report names no
        prefix change."""
        final = snapshot(prompts[-1])
        runs = replay(STRATEGIES[name], prompts, s)
        for (_, before, _), (kept, d, out) in zip(runs, runs[1:], strict=False):
            assert kept == (d["prefix_change"] is None), d
            if d["prefix_change"] and "boundary" in d["prefix_change"]:
                assert d["boundary_moved"]
            if d["prefix_change"] and "repeat" in d["prefix_change"]:
                assert (
                    d["repeats"] > before["repeats"]
                )  # only a new repeat changes protection or widens an epoch
            assert not check_tool_pairs(out)
        assert snapshot(prompts[-1]) == final

    @PROPERTY
    @given(prompts=growing_conversation(repeats=False), s=epoch_settings(full_below_threshold=True))
    def test_without_repeats_the_prefix_breaks_once_per_boundary_advance(
        self, name: str, prompts: list[list[BaseMessage]], s: Settings
    ) -> None:
        """With no repeated call, the prefix breaks exactly at the calls whose boundary moved, and
        nowhere else."""
        runs = replay(STRATEGIES[name], prompts, s)
        breaks = [i for i, (kept, _, _) in enumerate(runs) if not kept]
        advances = [i for i, (_, d, _) in enumerate(runs) if d["boundary_moved"]]
        assert breaks == advances
        assert {d["prefix_change"] for _, d, _ in runs} <= {None, "boundary"}

    def test_a_realistic_run_breaks_its_prefix_only_where_announced(self, name: str) -> None:
        """On a 300-call generated agent run (mixed provider formats), every break is announced and
        pairs stay intact."""
        prompts = list(iter_agent_run(300, seed=7, mirror="mixed"))
        runs = replay(STRATEGIES[name], prompts, Settings())
        breaks = [i for i, (kept, _, _) in enumerate(runs) if not kept]
        announced = [i for i, (_, d, _) in enumerate(runs) if d["prefix_change"]]
        assert breaks and set(breaks) <= set(announced)
        assert all(not check_tool_pairs(out) for _, _, out in runs[-5:])

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(conversation=agent_conversations(max_calls=30), s=epoch_settings())
    def test_pure_and_pairs_intact_on_any_conversation(
        self, name: str, conversation: list[BaseMessage], s: Settings
    ) -> None:
        """Input untouched, the same output twice, no pairing violation, at most one notice."""
        before = snapshot(conversation)
        first = STRATEGIES[name](conversation, settings=s).messages
        assert snapshot(conversation) == before
        assert STRATEGIES[name](conversation, settings=s).messages == first
        assert not check_tool_pairs(first)
        assert len(notices(first)) <= 1


# --------------------------------------------------------------------------- caches


class TestCaches:
    def test_results_do_not_depend_on_the_caches(self) -> None:
        """Every prompt of a growing run compacts to the same bytes with warm caches and after
        clearing them."""
        prompts = list(iter_agent_run(120, seed=3))
        s = Settings(
            epoch_tool_call_threshold=20,
            epoch_full_tool_calls=5,
            epoch_compacted_tool_calls=15,
            epoch_size=6,
        )
        warm = [
            [serialise(m) for m in shorten_tools_epoch_increment(p, settings=s).messages]
            for p in prompts[::3]
        ]
        cold = []
        for p in prompts[::3]:
            clear_caches()
            cold.append(
                [serialise(m) for m in shorten_tools_epoch_increment(p, settings=s).messages]
            )
        assert warm == cold

    def test_a_call_within_an_epoch_reuses_the_compacted_head(self) -> None:
        """The next call of the same epoch hands back the very same shortened messages instead of
        new copies."""
        conversation = run_of(13)  # the agent loop's two prompts share their message objects
        first = shorten_tools_epoch(conversation[:-2], settings=SMALL).messages
        second = shorten_tools_epoch(conversation, settings=SMALL).messages
        shortened = [
            m
            for m in first
            if isinstance(m, ToolMessage) and m.content != output_of(int(m.tool_call_id[5:]))
        ]
        assert shortened and all(any(m is n for n in second) for m in shortened)

    def test_conversations_sharing_objects_do_not_share_results(self) -> None:
        """Two conversations with the same system message object and shape but other outputs each
        get their own result."""
        a = run_of(12)
        b = [a[0]] + run_of(12, text="other")[1:]
        ra = shorten_tools_epoch(a, settings=SMALL).messages
        rb = shorten_tools_epoch(b, settings=SMALL).messages
        clear_caches()
        assert [serialise(m) for m in rb] == [
            serialise(m) for m in shorten_tools_epoch(b, settings=SMALL).messages
        ]
        assert [serialise(m) for m in ra] == [
            serialise(m) for m in shorten_tools_epoch(a, settings=SMALL).messages
        ]

    def test_conversations_differing_only_inside_the_head_do_not_share_it(self) -> None:
        """A conversation with the same first and last messages as another but one other output in
        between gets its own head, not the other's."""
        a = run_of(12)
        changed = next(
            i for i, m in enumerate(a) if isinstance(m, ToolMessage) and m.tool_call_id == "call_6"
        )
        b = [
            *a[:changed],
            ToolMessage("another output " * 60, tool_call_id="call_6"),
            *a[changed + 1 :],
        ]
        ra = shorten_tools_epoch(a, settings=SMALL).messages
        rb = shorten_tools_epoch(b, settings=SMALL).messages
        assert [serialise(m) for m in rb] != [serialise(m) for m in ra]
        clear_caches()
        assert [serialise(m) for m in rb] == [
            serialise(m) for m in shorten_tools_epoch(b, settings=SMALL).messages
        ]

    def test_a_conversation_loaded_again_reuses_the_compacted_head(self) -> None:
        """The same conversation deserialized again (a checkpoint read by a new process) is the same
        conversation: its head is not compacted again."""
        conversation = run_of(13)
        first = shorten_tools_epoch(conversation, settings=SMALL).messages
        reloaded = messages_from_dict(messages_to_dict(conversation))
        second = shorten_tools_epoch(reloaded, settings=SMALL).messages
        shortened = [
            m
            for m in first
            if isinstance(m, ToolMessage) and m.content != output_of(int(m.tool_call_id[5:]))
        ]
        assert [serialise(m) for m in second] == [serialise(m) for m in first]
        assert shortened and all(any(m is n for n in second) for m in shortened)

    def test_concurrent_conversations_get_the_results_they_get_alone(self) -> None:
        """Four threads replaying four growing conversations at once produce exactly the sequential
        outputs."""
        runs = [list(iter_agent_run(90, seed=seed, parallel_max=2))[::2] for seed in range(4)]
        s = Settings(
            epoch_tool_call_threshold=15,
            epoch_full_tool_calls=4,
            epoch_compacted_tool_calls=10,
            epoch_size=4,
        )

        def replay_all(prompts: list[list[BaseMessage]]) -> list[list[str]]:
            return [
                [serialise(m) for m in shorten_tools_epoch_increment(p, settings=s).messages]
                for p in prompts
            ]

        alone = [replay_all(r) for r in runs]
        clear_caches()
        with ThreadPoolExecutor(max_workers=4) as pool:
            together = list(pool.map(replay_all, runs))
        assert together == alone


# --------------------------------------------------------------------------- strategies


class TestStrategies:
    @pytest.mark.parametrize(
        "name, cls",
        [
            ("shorten_tools_epoch", ShortenToolsEpoch),
            ("shorten_tools_epoch_increment", ShortenToolsEpochIncrement),
        ],
    )
    def test_registry_builds_each_strategy_with_its_settings(
        self, name: str, cls: type[PromptStrategy]
    ) -> None:
        """get_strategy resolves both names to their classes, which apply the pure function with
        their settings."""
        strategy = get_strategy(name, SMALL)
        assert isinstance(strategy, cls) and strategy.strategy_name == name
        msgs = run_of(14)
        assert strategy.invoke(msgs) == STRATEGIES[name](msgs, settings=SMALL).messages

    def test_settings_come_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """EPOCH_TOOL_CALL_THRESHOLD and EPOCH_SIZE set in the environment reach the strategy."""
        monkeypatch.setenv("EPOCH_TOOL_CALL_THRESHOLD", "10")
        monkeypatch.setenv("EPOCH_FULL_TOOL_CALLS", "2")
        monkeypatch.setenv("EPOCH_COMPACTED_TOOL_CALLS", "4")
        monkeypatch.setenv("EPOCH_SIZE", "5")
        assert ShortenToolsEpoch().compact(run_of(12)).report.details["pinned_total"] == 10

    def test_fate_helpers_agree_with_the_report(self) -> None:
        """The report's shortened and dropped counts match what the output shows."""
        result = shorten_tools_epoch_increment(run_of(40, width=2), settings=SMALL)
        whole, short, dropped = by_region(result.messages, 40)
        assert (result.report.shortened, result.report.dropped) == (len(short), len(dropped))


class TestNoticeOnlyWhenSomethingChanged:
    """The compaction notice tells the model what changed, so it must not appear, nor count, when no
    byte changed."""

    @staticmethod
    def short_run(outputs: list[str]) -> list[BaseMessage]:
        messages: list[BaseMessage] = [SystemMessage("s"), HumanMessage("task")]
        for i, output in enumerate(outputs):
            call = {"name": "t", "args": {"n": i}, "id": f"c{i}"}
            messages += [
                AIMessage("", tool_calls=[call]),
                ToolMessage(output, tool_call_id=f"c{i}"),
            ]
        return messages

    @pytest.mark.parametrize("cls", [ShortenToolsEpoch, ShortenToolsEpochIncrement])
    def test_calls_too_short_to_cut_give_no_notice(self, cls: type[PromptStrategy]) -> None:
        """Three calls whose outputs are ``ok``, one call kept whole: nothing is cut, so the prompt
        is the history."""
        messages = self.short_run(["ok", "ok", "ok"])
        result = cls(epoch_tool_call_threshold=1, epoch_full_tool_calls=1, epoch_size=1).compact(
            messages
        )
        assert notices(result.messages) == []
        assert result.messages == messages and result.report.shortened == 0

    def test_the_notice_counts_only_the_calls_that_really_changed(self) -> None:
        """Of two calls past the boundary, only the one with a long output is cut, and the notice
        says one."""
        messages = self.short_run(["x" * 5_000, "ok", "ok"])
        result = ShortenToolsEpoch(
            epoch_tool_call_threshold=1, epoch_full_tool_calls=1, epoch_size=1
        ).compact(messages)
        assert len(notices(result.messages)) == 1
        assert result.report.shortened == 1
        notice = result.messages[notices(result.messages)[0]]
        assert "1 older tool call and its result was shortened" in notice.content
