"""Specification of conversation files read into messages and written back (the CLI's apply and
stats)."""

from __future__ import annotations

import io
import json
import sys

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_to_dict,
)

from langchain_promptstrat.conversation_file import (
    ConversationFile,
    dump_messages,
    read_conversation,
)
from langchain_promptstrat.errors import InvalidMessagesError
from langchain_promptstrat.tokens.usage import BilledInput, billed_input


@pytest.fixture
def conversation():
    """A system message, a task, one tool call with its output, and a non-ASCII answer."""
    return [
        SystemMessage("sys"),
        HumanMessage("task"),
        AIMessage("", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "call_0"}]),
        ToolMessage("found", tool_call_id="call_0"),
        AIMessage("voilà"),
    ]


class TestReadConversation:
    def test_a_json_array_of_role_dicts_counts_positions_from_0(self, tmp_path, conversation):
        """An array of role dicts reads as the same messages, style "role", positions "message
        N"."""
        path = tmp_path / "c.json"
        path.write_text(json.dumps(convert_to_openai_messages(conversation)))
        read = read_conversation(str(path))
        assert convert_to_openai_messages(read.messages) == convert_to_openai_messages(conversation)
        assert (read.style, read.positions) == ("role", [f"message {i}" for i in range(5)])

    def test_json_lines_of_langchain_dicts_count_positions_from_1_skipping_blank_lines(
        self, tmp_path, conversation
    ):
        """JSON lines of messages_to_dict dicts read with style "langchain" and the file's line
        numbers."""
        lines = [json.dumps(d) for d in messages_to_dict(conversation[:2])]
        path = tmp_path / "c.jsonl"
        path.write_text(f"{lines[0]}\n\n{lines[1]}\n")
        assert read_conversation(str(path)) == ConversationFile(
            conversation[:2], "langchain", ["line 1", "line 3"]
        )

    def test_a_dash_reads_standard_input(self, monkeypatch):
        """'-' reads the conversation from standard input."""
        monkeypatch.setattr(sys, "stdin", io.StringIO('[{"role": "user", "content": "hi"}]'))
        assert read_conversation("-") == ConversationFile(
            [HumanMessage("hi")], "role", ["message 0"]
        )

    def test_an_empty_array_has_no_messages_and_no_style(self, tmp_path):
        """'[]' is a valid conversation with no messages, so it has no dict style."""
        path = tmp_path / "c.json"
        path.write_text("[]")
        assert read_conversation(str(path)) == ConversationFile([], None, [])

    def test_bad_input_raises_one_line_naming_the_source_and_the_position(self, tmp_path):
        """A broken pairing raises InvalidMessagesError with the source, the file position and the
        problem."""
        path = tmp_path / "c.jsonl"
        path.write_text(
            '{"role": "user", "content": "a"}\n{"role": "tool", "tool_call_id": "x", "content": '
            '"out"}\n'
        )
        with pytest.raises(InvalidMessagesError) as caught:
            read_conversation(str(path))
        assert (
            str(caught.value)
            == f"{path}: line 2 (tool): output for call 'x' answers no call of its step"
        )

    @pytest.mark.parametrize(
        "style", ["langchain", "role usage_metadata", "role response_metadata", "role usage"]
    )
    def test_an_answers_usage_reads_back_in_both_dict_styles(self, tmp_path, conversation, style):
        """A file carries what the provider billed on its answers: LangChain's usage_metadata (a
        LangChain dict's data, or a key of a role dict), or the provider's usage dict
        (response_metadata's token_usage, or a role dict's usage)."""
        usage = {
            "input_tokens": 120,
            "output_tokens": 3,
            "total_tokens": 123,
            "input_token_details": {"cache_read": 100},
        }
        openai = {
            "prompt_tokens": 120,
            "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": 100},
        }
        if style == "langchain":
            data = messages_to_dict(
                [*conversation[:4], conversation[4].model_copy(update={"usage_metadata": usage})]
            )
        else:
            data = convert_to_openai_messages(conversation)
            data[-1].update(
                {
                    "role usage_metadata": {"usage_metadata": usage},
                    "role usage": {"usage": openai},
                    "role response_metadata": {"response_metadata": {"token_usage": openai}},
                }[style]
            )
        path = tmp_path / "c.json"
        path.write_text(json.dumps(data))
        answers = [m for m in read_conversation(str(path)).messages if isinstance(m, AIMessage)]
        assert [billed_input(m) for m in answers] == [None, BilledInput(120, 100)]


class TestDumpMessages:
    def test_langchain_style_writes_messages_to_dict_dicts(self, conversation):
        """Style "langchain" writes the messages as messages_to_dict does, indented, non-ASCII kept
        as is."""
        out = dump_messages(conversation, "langchain")
        assert json.loads(out) == messages_to_dict(conversation)
        assert out.startswith("[\n  {") and "voilà" in out

    @pytest.mark.parametrize("style", ["role", None])
    def test_other_styles_write_openai_role_dicts(self, conversation, style):
        """Style "role", and no style at all, write OpenAI role dicts."""
        assert json.loads(dump_messages(conversation, style)) == convert_to_openai_messages(
            conversation
        )

    @pytest.mark.parametrize("style", ["langchain", "role"])
    def test_what_it_writes_reads_back_as_the_same_messages_and_style(
        self, tmp_path, conversation, style
    ):
        """A dumped conversation read back gives the same messages in the same style."""
        path = tmp_path / "c.json"
        path.write_text(dump_messages(conversation, style), encoding="utf-8")
        read = read_conversation(str(path))
        assert read.style == style
        assert convert_to_openai_messages(read.messages) == convert_to_openai_messages(conversation)
