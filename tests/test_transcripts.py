"""Reading saved transcripts: harness formats, extra roles and a final call left unanswered."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from realruns import realruns_dir

from langchain_promptstrat.cli import main
from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.messages import check_tool_pairs

CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
}


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


class TestFormats:
    def test_a_mini_swe_agent_trajectory_keeps_what_a_provider_reads(self, tmp_path):
        """A .traj.json gives its messages without harness fields; role 'exit' is left out with a
        note naming it."""
        path = write(
            tmp_path,
            "run.traj.json",
            {
                "info": {"exit_status": "Submitted"},
                "trajectory_format": "mini-swe-agent-1.1",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "task"},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [CALL],
                        "extra": {"response": {"id": "x"}},
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": "a.py", "extra": {}},
                    {"role": "exit", "content": "done", "extra": {"exit_status": "Submitted"}},
                ],
            },
        )
        conversation = read_conversation(path)
        assert [type(m) for m in conversation.messages] == [
            SystemMessage,
            HumanMessage,
            AIMessage,
            ToolMessage,
        ]
        assert conversation.messages[2].additional_kwargs == {}
        assert conversation.messages[2].tool_calls[0]["args"] == {"command": "ls"}
        assert conversation.notes == [
            "message 4: role 'exit' is not a chat role (mini-swe-agent's record of how the run "
            "ended); left out"
        ]

    def test_an_anthropic_body_becomes_system_calls_and_tool_messages(self, tmp_path):
        """An Anthropic Messages body: system -> SystemMessage, tool_use -> tool_calls, tool_result
        -> ToolMessage before the user's text."""
        path = write(
            tmp_path,
            "body.json",
            {
                "model": "claude",
                "system": [{"type": "text", "text": "be brief"}],
                "messages": [
                    {"role": "user", "content": "task"},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "thinking", "thinking": "hm"},
                            {"type": "text", "text": "look"},
                            {
                                "type": "tool_use",
                                "id": "t1",
                                "name": "bash",
                                "input": {"command": "ls"},
                            },
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "t1",
                                "content": [{"type": "text", "text": "a.py"}],
                            },
                            {"type": "text", "text": "and then?"},
                        ],
                    },
                ],
            },
        )
        conversation = read_conversation(path)
        system, task, ai, tool, user = conversation.messages
        assert (system.content, task.content) == ("be brief", "task")
        assert (ai.content, ai.tool_calls[0]["args"], ai.tool_calls[0]["id"]) == (
            "look",
            {"command": "ls"},
            "t1",
        )
        assert (tool.tool_call_id, tool.content) == ("t1", "a.py")
        assert isinstance(user, HumanMessage) and user.content[0]["text"] == "and then?"
        assert conversation.notes == ["1 thinking block left out"]
        assert check_tool_pairs(conversation.messages) == []

    def test_an_openai_request_body_reads_its_messages(self, tmp_path):
        """An OpenAI chat body ({model, messages}) reads like the bare message list."""
        messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        body = read_conversation(
            write(tmp_path, "body.json", {"model": "gpt-5-mini", "messages": messages})
        )
        bare = read_conversation(write(tmp_path, "bare.json", messages))
        assert body.messages == bare.messages and body.notes == []


class TestTools:
    BASH = {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Execute a bash command",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }

    def test_an_openai_body_keeps_its_tools(self, tmp_path):
        """An OpenAI chat body's tools are read as saved; its older functions become the tools they
        stand for."""
        messages = [{"role": "user", "content": "hi"}]
        tools = read_conversation(
            write(tmp_path, "t.json", {"model": "m", "messages": messages, "tools": [self.BASH]})
        ).tools
        functions = read_conversation(
            write(
                tmp_path,
                "f.json",
                {"model": "m", "messages": messages, "functions": [self.BASH["function"]]},
            )
        ).tools
        assert tools == functions == [self.BASH]

    def test_an_anthropic_body_keeps_its_tools(self, tmp_path):
        """An Anthropic Messages body's tools (name, description, input_schema) are read as
        saved."""
        tool = {
            "name": "bash",
            "description": "Execute a bash command",
            "input_schema": {"type": "object", "properties": {}},
        }
        body = {
            "system": "be brief",
            "tools": [tool],
            "messages": [{"role": "user", "content": "task"}],
        }
        assert read_conversation(write(tmp_path, "a.json", body)).tools == [tool]

    def test_message_lists_and_trajectories_have_no_tools(self, tmp_path):
        """A bare message list and a trajectory without tools give none."""
        messages = [{"role": "user", "content": "hi"}]
        assert read_conversation(write(tmp_path, "bare.json", messages)).tools == []
        assert (
            read_conversation(
                write(tmp_path, "run.traj.json", {"info": {}, "messages": messages})
            ).tools
            == []
        )


class TestReportedAndHandled:
    def test_an_unknown_role_in_json_lines_is_left_out_with_its_line(self, tmp_path):
        """A role no provider reads is left out and named by its line, not refused."""
        path = write(
            tmp_path,
            "c.jsonl",
            '{"role": "user", "content": "hi"}\n{"role": "wizard", "content": "x"}\n',
        )
        conversation = read_conversation(path)
        assert [m.content for m in conversation.messages] == ["hi"]
        assert conversation.notes[0].startswith(
            "line 2: role 'wizard' is not a chat role (known: ai, assistant"
        )

    def test_a_final_unanswered_call_is_held_out_and_apply_writes_it_back(self, tmp_path, capsys):
        """The last call without output is held out of the strategies, reported once, and written
        back after the result."""
        data = [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "user", "content": "No tool calls found"},
        ]
        path = write(tmp_path, "c.json", data)
        conversation = read_conversation(path)
        assert len(conversation.messages) == 1 and len(conversation.pending) == 2
        assert conversation.notes == [
            "message 1: the final model call's 1 tool call has no output (the run stopped there); "
            "held out with the 1 message after it"
        ]
        assert main(["apply", path, "--strategy", "shorten_tools"]) == 0
        out, err = capsys.readouterr()
        written = json.loads(out)
        assert [m["role"] for m in written] == ["user", "assistant", "user"]
        assert written[1]["tool_calls"][0]["id"] == "c1"
        assert "warning" in err and "held out" in err and "Traceback" not in err


class TestRealTranscripts:
    @pytest.mark.parametrize("command", ["apply", "stats"])
    def test_every_raw_trajectory_is_accepted(self, tmp_path, capsys, command):
        """Each raw mini-swe-agent .traj.json is read by apply and stats: exit 0, warnings only,
        valid pairs out."""
        files = sorted(realruns_dir("raw").glob("*.traj.json"))
        assert files
        for path in files:
            assert main([command, str(path)]) == 0, path
            out, err = capsys.readouterr()
            assert "Traceback" not in err and all(
                line.startswith("promptstrat: warning:")
                for line in err.splitlines()
                if line.startswith("promptstrat:")
            )
            if command == "apply":
                sent = json.loads(out)
                conversation = read_conversation(str(path))
                assert check_tool_pairs(sent[: len(sent) - len(conversation.pending)]) == []

    def test_every_converted_transcript_reads_with_valid_pairs(self):
        """Each converted JSON lines transcript reads into messages whose calls and outputs pair
        up."""
        files = sorted(realruns_dir("converted").glob("*.jsonl"))
        assert files
        for path in files:
            conversation = read_conversation(str(path))
            assert conversation.messages and check_tool_pairs(conversation.messages) == [], path
