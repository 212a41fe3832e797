"""The default's replay as a value a front end carries in the graph state (``CarriedReplay``).

A conversation a process meets for the first time (a server worker, a restart) resumes from
the value the previous model call left in the checkpoint instead of replaying every model
call of its history, and gets the very prompt and report a full replay gives. A value that
does not describe the history (edited, another ceiling or setting, garbage) is replayed
from the first message, never trusted.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    messages_from_dict,
    messages_to_dict,
)

import langchain_promptstrat.strategies.epoch_stable as epoch_stable
from langchain_promptstrat.strategies.epoch_stable import CarriedReplay, ShortenToolsEpochStable
from langchain_promptstrat.strategy import PromptRequest
from langchain_promptstrat.testing import iter_agent_run

CEILING = 12_000


@pytest.fixture
def rule_steps(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Count the rule's steps (one per model call replayed)."""
    count = [0]
    advance = epoch_stable.advance

    def counting(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return advance(*args, **kwargs)

    monkeypatch.setattr(epoch_stable, "advance", counting)
    yield count


def reloaded(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Return ``messages`` as a checkpoint gives them back: equal, new objects."""
    return messages_from_dict(messages_to_dict(messages))


def as_stored(value: Any) -> Any:
    """Return ``value`` as it comes back from a checkpoint written as JSON."""
    return json.loads(json.dumps(value))


def prompts(calls: int = 160, seed: int = 0) -> list[list[BaseMessage]]:
    return [list(p) for p in iter_agent_run(calls, seed=seed)]


def compact(
    history: list[BaseMessage], carried: CarriedReplay | None = None, **options: Any
) -> Any:
    """Return a new strategy object's result (nothing remembered from an earlier call)."""
    return ShortenToolsEpochStable(max_tokens=options.pop("max_tokens", CEILING), **options).apply(
        reloaded(history), PromptRequest(carried=carried)
    )


def same(a: Any, b: Any) -> bool:
    return bool(
        messages_to_dict(a.messages) == messages_to_dict(b.messages)
        and a.report.as_dict() == b.report.as_dict()
    )


RUN = prompts()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    earlier=st.integers(min_value=1, max_value=len(RUN) - 2),
    later=st.integers(min_value=1, max_value=len(RUN) - 1),
)
def test_a_call_resumed_from_a_carried_value_gets_the_prompt_and_report_of_a_full_replay(
    earlier: int, later: int
) -> None:
    """Any earlier call's value, stored as JSON, resumes a later call to the same bytes a replay
    from the first message gives."""
    earlier, later = min(earlier, later), max(earlier, later)
    carried = CarriedReplay()
    compact(RUN[earlier], carried)
    assert carried.value is not None
    resumed = CarriedReplay(as_stored(carried.value))
    assert same(compact(RUN[later], resumed), compact(RUN[later]))
    assert resumed.value is not None and resumed.value["length"] >= carried.value["length"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.integers(min_value=1, max_value=len(RUN[-1]) - 1))
def test_a_value_stored_for_any_cut_of_the_history_never_changes_a_later_call(cut: int) -> None:
    """A value left by a call on any prefix (one ending on an assistant message whose outputs are
    still to come included) gives a later call the bytes of a full replay: resumed only where a
    replay may resume, at a call point."""
    carried = CarriedReplay()
    compact(RUN[-1][:cut], carried)
    assert same(compact(RUN[-1], CarriedReplay(as_stored(carried.value))), compact(RUN[-1]))


def test_a_resumed_call_replays_only_the_model_calls_after_the_carried_value(
    rule_steps: list[int],
) -> None:
    """A process meeting the conversation for the first time does the rule's work of the new calls
    only."""
    carried = CarriedReplay()
    compact(RUN[-2], carried)
    rule_steps[0] = 0
    compact(RUN[-1], CarriedReplay(as_stored(carried.value)))
    resumed = rule_steps[0]
    rule_steps[0] = 0
    compact(RUN[-1])
    assert resumed <= 2 < rule_steps[0]


def test_a_history_edited_behind_the_carried_value_is_replayed_from_the_first_message(
    rule_steps: list[int],
) -> None:
    """Changing one early output (as ``add_messages`` does when a message with the same id is
    written again) voids the value."""
    carried = CarriedReplay()
    compact(RUN[-2], carried)
    edited = reloaded(RUN[-1])
    k = next(i for i, m in enumerate(edited) if m.type == "tool")
    edited[k] = edited[k].model_copy(update={"content": "edited"})
    rule_steps[0] = 0
    result = compact(edited, CarriedReplay(as_stored(carried.value)))
    assert rule_steps[0] > 2
    assert same(result, compact(edited))


def with_text_only_answers(history: list[BaseMessage]) -> list[BaseMessage]:
    """Return ``history`` with a text-only answer before each step: the model called again after it,
    two assistant messages in a row."""
    out: list[BaseMessage] = []
    for m in history:
        if m.type == "ai" and getattr(m, "tool_calls", None):
            out.append(AIMessage(f"Next I look at step {len(out)}. " + "I weigh what I saw. " * 40))
        out.append(m)
    return out


def test_a_value_carried_past_a_text_answer_resumes_a_retry_to_a_full_replays_bytes() -> None:
    """A call sent again with a user message added resumes from the value its first try left, whose
    previous call ended in two assistant messages.

    The value holds the previous call's edges, which the report compares against: a resumed
    call must not report another prefix change than a replay from the first message.
    """
    history = with_text_only_answers(RUN[-1])
    ends = [
        i for i, m in enumerate(history) if m.type == "ai" and i and history[i - 1].type == "tool"
    ]  # before a text-only answer
    moved = 0
    for at in ends[len(ends) // 3 :: 3]:
        carried = CarriedReplay()
        compact(history[:at], carried)
        retry = [*history[:at], HumanMessage("Also check the logs.")]
        result = compact(retry, CarriedReplay(as_stored(carried.value)))
        assert same(result, compact(retry))
        moved += bool(
            result.report.details["boundary_moved"] or result.report.details["front_moved"]
        )
    assert moved  # calls whose report compares with the previous call's edges


@pytest.mark.parametrize(
    "change",
    [{"max_tokens": CEILING + 1_000}, {"stable_epoch_size": 40}, {"stable_read_output_chars": 0}],
)
def test_a_value_computed_under_another_ceiling_or_setting_is_not_resumed(
    change: dict[str, Any], rule_steps: list[int]
) -> None:
    """The value names the budget, settings, counter and package version it was computed with."""
    carried = CarriedReplay()
    compact(RUN[-2], carried)
    rule_steps[0] = 0
    result = compact(RUN[-1], CarriedReplay(as_stored(carried.value)), **change)
    assert rule_steps[0] > 2
    assert same(result, compact(RUN[-1], **change))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=12), inner, max_size=6)
    ),
    max_leaves=30,
)


