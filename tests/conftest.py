"""Suite-wide test settings."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _inbox_files_are_complete_when_written(monkeypatch):
    """Tests write inbox files in one call, so they need no editor quiet period; the editor tests set their own."""
    monkeypatch.setenv("INBOX_QUIET_SECONDS", "0")
