"""Specification of sliding_window: whole turns, then the task's oldest steps, give way to one
note."""

from __future__ import annotations

import pytest
from conversations import agent_conversations, ai_step, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat import check_tool_pairs, get_strategy
from langchain_promptstrat.messages import is_real_user_message, mark, mark_of
from langchain_promptstrat.strategies.ladder_machinery.rungs import NOTE_KIND, kind_of
from langchain_promptstrat.strategies.sliding_window import SlidingWindow, layout, note, rewrite
from langchain_promptstrat.tokens import TokenCounter

COUNT = TokenCounter("cl100k_base")


def turn(k: int, steps: int = 2) -> list:
    """Return a turn: a question, ``steps`` single-call steps with ~100-token outputs, and an
    answer."""
    msgs: list = [HumanMessage(f"question {k}")]
    for j in range(steps):
        c = 10 * k + j
        msgs += [
            ai_step([("search", {"q": f"q{c}"})], c, mirror="plain"),
            ToolMessage(" ".join(f"r{c}x{i}" for i in range(50)), tool_call_id=f"call_{c}"),
        ]
    return msgs + [AIMessage(f"answer {k}")]


def task(n_steps: int, anchor: str = "current task") -> list:
    """Return the anchor and ``n_steps`` single-call steps."""
    return [HumanMessage(anchor)] + turn(9, n_steps)[1:-1]


SYSTEM = SystemMessage("You are an agent.")


class TestRewrite:
    def test_keeps_the_newest_turns_that_fit_and_drops_the_older_ones(self):
        """With room for two of three earlier turns, exactly the oldest goes (its question, the
        run's task, stays) and the note counts its messages and names its calls (1-2)."""
        t1, t2, t3, now = turn(1), turn(2), turn(3), task(2)
        expected = [SYSTEM, t1[0], note(len(t1) - 1, [1, 2]), *t2, *t3, *now]
        out = rewrite([SYSTEM, *t1, *t2, *t3, *now], target=COUNT(expected), counter=COUNT)
        assert out.messages == expected
        assert out.details == {
            "dropped": len(t1) - 1,
            "turns": 1,
            "steps": 0,
            "note": "after_system",
        }

    def test_a_dropped_note_passes_its_count_and_calls_to_the_new_note(self):
        """Dropping an earlier note with a turn gives one note counting both and naming all their
        calls, never two notes; the calls after the earlier note keep their numbers in the stored
        conversation (18 on, after its 1-17)."""
        t0, t1, t2, now = HumanMessage("the run's task"), turn(1), turn(2), task(1)
        kept = [SYSTEM, t0, note(40 + len(t1), [1, 19]), *t2, *now]
        given = [SYSTEM, t0, note(40, [1, 17]), *t1, *t2, *now]
        assert rewrite(given, target=COUNT(kept), counter=COUNT).messages == kept

    def test_declines_when_everything_it_would_drop_is_its_own_note(self):
        """A note for a note frees nothing, so the window declines and says why."""
        out = rewrite([SYSTEM, note(40), *task(1)], target=0, counter=COUNT)
        assert out == (None, {"reason": "everything it would drop is already a note"})

    def test_declines_under_target_and_when_nothing_may_go(self):
        """Under target, or with only system, anchor and the newest step, there is nothing to do."""
        msgs = [SYSTEM, *task(1)]
        assert rewrite(msgs, target=COUNT(msgs), counter=COUNT).messages is None
        assert rewrite(msgs, target=0, counter=COUNT).details["reason"].startswith("nothing but")

    @pytest.mark.parametrize("keep_steps", [1, 2, 4])
    def test_floor_keeps_the_newest_keep_steps_steps_after_the_anchor(self, keep_steps):
        """At target 0 every earlier turn (but the run's task) and all but the newest keep_steps
        steps go; the note follows the anchor."""
        t1, now = turn(1), task(5)
        kept_from = len(now) - 2 * keep_steps
        out = rewrite([SYSTEM, *t1, *now], target=0, counter=COUNT, keep_steps=keep_steps).messages
        calls = [1, 2 + 5 - keep_steps]  # the earlier turn's 2, the task's but its newest steps
        window_note = note(len(t1) - 1 + kept_from - 1, calls)
        assert out == [SYSTEM, t1[0], now[0], window_note, *now[kept_from:]]

    def test_without_a_real_user_message_oldest_steps_go_and_the_note_follows_the_system_block(
        self,
    ):
        """With no anchor the steps are all there is; the note sits right after the system block."""
        steps = turn(1, 4)[1:-1]
        out = rewrite([SYSTEM, *steps], target=0, counter=COUNT).messages
        # 4 steps of 2 messages; all but the newest step (keep_steps=1) go: calls 1-3
        assert out == [SYSTEM, note(6, [1, 3]), *steps[6:]]

    def test_parallel_calls_and_stray_notices_go_with_their_steps(self):
        """A step of three parallel calls leaves whole, and a notice between steps leaves with
        them."""
        inbox = mark(HumanMessage("inbox: please hurry"), "inbox", notice=True)
        wide = [
            ai_step([("a", {}), ("b", {}), ("c", {})], 50, mirror="both"),
            *[ToolMessage("x " * 200, tool_call_id=f"call_{50 + i}") for i in range(3)],
        ]
        now = task(2)
        msgs = [SYSTEM, now[0], *wide, inbox, *now[1:]]
        out = rewrite(msgs, target=0, counter=COUNT).messages
        # the wide step (calls 1-3), the notice, the task's older step (call 4)
        assert out == [SYSTEM, now[0], note(len(wide) + 1 + 2, [1, 4]), *now[3:]]
        assert check_tool_pairs(out) == []

    def test_layout_protects_from_the_newest_steps_and_splits_history_at_real_user_messages(self):
        """The layout names history turns, task units and where protection starts."""
        t1, now = turn(1), task(3)
        parts = layout([SYSTEM, note(3), *t1, *now], keep_steps=1)
        anchor = 2 + len(t1)
        assert (parts.system, parts.anchor) == (1, anchor)
        assert parts.history == (range(1, 2), range(2, anchor))
        assert parts.task == (range(anchor + 1, anchor + 3), range(anchor + 3, anchor + 5))
        assert parts.protected_from == anchor + 5


