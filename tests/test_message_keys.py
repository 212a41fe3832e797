"""Specification of the message keys every memo of a history is found by: what a message is, not
which object holds it."""

from __future__ import annotations

import gc
import weakref

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)

from langchain_promptstrat.messages.history_memo import message_key, message_keys
from langchain_promptstrat.testing import iter_agent_run


def reloaded(messages: list[BaseMessage]) -> list[BaseMessage]:
    return messages_from_dict(messages_to_dict(messages))


POOL: list[BaseMessage] = [
    SystemMessage("rules"),
    HumanMessage("task", id="h1"),
    AIMessage(
        "",
        id="a1",
        tool_calls=[{"id": "c1", "name": "read", "args": {"path": "a.py", "lines": [1, 2]}}],
    ),
    ToolMessage("print(1)", tool_call_id="c1", id="t1"),
    AIMessage([{"type": "text", "text": "blocks"}], id="a2"),
    ToolMessage("x" * 300, tool_call_id="c2", name="grep", id="t2"),
]


def test_equal_messages_loaded_again_have_the_keys_of_the_originals() -> None:
    """A checkpoint gives back equal new objects; their keys must be the ones the memos
    remembered."""
    prompt = list(iter_agent_run(30, seed=1))[-1]
    assert (
        message_keys(reloaded(prompt)) == message_keys(prompt) == [message_key(m) for m in prompt]
    )


def test_a_message_changed_under_the_same_id_has_another_key() -> None:
    """LangGraph replaces a message by id, and a human may edit a call's arguments: neither may be
    taken for the old message."""
    ai = POOL[2]
    edited = ai.model_copy(
        update={
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "read",
                    "args": {"path": "b.py", "lines": [1, 2]},
                    "type": "tool_call",
                }
            ]
        }
    )
    rewritten = POOL[3].model_copy(update={"content": "print(2)"})
    renamed = POOL[5].model_copy(update={"name": "find"})
    assert len({message_key(m) for m in (ai, edited)}) == 2
    assert len({message_key(m) for m in (POOL[3], rewritten)}) == 2
    assert len({message_key(m) for m in (POOL[5], renamed)}) == 2
    assert message_key(HumanMessage("task", id="h1")) != message_key(AIMessage("task", id="h1"))


def test_a_field_replaced_on_a_remembered_object_gives_its_new_key() -> None:
    """The keys of a list are remembered for the objects; a replaced ``content`` or ``tool_calls``
    must be keyed again."""
    tool = ToolMessage("old", tool_call_id="c1")
    ai = AIMessage("", tool_calls=[{"id": "c1", "name": "read", "args": {"path": "a.py"}}])
    messages = [HumanMessage("task"), ai, tool]
    first = message_keys(messages)
    tool.content = "new"
    ai.tool_calls = [{"id": "c1", "name": "read", "args": {"path": "b.py"}, "type": "tool_call"}]
    again = message_keys([*messages, HumanMessage("next")])
    assert again[:3] == [message_key(m) for m in messages] and again[1:3] != first[1:3]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.integers(0, len(POOL) - 1), st.sampled_from(["same", "reloaded", "edited"])
            ),
            max_size=12,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_the_keys_of_any_list_are_those_computed_one_message_at_a_time(
    lists: list[list[tuple[int, str]]],
) -> None:
    """Whatever was keyed before (the same objects, equal copies, edited ones, in any order), a
    remembered key equals a computed one."""
    copies = reloaded(POOL)
    for picks in lists:
        messages: list[BaseMessage] = []
        for i, how in picks:
            if how == "same":
                messages.append(POOL[i])
            elif how == "reloaded":
                messages.append(copies[i])
            else:
                messages.append(POOL[i].model_copy(update={"content": f"edited {len(messages)}"}))
        assert message_keys(messages) == [message_key(m) for m in messages]


def test_keying_a_conversation_keeps_none_of_its_messages_alive() -> None:
    """A server keys thousands of conversations: once one is dropped, nothing the keys remembered
    may hold its messages."""
    messages: list[BaseMessage] = reloaded(list(iter_agent_run(20, seed=2))[-1])
    message_keys(messages)
    message_keys([*messages, HumanMessage("next")])
    watched = [weakref.ref(m) for m in messages]
    del messages
    gc.collect()
    assert [r for r in watched if r() is not None] == []