@settings(max_examples=60, deadline=None)
@given(garbage=json_values)
def test_a_garbage_carried_value_is_ignored_without_an_exception(garbage: Any) -> None:
    """Whatever a checkpoint holds under the key, the call gives the full replay's result."""
    assert same(compact(RUN[40], CarriedReplay(garbage)), compact(RUN[40]))


FIELDS = ["length", "digest", "steps", "edges", "previous", "fingerprint", "format", "check"]
"""The fields of a carried value."""


@settings(max_examples=40, deadline=None)
@given(field=st.sampled_from(FIELDS), junk=json_values)
def test_a_carried_value_with_one_field_spoiled_is_never_trusted(field: str, junk: Any) -> None:
    """A real value with any one field replaced gives the full replay's result, or the same bytes
    when the field did not matter."""
    carried = CarriedReplay()
    compact(RUN[60], carried)
    spoiled = {**as_stored(carried.value), field: junk}
    assert same(compact(RUN[80], CarriedReplay(spoiled)), compact(RUN[80]))


def test_a_carried_previous_call_changed_in_storage_is_not_trusted() -> None:
    """A value whose previous call's edges were changed, still well formed, is not resumed.

    A retry (the same history and a user message) takes the previous call's edges from the
    value: trusted unchecked, they would make the report compare with a call that never was.
    """
    moved = next(k for k in range(20, len(RUN)) if compact(RUN[k]).report.details["boundary_moved"])
    carried = CarriedReplay()
    compact(RUN[moved], carried)
    value = as_stored(carried.value)
    value["previous"] = [value["edges"], value["previous"][1]]  # this call's edges, as the last's
    retry = [*RUN[moved], HumanMessage("Also check the logs.")]
    assert compact(retry).report.details["boundary_moved"]
    assert same(compact(retry, CarriedReplay(value)), compact(retry))


