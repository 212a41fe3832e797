"""What a newcomer meets first on the command line: warnings where a figure is not what it seems.

Each test is a command a new user would try, and what it must print: nothing silently
approximate, nothing silently over a stated ceiling, one clear line for what cannot be done.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage, messages_to_dict
from test_cli import CALLS_BOUND, run

from langchain_promptstrat.testing import build_agent_run


class TestModel:
    @pytest.mark.parametrize("command", ["stats", "simulate"])
    def test_an_unknown_model_warns_naming_the_encoding_it_counts_with(
        self, capsys: pytest.CaptureFixture[str], langchain_file: Path, command: str
    ) -> None:
        """--model no-such-model counts with cl100k_base and says so in one line, as --model gpt-5
        does when its encoding is missing: a typo must not pass for a model's own count."""
        argv = (
            [str(langchain_file), "--json"]
            if command == "stats"
            else ["--calls", "3", "none", "--json"]
        )
        code, out, err = run(capsys, command, *argv, "--model", "no-such-model")
        assert code == 0 and json.loads(out)
        assert err == (
            "promptstrat: warning: no tokenizer is known for model 'no-such-model': tokens are "
            "counted with cl100k_base, which this package ships and which only approximates "
            "another model's tokenizer; name an encoding (encoding=..., --encoding) to choose one\n"
        )

    def test_a_model_whose_encoding_is_known_counts_without_a_word(
        self, capsys: pytest.CaptureFixture[str], langchain_file: Path
    ) -> None:
        """gpt-4's own encoding is cl100k_base, which the package ships: nothing to warn about."""
        code, out, err = run(capsys, "stats", str(langchain_file), "--json", "--model", "gpt-4")
        assert (code, err) == (0, "") and json.loads(out)["token_counter"][
            "encoding"
        ] == "cl100k_base"


