"""Specification of summary: the oldest stretch is replaced by a chat model's summary, in four
tiers."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from conversations import agent_conversations, ai_step, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat import ConfigError, check_tool_pairs, get_strategy
from langchain_promptstrat.messages import is_real_user_message, mark_of
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.ladder_machinery.rungs import SUMMARY_KIND, kind_of
from langchain_promptstrat.strategies.sliding_window import note
from langchain_promptstrat.strategies.summary import (
    COMBINE_INSTRUCTIONS,
    SUMMARY_INSTRUCTIONS,
    Summary,
    SummaryFailedWarning,
    render,
    summary_message,
)
from langchain_promptstrat.testing import ScriptedChatModel
from langchain_promptstrat.tokens import TokenCounter

COUNT = TokenCounter("cl100k_base")
SYSTEM = SystemMessage("You are an agent.")
RUN_TASK = HumanMessage("the run's task")
"""The first real user message: never summarised, so tests about earlier turns put it before
them."""


def turn(k: int, steps: int = 2) -> list:
    """Return a turn: a question, ``steps`` single-call steps with ~100-token outputs, and an
    answer."""
    msgs: list = [HumanMessage(f"question {k}")]
    for j in range(steps):
        c = 10 * k + j
        msgs += [
            ai_step([("search", {"q": f"q{c}"})], c, mirror="both"),
            ToolMessage(
                " ".join(f"r{c}x{i}" for i in range(50)), tool_call_id=f"call_{c}", name="search"
            ),
        ]
    return msgs + [AIMessage(f"answer {k}")]


def task(n_steps: int) -> list:
    """Return the anchor and ``n_steps`` single-call steps."""
    return [HumanMessage("current task")] + turn(9, n_steps)[1:-1]


def sent_only_text(model: ScriptedChatModel) -> bool:
    """Return whether every prompt the model got was one system message and one user message."""
    return all([type(m) for m in call] == [SystemMessage, HumanMessage] for call in model.calls)


class AsyncOnlyModel(ScriptedChatModel):
    """A scripted model whose sync path fails, to prove the async path is awaited."""

    def _generate(self, *args, **kwargs):
        raise RuntimeError("sync path used")


class TestRounds:
    def test_oldest_turn_is_summarised_after_the_system_block_as_a_text_transcript(self):
        """Freeing the oldest turn's tokens is enough, so only that turn is sent, as text, and
        replaced in place."""
        t1, t2, now = turn(1), turn(2), task(2)
        msgs = [SYSTEM, RUN_TASK, *t1, *t2, *now]
        model = ScriptedChatModel(["They searched q10 and q11."])
        # need = excess + summary_tokens = COUNT(t1): the first turn alone frees it
        target = COUNT(msgs) - COUNT(t1) + 60
        out = Summary(model, max_tokens=target, summary_tokens=60, token_counter=COUNT).invoke(msgs)
        assert out == [
            SYSTEM,
            RUN_TASK,
            summary_message(
                "They searched q10 and q11.", messages=len(t1), tier="turns", calls=[1, 2]
            ),
            *t2,
            *now,
        ]
        assert sent_only_text(model) and model.calls[0][1].content == render(t1)
        assert model.calls[0][0].content.startswith(SUMMARY_INSTRUCTIONS[:40])
        assert "Assistant called search" in render(t1) and "Result of search: r10x0" in render(t1)

    def test_a_failing_second_round_keeps_the_first_rounds_result(self):
        """Round one summarises every earlier turn; the model fails on the task's steps, so round
        one stands."""
        t1, t2, now = turn(1), turn(2), task(3)
        model = ScriptedChatModel(["earlier turns", RuntimeError("boom")])
        with pytest.warns(SummaryFailedWarning, match="boom"):
            result = Summary(model, max_tokens=0, token_counter=COUNT).compact(
                [SYSTEM, RUN_TASK, *t1, *t2, *now]
            )
        assert result.messages == [
            SYSTEM,
            RUN_TASK,
            summary_message(
                "earlier turns", messages=len(t1) + len(t2), tier="turns", calls=[1, 4]
            ),
            *now,
        ]
        (asked,) = result.report.details["asked"]
        assert asked["stopped"] == "model failed: RuntimeError: boom" and len(asked["rounds"]) == 1

    @pytest.mark.parametrize(
        "answer, reason",
        [
            ("", "model answered nothing"),
            (RuntimeError("down"), "model failed: RuntimeError: down"),
        ],
    )
    def test_nothing_usable_in_the_first_round_leaves_the_prompt_unchanged(self, answer, reason):
        """An empty answer or a failing call in round one declines, and the strategy returns its
        input."""
        msgs = [SYSTEM, *turn(1), *task(2)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = Summary(
                ScriptedChatModel([answer]), max_tokens=0, token_counter=COUNT
            ).compact(msgs)
        assert result.messages == msgs
        assert result.report.details["asked"] == [
            {"strategy": "summary", "reason": reason, "outcome": "declined"}
        ]
        assert [w.category for w in caught] == (
            [SummaryFailedWarning] if isinstance(answer, Exception) else []
        )

    def test_a_summary_no_smaller_than_its_stretch_is_refused(self):
        """An answer longer than the turn it replaces ends the rounds with the previous result."""
        msgs = [SYSTEM, *turn(1), *task(1)]
        result = Summary(
            ScriptedChatModel(["word " * 2000]), max_tokens=0, token_counter=COUNT
        ).compact(msgs)
        assert result.messages == msgs
        assert result.report.details["asked"][0]["reason"].startswith("summary no smaller")

    def test_the_task_s_oldest_steps_are_summarised_after_the_anchor_keeping_the_newest(self):
        """Without earlier turns, the task's steps but the newest become one summary right after the
        anchor."""
        now = task(4)
        model = ScriptedChatModel(["three steps"])
        out = Summary(model, max_tokens=0, token_counter=COUNT).invoke([SYSTEM, *now])
        # 4 steps of 2 messages after the anchor; the newest step (keep_steps=1) stays, the other 6
        # messages are summarised
        assert out == [
            SYSTEM,
            now[0],
            summary_message("three steps", messages=6, tier="steps", calls=[1, 3]),
            *now[-2:],
        ]
        assert sent_only_text(model) and check_tool_pairs(out) == []

    def test_summaries_are_summarised_only_when_combining(self):
        """A new turn summary's transcript leaves the older summary out; the next round combines
        both."""
        older = summary_message("what happened first", messages=9, tier="turns", calls=[1, 4])
        t1, now = turn(1), task(1)
        model = ScriptedChatModel(["turn one", "all of it"])
        out = Summary(model, max_tokens=0, token_counter=COUNT).invoke(
            [SYSTEM, RUN_TASK, older, *t1, *now]
        )
        first, second = (call[1].content for call in model.calls)
        assert "what happened first" not in first and first == render(t1)
        assert "what happened first" in second and "turn one" in second
        assert model.calls[1][0].content.startswith(COMBINE_INSTRUCTIONS[:40])
        assert out == [
            SYSTEM,
            RUN_TASK,
            summary_message("all of it", messages=9 + len(t1), tier="turn_summaries", calls=[1, 6]),
            *now,
        ]

    def test_the_run_s_task_is_never_summarised_and_stretches_never_span_it(self):
        """The first real user message stays verbatim; the turns before and after it are summarised
        apart, and combined only on one side of it."""
        # harnesses speak as the user: "question 1" (the run's task) is older than the anchor, so
        # the old layout offered it
        t1, t2, now = turn(1), turn(2), task(1)
        msgs = [SYSTEM, *t1, *t2, *now]
        model = ScriptedChatModel(["turns summary"])
        result = Summary(model, max_tokens=0, token_counter=COUNT).compact(msgs)
        # round one: everything between the task and the anchor, the task excluded; nothing is left
        # on its other side
        assert result.messages == [
            SYSTEM,
            t1[0],
            summary_message(
                "turns summary", messages=len(t1) - 1 + len(t2), tier="turns", calls=[1, 4]
            ),
            *now,
        ]
        assert (
            model.calls[0][1].content == render([*t1[1:], *t2])
            and "question 1" not in model.calls[0][1].content
        )
        # a summary before the task and one after it are two sides: neither a stretch nor a
        # combination joins them
        before, after = (
            summary_message("before", messages=3, tier="turns"),
            summary_message("after", messages=4, tier="turns"),
        )
        model = ScriptedChatModel([])
        split = [SYSTEM, before, t1[0], after, *now]
        assert (
            Summary(model, max_tokens=0, token_counter=COUNT).invoke(split) == split
            and model.calls == []
        )

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(conversation=agent_conversations(max_calls=25), share=st.floats(0, 1))
    def test_the_task_and_the_newest_user_message_survive_every_round(self, conversation, share):
        """Whatever the target, the first and the newest real user messages of the input are in the
        output, unchanged."""
        model = ScriptedChatModel(["s"] * 200)
        target = int(COUNT(conversation) * share)
        out = Summary(model, max_tokens=target, token_counter=COUNT).invoke(conversation)
        users = [m for m in conversation if is_real_user_message(m)]
        for kept in users[:1] + users[-1:]:
            assert any(m is kept for m in out)

    def test_the_summary_names_its_calls_by_their_numbers_in_the_stored_conversation(self):
        """Given a list where a window note stands for calls 1-17, a summary of that note and the
        next turn names calls 1-19 (the turn's are 18 and 19 in the stored conversation, which
        read_back reads), and its mark keeps them."""
        t1, now = turn(1), task(1)
        given = [SYSTEM, RUN_TASK, note(40, [1, 17]), *t1, *now]
        model = ScriptedChatModel(["turn one"])
        out = Summary(model, max_tokens=0, token_counter=COUNT).invoke(given)
        (summary,) = [m for m in out if kind_of(m) == SUMMARY_KIND]
        expected = summary_message("turn one", messages=40 + len(t1), tier="turns", calls=[1, 19])
        assert summary == expected
        assert "calls 1-19" in summary.content and "read_back(call=N)" in summary.content
        assert mark_of(summary)["calls"] == [1, 19]

    def test_with_handles_off_the_summary_names_no_call_and_no_tool(self):
        """For an agent without read_back, the summary's header says only how many messages it
        stands for."""
        t1, now = turn(1), task(1)
        off = Settings(read_back_handles=False)
        summary = Summary(ScriptedChatModel(["turn one"]), off, max_tokens=0, token_counter=COUNT)
        out = summary.invoke([SYSTEM, RUN_TASK, *t1, *now])
        expected = summary_message("turn one", messages=len(t1), tier="turns")
        assert out == [SYSTEM, RUN_TASK, expected, *now]
        assert "read_back" not in out[2].content and "calls" not in mark_of(out[2])

    def test_summary_is_a_marked_notice_never_an_anchor(self):
        """The summary is a user-role message marked with the stretch size, so no strategy takes it
        for the user."""
        message = summary_message("text", messages=4, tier="steps")
        assert mark_of(message) == {
            "kind": SUMMARY_KIND,
            "notice": True,
            "strategy": "summary",
            "messages": 4,
            "tier": "steps",
        }
        assert not is_real_user_message(message)


class TestSummaryStrategy:
    def test_without_a_model_construction_fails_naming_how_to_pass_one(self):
        """Summary() and get_strategy("summary") raise ConfigError showing Summary(model) and
        model=."""
        for build in (Summary, lambda: get_strategy("summary")):
            with pytest.raises(ConfigError, match=r"Summary\(model\).*model=model"):
                build()
        with pytest.raises(ConfigError, match="LangChain chat model"):
            Summary(42)  # a string is a model name for init_chat_model (test_summary_failures.py)

    def test_get_strategy_passes_the_model_and_settings(self):
        """get_strategy("summary", model=...) builds a working Summary with the registry's
        settings."""
        model = ScriptedChatModel(["s"])
        strategy = get_strategy("summary", model=model, max_tokens=0, keep_steps=2)
        assert strategy.model is model and (strategy.max_tokens, strategy.settings.keep_steps) == (
            0,
            2,
        )

    def test_ainvoke_awaits_the_model_s_async_path(self):
        """ainvoke calls ainvoke on the model; the sync path of this model would fail."""
        msgs = [SYSTEM, RUN_TASK, *turn(1), *task(1)]
        strategy = Summary(AsyncOnlyModel(["async summary"]), max_tokens=0, token_counter=COUNT)
        out = asyncio.run(strategy.ainvoke(msgs))
        assert out == [
            SYSTEM,
            RUN_TASK,
            summary_message("async summary", messages=len(turn(1)), tier="turns", calls=[1, 2]),
            *task(1),
        ]
        with pytest.warns(SummaryFailedWarning, match="sync path used"):
            assert (
                Summary(AsyncOnlyModel(["x"]), max_tokens=0, token_counter=COUNT).invoke(msgs)
                == msgs
            )

    def test_answers_are_remembered_so_a_repeated_prompt_asks_once(self):
        """Compacting the same conversation twice asks the model once."""
        msgs = [SYSTEM, *turn(1), *task(1)]
        model = ScriptedChatModel(["s1", "s2"])
        strategy = Summary(model, max_tokens=0, token_counter=COUNT)
        assert strategy.invoke(msgs) == strategy.invoke(msgs) and model.cursor == 1

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(conversation=agent_conversations(max_calls=25), share=st.floats(0, 1))
    def test_pure_pairs_intact_and_only_text_reaches_the_model(self, conversation, share):
        """Input untouched, pairs intact, never larger, and the model is only ever sent a system and
        a user message."""
        model = ScriptedChatModel([])
        strategy = Summary(model, max_tokens=int(COUNT(conversation) * share), token_counter=COUNT)
        before = snapshot(conversation)
        out = strategy.invoke(conversation)
        assert snapshot(conversation) == before
        assert check_tool_pairs(out) == [] and COUNT(out) <= COUNT(conversation)
        assert sent_only_text(model)
        assert [m for m in out if is_real_user_message(m)][-1:] == [
            m for m in conversation if is_real_user_message(m)
        ][-1:]
        assert all(kind_of(m) in (None, SUMMARY_KIND) for m in out)
