"""Boundaries the rest of the suite let slip: each test here fails on a mutant that survived it."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_promptstrat import CompactionLadder, Settings
from langchain_promptstrat.strategies.epoch import shorten_tools_epoch
from langchain_promptstrat.strategies.epoch_machinery.frozen_region import increment_schedule
from langchain_promptstrat.strategies.ladder_machinery.rungs import Rewrite, Rung
from langchain_promptstrat.strategies.shorten_tools import shorten_tools
from langchain_promptstrat.strategies.summary import Summary
from langchain_promptstrat.testing import ScriptedChatModel, build_agent_run
from langchain_promptstrat.tokens import TokenCounter


def chars(messages: Sequence[BaseMessage]) -> int:
    """A token counter that is the characters of the contents: easy to make two prompts cost the
    same."""
    return sum(len(str(m.content)) for m in messages)


class SameSize(Rung):
    """A rung whose rewrite costs exactly what it was given (it swaps the last message's text for
    another as long)."""

    strategy_name = "same_size"

    def plan(self, messages, *, max_tokens, counter):  # type: ignore[no-untyped-def]
        yield from ()
        last = messages[-1]
        return Rewrite([*messages[:-1], HumanMessage("z" * len(str(last.content)))], {})


def test_the_ladder_never_takes_a_rung_that_did_not_shrink_the_prompt():
    """A rewrite as large as its input is not taken: the prompt comes back unchanged, the rung
    marked not_smaller."""
    messages = [HumanMessage("first question"), AIMessage("an answer"), HumanMessage("abc")]
    result = CompactionLadder([SameSize()], max_tokens=1, token_counter=chars).compact(messages)
    assert result.messages == messages
    assert [a["outcome"] for a in result.report.details["asked"]] == ["not_smaller"]


def test_summary_takes_the_earlier_turns_before_the_current_task_s_steps():
    """With both available, the first summary replaces the earlier turns (tier "turns"), not the
    task's steps."""
    # the run's task (the first real user message) is never summarised: the earlier turn follows it
    messages: list[BaseMessage] = [HumanMessage("the run's task"), HumanMessage("question 1")]
    for c in range(3):
        messages += [
            AIMessage(
                "", tool_calls=[{"id": f"old_{c}", "name": "search", "args": {"q": f"old {c}"}}]
            ),
            ToolMessage("old result " * 40, tool_call_id=f"old_{c}", name="search"),
        ]
    messages += [AIMessage("answer 1"), HumanMessage("current task")]
    for c in range(4):
        messages += [
            AIMessage(
                "", tool_calls=[{"id": f"new_{c}", "name": "search", "args": {"q": f"new {c}"}}]
            ),
            ToolMessage("new result " * 40, tool_call_id=f"new_{c}", name="search"),
        ]
    model = ScriptedChatModel(["s"] * 10)
    result = Summary(model, max_tokens=0, token_counter=TokenCounter("cl100k_base")).compact(
        messages
    )
    rounds = result.report.details["asked"][0]["rounds"]
    assert rounds[0]["tier"] == "turns"
    first_prompt = str(model.calls[0][-1].content)
    assert "question 1" in first_prompt and "current task" not in first_prompt


def test_shorten_tools_counts_argument_sizes_toward_max_tool_chars():
    """Large arguments with tiny outputs exhaust max_tool_chars: old calls get shortened although
    the outputs alone fit."""
    messages: list[BaseMessage] = [HumanMessage("go")]
    for c in range(12):
        messages += [
            AIMessage(
                "", tool_calls=[{"id": f"c{c}", "name": "write_file", "args": {"text": "a" * 1000}}]
            ),
            ToolMessage("ok", tool_call_id=f"c{c}", name="write_file"),
        ]
    settings = Settings(
        full_tool_calls=0, full_tool_outputs=0, max_tool_calls=100, max_tool_chars=3000
    )
    result = shorten_tools(messages, settings=settings)
    assert result.report.shortened > 0
    assert (
        sum(
            len(str(c["args"]["text"]))
            for m in result.messages
            if isinstance(m, AIMessage)
            for c in m.tool_calls
        )
        < 12 * 1000
    )


INCREMENT = Settings(
    epoch_tool_call_threshold=5,
    epoch_size=3,
    epoch_increment_epochs_per_increase=1,
    epoch_increment_size_increase=2,
    epoch_increment_repeat_increase=4,
    epoch_increment_max_size=9,
    epoch_compacted_tool_calls=4,
    epoch_increment_max_compacted_tool_calls=6,
    epoch_full_tool_calls=2,
)


def test_the_increment_schedule_never_exceeds_max_size_without_repeats():
    """Epochs grow by size_increase but never past epoch_increment_max_size, however long the
    run."""
    sizes = {increment_schedule(total, [], INCREMENT).epoch_size for total in range(6, 400)}
    assert max(sizes) == 9


def test_a_repeat_never_extends_an_epoch_past_max_size():
    """An epoch already at max_size that holds a repeat stays at max_size."""
    repeats = list(range(1, 400))
    sizes = {increment_schedule(total, repeats, INCREMENT).epoch_size for total in range(6, 400)}
    assert max(sizes) == 9


def test_the_compacted_window_never_exceeds_its_maximum():
    """The window grows with the epoch but is capped at epoch_increment_max_compacted_tool_calls."""
    windows = {increment_schedule(total, [], INCREMENT).compacted_window for total in range(6, 400)}
    assert max(windows) == 6


def test_protected_calls_are_not_counted_as_shortened():
    """The report's shortened count is the outputs really shortened; calls kept whole by repeat
    protection are not in it."""
    messages = build_agent_run(
        300, seed=4, repeat_rate=0.3, output_bytes=(1_000, 5_000)
    )  # every shortening shows
    result = shorten_tools_epoch(messages, settings=Settings())
    by_id = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    changed = sum(
        1
        for m in result.messages
        if isinstance(m, ToolMessage) and m.content != by_id[m.tool_call_id].content
    )
    assert result.report.protected > 0
    assert result.report.shortened == changed
