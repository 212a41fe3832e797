"""The CLI answers --help and --version without importing LangChain, LangGraph or tiktoken;
--progress is never silently dropped."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

import pytest

from langchain_promptstrat.simulate import simulate

HEAVY = ("langgraph", "langchain_core", "tiktoken", "langchain")


def modules_loaded_by(*argv: str) -> set[str]:
    """Return the top-level modules a fresh interpreter has imported after running ``promptstrat
    argv``."""
    code = (
        "import sys, json\n"
        "from langchain_promptstrat.cli import main\n"
        f"code = main({list(argv)!r})\n"
        "sys.__stdout__.write('\\n' + json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("argv", [("--help",), ("--version",)])
def test_top_level_help_and_version_import_no_heavy_dependency(argv):
    """`promptstrat --help` and `--version` load none of LangGraph, LangChain or tiktoken (the 1.8 s
    they cost)."""
    assert modules_loaded_by(*argv) & set(HEAVY) == set()


@pytest.mark.parametrize(
    "argv",
    [("inbox", "--help"), ("inbox", "post", "--help"), ("inbox", "abort", "--help"), ("inbox",)],
)
def test_inbox_help_imports_no_heavy_dependency(argv):
    """`promptstrat inbox ... --help` (and `inbox` alone, listing the actions) builds only the
    inbox's options: none of LangGraph, LangChain or tiktoken is loaded."""
    assert modules_loaded_by(*argv) & set(HEAVY) == set()


@pytest.mark.parametrize("command", ["apply", "stats", "simulate"])
def test_a_command_help_imports_no_heavy_dependency(command):
    """`promptstrat apply|stats|simulate --help` print their defaults (the defaults module) without
    loading LangChain, LangGraph or tiktoken."""
    assert modules_loaded_by(command, "--help") & set(HEAVY) == set()


def test_the_defaults_the_help_shows_are_the_ones_the_commands_use():
    """The help's defaults come from the defaults module, the same objects simulate, tokens and
    cache_rules use."""
    from langchain_promptstrat import cache_rules, defaults, tokens
    from langchain_promptstrat import simulate as simulation

    assert simulation.SIMULATED_MAX_TOKENS is defaults.SIMULATED_MAX_TOKENS
    assert simulation.DEFAULT_TOOL_CALLS is defaults.DEFAULT_TOOL_CALLS
    assert simulation.DEFAULT_CACHED_FRACTION is defaults.DEFAULT_CACHED_FRACTION
    assert tokens.DEFAULT_ENCODING is defaults.DEFAULT_ENCODING
    assert cache_rules.CACHE_RULES is defaults.CACHE_RULES


def test_an_inbox_command_imports_no_heavy_dependency(tmp_path):
    """`promptstrat inbox post` then `inbox ls` (a script's everyday calls) run without importing
    LangChain or LangGraph."""
    save_file = str(tmp_path / "agent.json")
    assert (
        modules_loaded_by("inbox", "post", "--save-file", save_file, "check the logs") & set(HEAVY)
        == set()
    )
    assert modules_loaded_by("inbox", "ls", "--save-file", save_file) & set(HEAVY) == set()


def test_importing_the_package_does_not_import_langgraph():
    """`import langchain_promptstrat` is lazy: LangGraph loads with the first name that needs it."""
    code = (
        "import sys, langchain_promptstrat as p; print('langgraph' in sys.modules); "
        "p.pre_model_hook; print('langgraph' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True"], done.stderr


def test_version_prints_the_installed_version(capsys):
    """`promptstrat --version` prints the distribution's version and exits 0."""
    from langchain_promptstrat.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"promptstrat {version('langchain-promptstrat')}\n"


def test_progress_without_tqdm_draws_a_plain_counter(capsys, monkeypatch):
    """progress=True without tqdm installed still shows progress on stderr instead of nothing."""
    monkeypatch.setitem(sys.modules, "tqdm", None)
    simulate(["none"], n_tool_calls=5, progress=True)
    err = capsys.readouterr().err
    assert "none:" in err and "(100%)" in err
