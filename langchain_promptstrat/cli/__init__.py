"""The ``promptstrat`` command (being split into modules: see entry.py)."""

from __future__ import annotations

from langchain_promptstrat.cli.entry import build_parser, main

__all__ = ["build_parser", "main"]
