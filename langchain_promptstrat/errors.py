"""The one error hierarchy of langchain_promptstrat.

Every error raised on purpose derives from :class:`PromptStratError` and also from the
built-in exception callers already catch, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage


class PromptStratError(Exception):
    """Base for every error this package raises on purpose."""


class ConfigError(PromptStratError, ValueError):
    """A setting or argument has a value the package cannot use."""


class UnknownStrategyError(PromptStratError, LookupError):
    """A strategy name is not registered; the message lists the known names."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = list(known)
        super().__init__(f"unknown strategy {name!r}; known: {', '.join(self.known) or '(none)'}")

    def __reduce__(
        self,
    ) -> tuple[
        type[UnknownStrategyError], tuple[str, list[str]]
    ]:  # keep the exception picklable across processes
        return (type(self), (self.name, self.known))


class InvalidMessagesError(PromptStratError, ValueError):
    """The input cannot be read as a list of chat messages."""


class InboxError(PromptStratError, OSError):
    """The inbox cannot be used as asked (a root that is not a directory, an unsafe thread id, no
    run config)."""


class InboxAborted(PromptStratError, RuntimeError):
    """A person asked the run to stop by dropping an ``abort`` file into the inbox.

    ``reason``: the file's stripped content (never a path); ``path``: where the consumed
    file now lies; ``delivered``: the notices consumed before it in the same pickup.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | None = None,
        delivered: Sequence[BaseMessage] | None = None,
    ) -> None:
        self.reason = reason
        self.path = path
        self.delivered: list[BaseMessage] = list(delivered or [])
        super().__init__(reason)  # pickled as InboxAborted(reason) and its attributes


class ContextWindowError(PromptStratError, ValueError):
    """The part of a prompt no strategy may drop (system prompt and the run's task) is larger than
    the ceiling."""
