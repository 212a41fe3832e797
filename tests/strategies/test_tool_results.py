"""Specification of tool_results: oldest large tool outputs become placeholders, until under
target."""

from __future__ import annotations

import pytest
from conversations import agent_conversations, ai_step, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat import check_tool_pairs, get_strategy
from langchain_promptstrat.messages import handle_text, mark_of
from langchain_promptstrat.strategies.ladder_machinery.rungs import PLACEHOLDER_KIND, kind_of
from langchain_promptstrat.strategies.sliding_window import note
from langchain_promptstrat.strategies.tool_results import (
    PLACEHOLDER_TEXT,
    ToolResults,
    placeholder,
    rewrite,
)
from langchain_promptstrat.tokens import TokenCounter

COUNT = TokenCounter("cl100k_base")


def output(k: int, n_words: int) -> str:
    return " ".join(f"line{k} value{i}" for i in range(n_words))


def run_of(sizes: list[int]) -> list:
    """Return a task then one single-call step per entry of ``sizes`` (output words)."""
    msgs: list = [SystemMessage("sys"), HumanMessage("task")]
    for k, n in enumerate(sizes):
        msgs += [
            ai_step([("grep", {"q": f"pattern {k}"})], k, mirror="plain"),
            ToolMessage(output(k, n), tool_call_id=f"call_{k}", name="grep", id=f"tool_{k}"),
        ]
    return msgs


def cleared(messages) -> list[int]:
    """Return the step numbers whose output is a placeholder."""
    return [
        int(m.tool_call_id.split("_")[1])
        for m in messages
        if isinstance(m, ToolMessage) and kind_of(m) == PLACEHOLDER_KIND
    ]


class TestRewrite:
    def test_oldest_large_outputs_go_first_and_it_stops_once_under_target(self):
        """A target equal to the count with the two oldest outputs cleared clears exactly those; one
        token less, a third."""
        msgs = run_of([300] * 6)
        oldest_two = {"call_0", "call_1"}
        two = [
            placeholder(m, "grep", COUNT.count_message(m), call=int(m.tool_call_id[5:]) + 1)
            if isinstance(m, ToolMessage) and m.tool_call_id in oldest_two
            else m
            for m in msgs
        ]
        assert cleared(rewrite(msgs, target=COUNT(two), counter=COUNT).messages) == [0, 1]
        assert cleared(rewrite(msgs, target=COUNT(two) - 1, counter=COUNT).messages) == [0, 1, 2]
        assert rewrite(msgs, target=COUNT(two), counter=COUNT).messages == two

    def test_outputs_at_or_under_min_tokens_are_never_cleared(self):
        """With target 0, only outputs above min_tokens become placeholders."""
        msgs = run_of([300, 20, 300, 20, 300])
        sizes = {m.tool_call_id: COUNT.count_message(m) for m in msgs if isinstance(m, ToolMessage)}
        assert sizes["call_1"] <= 200 < sizes["call_0"]
        assert cleared(rewrite(msgs, target=0, counter=COUNT).messages) == [0, 2]

    @pytest.mark.parametrize("keep_steps", [1, 2, 3])
    def test_newest_keep_steps_tool_calling_steps_are_never_touched(self, keep_steps):
        """With target 0 every large output but those of the newest keep_steps calling steps is
        cleared."""
        msgs = run_of([300] * 5) + [HumanMessage("and then?")]
        assert cleared(
            rewrite(msgs, target=0, counter=COUNT, keep_steps=keep_steps).messages
        ) == list(range(5 - keep_steps))

    def test_placeholder_keeps_call_id_name_and_id_and_is_marked(self):
        """The placeholder answers the same call under the same name and id, names the tool and its
        call's handle, and carries the mark."""
        msgs = run_of([300, 300])
        out = rewrite(msgs, target=0, counter=COUNT).messages
        original, short = msgs[3], out[3]
        assert (short.tool_call_id, short.name, short.id) == (
            original.tool_call_id,
            original.name,
            original.id,
        )
        assert "grep" in short.content and short.content.endswith(handle_text(1))
        assert mark_of(short) == {
            "kind": PLACEHOLDER_KIND,
            "notice": True,
            "strategy": "tool_results",
            "tokens": COUNT.count_message(original),
        }
        assert check_tool_pairs(out) == []

    def test_without_handles_the_placeholder_invites_calling_the_tool_again(self):
        """With handles off (an agent without read_back) the placeholder names no handle: it asks
        to call the tool again."""
        msgs = run_of([300, 300])
        out = rewrite(msgs, target=0, counter=COUNT, handles=False).messages
        tokens = COUNT.count_message(msgs[3])
        assert out[3].content == PLACEHOLDER_TEXT.format(name="grep", tokens=tokens)
        assert "read_back" not in out[3].content and "again" in out[3].content

    def test_a_handle_names_the_call_s_number_in_the_stored_conversation_after_a_note(self):
        """Given a list an earlier rung compacted, where a note stands for calls 1-17, the first
        call still in it is call 18: read_back numbers the stored conversation, not the list the
        rung was given."""
        msgs = run_of([300] * 4)
        compacted = [msgs[0], msgs[1], note(40, [1, 17]), *msgs[2:]]
        out = rewrite(compacted, target=0, counter=COUNT).messages
        placeholders = [m.content for m in out if kind_of(m) == PLACEHOLDER_KIND]
        handles = [text[text.index("[whole:") :] for text in placeholders]
        assert handles == [handle_text(18 + k) for k in range(3)]  # the newest step keeps its own

    @settings(max_examples=80, deadline=None)
    @given(
        name=st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,39}", fullmatch=True),
        tokens=st.integers(201, 10**7),
        call=st.integers(1, 999_999),
    )
    def test_the_handle_takes_its_room_from_the_placeholder_s_text(self, name, tokens, call):
        """A placeholder naming its handle never counts more tokens than the one inviting the
        model to call the tool again: the handle replaces the invitation, so what the rung frees
        does not shrink."""
        output = ToolMessage("x", tool_call_id="c0", name=name)
        with_handle = COUNT.count_message(placeholder(output, name, tokens, call))
        assert with_handle <= COUNT.count_message(placeholder(output, name, tokens))

    def test_a_placeholder_is_never_replaced_by_a_placeholder(self):
        """A second pass over its own output finds nothing to clear and declines."""
        out = rewrite(run_of([300] * 4), target=0, counter=COUNT).messages
        assert rewrite(out, target=0, counter=COUNT) == (
            None,
            {"reason": "no tool output it may clear"},
        )

    def test_declines_when_already_under_target(self):
        """A prompt under target is not touched."""
        msgs = run_of([300] * 4)
        assert rewrite(msgs, target=COUNT(msgs), counter=COUNT).messages is None

    def test_a_placeholder_larger_than_its_output_is_not_written(self):
        """With min_tokens 0, outputs smaller than a placeholder stay as they are."""
        msgs = run_of([3, 3, 300, 3])
        assert cleared(rewrite(msgs, target=0, counter=COUNT, min_tokens=0).messages) == [2]


