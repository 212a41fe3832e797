"""Bad input: one line naming the problem and exit 2 from the CLI, a precise exception from the API;
nothing consumed or written."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from langchain_promptstrat import inbox_dir, post_to_inbox, prepare_prompt, request_abort
from langchain_promptstrat.cli import main
from langchain_promptstrat.errors import ConfigError, InboxError, InvalidMessagesError
from langchain_promptstrat.inbox.directory import DirectoryInbox

PROMPTSTRAT = Path(sys.executable).parent / "promptstrat"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    """Return the single error line of ``err``, failing when there is more (a traceback) or none."""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("promptstrat: error: "), err[-2000:]
    return lines[0]


def write(tmp_path: Path, text: str, name: str = "conversation.json") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return str(path)


class TestConversationFiles:
    @pytest.mark.parametrize("command", ["apply", "stats"])
    def test_json_nested_100000_deep_is_one_line(self, capsys, tmp_path, command):
        """A file nested 100,000 deep is refused as too deep, not with a RecursionError
        traceback."""
        path = write(tmp_path, "[" * 100_000 + "]" * 100_000)
        code, out, err = run(capsys, command, path)
        assert (code, out) == (2, "")
        assert "nested too deeply" in one_error_line(err)

    def test_tool_calls_that_are_not_a_list_are_one_line(self, capsys, tmp_path):
        """`"tool_calls": "oops"` names the message instead of raising AttributeError."""
        path = write(
            tmp_path, json.dumps([{"role": "assistant", "content": "", "tool_calls": "oops"}])
        )
        code, out, err = run(capsys, "apply", path)
        assert (code, out) == (2, "")
        assert "message 0" in one_error_line(err)

    def test_an_unwritable_message_is_refused_before_the_inbox_consumes_anything(
        self, capsys, tmp_path
    ):
        """An image_url block without its URL is refused before any strategy runs: the pending
        notice stays pending."""
        path = write(tmp_path, json.dumps([{"role": "user", "content": [{"type": "image_url"}]}]))
        save_file = tmp_path / "conversation.json"
        inbox = DirectoryInbox.for_save_file(save_file)
        inbox.post("use the staging database")
        code, out, err = run(
            capsys, "apply", path, "--strategy", "inbox", "--save-file", str(save_file)
        )
        assert (code, out) == (2, "")
        assert "image_url" in one_error_line(err)
        assert [e.name for e in inbox.pending_entries()] != [] and inbox.delivered_entries() == []

    def test_a_lone_surrogate_is_written_as_valid_utf8(self, tmp_path):
        """A lone surrogate in a message leaves apply as a JSON escape: stdout is valid UTF-8 and
        reads back the same."""
        path = write(tmp_path, '[{"role": "user", "content": "a \\ud800 b"}]')
        done = subprocess.run(
            [str(PROMPTSTRAT), "apply", path, "--strategy", "none"],
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        text = done.stdout.decode("utf-8")  # raises on invalid UTF-8
        assert json.loads(text)[0]["content"] == "a \ud800 b"

    @staticmethod
    def deep_arguments_conversation(tmp_path: Path, depth: int = 600) -> str:
        """Write 40 calls whose first three arguments nest ``depth`` lists deep (valid JSON, under
        json's own limit)."""
        deep = json.dumps({"a": json.loads("[" * depth + json.dumps("z" * 3000) + "]" * depth)})
        messages: list[dict[str, object]] = [{"role": "user", "content": "go"}]
        for i in range(40):
            arguments = deep if i < 3 else json.dumps({"path": "/x" * 800})
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": f"c{i}",
                            "type": "function",
                            "function": {"name": "f", "arguments": arguments},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "out " * 3000})
        messages.append({"role": "user", "content": "next"})
        return write(tmp_path, json.dumps(messages))

    @pytest.mark.parametrize(
        "argv", [("apply",), ("apply", "--strategy", "shorten_tools"), ("stats",)]
    )
    def test_arguments_nested_600_deep_are_measured_not_a_traceback(self, capsys, tmp_path, argv):
        """Arguments nested deeper than Python's recursion limit allows a recursive walk are sized
        and shortened, exit 0."""
        path = self.deep_arguments_conversation(tmp_path)
        code, out, err = run(capsys, *argv, path)
        assert code == 0, err[-2000:]
        assert out and "Traceback" not in err

    def test_deep_arguments_do_not_lose_a_pending_notice(self, capsys, tmp_path):
        """With --strategy inbox, a notice taken from the inbox reaches the output (it used to be
        consumed, then a RecursionError)."""
        path = self.deep_arguments_conversation(tmp_path)
        DirectoryInbox.for_save_file(path).post("use the staging database")
        code, out, err = run(capsys, "apply", path, "--strategy", "inbox", "--save-file", path)
        assert code == 0, err[-2000:]
        assert "use the staging database" in out

    def test_an_empty_prompt_strategy_is_refused(self, capsys, tmp_path, monkeypatch):
        """PROMPT_STRATEGY="" would silently disable every strategy and the inbox: it is refused
        instead."""
        monkeypatch.setenv("PROMPT_STRATEGY", "")
        path = write(tmp_path, json.dumps([{"role": "user", "content": "hi"}]))
        code, out, err = run(capsys, "apply", path)
        assert (code, out) == (2, "")
        assert "PROMPT_STRATEGY is empty" in one_error_line(
            err
        ) and "PROMPTSTRAT_" not in one_error_line(err)

    def test_an_empty_prefixed_prompt_strategy_is_refused_under_its_own_name(
        self, capsys, tmp_path, monkeypatch
    ):
        """PROMPTSTRAT_PROMPT_STRATEGY="" is refused too, and the line names that variable, the one
        the user set."""
        monkeypatch.delenv("PROMPT_STRATEGY", raising=False)
        monkeypatch.setenv("PROMPTSTRAT_PROMPT_STRATEGY", "")
        path = write(tmp_path, json.dumps([{"role": "user", "content": "hi"}]))
        code, out, err = run(capsys, "apply", path)
        assert (code, out) == (2, "")
        assert "PROMPTSTRAT_PROMPT_STRATEGY is empty" in one_error_line(err)

    @pytest.mark.parametrize("spec", ["shorten_tools,,inbox", "inbox,", ",inbox"])
    def test_an_empty_name_in_strategy_is_refused_and_consumes_nothing(
        self, capsys, tmp_path, spec
    ):
        """`--strategy "shorten_tools,,inbox"` is one line, exit 2, before the inbox strategy could
        consume a notice."""
        path = write(tmp_path, json.dumps([{"role": "user", "content": "hi"}]))
        inbox = DirectoryInbox.for_save_file(path)
        inbox.post("use the staging database")
        code, out, err = run(capsys, "apply", path, "--strategy", spec, "--save-file", path)
        assert (code, out) == (2, "")
        assert one_error_line(err).startswith(
            f"promptstrat: error: the strategy list {spec!r} has an empty name "
        )
        assert len(inbox.pending_entries()) == 1 and inbox.delivered_entries() == []

    def test_an_empty_name_in_prompt_strategy_is_refused_under_its_name(
        self, capsys, tmp_path, monkeypatch
    ):
        """PROMPT_STRATEGY="shorten_tools,,inbox" goes through the same parser: one line naming the
        variable."""
        monkeypatch.setenv("PROMPT_STRATEGY", "shorten_tools,,inbox")
        path = write(tmp_path, json.dumps([{"role": "user", "content": "hi"}]))
        code, out, err = run(capsys, "apply", path)
        assert (code, out) == (2, "")
        assert one_error_line(err) == (
            "promptstrat: error: PROMPT_STRATEGY 'shorten_tools,,inbox' has an empty name between "
            "'shorten_tools' "
            "and 'inbox'; separate the names with single commas"
        )

    def test_an_empty_name_in_a_simulated_pipeline_is_refused(self, capsys):
        """`promptstrat simulate "shorten_tools,,none"` is refused in one line, not replayed as
        shorten_tools,none."""
        code, out, err = run(capsys, "simulate", "--calls", "3", "shorten_tools,,none")
        assert (code, out) == (2, "")
        assert (
            "the strategy pipeline 'shorten_tools,,none' has an empty name between"
            in one_error_line(err)
        )

    def test_some_unknown_roles_are_left_out_with_a_warning_each(self, capsys, tmp_path):
        """A file with an unknown role among chat roles still applies: each unknown one is a warning
        line and left out."""
        path = write(
            tmp_path,
            json.dumps(
                [
                    {"role": "user", "content": "fix the bug"},
                    {"role": "assistant", "content": "done"},
                    {"role": "exit", "content": "Submitted"},
                ]
            ),
        )
        code, out, err = run(capsys, "apply", path, "--strategy", "none")
        assert code == 0, err
        assert [m["role"] for m in json.loads(out)] == ["user", "assistant"]
        warnings = [line for line in err.splitlines() if line.startswith("promptstrat: warning: ")]
        assert len(warnings) == 1 and "message 2: role 'exit' is not a chat role" in warnings[0]

    def test_a_file_of_unknown_roles_is_refused_naming_the_roles(self, capsys, tmp_path):
        """A file where no role is a chat role is not a conversation: one line naming what came and
        what is read, exit 2 (not `[]`, exit 0)."""
        path = write(
            tmp_path,
            json.dumps([{"role": "bot", "content": "hi"}, {"role": "exit", "content": "done"}]),
        )
        code, out, err = run(capsys, "apply", path)
        assert (code, out) == (2, "")
        line = one_error_line(err)
        assert "no message has a chat role (found 'bot', 'exit'; understood: " in line
        assert all(role in line for role in ("assistant", "user", "tool", "system"))


