"""Specification of shorten_tools: tiers by position, the character budget, and the two deliberate
differences."""

from __future__ import annotations

import pytest
from conversations import ai_step, as_ai, blocks, snapshot
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat import Settings, ShortenTools, check_tool_pairs
from langchain_promptstrat.messages import handle_text, index_tool_calls, mark
from langchain_promptstrat.strategies.shorten_tools import shorten_tools
from langchain_promptstrat.truncation import shorten_string

OUTPUT = "o" * 1000
ARG = "a" * 1000


def run_of(n: int, *, arg: str = ARG, user_at: int | None = None) -> list[BaseMessage]:
    """Return a task then ``n`` single-call steps (outputs of 1,000 chars); a user message before
    step ``user_at``."""
    msgs: list[BaseMessage] = [SystemMessage("sys"), HumanMessage("task")]
    for i in range(n):
        if i == user_at:
            msgs.append(HumanMessage("next"))
        msgs.append(ai_step([("search", {"q": arg})], i, mirror="plain"))
        msgs.append(ToolMessage(OUTPUT, tool_call_id=f"call_{i}"))
    return msgs


def fates(messages: list[BaseMessage]) -> dict[int, tuple[str, str]]:
    """Return {position: (call fate, output fate)} by inspecting the strategy's output."""
    index = index_tool_calls(messages)
    out = {}
    for rec in index.calls:
        out[index.position(rec) or 0] = (
            "whole" if rec.args["q"] == ARG else "short",
            "whole" if messages[rec.output_index or 0].content == OUTPUT else "short",
        )
    return out


def positions_kept(original: list[BaseMessage], result: list[BaseMessage]) -> list[int]:
    kept = {c.id for c in index_tool_calls(result).calls}
    index = index_tool_calls(original)
    return sorted(index.position(c) or 0 for c in index.calls if c.id in kept)


class TestTiers:
    def test_outputs_are_whole_then_shortened_then_dropped_by_position(self) -> None:
        """With full_tool_outputs=3 and max 6, positions 1-2 stay whole, 3-6 are shortened, 7+
        dropped."""
        original = run_of(10)
        settings = Settings(full_tool_outputs=3, max_tool_calls=6, max_tool_chars=0)
        result = shorten_tools(original, settings=settings).messages
        assert positions_kept(original, result) == [1, 2, 3, 4, 5, 6]
        by_pos = fates(result)
        assert [by_pos[p][1] for p in range(1, 7)] == [
            "whole",
            "whole",
            "short",
            "short",
            "short",
            "short",
        ]
        assert [by_pos[p][0] for p in range(1, 7)] == [
            "short"
        ] * 6  # full_tool_calls=0 keeps no call whole

    def test_shortened_output_uses_size_400_and_arguments_size_200(self) -> None:
        """A shortened pair carries shorten_string of its output within 400 (its handle takes its
        room) and of its argument to 200, each with its handle."""
        result = shorten_tools(
            run_of(4), settings=Settings(full_tool_outputs=0, max_tool_chars=0)
        ).messages
        output_handle, arguments_handle = handle_text(4), handle_text(4, arguments=True)
        assert (
            result[-1].content
            == shorten_string(OUTPUT, 400 - len(output_handle) - 1) + "\n" + output_handle
        )
        assert (
            as_ai(result[-2]).tool_calls[0]["args"]["q"]
            == shorten_string(ARG, 200) + " " + arguments_handle
        )

    def test_character_budget_keeps_newest_outputs_whole_until_spent(self) -> None:
        """While tool characters kept so far are under max_tool_chars, outputs stay whole."""
        original = run_of(6, arg="")
        result = shorten_tools(
            original, settings=Settings(full_tool_outputs=0, max_tool_chars=2500)
        ).messages
        outputs = [m.content for m in result if isinstance(m, ToolMessage)]
        # newest first, the kept characters before each output are 0, 1,000, 2,000 (< 2,500: whole),
        # then 3,000 (spent)
        assert [o == OUTPUT for o in outputs] == [False, False, False, True, True, True]

    def test_conversation_under_every_threshold_is_returned_equal(self) -> None:
        """Short conversations are never touched: the strategy is a no-op until pressure is real."""
        original = run_of(5)
        result = shorten_tools(original, settings=Settings())
        assert result.messages == original and result.report.shortened == result.report.dropped == 0

    def test_report_counts_what_was_shortened_and_dropped(self) -> None:
        """The report says how many pairs were shortened and dropped and the character drop."""
        report = shorten_tools(
            run_of(10), settings=Settings(full_tool_outputs=3, max_tool_calls=6, max_tool_chars=0)
        ).report
        assert (report.strategy, report.tool_calls, report.dropped, report.shortened) == (
            "shorten_tools",
            10,
            4,
            6,
        )
        # in: system + task + 10 pairs = 22; out: the 4 dropped pairs take 8 messages with them
        assert report.messages_in == 2 + 2 * 10 and report.messages_out == 22 - 2 * 4
        assert report.chars_after < report.chars_before


