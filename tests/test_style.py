"""The code is formatted by ``ruff format`` and passes ``ruff check`` (settings in pyproject.toml).

One formatter for the package, the tests and the benchmarks, so a line count means the same
thing everywhere and no diff is about layout; the linter's rules (pycodestyle, pyflakes, isort,
bugbear, pyupgrade) catch what review would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_file_is_as_ruff_format_writes_it() -> None:
    """``ruff format --check`` finds nothing to reformat in the package, tests and benchmarks."""
    done = ruff("format", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "already formatted" in done.stdout


def test_ruff_check_finds_nothing() -> None:
    """``ruff check`` (E, F, W, I, B, UP at 100 columns) reports no finding."""
    done = ruff("check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_style_check_sees_a_long_line(tmp_path: Path) -> None:
    """The check can fail: a file with a line over 100 columns is reported (E501)."""
    bad = tmp_path / "bad.py"
    bad.write_text('x = "' + "a" * 120 + '"\n', encoding="utf-8")
    done = ruff("check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad))
    assert done.returncode == 1 and "E501" in done.stdout, done.stdout + done.stderr