class TestInboxPost:
    def test_standard_input_that_is_not_utf8_is_one_line_and_posts_nothing(
        self, capsys, tmp_path, monkeypatch
    ):
        """Bytes \\xff\\xfe on stdin are refused as not UTF-8, naming the byte; the inbox stays
        empty."""
        save_file = tmp_path / "conversation.json"
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff\xfe note")))
        code, out, err = run(capsys, "inbox", "post", "--save-file", str(save_file))
        assert (code, out) == (2, "")
        assert "not UTF-8" in one_error_line(err) and "0xff" in err
        assert DirectoryInbox.for_save_file(save_file).pending_entries() == []

    def test_an_abort_reason_that_is_not_text_is_one_line_and_writes_nothing(
        self, capsys, tmp_path
    ):
        """`inbox abort --reason` of undecodable bytes (a lone surrogate) is refused in one line,
        exit 2, no abort file."""
        save_file = tmp_path / "conversation.json"
        code, out, err = run(
            capsys, "inbox", "abort", "--save-file", str(save_file), "--reason", "\udcff\udcfe stop"
        )
        assert (code, out) == (2, "")
        assert "lone surrogate" in one_error_line(err)
        assert not inbox_dir(save_file).exists() or not any(inbox_dir(save_file).iterdir())