class TestStatsFolder:
    def test_a_folder_skips_each_file_that_is_not_a_conversation_with_one_line(
        self,
        capsys: pytest.CaptureFixture[str],
        langchain_file: Path,
        tmp_path: Path,
        agent_run: list[BaseMessage],
    ) -> None:
        """stats on a clone's folder read what it could and named, one line each, the JSON
        files that hold no conversation (a langgraph.json, a broken file), instead of stopping at
        the first."""
        folder = tmp_path / "clone"
        (folder / "deployment").mkdir(parents=True)
        (folder / "run.json").write_bytes(langchain_file.read_bytes())
        (folder / "deployment" / "langgraph.json").write_text(
            '{"graphs": {"agent": "./agent.py:graph"}}'
        )
        (folder / "notes.jsonl").write_text("not json\n")
        code, out, err = run(capsys, "stats", str(folder), "--json")
        assert (
            code == 0
            and json.loads(out)["files"] == 1
            and json.loads(out)["messages"] == len(agent_run)
        )
        skipped = "promptstrat: warning: skipped"
        assert err.splitlines() == [
            f"{skipped} {folder / 'deployment' / 'langgraph.json'}: message 0: a message needs a "
            "'role' (or 'type') key; got keys: graphs",
            f"{skipped} {folder / 'notes.jsonl'}: line 1: not JSON: Expecting value (column 1)",
        ]

    def test_a_folder_without_a_conversation_is_one_error_line_after_the_skips(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """Nothing readable left: exit 2, one error line saying so, nothing on stdout."""
        (tmp_path / "langgraph.json").write_text('{"graphs": {}}')
        code, out, err = run(capsys, "stats", str(tmp_path))
        assert (code, out) == (2, "")
        assert (
            err.splitlines()[-1]
            == f"promptstrat: error: {tmp_path}: no conversation in this folder (1 files skipped)"
        )
        assert len(err.splitlines()) == 2

    def test_a_file_named_on_the_command_line_is_still_refused(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """Skipping is for files a folder brought: a file the user named that is no conversation is
        the command's error."""
        (tmp_path / "langgraph.json").write_text('{"graphs": {}}')
        code, out, err = run(capsys, "stats", str(tmp_path / "langgraph.json"))
        assert (
            (code, out) == (2, "")
            and err.count("\n") == 1
            and err.startswith("promptstrat: error: ")
        )

    def test_the_help_says_a_folder_is_read_with_every_folder_below_it(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """stats --help documents what a folder gives: its *.json and *.jsonl files, recursively,
        non-conversations skipped."""
        code, out, _ = run(capsys, "stats", "--help")
        text = " ".join(out.split())
        assert (
            code == 0
            and "a folder: its *.json and *.jsonl files, in every folder below it too" in text
        )
        assert "not a conversation skipped with a warning" in text


class TestStatsHeader:
    def test_without_usage_the_header_says_in_plain_words_that_the_counts_are_the_packages(
        self,
        capsys: pytest.CaptureFixture[str],
        langchain_file: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A file without usage gets two plain sentences, not "the provider's count over the
        package's, for what was sent ...: - (no usage)" and "the default's factor ...: 1.0 (none: no
        usage, no prior)"; the detail is in docs/cli.md."""
        monkeypatch.setenv("COLUMNS", "1000")  # one line each
        code, out, _ = run(capsys, "stats", str(langchain_file))
        head = out.split("\n\n")[0].splitlines()
        assert code == 0 and head[-2:] == [
            "the provider's own count: not in the file (no usage recorded); "
            "every figure is this package's count",
            "apply keeps the ceiling on this package's count "
            "(the file's answers carry no usage to learn the provider's from)",
        ]
        assert not any(
            word in line
            for line in head
            for word in ("factor", "prior", "over the package's", "- (no usage)")
        )


class TestFloorOverCeiling:
    @pytest.mark.parametrize("command", ["apply", "stats"])
    def test_a_ceiling_under_the_floor_is_one_warning_line(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
    ) -> None:
        """--max-tokens 100 under a floor of several hundred tokens: the result is still printed
        (the floor), and stderr says in one line that it is over the ceiling, instead of only a
        'met': False in a report."""
        import uuid

        path = tmp_path / f"{command}.json"
        path.write_text(
            json.dumps(
                messages_to_dict(build_agent_run(3, task=f"Audit the repository ({uuid.uuid4()})."))
            )
        )
        code, out, err = run(capsys, command, str(path), "--max-tokens", "100")
        warnings = [line for line in err.splitlines() if line.startswith("promptstrat: warning: ")]
        assert code == 0 and out
        assert (
            len(warnings) == 1 and "the prompt's floor is over the context ceiling" in warnings[0]
        )
        assert "against a ceiling of 100 (98 after the counter's margin)" in warnings[0]


class TestSimulateOverCeiling:
    def test_a_row_that_went_over_its_ceiling_is_marked_in_the_table_and_the_json(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """At --max-tokens 3000 the rungs' prompts go over (tool schemas included) while the default
        stays under: the table marks the peaks that went over and a footnote says on how many calls;
        --json counts them per row."""
        monkeypatch.setenv("COLUMNS", "1000")
        argv = [
            "simulate",
            "--calls",
            "12",
            "--max-tokens",
            "3000",
            "none",
            "tool_results",
            "shorten_tools_epoch_stable",
        ]
        code, out, _ = run(capsys, *argv, "--json")
        summaries = {s["name"]: s["summary"] for s in json.loads(out)["strategies"]}
        tokens = {s["name"]: s["per_call"]["tokens"] for s in json.loads(out)["strategies"]}
        assert (
            code == 0
            and summaries["none"]["ceiling"] is None
            and summaries["none"]["calls_over_ceiling"] is None
        )
        assert (
            summaries["tool_results"]["calls_over_ceiling"]
            == sum(t > 3000 for t in tokens["tool_results"])
            > 0
        )
        assert summaries["shorten_tools_epoch_stable"]["calls_over_ceiling"] == 0
        code, out, _ = run(capsys, *argv)
        rows = {
            line.split("  ")[0]: line
            for line in out.splitlines()
            if line.startswith(("none ", "tool_results ", "shorten"))
        }
        assert f"{max(tokens['tool_results']):,} over" in rows["tool_results"]
        assert "over" not in rows["none"] and "over" not in rows["shorten_tools_epoch_stable"]
        calls = summaries["tool_results"]["calls_over_ceiling"]
        assert (
            "over: the prompt sent (tool schemas included) went over the 3,000 tokens the row was "
            f"given: tool_results on {calls} of {len(tokens['tool_results'])} calls; "
            "why a strategy goes over: docs/cli.md."
        ) in out


class TestSimulateCalls:
    @pytest.mark.parametrize("calls", ["10001", "100000000", "2.5", "0"])
    def test_calls_past_the_bound_are_one_error_line_before_anything_is_built(
        self, capsys: pytest.CaptureFixture[str], calls: str
    ) -> None:
        """--calls 100000000 printed nothing for 40 s while memory grew to 2.7 GB (a run's prompts
        grow with the square of its calls): past 10,000 it is refused at once, in one line naming
        the bound."""
        assert run(capsys, "simulate", "--calls", calls, "none") == (
            2,
            "",
            f"promptstrat: error: argument --calls: {CALLS_BOUND}, got '{calls}' "
            "(see promptstrat simulate --help)\n",
        )

    def test_a_long_run_shows_its_progress_on_stderr_and_leaves_stdout_as_it_was(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A run of LONG_RUN_CALLS tool calls or more draws its progress on stderr while it is built
        and replayed, even when stderr is not a terminal; stdout holds exactly what a short run's
        would (scripts read it)."""
        from langchain_promptstrat import simulate as engine

        code, quiet_out, quiet_err = run(capsys, "simulate", "--calls", "30", "none")
        assert (code, quiet_err) == (0, "")
        monkeypatch.setattr(engine, "LONG_RUN_CALLS", 30)
        code, out, err = run(capsys, "simulate", "--calls", "30", "none")
        assert (
            code == 0 and out.splitlines()[0] == quiet_out.splitlines()[0] and "ms per call" in out
        )
        assert "building the run" in err and "none" in err
        code, _, err = run(capsys, "simulate", "--calls", "30", "--no-progress", "none")
        assert (code, err) == (0, "")
