"""The one error hierarchy of langchain_promptstrat.

Every error raised on purpose derives from :class:`PromptStratError` and also from the
built-in exception callers already catch, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

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


def warn_renamed(old: str, new: str) -> None:
    """Warn that ``old`` is now ``new`` with a ``DeprecationWarning`` (the old name still works
    for one release), pointing at the first caller outside this package."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(
        f"{old} is now {new}; the old name still works in this release only",
        DeprecationWarning,
        stacklevel=level,
    )


def renamed_attributes(
    module: str, namespace: Mapping[str, Any], renamed: Mapping[str, str]
) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` that answers each old name of ``renamed`` (old -> new) with
    the new name's value in ``namespace``, warning."""

    def __getattr__(name: str) -> Any:
        if name not in renamed:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_renamed(name, renamed[name])
        return namespace[renamed[name]]

    return __getattr__
