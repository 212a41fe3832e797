"""none: the no-op strategy, for turning every strategy off by name."""

from __future__ import annotations

import os

from langchain_core.messages import BaseMessage

from langchain_promptstrat.strategy import PromptStrategy
from langchain_promptstrat.report import Compacted, make_report

__all__ = ["NoStrategy"]


class NoStrategy(PromptStrategy):
    """``none``: returns the messages unchanged (a new list holding the same messages)."""

    strategy_name = "none"

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return ``messages`` as they are."""
        out = list(messages)
        return Compacted(out, make_report("none", messages, out))
