"""Specification of the message model: input forms, positions, steps, turns, edits, pair checks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conversations import ai_step, as_ai, blocks, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.prompt_values import ChatPromptValue

from langchain_promptstrat import InvalidMessagesError, check_tool_pairs
from langchain_promptstrat.messages import (
    ToolIndex,
    coerce_messages,
    drop_tool_call,
    edit_ai_message,
    index_tool_calls,
    is_real_user_message,
    mark,
    shorten_tool_call,
    shorten_tool_output,
    split_steps,
    split_turns,
    tool_call_ids,
)
from langchain_promptstrat.tokens import TokenCounter
from langchain_promptstrat.truncation import shorten_string

LONG = "L" * 1000


@pytest.fixture
def parallel_run() -> list[BaseMessage]:
    """A task, a step with two parallel calls, a user message, then a step with one call."""
    return [
        SystemMessage("sys"),
        HumanMessage("task"),
        ai_step([("search", {"q": "a"}), ("read_file", {"path": "b"})], 0, mirror="plain"),
        ToolMessage("out0", tool_call_id="call_0"),
        ToolMessage("out1", tool_call_id="call_1"),
        HumanMessage("more"),
        ai_step([("search", {"q": "c"})], 2, mirror="plain"),
        ToolMessage("out2", tool_call_id="call_2"),
    ]


class TestCoerceMessages:
    def test_dicts_and_tuples_become_messages(self) -> None:
        """Dicts and (role, content) tuples are read as LangChain messages."""
        out = coerce_messages([("system", "s"), {"role": "user", "content": "hi"}])
        assert [type(m) for m in out] == [SystemMessage, HumanMessage]

    def test_openai_assistant_dict_keeps_its_tool_calls(self) -> None:
        """An OpenAI-format assistant dict with tool_calls becomes an AIMessage with those calls."""
        out = coerce_messages(
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"x": 1}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
            ]
        )
        assert as_ai(out[0]).tool_calls[0]["args"] == {"x": 1} and check_tool_pairs(out) == []

    def test_prompt_value_is_unpacked(self) -> None:
        """A PromptValue (what a prompt template produces) is read as its messages."""
        value = ChatPromptValue(messages=[HumanMessage("x")])
        assert coerce_messages(value) == [HumanMessage("x")]

    def test_unreadable_item_names_its_position(self) -> None:
        """An item that is no message raises InvalidMessagesError naming its index."""
        with pytest.raises(InvalidMessagesError, match="message 1"):
            coerce_messages([HumanMessage("ok"), {"role": "wizard", "content": "?"}])

    def test_a_single_message_is_not_a_list(self) -> None:
        """Passing one message instead of a list is refused clearly."""
        with pytest.raises(InvalidMessagesError, match="expected a list of messages"):
            coerce_messages(HumanMessage("x"))


class TestPositionsStepsTurns:
    def test_positions_count_from_the_newest_output_and_calls_share_them(
        self, parallel_run: list[BaseMessage]
    ) -> None:
        """Positions are 1-based from the newest ToolMessage; a call has its output's position."""
        index = index_tool_calls(parallel_run)
        assert {c.id: index.position(c) for c in index.calls} == {
            "call_0": 3,
            "call_1": 2,
            "call_2": 1,
        }
        assert index.total_outputs == 3

    def test_parallel_calls_are_separate_calls_of_one_message(
        self, parallel_run: list[BaseMessage]
    ) -> None:
        """Two calls in one AIMessage are two records with the same ai_index and different
        outputs."""
        a, b = index_tool_calls(parallel_run).calls[:2]
        assert a.ai_index == b.ai_index == 2 and (a.output_index, b.output_index) == (3, 4)

    def test_steps_are_an_ai_message_and_the_outputs_right_after_it(
        self, parallel_run: list[BaseMessage]
    ) -> None:
        """A step spans an AIMessage and the ToolMessages that immediately follow it."""
        assert split_steps(parallel_run) == [range(2, 5), range(6, 8)]

    def test_turns_start_at_real_user_messages(self, parallel_run: list[BaseMessage]) -> None:
        """A turn is a real user message and everything up to the next one."""
        assert split_turns(parallel_run) == [range(1, 5), range(5, 8)]

    def test_strategy_notices_are_not_user_messages(self, parallel_run: list[BaseMessage]) -> None:
        """A message a strategy marked as a notice never starts a turn."""
        notice = mark(HumanMessage("context was compacted"), "compaction_notice", notice=True)
        run = parallel_run[:5] + [notice] + parallel_run[5:]
        assert not is_real_user_message(notice)
        assert split_turns(run) == [range(1, 6), range(6, 9)]

    def test_repeat_key_ignores_the_call_id_and_key_order(self) -> None:
        """The same tool with the same arguments in another key order has the same key."""
        msgs = [
            ai_step([("f", {"a": 1, "b": {"y": 2, "x": 1}})], 0, mirror="plain"),
            ToolMessage("r", tool_call_id="call_0"),
            ai_step([("f", {"b": {"x": 1, "y": 2}, "a": 1})], 1, mirror="plain"),
            ToolMessage("r", tool_call_id="call_1"),
        ]
        a, b = index_tool_calls(msgs).calls
        assert a.key == b.key and a.id != b.id


