"""The package and the documented examples (README and docs pages) type-check: ``mypy --strict`` and
pyright report no error."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "langchain_promptstrat"


def package_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


DOCUMENTED = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.fixture(scope="module")
def documented_examples(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The python blocks of the README and the docs pages, each written to its own module (as a user
    would paste it)."""
    where = tmp_path_factory.mktemp("documented_examples")
    paths = []
    for page in DOCUMENTED:
        for i, code in enumerate(
            re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
        ):
            path = where / f"{page.stem.lower()}_example_{i}.py"
            path.write_text(code, encoding="utf-8")
            paths.append(path)
    assert any(p.name.startswith("readme_") for p in paths), (
        "the README has no python block to check"
    )
    return paths


def run(command: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=900, env={**os.environ, **env}
    )


def test_mypy_strict_finds_no_error_in_the_package_or_the_documented_examples(
    documented_examples: list[Path], tmp_path: Path
) -> None:
    """``mypy --strict`` (settings from pyproject.toml) checks every module and documented example
    and reports nothing."""
    result = run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(PACKAGE),
            *map(str, documented_examples),
        ]
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    checked = re.search(r"Success: no issues found in (\d+) source files", output)
    assert checked is not None, output
    assert int(checked.group(1)) == len(package_modules()) + len(documented_examples), output


def test_pyright_finds_no_error_in_the_package_or_the_documented_examples(
    documented_examples: list[Path],
) -> None:
    """pyright (settings from pyproject.toml, this interpreter's packages) checks every module and
    documented example and reports nothing."""
    # PYRIGHT_PYTHON_IGNORE_WARNINGS: no look-up of the newest pyright on PyPI; the wheel bundles
    # pyright itself and the nodejs extra a node runtime, so nothing is downloaded
    result = run(
        [
            sys.executable,
            "-m",
            "pyright",
            "--outputjson",
            "--pythonpath",
            sys.executable,
            "--project",
            str(ROOT),
            str(PACKAGE),
            *map(str, documented_examples),
        ],
        PYRIGHT_PYTHON_IGNORE_WARNINGS="1",
    )
    try:
        report = json.loads(result.stdout)
    except ValueError:
        pytest.fail(
            f"pyright did not run (exit {result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    errors = [
        f"{d['file']}:{d['range']['start']['line'] + 1}: {d['message']} ({d.get('rule', '')})"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert report["summary"]["errorCount"] == 0, "\n".join(errors)
    assert report["summary"]["filesAnalyzed"] == len(package_modules()) + len(
        documented_examples
    ), report["summary"]
