"""none: the no-op strategy, for turning every strategy off by name."""

from __future__ import annotations

from typing import NoReturn

from langchain_core.messages import BaseMessage

from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import Settings, settings_with_options
from langchain_promptstrat.strategy import NO_REQUEST, PromptRequest, PromptStrategy


class NoStrategy(PromptStrategy):
    """``none``: returns the messages unchanged (a new list holding the same messages)."""

    strategy_name = "none"

    def __init__(self, settings: Settings | None = None, **unknown: NoReturn) -> None:
        """Build the no-op.

        Args:
            settings: Accepted so every strategy builds from the same arguments; unused.

        Raises:
            ConfigError: A keyword was given (this strategy has no option).
        """
        super().__init__(settings_with_options(type(self), settings, unknown))

    def apply(self, messages: list[BaseMessage], request: PromptRequest = NO_REQUEST) -> Compacted:
        """Return ``messages`` as they are."""
        out = list(messages)
        return Compacted(out, make_report("none", messages, out))
