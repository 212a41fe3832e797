"""``python -m build`` makes an sdist and a wheel, and each installs alone in a fresh environment
and works.

The wheel is what ``pip install git+URL`` and an index install; the sdist is what a wheel is built
from anywhere else. Both are built from a copy of the project's files (the build writes into the
folder it builds) and installed, not in editable mode, in a fresh virtual environment, where a
smoke test counts tokens exactly from the BPE file the package ships, prepares a prompt and runs
the command line from a folder holding nothing of this checkout.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SMOKE = """
import sys
import langchain_promptstrat
from langchain_promptstrat import TokenCounter, check_tool_pairs, prepare_prompt
from langchain_promptstrat.testing import build_agent_run

assert langchain_promptstrat.__file__.startswith(sys.prefix), langchain_promptstrat.__file__
history = build_agent_run(200)
prompt, count = prepare_prompt(history), TokenCounter()
assert count.exact and not check_tool_pairs(prompt) and count(prompt) < count(history)
print("ok")
"""


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return the folder ``python -m build`` wrote the sdist and the wheel to."""
    where = tmp_path_factory.mktemp("build")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, where / name)
    shutil.copytree(
        ROOT / "langchain_promptstrat",
        where / "langchain_promptstrat",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(where / "dist"), str(where)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return where / "dist"


def test_the_wheel_ships_the_package_and_its_data_and_nothing_else(dist: Path) -> None:
    """The wheel holds the package with its BPE file and py.typed, and no tests, benchmarks or
    notebooks."""
    [wheel] = dist.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert (
        "langchain_promptstrat/tokens/cl100k_base.tiktoken.xz" in names
        and "langchain_promptstrat/py.typed" in names
    )
    assert {name.split("/")[0] for name in names} == {
        "langchain_promptstrat",
        wheel.name.split("-py3")[0] + ".dist-info",
    }


@pytest.mark.parametrize("kind", ["*.whl", "*.tar.gz"], ids=["wheel", "sdist"])
def test_each_distribution_installs_in_a_fresh_environment_and_works(
    dist: Path, kind: str, tmp_path: Path
) -> None:
    """pip installs the wheel (or the sdist) alone; exact counts, a prepared prompt and the CLI work
    there."""
    [archive] = dist.glob(kind)
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=300)
    bin_dir = tmp_path / "venv" / "bin"
    result = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(archive)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    smoke = subprocess.run(
        [str(bin_dir / "python"), "-c", SMOKE],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert smoke.returncode == 0 and smoke.stdout == "ok\n", smoke.stderr[-3000:]
    cli = subprocess.run(
        [str(bin_dir / "promptstrat"), "simulate", "--calls", "20", "none"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert cli.returncode == 0 and cli.stderr == "", cli.stderr[-3000:]