def test_without_a_carried_value_a_call_still_leaves_one() -> None:
    """The first call of a conversation (nothing carried yet) sets the value the next one resumes
    from."""
    carried = CarriedReplay()
    compact(RUN[10], carried)
    assert carried.value is not None and carried.value["length"] <= len(RUN[10])


# ---- the middleware on a real SQLite checkpointer ----------------------------------------


def run_agent(path: Path, model: Any, message: str, rule_steps: list[int]) -> tuple[Any, int]:
    """Build everything again on the checkpoint file (a restarted process), send ``message``, return
    the state and the rule's steps."""
    langchain_agents = pytest.importorskip("langchain.agents")
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langchain_promptstrat import PromptStrategyMiddleware
    from langchain_promptstrat.testing import make_sized_tool

    config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 400}
    with sqlite3.connect(path, check_same_thread=False) as conn:
        agent = langchain_agents.create_agent(
            model,
            [make_sized_tool("fetch", sizes=(300, 6_000))],
            system_prompt="You fetch things.",
            middleware=[PromptStrategyMiddleware(max_tokens=CEILING)],
            checkpointer=SqliteSaver(conn),
        )
        rule_steps[0] = 0
        agent.invoke({"messages": [HumanMessage(message, id=f"user-{len(message)}")]}, config)
        return agent.get_state(config).values, rule_steps[0]


def test_the_middleware_resumes_a_thread_from_its_checkpointed_replay_after_a_restart(
    tmp_path: Path, rule_steps: list[int]
) -> None:
    """After a restart the middleware's first call resumes from the state's replay and sends the
    bytes a full replay sends."""
    from langchain_promptstrat.adapters.middleware import REPLAY_KEY
    from langchain_promptstrat.testing import ScriptedChatModel

    path = tmp_path / "checkpoints.sqlite"
    state, _ = run_agent(
        path, ScriptedChatModel.long_run(90, parallel=2, seed=3), "Fetch everything.", rule_steps
    )
    assert len(state["messages"]) > 130
    assert (
        state[REPLAY_KEY]["length"] > 120
    )  # the replay of the run's last model call, in the checkpoint
    copy = tmp_path / "without-replay.sqlite"
    with (
        sqlite3.connect(path) as source,
        sqlite3.connect(copy) as target,
    ):  # the backup API: a file copy would miss the WAL
        source.backup(target)
    with sqlite3.connect(
        copy
    ) as conn:  # the same thread as a version without the carried value left it
        from langchain.agents import create_agent
        from langgraph.checkpoint.sqlite import SqliteSaver

        from langchain_promptstrat import PromptStrategyMiddleware

        agent = create_agent(
            ScriptedChatModel([]),
            [],
            middleware=[PromptStrategyMiddleware()],
            checkpointer=SqliteSaver(conn),
        )
        agent.update_state({"configurable": {"thread_id": "t"}}, {REPLAY_KEY: None})

    resumed_model, full_model = ScriptedChatModel(["Done."]), ScriptedChatModel(["Done."])
    _, resumed_steps = run_agent(path, resumed_model, "Now summarise.", rule_steps)
    _, full_steps = run_agent(copy, full_model, "Now summarise.", rule_steps)
    assert messages_to_dict(resumed_model.calls[0]) == messages_to_dict(full_model.calls[0])
    assert resumed_steps <= 2 < full_steps
