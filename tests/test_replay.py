"""Replaying saved transcripts call by call: prompts, folders, aggregation and the CLI."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_promptstrat.cli import main
from langchain_promptstrat.replay import simulate_files, transcript_prompts
from langchain_promptstrat.simulate import format_table
from langchain_promptstrat.tokens import tool_schema_tokens
from realruns import realruns_dir

CALL = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
RUN = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
       {"role": "assistant", "content": "", "tool_calls": [CALL]}, {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
       {"role": "assistant", "content": "done"}]


def chars(messages):
    """A counter a reader can follow: one token per character of content."""
    return sum(len(m.content) for m in messages)


class TestPrompts:
    def test_each_assistant_message_is_answered_from_the_history_before_it(self):
        """The prompts are messages[:i] for each AIMessage at i > 0, in order."""
        messages = [HumanMessage("t"), AIMessage("a"), ToolMessage("o", tool_call_id="x"), AIMessage("b")]
        assert transcript_prompts(messages) == [messages[:1], messages[:3]]

    def test_files_are_replayed_separately_and_summed(self, tmp_path):
        """Two files of 2 model calls give 4 calls; each file starts with an empty cache (its first call reuses 0)."""
        for name in ("a.jsonl", "b.json"):
            (tmp_path / name).write_text("\n".join(json.dumps(m) for m in RUN) if name.endswith("l") else json.dumps(RUN))
        result = simulate_files([tmp_path], ["none"], token_counter=chars, progress=False)
        run = result.run("none")
        assert (result.model_calls, run.tokens) == (4, [7, 11, 7, 11])
        assert run.cached_tokens == [0, 7, 0, 7]
        assert [p.rsplit("/", 1)[1] for p in result.files] == ["a.jsonl", "b.json"]


class TestToolSchemas:
    BASH = {"type": "function", "function": {"name": "bash", "description": "Execute a bash command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}

    def test_a_body_with_tools_counts_their_schemas_in_every_prompt(self, tmp_path):
        """A request body's tools are counted in each of its prompts (and cached from its second); a bare list in the same folder has none."""
        (tmp_path / "a.json").write_text(json.dumps({"model": "m", "messages": RUN, "tools": [self.BASH]}))
        (tmp_path / "b.json").write_text(json.dumps(RUN))
        result = simulate_files([tmp_path], ["none"], token_counter=chars, progress=False)
        schemas = tool_schema_tokens([self.BASH], chars)
        assert result.run("none").tokens == [7 + schemas, 11 + schemas, 7, 11]
        assert result.run("none").cached_tokens == [0, 7 + schemas, 0, 7]
        assert result.tool_schemas == [(1, schemas), (0, 0)]
        assert f"the tool schemas of the 1 of 2 files that saved them ({schemas:,} tokens)" in format_table(result)

    def test_given_tools_replace_every_files_own(self, tmp_path):
        """simulate_files(tools=[]) counts no schemas even for a body that saved some."""
        (tmp_path / "a.json").write_text(json.dumps({"model": "m", "messages": RUN, "tools": [self.BASH]}))
        result = simulate_files([tmp_path], ["none"], token_counter=chars, tools=[], progress=False)
        assert result.run("none").tokens == [7, 11] and result.tool_schemas == [(0, 0)]


class TestCli:
    def test_a_folder_prints_the_table_and_skips_what_it_cannot_read_with_a_note(self, tmp_path, capsys):
        """simulate FOLDER: exit 0, a table over the readable files, a note naming the skipped one."""
        (tmp_path / "run.json").write_text(json.dumps(RUN))
        (tmp_path / "broken.json").write_text("{oops")
        (tmp_path / "README.md").write_text("not a transcript")
        assert main(["simulate", str(tmp_path), "none", "--cache", "openai", "--no-progress"]) == 0
        out, err = capsys.readouterr()
        assert f"Replayed {tmp_path / 'run.json'}: 2 model calls." in out.replace("\n  ", " ") and "openai reuse" in out
        assert f"note: skipped {tmp_path / 'broken.json'}" in out and err == ""

    def test_a_usage_sidecar_in_a_folder_is_not_replayed_as_a_transcript(self, tmp_path, capsys):
        """A ``NAME.usage.json`` beside a transcript (the provider's billed tokens per answer, as in the
        shared real runs) is not a conversation: the folder replays one file, and the only note is the provider's bill."""
        (tmp_path / "run.jsonl").write_text("\n".join(json.dumps(m) for m in RUN))
        (tmp_path / "run.usage.json").write_text(json.dumps([{"prompt_tokens": 10, "cached_tokens": None}] * 2))
        assert main(["simulate", str(tmp_path), "none", "--no-progress", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["files"] == [str(tmp_path / "run.jsonl")] and [n[:16] for n in data["notes"]] == ["provider's bill "]

    def test_a_file_named_explicitly_that_cannot_be_read_is_an_error(self, tmp_path, capsys):
        """simulate FILE with a broken file: one error line, exit 2."""
        (tmp_path / "broken.json").write_text("{oops")
        assert main(["simulate", str(tmp_path / "broken.json"), "--no-progress"]) == 2
        assert capsys.readouterr().err.startswith(f"promptstrat: error: {tmp_path / 'broken.json'}: ")

    def test_the_real_transcripts_replay_with_no_error(self, capsys):
        """simulate on the real folders (raw trajectories and converted JSON lines): exit 0, one row per strategy."""
        raw, converted = realruns_dir("raw"), realruns_dir("converted")
        code = main(["simulate", str(raw), str(converted), "none", "shorten_tools_epoch_stable", "--cache", "anthropic",
                     "--no-progress", "--json"])
        out, err = capsys.readouterr()
        data = json.loads(out)
        assert code == 0 and "Traceback" not in err
        assert len(data["files"]) == len(list(raw.glob("*.json"))) + len(list(converted.glob("*.jsonl")))
        assert [s["name"] for s in data["strategies"]] == ["none", "shorten_tools_epoch_stable"]
        assert all(s["provider_summary"]["cached_tokens"] > 0 for s in data["strategies"])