class TestPairsNeverSplit:
    def test_output_dropped_by_its_threshold_follows_a_shortened_call(self) -> None:
        """When only one side would be dropped, both take the milder fate (shortened)."""
        original = run_of(6)
        settings = Settings(
            full_tool_outputs=0, max_tool_calls=5, max_tool_outputs=2, max_tool_chars=0
        )
        result = shorten_tools(original, settings=settings).messages
        assert positions_kept(original, result) == [1, 2, 3, 4, 5]
        assert check_tool_pairs(result) == []

    def test_parallel_calls_are_judged_by_their_own_positions(self) -> None:
        """Of two parallel calls, the older one can be dropped while the newer survives, outputs
        with them."""
        msgs = [
            HumanMessage("task"),
            ai_step([("f", {"q": "x"}), ("g", {"q": "y"})], 0, mirror="both"),
            ToolMessage(OUTPUT, tool_call_id="call_0"),
            ToolMessage(OUTPUT, tool_call_id="call_1"),
        ]
        result = shorten_tools(
            msgs, settings=Settings(full_tool_outputs=0, max_tool_calls=1, max_tool_chars=0)
        ).messages
        assert [c["id"] for c in as_ai(result[1]).tool_calls] == ["call_1"]
        assert [m.tool_call_id for m in result if isinstance(m, ToolMessage)] == ["call_1"]
        assert check_tool_pairs(result) == []

    def test_ai_message_emptied_of_calls_disappears(self) -> None:
        """An AIMessage without text whose every call was dropped is removed."""
        result = shorten_tools(
            run_of(3), settings=Settings(full_tool_outputs=0, max_tool_calls=1, max_tool_chars=0)
        ).messages
        assert sum(isinstance(m, AIMessage) for m in result) == 1


class TestProtectCurrentTurn:
    def test_off_by_default_as_the_reference_counter_never_fires(self) -> None:
        """By default, tool messages of the newest user turn are treated like any other."""
        result = shorten_tools(
            run_of(6, user_at=3), settings=Settings(full_tool_outputs=0, max_tool_chars=0)
        ).messages
        assert [m.content == OUTPUT for m in result if isinstance(m, ToolMessage)] == [False] * 6

    def test_on_keeps_every_tool_message_of_the_newest_user_turn_whole(self) -> None:
        """With protect_current_turn, the steps after the newest real user message stay whole."""
        settings = Settings(full_tool_outputs=0, max_tool_chars=0, protect_current_turn=True)
        result = shorten_tools(run_of(6, user_at=3), settings=settings)
        whole = [m.content == OUTPUT for m in result.messages if isinstance(m, ToolMessage)]
        assert whole == [False, False, False, True, True, True]
        assert result.report.protected == 3

    def test_a_strategy_notice_does_not_end_the_protected_turn(self) -> None:
        """A compaction notice is not a user message, so it does not shrink the protected turn."""
        msgs = run_of(6, user_at=3)
        notice = mark(HumanMessage("compacted"), "compaction_notice", notice=True)
        msgs = msgs[:-4] + [notice] + msgs[-4:]
        settings = Settings(full_tool_outputs=0, max_tool_chars=0, protect_current_turn=True)
        whole = [
            m.content == OUTPUT
            for m in shorten_tools(msgs, settings=settings).messages
            if isinstance(m, ToolMessage)
        ]
        assert whole == [False, False, False, True, True, True]


class TestRunnable:
    def test_input_is_never_mutated(self) -> None:
        """The stored conversation keeps full fidelity after the strategy ran."""
        original = run_of(12)
        before = snapshot(original)
        ShortenTools(full_tool_outputs=2, max_tool_calls=5, max_tool_chars=0).invoke(original)
        assert snapshot(original) == before

    def test_settings_overrides_reach_the_rule(self) -> None:
        """Keyword overrides on the class are the strategy's settings."""
        assert ShortenTools(max_tool_calls=3).settings.max_tool_outputs == 3

    @pytest.mark.parametrize("mirror", ["openai", "anthropic", "both"])
    def test_mirrored_calls_stay_consistent_after_shortening(self, mirror: str) -> None:
        """Provider mirrors of a call agree with tool_calls after the strategy ran."""
        msgs: list[BaseMessage] = [HumanMessage("task")]
        for i in range(8):
            msgs += [
                ai_step([("f", {"q": ARG})], i, mirror=mirror),
                ToolMessage(OUTPUT, tool_call_id=f"call_{i}"),
            ]
        result = ShortenTools(full_tool_outputs=1, max_tool_calls=4, max_tool_chars=0).invoke(msgs)
        assert check_tool_pairs(result) == []
        for m in result:
            if isinstance(m, AIMessage):
                if mirror != "anthropic":
                    assert [c["id"] for c in m.additional_kwargs["tool_calls"]] == [
                        c["id"] for c in m.tool_calls
                    ]
                if mirror != "openai":
                    assert [b["input"] for b in blocks(m) if b["type"] == "tool_use"] == [
                        c["args"] for c in m.tool_calls
                    ]
