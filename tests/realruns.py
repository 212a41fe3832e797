"""Where the real agent transcripts are: the folder ``benchmarks/get_realruns.py`` names.

They are third-party data, never committed to the repository; tests using them skip when the
folder is absent (a fresh clone). The rule is the download script's own
(:func:`get_realruns.realruns_folder`): ``PROMPTSTRAT_REALRUNS``, else ``realruns/`` in the
clone (where the script writes, ignored by git), else ``../shared/realruns`` beside it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
_SCRIPT = REPO_ROOT / "benchmarks" / "get_realruns.py"
_spec = importlib.util.spec_from_file_location("get_realruns", _SCRIPT)
assert _spec and _spec.loader
get_realruns = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(get_realruns)
REALRUNS: Path = get_realruns.REALRUNS


def realruns_dir(sub: str) -> Path:
    """Return ``REALRUNS / sub``, skipping the test when it is absent."""
    path = REALRUNS / sub
    if not path.is_dir() or not any(path.iterdir()):
        pytest.skip(f"real transcripts not available at {path}")
    return path
