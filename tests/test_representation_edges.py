"""Pairs at representation edges: calls recorded only in invalid_tool_calls, and Anthropic
tool_result blocks in a user message."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conversations import agent_conversations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from test_contract import TIGHT

from langchain_promptstrat import check_tool_pairs, get_strategy, prepare_prompt
from langchain_promptstrat.messages import (
    find_tool_pair_violations,
    tool_call_ids,
    tool_results_as_tool_messages,
)
from langchain_promptstrat.registry import BUILTIN_STRATEGIES

BUILT_IN = sorted(set(BUILTIN_STRATEGIES) - {"summary"})


def invalid_call_step(call_id: str, output: str = "x" * 3000) -> list[BaseMessage]:
    """A step whose only call did not parse: recorded in invalid_tool_calls alone, answered by a
    ToolMessage."""
    ai = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "type": "invalid_tool_call",
                "id": call_id,
                "name": "run_shell",
                "args": '{"cmd": "ls',
                "error": "bad JSON",
            }
        ],
    )
    return [ai, ToolMessage(output, tool_call_id=call_id, name="run_shell")]


def valid_step(call_id: str, output: str = "y" * 3000) -> list[BaseMessage]:
    return [
        AIMessage(
            content="",
            tool_calls=[{"id": call_id, "name": "read_file", "args": {"path": f"/{call_id}"}}],
        ),
        ToolMessage(output, tool_call_id=call_id, name="read_file"),
    ]


def anthropic_results(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Return ``messages`` with every run of ToolMessages written as one user message of tool_result
    blocks (raw Anthropic)."""
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            if (
                out
                and isinstance(out[-1], HumanMessage)
                and isinstance(out[-1].content, list)
                and out[-1].content
                and out[-1].content[-1].get("type") == "tool_result"
            ):
                out[-1] = HumanMessage(content=[*out[-1].content, block])
            else:
                out.append(HumanMessage(content=[block]))
        else:
            out.append(message)
    return out


def violations(messages) -> Counter:
    return Counter((v.kind, v.call_id) for v in find_tool_pair_violations(messages))


class TestInvalidToolCalls:
    def test_a_call_recorded_only_as_invalid_is_a_call(self):
        """check_tool_pairs sees an invalid call without its output (langchain-openai would send it
        as a call)."""
        ai = invalid_call_step("call_bad")[0]
        assert tool_call_ids(ai) == ["call_bad"]
        assert check_tool_pairs([HumanMessage("go"), ai, HumanMessage("next")]) == [
            "message 1 (ai): call 'call_bad' has no output"
        ]

    @pytest.mark.parametrize(
        "name", ["shorten_tools", "shorten_tools_epoch_stable", "sliding_window", "tool_results"]
    )
    def test_dropping_its_output_drops_the_invalid_call_too(self, name):
        """When a strategy drops the output of an invalid call, the AIMessage no longer records the
        call."""
        conversation: list[BaseMessage] = [HumanMessage("go")]
        for i in range(40):
            conversation += invalid_call_step(f"bad_{i}") if i % 3 == 0 else valid_step(f"ok_{i}")
        out = get_strategy(name, TIGHT).invoke(conversation)
        kept_outputs = {m.tool_call_id for m in out if isinstance(m, ToolMessage)}
        recorded = {cid for m in out if isinstance(m, AIMessage) for cid in tool_call_ids(m)}
        assert recorded == kept_outputs
        assert check_tool_pairs(out) == []


class TestAnthropicToolResultBlocks:
    def conversation(self) -> list[BaseMessage]:
        steps: list[BaseMessage] = [HumanMessage("go")]
        for i in range(40):
            steps += valid_step(f"toolu_{i}")
        return anthropic_results(steps)

    def test_check_tool_pairs_matches_a_tool_use_with_its_tool_result_block(self):
        """A tool_result block in the next user message answers its call: no violation."""
        assert check_tool_pairs(self.conversation()) == []

    def test_blocks_become_tool_messages_then_the_rest_of_the_user_message(self):
        """Each tool_result block becomes a ToolMessage, in order; other blocks stay in a user
        message after them."""
        human = HumanMessage(
            content=[
                {"type": "tool_result", "tool_use_id": "a", "content": "A"},
                {"type": "text", "text": "also, hurry"},
                {
                    "type": "tool_result",
                    "tool_use_id": "b",
                    "content": [{"type": "text", "text": "B"}],
                    "is_error": True,
                },
            ]
        )
        out = tool_results_as_tool_messages([human])
        assert [(type(m).__name__, getattr(m, "tool_call_id", None)) for m in out] == [
            ("ToolMessage", "a"),
            ("ToolMessage", "b"),
            ("HumanMessage", None),
        ]
        assert out[1].status == "error" and out[2].content == [
            {"type": "text", "text": "also, hurry"}
        ]

    @pytest.mark.parametrize(
        "name",
        ["sliding_window", "shorten_tools_epoch", "shorten_tools_epoch_stable", "shorten_tools"],
    )
    def test_strategies_keep_pairs_on_a_raw_anthropic_transcript(self, name):
        """No result is kept after its call is dropped, and no notice lands between a tool_use and
        its result."""
        out = prepare_prompt(self.conversation(), [get_strategy(name, TIGHT)])
        assert check_tool_pairs(out) == []
        assert not any(isinstance(m, HumanMessage) and isinstance(m.content, list) for m in out)


@pytest.mark.parametrize("name", BUILT_IN)
class TestEdgeProperties:
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(conversation=agent_conversations(max_calls=25), data=st.data())
    def test_invalid_calls_keep_pairs(self, name, conversation, data):
        """With any calls moved to invalid_tool_calls, every output the strategy keeps has its call,
        and vice versa."""
        edged: list[BaseMessage] = []
        for message in conversation:
            if isinstance(message, AIMessage) and message.tool_calls and data.draw(st.booleans()):
                bad = message.tool_calls[0]
                message = message.model_copy(
                    update={
                        "tool_calls": message.tool_calls[1:],
                        "invalid_tool_calls": [
                            {
                                "type": "invalid_tool_call",
                                "id": bad["id"],
                                "name": bad["name"],
                                "args": json.dumps(bad["args"])[:-1],
                                "error": "cut",
                            }
                        ],
                    }
                )
            edged.append(message)
        out = get_strategy(name, TIGHT).invoke(edged)
        assert not violations(out) - violations(edged)

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(conversation=agent_conversations(max_calls=25))
    def test_tool_result_blocks_keep_pairs(self, name, conversation):
        """Written as raw Anthropic tool_result blocks, the conversation keeps its pairs through
        every strategy."""
        raw = anthropic_results(conversation)
        assert violations(raw) == violations(conversation)
        out = prepare_prompt(raw, [get_strategy(name, TIGHT)])
        assert not violations(out) - violations(conversation)
