"""Specification of ``inbox_pickup``: a custom loop takes the notices, calls its model, then
acknowledges.

``prepare_prompt`` acknowledges at once (at most once); a loop that stores its own
conversation gets exactly once through the two phases. The kill test of this shape is the
``two-phase`` mode of ``tests/test_inbox_reliability.py``.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_promptstrat import InboxAborted, inbox_pickup
from langchain_promptstrat.inbox.directory import DirectoryInbox


@pytest.fixture
def save_file(tmp_path):
    return tmp_path / "agent.chat"


@pytest.fixture
def store(save_file):
    return DirectoryInbox.for_save_file(save_file)


HISTORY = [HumanMessage("task", id="h1")]


def test_a_model_call_that_raises_acknowledges_nothing_and_the_notice_comes_back_under_its_id(
    save_file, store
):
    """The model failed: the notice reached no answer, so the next pickup must hand it over again,
    same id."""
    store.post("use the staging database", name="a.txt")
    with (
        pytest.raises(RuntimeError),
        inbox_pickup(HISTORY, ["inbox"], save_file=save_file) as pickup,
    ):
        first = pickup.notices
        assert [m.content for m in pickup.messages] == ["task", "use the staging database"]
        raise RuntimeError("model unavailable")
    assert store.delivered_entries() == [] and [lease.name for lease in store.in_flight()] == [
        "a.txt"
    ]
    with inbox_pickup(HISTORY, ["inbox"], save_file=save_file) as pickup:
        assert [m.id for m in pickup.notices] == [m.id for m in first]
        assert pickup.acknowledge() == 1
    assert store.in_flight() == [] and [e.name for e in store.delivered_entries()] == ["a.txt"]


def test_a_notice_the_stored_conversation_holds_is_acknowledged_not_delivered_again(
    save_file, store
):
    """The loop stored the answer with the notice and died before acknowledging: the next pickup
    finds the notice's id in the conversation and records it, so the stored conversation never holds
    it twice."""
    store.post("use the staging database", name="a.txt")
    with inbox_pickup(HISTORY, ["inbox"], save_file=save_file) as pickup:
        stored = [
            *HISTORY,
            *pickup.notices,
            AIMessage("ok", id="a1"),
        ]  # saved; then the process dies
    assert [lease.name for lease in store.in_flight()] == ["a.txt"]
    with inbox_pickup(stored, ["inbox"], save_file=save_file) as pickup:
        assert pickup.notices == [] and [m.id for m in pickup.messages] == [m.id for m in stored]
    assert store.in_flight() == [] and [e.name for e in store.delivered_entries()] == ["a.txt"]


def test_an_abort_raises_and_the_notices_before_it_come_back_at_the_next_pickup(save_file, store):
    """An abort stops the loop before its model call; what sorted before it was not answered, so it
    is not lost."""
    store.post("first", name="a.txt")
    store.request_abort("stop now")
    with (
        pytest.raises(InboxAborted, match="stop now"),
        inbox_pickup(HISTORY, ["inbox"], save_file=save_file),
    ):
        pytest.fail("the block must not run")  # pragma: no cover
    with inbox_pickup(HISTORY, ["inbox"], save_file=save_file) as pickup:
        assert [m.content for m in pickup.notices] == ["first"]
        pickup.acknowledge()
    assert sorted(e.name for e in store.delivered_entries()) == ["a.txt", "abort"]


def test_without_an_inbox_strategy_there_is_no_pickup(save_file, store):
    """The strategies decide: without 'inbox' the prompt is the strategies' output and nothing is
    claimed."""
    store.post("first", name="a.txt")
    with inbox_pickup(HISTORY, ["none"], save_file=save_file) as pickup:
        assert pickup.notices == [] and pickup.acknowledge() == 0
    assert store.pending() == ["a.txt"]