class TestEditsInEveryPlace:
    @pytest.mark.parametrize("mirror", ["plain", "openai", "anthropic", "both"])
    def test_dropping_a_call_removes_it_from_every_place(self, mirror: str) -> None:
        """A dropped call is gone from tool_calls, OpenAI additional_kwargs and tool_use blocks
        alike."""
        msg = ai_step([("f", {"q": "a"}), ("g", {"q": "b"})], 0, mirror=mirror, text="thinking")
        edited = as_ai(drop_tool_call(msg, "call_0"))
        assert tool_call_ids(edited) == ["call_1"]
        assert [c["id"] for c in edited.tool_calls] == ["call_1"]
        if mirror in ("openai", "both"):
            assert [c["id"] for c in edited.additional_kwargs["tool_calls"]] == ["call_1"]
        if mirror in ("anthropic", "both"):
            assert [b["id"] for b in blocks(edited) if b.get("type") == "tool_use"] == ["call_1"]

    @pytest.mark.parametrize("mirror", ["plain", "openai", "anthropic", "both"])
    def test_shortening_a_call_shortens_its_string_arguments_everywhere(self, mirror: str) -> None:
        """Shortened arguments are identical in all three records; non-string values stay."""
        msg = ai_step([("f", {"q": LONG, "n": 5})], 0, mirror=mirror)
        edited = shorten_tool_call(msg, "call_0")
        expected = {"q": shorten_string(LONG, 200), "n": 5}
        assert edited.tool_calls[0]["args"] == expected
        if mirror in ("openai", "both"):
            assert (
                json.loads(edited.additional_kwargs["tool_calls"][0]["function"]["arguments"])
                == expected
            )
        if mirror in ("anthropic", "both"):
            assert [b["input"] for b in blocks(edited) if b.get("type") == "tool_use"] == [expected]

    def test_message_left_without_calls_or_text_disappears(self) -> None:
        """Dropping the only call of a text-less AIMessage removes the message."""
        assert drop_tool_call(ai_step([("f", {})], 0, mirror="anthropic"), "call_0") is None

    def test_message_with_text_survives_losing_its_calls(self) -> None:
        """An AIMessage that still says something is kept when its calls go."""
        edited = drop_tool_call(
            ai_step([("f", {})], 0, mirror="both", text="I will look."), "call_0"
        )
        assert (
            edited is not None
            and edited.tool_calls == []
            and "tool_calls" not in edited.additional_kwargs
        )

    def test_invalid_tool_calls_are_left_alone(self) -> None:
        """invalid_tool_calls survive an edit untouched."""
        bad = {
            "name": "f",
            "args": "{oops",
            "id": "bad1",
            "error": "parse",
            "type": "invalid_tool_call",
        }
        msg = AIMessage(
            "", tool_calls=[{"name": "f", "args": {}, "id": "c"}], invalid_tool_calls=[bad]
        )
        edited = drop_tool_call(msg, "c")
        assert edited is not None and edited.invalid_tool_calls == [bad]

    def test_edit_never_mutates_the_original(self) -> None:
        """The input message keeps its calls and content after an edit."""
        msg = ai_step([("f", {"q": LONG})], 0, mirror="both")
        before = snapshot([msg])
        edit_ai_message(msg, shorten=["call_0"])
        drop_tool_call(msg, "call_0")
        assert snapshot([msg]) == before

    def test_output_shortening_keeps_block_shape(self) -> None:
        """List content is shortened block by block; non-text blocks stay."""
        image = {"type": "image_url", "image_url": {"url": "data:x"}}
        msg = ToolMessage([{"type": "text", "text": LONG}, image], tool_call_id="c")
        edited = shorten_tool_output(msg, TokenCounter())
        assert edited.content == [{"type": "text", "text": shorten_string(LONG, 400)}, image]

    def test_output_that_fits_is_the_same_object(self) -> None:
        """An output under the size is not copied."""
        msg = ToolMessage("small", tool_call_id="c")
        assert shorten_tool_output(msg, TokenCounter()) is msg