class TestToolResultsStrategy:
    def test_on_its_own_it_aims_at_the_max_tokens_setting(self, monkeypatch):
        """get_strategy("tool_results") reads PROMPTSTRAT_MAX_TOKENS and TOOL_RESULTS_MIN_TOKENS
        when built."""
        msgs = run_of([300] * 4)
        monkeypatch.setenv("PROMPTSTRAT_MAX_TOKENS", str(COUNT(msgs) - 1))
        monkeypatch.setenv("TOOL_RESULTS_MIN_TOKENS", "100000")
        assert get_strategy("tool_results").invoke(msgs) == msgs
        monkeypatch.setenv("TOOL_RESULTS_MIN_TOKENS", "200")
        strategy = get_strategy("tool_results")
        result = strategy.compact(msgs)
        assert cleared(result.messages) == [0]
        assert result.report.details["rungs"] == [
            {"strategy": "tool_results", "before": COUNT(msgs), "after": COUNT(result.messages)}
        ]

    def test_explicit_arguments_win(self, monkeypatch):
        """max_tokens, tool_results_min_tokens and keep_steps given to the class win over the
        environment."""
        monkeypatch.setenv("PROMPTSTRAT_MAX_TOKENS", "50000")
        monkeypatch.setenv("TOOL_RESULTS_MIN_TOKENS", "300")
        monkeypatch.setenv("KEEP_STEPS", "4")
        strategy = ToolResults(max_tokens=5, tool_results_min_tokens=7, keep_steps=2)
        assert (
            strategy.max_tokens,
            strategy.settings.tool_results_min_tokens,
            strategy.settings.keep_steps,
        ) == (5, 7, 2)

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(conversation=agent_conversations(max_calls=30), share=st.floats(0, 1))
    def test_pure_pair_preserving_and_only_ever_smaller(self, conversation, share):
        """Input untouched, same output twice, pairs intact, never larger, and only contents of
        outputs change."""
        strategy = ToolResults(max_tokens=int(COUNT(conversation) * share), token_counter=COUNT)
        before = snapshot(conversation)
        out = strategy.invoke(conversation)
        assert snapshot(conversation) == before and strategy.invoke(conversation) == out
        assert check_tool_pairs(out) == [] and COUNT(out) <= COUNT(conversation)
        assert len(out) == len(conversation)
        for old, new in zip(conversation, out, strict=False):
            assert new is old or (
                isinstance(old, ToolMessage) and new.tool_call_id == old.tool_call_id
            )
