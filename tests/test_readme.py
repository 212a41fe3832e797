"""The README's promises: its commands are what CI runs, its first example prints what it says.

Every python block of the README (and of the docs) runs in a fresh install of the package plus
the extras its lead-in names in tests/test_docs.py.
"""

from __future__ import annotations

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
        """The first python block of the README runs as written and prints exactly the line its last comment shows ('... pairs intact')."""
        code = re.findall(r"```python\n(.*?)```", README, flags=re.S)[0]
        promised = code.rstrip().rsplit("# ", 1)[1]
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert result.returncode == 0, result.stderr
        assert promised.endswith("pairs intact") and result.stdout == promised + "\n"