class TestCheckToolPairs:
    def test_valid_conversation_has_no_violation(self, parallel_run: list[BaseMessage]) -> None:
        """A conversation where every call has exactly one output passes."""
        assert check_tool_pairs(parallel_run) == []

    def test_output_without_its_call_is_reported(self, parallel_run: list[BaseMessage]) -> None:
        """An output whose call is not in its step is one readable line."""
        run = parallel_run[:2] + parallel_run[3:5]
        assert check_tool_pairs(run) == [
            "message 2 (tool): output for call 'call_0' answers no call of its step",
            "message 3 (tool): output for call 'call_1' answers no call of its step",
        ]

    def test_call_without_output_is_reported(self, parallel_run: list[BaseMessage]) -> None:
        """A call whose output is missing is reported at its AIMessage."""
        run = parallel_run[:4] + parallel_run[5:]
        assert check_tool_pairs(run) == ["message 2 (ai): call 'call_1' has no output"]

    def test_duplicate_output_is_reported(self, parallel_run: list[BaseMessage]) -> None:
        """A second output for the same call is reported."""
        run = parallel_run[:4] + [ToolMessage("again", tool_call_id="call_0")] + parallel_run[4:]
        assert check_tool_pairs(run) == ["message 4 (tool): duplicate output for call 'call_0'"]

    def test_output_answering_a_call_of_an_earlier_step_is_reported(
        self, parallel_run: list[BaseMessage]
    ) -> None:
        """An output is matched only within its own step."""
        run = parallel_run + [ToolMessage("late", tool_call_id="call_0")]
        assert check_tool_pairs(run) == [
            "message 8 (tool): output for call 'call_0' answers no call of its step"
        ]

    def test_anthropic_only_calls_are_seen(self) -> None:
        """A call recorded only as a tool_use block still needs its output."""
        msg = AIMessage([{"type": "tool_use", "id": "t1", "name": "f", "input": {}}])
        assert check_tool_pairs([HumanMessage("x"), msg]) == [
            "message 1 (ai): call 't1' has no output"
        ]


