"""Suite-wide test settings."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings
from langchain_core.messages import BaseMessage, messages_to_dict

from langchain_promptstrat.testing import build_agent_run

pytest_plugins = ["conftest_postgres"]
"""The PostgreSQL fixtures (``postgres_dsn``, ``postgres_schema``), for every test module."""

# Speed is measured in benchmarks/, never asserted in the suite: Hypothesis's per-example
# deadline (200 ms) would fail a correct property on a loaded machine, so no test has one.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(autouse=True)
def _inbox_files_are_complete_when_written(monkeypatch):
    """Tests write inbox files in one call, so they need no editor quiet period; the editor tests
    set their own."""
    monkeypatch.setenv("INBOX_QUIET_SECONDS", "0")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """End the run with how many tests were skipped for each reason, and how to run them too.

    A bare ``python -m pytest`` on a fresh clone has no PostgreSQL server, no ``langgraph dev``
    and no real transcripts: the tests that need them skip, and this says so instead of letting
    "N skipped" pass for "every test ran".
    """
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: Counter[str] = Counter()
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    terminalreporter.section(f"{len(skipped)} skipped, by reason")
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"{count:>5}  {reason}")
    terminalreporter.write_line(
        "To run them: .ci/run starts a throwaway PostgreSQL server and langgraph dev, "
        "then the suite;"
    )
    terminalreporter.write_line(
        "python benchmarks/get_realruns.py fetches the real transcripts first (see the README)."
    )


@pytest.fixture(scope="module")
def agent_run() -> list[BaseMessage]:
    """An 80-tool-call agent run (129 messages: 1 system, 1 human, 47 ai, 80 tool), long enough to
    shorten calls."""
    return build_agent_run(80, seed=1)


@pytest.fixture
def langchain_file(tmp_path: Path, agent_run: list[BaseMessage]) -> Path:
    """The agent run as a JSON array of messages_to_dict dicts."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps(messages_to_dict(agent_run)))
    return path