class TestLibrary:
    def test_a_single_message_dict_is_refused(self):
        """prepare_prompt(dict) raises instead of turning the dict's keys into two messages."""
        with pytest.raises(InvalidMessagesError, match="wrap it in a list"):
            prepare_prompt({"role": "user", "content": "hi"})

    def test_a_strategy_spec_that_is_not_one_is_a_config_error(self):
        """prepare_prompt(msgs, 42) raises ConfigError, not a bare TypeError."""
        with pytest.raises(ConfigError, match="42"):
            prepare_prompt([HumanMessage("hi")], 42)  # type: ignore[arg-type]

    def test_an_empty_strategy_string_is_a_config_error(self):
        """A spec with no names is refused; 'none' is the way to apply none."""
        with pytest.raises(ConfigError, match="'none'"):
            prepare_prompt([HumanMessage("hi")], " , ")

    @pytest.mark.parametrize("content", [42, "a \ud800 b", None])
    def test_a_notice_that_is_not_text_is_refused_and_nothing_is_written(self, tmp_path, content):
        """post_to_inbox refuses an int (42 NUL bytes) and lone surrogates before writing."""
        save_file = tmp_path / "conversation.json"
        with pytest.raises((InboxError, TypeError)):
            post_to_inbox(save_file, content)
        directory = inbox_dir(save_file)
        assert not directory.exists() or not any(directory.iterdir())

    @pytest.mark.parametrize("reason", [42, "a \ud800 b"])
    def test_an_abort_reason_that_is_not_text_is_refused_and_nothing_is_written(
        self, tmp_path, reason
    ):
        """request_abort refuses an int or a lone surrogate with InboxError (not
        AttributeError/UnicodeEncodeError), writing nothing."""
        save_file = tmp_path / "conversation.json"
        with pytest.raises(InboxError, match="abort reason"):
            request_abort(save_file, reason)
        directory = inbox_dir(save_file)
        assert not directory.exists() or not any(directory.iterdir())

    def test_arguments_that_are_not_json_name_the_message_the_field_and_what_came(self):
        """prepare_prompt with OpenAI arguments `ls -la` names message 1,
        tool_calls[0].function.arguments and the text, instead of json's bare `Expecting value: line
        1 column 1 (char 0)`."""
        call = {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "ls -la"}}
        with pytest.raises(InvalidMessagesError) as err:
            prepare_prompt(
                [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "", "tool_calls": [call]},
                ]
            )
        assert str(err.value) == (
            "message 1: assistant message: tool_calls[0].function.arguments is not JSON "
            "(Expecting value at char 0): 'ls -la'"
        )

    def test_long_arguments_are_quoted_short(self):
        """10,000 characters of shell output as arguments give an error line of a few hundred
        characters, saying how long they were."""
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "sh", "arguments": "x = 1; " * 1_430},
        }
        with pytest.raises(InvalidMessagesError) as err:
            prepare_prompt(
                [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "", "tool_calls": [call]},
                ]
            )
        assert len(str(err.value)) < 250 and "(10,010 characters)" in str(err.value)

    def test_tool_calls_that_are_not_a_list_are_invalid_messages(self):
        """prepare_prompt with `"tool_calls": "oops"` raises InvalidMessagesError naming the
        message, not AttributeError."""
        with pytest.raises(InvalidMessagesError, match="message 1"):
            prepare_prompt(
                [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "", "tool_calls": "oops"},
                ]
            )