def with_content_blocks(kind: str, text: str = "") -> AIMessage:
    """An AIMessage with two calls, also recorded as content blocks of ``kind``."""
    calls: list[ToolCall] = [
        {"name": "f", "args": {"q": LONG, "n": 1}, "id": "c0", "type": "tool_call"},
        {"name": "g", "args": {"q": "b"}, "id": "c1", "type": "tool_call"},
    ]
    content: list[str | dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for c in calls:
        if kind == "tool_call":
            content.append(
                {"type": "tool_call", "id": c["id"], "name": c["name"], "args": c["args"]}
            )
        else:
            content.append(
                {
                    "type": "function_call",
                    "id": "fc_" + str(c["id"]),
                    "call_id": c["id"],
                    "name": c["name"],
                    "arguments": json.dumps(c["args"]),
                }
            )
    return AIMessage(content, tool_calls=calls)


@pytest.mark.parametrize("kind", ["tool_call", "function_call"])
class TestOtherCallBlocks:
    def test_call_blocks_are_seen_as_records_of_the_call(self, kind: str) -> None:
        """LangChain v1 tool_call and OpenAI Responses function_call blocks record the same call
        ids."""
        msg = with_content_blocks(kind)
        assert tool_call_ids(msg) == ["c0", "c1"]
        only_blocks = msg.model_copy(update={"tool_calls": []})
        assert check_tool_pairs([HumanMessage("x"), only_blocks]) == [
            "message 1 (ai): call 'c0' has no output",
            "message 1 (ai): call 'c1' has no output",
        ]

    def test_dropping_a_call_removes_its_block(self, kind: str) -> None:
        """A dropped call leaves no content block behind that a provider would send."""
        edited = as_ai(drop_tool_call(with_content_blocks(kind, text="looking"), "c0"))
        assert tool_call_ids(edited) == ["c1"]
        remaining = [
            (b["call_id"] if kind == "function_call" else b["id"])
            for b in blocks(edited)
            if b["type"] == kind
        ]
        assert remaining == ["c1"]

    def test_shortening_a_call_shortens_its_block_arguments(self, kind: str) -> None:
        """The block's arguments are shortened like tool_calls' (JSON text stays JSON)."""
        edited = shorten_tool_call(with_content_blocks(kind), "c0")
        block = [b for b in blocks(edited) if b["type"] == kind][0]
        args = block["args"] if kind == "tool_call" else json.loads(block["arguments"])
        assert args == {"q": shorten_string(LONG, 200), "n": 1}

    def test_message_left_with_no_call_disappears(self, kind: str) -> None:
        """Dropping every call of a text-less message removes it, blocks included."""
        msg = with_content_blocks(kind)
        assert edit_ai_message(msg, drop=["c0", "c1"]) is None


@st.composite
def irregular_histories(draw: st.DrawFn) -> list[BaseMessage]:
    """Draw a message list an index must survive: parallel calls, outputs out of order, orphan and
    duplicate outputs, pending calls, user and system messages anywhere."""
    ids = [
        f"c{k}" for k in range(8)
    ]  # few ids: the same id is reused by later steps, outputs hit other steps' calls
    messages: list[BaseMessage] = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["ai", "ai", "tool", "tool", "tool", "human", "system"]))
        if kind == "ai":
            chosen = draw(st.lists(st.sampled_from(ids), max_size=3, unique=True))
            calls = [
                {
                    "name": draw(st.sampled_from(["read", "grep"])),
                    "args": {"p": draw(st.integers(0, 2))},
                    "id": i,
                    "type": "tool_call",
                }
                for i in chosen
            ]
            messages.append(AIMessage(draw(st.sampled_from(["", "thinking"])), tool_calls=calls))
        elif kind == "tool":
            messages.append(ToolMessage("out", tool_call_id=draw(st.sampled_from(ids))))
        elif kind == "human":
            messages.append(HumanMessage("more"))
        else:
            messages.append(SystemMessage("note"))
    return messages


def plainly_indexed(messages: list[BaseMessage]) -> list[tuple[str, int, int | None, int]]:
    """Return ``(id, ai_index, output_index, forward)`` of every call by the rule written plainly:
    the first output of its step answers it."""
    outputs = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
    found: list[tuple[str, int, int | None, int]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, AIMessage):
            continue
        for call_id in tool_call_ids(message):
            j, answer = i + 1, None
            while j < len(messages) and isinstance(output := messages[j], ToolMessage):
                if output.tool_call_id == call_id:
                    answer = j
                    break
                j += 1
            found.append(
                (call_id, i, answer, outputs.index(answer) + 1 if answer is not None else 0)
            )
    return found


