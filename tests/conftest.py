"""Suite-wide test settings."""

from __future__ import annotations

import pytest
from hypothesis import settings

# Speed is measured in benchmarks/, never asserted in the suite: Hypothesis's per-example
# deadline (200 ms) would fail a correct property on a loaded machine, so no test has one.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(autouse=True)
def _inbox_files_are_complete_when_written(monkeypatch):
    """Tests write inbox files in one call, so they need no editor quiet period; the editor tests set their own."""
    monkeypatch.setenv("INBOX_QUIET_SECONDS", "0")
