"""What a newcomer meets first on the command line: help that fits, warnings where a figure is not what it seems, bounds.

Each test is a command a new user would try, and what it must print: nothing silently
approximate, nothing silently over a stated ceiling, one clear line for what cannot be done.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage, messages_to_dict

from langchain_promptstrat.cli import main
from langchain_promptstrat.testing import build_agent_run


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def agent_run() -> list[BaseMessage]:
    """A 30-tool-call agent run."""
    return build_agent_run(30, seed=2)


@pytest.fixture
def conversation(tmp_path: Path, agent_run: list[BaseMessage]) -> Path:
    """The agent run as a JSON array of messages_to_dict dicts."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps(messages_to_dict(agent_run)))
    return path


class TestModel:
    @pytest.mark.parametrize("command", ["stats", "simulate"])
    def test_an_unknown_model_warns_naming_the_encoding_it_counts_with(self, capsys: pytest.CaptureFixture[str],
                                                                      conversation: Path, command: str) -> None:
        """--model no-such-model counts with cl100k_base and says so in one line, as --model gpt-5 does when its
        encoding is missing: a typo must not pass for a model's own count."""
        argv = [str(conversation), "--json"] if command == "stats" else ["--calls", "3", "none", "--json"]
        code, out, err = run(capsys, command, *argv, "--model", "no-such-model")
        assert code == 0 and json.loads(out)
        assert err == (
            "promptstrat: warning: no tokenizer is known for model 'no-such-model': tokens are counted with cl100k_base, "
            "which this package ships and which only approximates another model's tokenizer; name an encoding "
            "(encoding=..., --encoding) to choose one\n"
        )

    def test_a_model_whose_encoding_is_known_counts_without_a_word(self, capsys: pytest.CaptureFixture[str],
                                                                   conversation: Path) -> None:
        """gpt-4's own encoding is cl100k_base, which the package ships: nothing to warn about."""
        code, out, err = run(capsys, "stats", str(conversation), "--json", "--model", "gpt-4")
        assert (code, err) == (0, "") and json.loads(out)["token_counter"]["encoding"] == "cl100k_base"