class TestToolIndex:
    @settings(max_examples=200, deadline=None)
    @given(irregular_histories(), st.lists(st.integers(0, 30), max_size=6))
    def test_extending_piece_by_piece_indexes_every_call_as_the_rule_says(
        self, messages: list[BaseMessage], cuts: list[int]
    ) -> None:
        """An index extended at any cut points matches each call to the first output of its step, as
        indexing the prefix at once does; completed calls come oldest output first and repeats count
        later occurrences of a key."""
        index = ToolIndex()
        for end in [*sorted(c for c in cuts if c <= len(messages)), len(messages)]:
            prefix = messages[:end]
            index = index.extend(prefix)
            fields = [(c.id, c.ai_index, c.output_index, c.forward) for c in index.calls]
            assert fields == plainly_indexed(prefix)
            assert fields == [
                (c.id, c.ai_index, c.output_index, c.forward)
                for c in index_tool_calls(prefix).calls
            ]
            assert [c.number for c in index.calls] == list(range(len(index.calls)))
            assert index.outputs == [i for i, m in enumerate(prefix) if isinstance(m, ToolMessage)]
            assert index.completed == sorted(
                (c for c in index.calls if c.output_index is not None), key=lambda c: c.forward
            )
            keys = [c.key for c in index.completed]
            assert index.repeats == sum(1 for k, key in enumerate(keys) if key in keys[:k])

    def test_an_index_is_not_changed_by_extending_it(self, parallel_run: list[BaseMessage]) -> None:
        """Extending returns a new index: the one remembered for the shorter list still describes it
        (another thread may use it)."""
        pending = [
            *parallel_run[:5],
            AIMessage(
                "", tool_calls=[{"name": "f", "args": {}, "id": "late", "type": "tool_call"}]
            ),
        ]
        short = index_tool_calls(pending)
        answered = short.extend([*pending, ToolMessage("answer", tool_call_id="late")])
        short.extend([*pending, HumanMessage("never mind")])
        assert answered.calls[-1].output_index == 6 and answered.total_outputs == 3
        assert (
            short.calls[-1].output_index is None and short.total_outputs == 2 and short.length == 6
        )
        assert (
            short.calls == index_tool_calls(pending).calls
            and short.position(short.calls[-1]) is None
        )


class TestFloorNamesTheCause:
    """The prompt floor's warning says who broke a tool pair: the conversation itself, or the
    strategies."""

    KILLED_MID_CALL = [
        HumanMessage("task", id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "fetch", "args": {}, "id": "call_1", "type": "tool_call"}],
        ),
        HumanMessage("go on", id="h2"),  # the run was killed before the tool's output was stored
    ]

    def test_a_conversation_resumed_after_a_kill_mid_tool_call_is_not_blamed_on_the_strategies(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Resuming a thread killed mid-tool-call is the input's state, not a strategy bug: the log
        must not send the operator hunting for one."""
        from langchain_promptstrat.messages import keep_prompt_floor

        with caplog.at_level("WARNING"):
            out = keep_prompt_floor(self.KILLED_MID_CALL, list(self.KILLED_MID_CALL))
        assert [m.id for m in out] == [
            "h1",
            "h2",
        ]  # the call without an output is left out of the prompt
        text = " ".join(r.getMessage() for r in caplog.records)
        assert "the conversation itself holds" in text and "strategies broke it" not in text

    def test_a_pair_the_strategies_broke_is_still_named_as_theirs(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The same repair of an intact conversation whose prompt lost a tool output is the
        strategies' doing."""
        from langchain_promptstrat.messages import keep_prompt_floor

        source = [
            *self.KILLED_MID_CALL[:2],
            ToolMessage("out", tool_call_id="call_1", id="t1"),
            HumanMessage("go on", id="h2"),
        ]
        with caplog.at_level("WARNING"):
            keep_prompt_floor(source, [source[0], source[1], source[3]])
        text = " ".join(r.getMessage() for r in caplog.records)
        assert "restored tool call/output pairs after the strategies broke it" in text
        assert "the conversation itself holds" not in text
