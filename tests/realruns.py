"""Where the real agent transcripts are: ``../shared/realruns`` from the repository root, when present.

They are third-party data, never copied into the repository; tests using them skip when the
folder is absent (a user's clone). ``PROMPTSTRAT_REALRUNS`` points elsewhere (a worktree whose
parent is not the one CI uses).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
REALRUNS = Path(os.environ.get("PROMPTSTRAT_REALRUNS") or REPO_ROOT.parent / "shared" / "realruns")


def realruns_dir(sub: str) -> Path:
    """Return ``REALRUNS / sub``, skipping the test when it is absent."""
    path = REALRUNS / sub
    if not path.is_dir() or not any(path.iterdir()):
        pytest.skip(f"real transcripts not available at {path}")
    return path