class TestSlidingWindowStrategy:
    def test_get_strategy_builds_it_with_the_max_tokens_setting(self, monkeypatch):
        """On its own the window aims at PROMPTSTRAT_MAX_TOKENS, read when the strategy is
        built."""
        msgs = [SYSTEM, *turn(1), *turn(2), *task(1)]
        monkeypatch.setenv("PROMPTSTRAT_MAX_TOKENS", "1")
        result = get_strategy("sliding_window").compact(msgs)
        # all but system, the run's task and the current turn's 3: both turns' calls, 1-4
        assert result.messages == [SYSTEM, msgs[1], note(len(msgs) - 5, [1, 4]), *msgs[-3:]]
        assert result.report.details["met"] is False
        assert get_strategy("sliding_window", max_tokens=COUNT(msgs)).invoke(msgs) == msgs

    def test_the_note_is_a_marked_notice_never_an_anchor(self):
        """The note is a user-role message marked as the window's note, so no strategy takes it for
        the user."""
        n = note(3)
        assert mark_of(n) == {
            "kind": NOTE_KIND,
            "notice": True,
            "strategy": "sliding_window",
            "dropped": 3,
        }
        assert not is_real_user_message(n) and "3 earlier messages" in n.content

    def test_the_note_names_the_calls_that_went_and_how_to_read_them_back(self):
        """A note standing for dropped calls names them as one range and the tool, and its mark
        keeps the range, so a later note that drops it names them too."""
        n = note(24, [1, 10])
        mark = {"kind": NOTE_KIND, "notice": True, "strategy": "sliding_window", "dropped": 24}
        assert mark_of(n) == {**mark, "calls": [1, 10]}
        named = ("24 earlier messages", "calls 1-10", "read_back(call=N)")
        assert all(words in n.content for words in named)

    @settings(max_examples=60, deadline=None)
    @given(dropped=st.integers(1, 9_999), first=st.integers(1, 999), length=st.integers(0, 999))
    def test_naming_the_calls_costs_no_more_tokens_than_the_note_without_them(
        self, dropped, first, length
    ):
        """How to read the calls back takes the room of the advice to go on without them: the
        window frees as much as before."""
        with_calls = COUNT.count_message(note(dropped, [first, first + length]))
        assert with_calls <= COUNT.count_message(note(dropped))

    def test_with_handles_off_the_note_names_no_call_and_no_tool(self):
        """For an agent without read_back, the note says the messages cannot be recovered and
        names nothing to call."""
        t1, t2, now = turn(1), turn(2), task(2)
        out = rewrite([SYSTEM, *t1, *t2, *now], target=0, counter=COUNT, handles=False).messages
        (window_note,) = [m for m in out if kind_of(m) == NOTE_KIND]
        assert window_note == note(mark_of(window_note)["dropped"])
        assert "cannot be recovered" in window_note.content
        assert "read_back" not in window_note.content and "calls" not in mark_of(window_note)

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        conversation=agent_conversations(max_calls=30),
        share=st.floats(0, 1.1),
        keep_steps=st.integers(1, 3),
    )
    def test_pure_pairs_intact_one_note_and_the_floor_never_given_up(
        self, conversation, share, keep_steps
    ):
        """Input untouched, pairs intact, at most one note, system block, anchor and newest steps
        kept, under target unless at the floor."""
        window = SlidingWindow(
            max_tokens=int(COUNT(conversation) * share), keep_steps=keep_steps, token_counter=COUNT
        )
        before = snapshot(conversation)
        out = window.invoke(conversation)
        assert snapshot(conversation) == before and window.invoke(conversation) == out
        assert check_tool_pairs(out) == []
        assert sum(kind_of(m) == NOTE_KIND for m in out) <= 1
        parts = layout(conversation, keep_steps, keep_task=True)
        kept = [i for i in (parts.run_task, parts.anchor) if i is not None]
        floor = (
            conversation[: parts.system]
            + [conversation[i] for i in kept]
            + conversation[parts.protected_from :]
        )
        assert [m for m in out if kind_of(m) != NOTE_KIND][: parts.system] == floor[: parts.system]
        assert all(any(m is k for k in out) for m in floor)
        if COUNT(out) > window.max_tokens and out != conversation:
            assert [m for m in out if kind_of(m) != NOTE_KIND] == floor
