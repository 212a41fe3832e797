"""The README's promises: its commands are what CI runs, its example runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_postgres import TEST_DSN_ENV, unavailable

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, flags=re.S)


class TestReadme:
    def test_ci_runs_exactly_the_readme_test_command(self):
        """The README's install-and-test command appears verbatim in .ci/run."""
        test_command = [b.strip() for b in bash_blocks() if "pytest" in b]
        assert len(test_command) == 1
        ci_lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
        assert test_command[0] in ci_lines

    def test_readme_offers_a_run_command_and_a_test_command(self):
        """A fresh machine needs two commands: one to run the main job, one to run every test."""
        blocks = [b.strip() for b in bash_blocks()]
        assert blocks[0].startswith("pip install . && promptstrat simulate")
        assert any(b.endswith("python -m pytest") for b in blocks)

    def test_quickstart_runs_and_keeps_pairs_intact(self):
        """The first python block of the README runs as written and prints 'pairs intact'."""
        code = re.findall(r"```python\n(.*?)```", README, flags=re.S)[0]
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert result.returncode == 0, result.stderr
        assert "pairs intact" in result.stdout


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.S)


README_DSN = "postgresql://user:pass@db/agents"


@pytest.mark.parametrize("number", range(len(python_blocks())))
def test_every_python_block_of_the_readme_runs(number, tmp_path):
    """Each python example of the README runs as written, offline, in a fresh directory."""
    code = python_blocks()[number]
    if README_DSN in code:
        dsn = os.environ.get(TEST_DSN_ENV, "").strip()
        if not dsn:  # a skip on a developer machine, a failure where PROMPTSTRAT_REQUIRE_POSTGRES is set (CI)
            unavailable(f"the README's PostgreSQL example needs a server: set {TEST_DSN_ENV} or run .ci/run")
        code = code.replace(README_DSN, dsn)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
