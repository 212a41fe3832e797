"""The README's promises: its commands are what CI runs, its first example prints what it says.

Every python block of the README (and of the docs) runs in a fresh install of the package plus
the extras its lead-in names in tests/test_docs.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

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

    def test_quickstart_runs_and_prints_what_its_comment_says(self):
        """The first python block of the README runs as written and prints exactly the line its last
        comment shows ('... pairs intact')."""
        code = re.findall(r"```python\n(.*?)```", README, flags=re.S)[0]
        promised = code.rstrip().rsplit("# ", 1)[1]
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
        assert result.returncode == 0, result.stderr
        assert promised.endswith("pairs intact") and result.stdout == promised + "\n"


class TestWhatABareRunSkips:
    def test_the_readme_says_what_a_bare_run_skips_and_how_to_run_everything(self):
        """The test command does not claim to run every test: the README names what a fresh clone
        skips (PostgreSQL, LangGraph Server, the real transcripts) and the commands that run them
        too."""
        text = " ".join(README.split())
        assert "run every test" not in text
        variables = ("PROMPTSTRAT_TEST_DSN", "PROMPTSTRAT_LANGGRAPH_URL")
        for needed in (*variables, "python benchmarks/get_realruns.py", "`.ci/run`"):
            assert needed in text, needed
        assert "last lines count them by reason" in text

    def test_a_run_ends_with_the_skipped_tests_counted_by_reason_and_how_to_run_them(
        self, tmp_path
    ):
        """A run whose tests skip ends with each reason and its count, and the commands that run
        them: a bare run's '110 skipped' is explained where it is read, at the end."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROMPTSTRAT_")}
        env["PROMPTSTRAT_REALRUNS"] = str(tmp_path / "nowhere")
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
        result = subprocess.run(
            [*command, "tests/test_get_realruns.py"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stdout[-3000:]
        tail = result.stdout.split("skipped, by reason")[-1]
        assert f"real transcripts not available at {tmp_path / 'nowhere' / 'raw'}" in tail
        assert ".ci/run starts a throwaway PostgreSQL server and langgraph dev" in tail
        assert "python benchmarks/get_realruns.py fetches the real transcripts" in tail
