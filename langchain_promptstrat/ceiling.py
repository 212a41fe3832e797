"""The context ceiling of the bounded default, so a user who changes nothing never sends a prompt
the provider rejects; first to last:

1. ``max_tokens`` given to the strategy or a front end: tokens, or ``("fraction", 0.8)`` of
   the model's input window;
2. the ``max_tokens`` setting (``PROMPTSTRAT_MAX_TOKENS``);
3. the model's input window from its LangChain profile (``max_input_tokens``), minus room for
   the reply (its ``max_output_tokens``, at most 16,384 and a quarter of the window);
4. :data:`DEFAULT_MAX_TOKENS`: 128,000 − 16,384 = 111,616 tokens (128k: the smallest window of
   the mainstream tool-calling models).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from langchain_promptstrat.errors import renamed_attributes
from langchain_promptstrat.options import MaxTokens as MaxTokens  # re-exported
from langchain_promptstrat.options import check_max_tokens as check_max_tokens  # re-exported
from langchain_promptstrat.settings import Settings

DEFAULT_CONTEXT_WINDOW = 128_000
"""Input window assumed when no ceiling is given and the model is unknown (the smallest mainstream
window)."""
DEFAULT_REPLY_ROOM = 16_384
"""Tokens left for the model's reply when the ceiling comes from a window."""
DEFAULT_MAX_TOKENS = DEFAULT_CONTEXT_WINDOW - DEFAULT_REPLY_ROOM
"""The ceiling when nothing is given and no model is known: 111,616 tokens."""

RENAMED = {"DEFAULT_CEILING": "DEFAULT_MAX_TOKENS"}
"""Names of this module renamed for one spelling of the ceiling (old -> new), kept one release."""


__getattr__ = renamed_attributes(__name__, globals(), RENAMED)


@dataclass(frozen=True)
class Ceiling:
    """A resolved ceiling: ``tokens`` and a human-readable ``source`` (shown in reports)."""

    tokens: int
    source: str


def model_window(model: Any) -> tuple[int | None, int | None, str]:
    """Return ``(max_input_tokens, max_output_tokens, name)`` from a chat model's LangChain profile
    (None when unknown)."""
    if model is None:
        return None, None, ""
    profile = getattr(model, "profile", None)
    name = str(
        getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
    )
    if not isinstance(profile, dict):
        return None, None, name
    return (
        _positive(profile.get("max_input_tokens")),
        _positive(profile.get("max_output_tokens")),
        name,
    )


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def resolve_ceiling(
    max_tokens: MaxTokens = None, *, model: Any = None, settings: Settings | None = None
) -> Ceiling:
    """Return the ceiling for a model call, following the order in this module's docstring."""
    max_tokens = check_max_tokens(max_tokens)
    window, reply, name = model_window(model)
    if isinstance(max_tokens, int):
        return Ceiling(max_tokens, "max_tokens argument")
    if isinstance(max_tokens, tuple):
        share = max_tokens[1]
        if window is None:
            return Ceiling(
                int(DEFAULT_CONTEXT_WINDOW * share),
                f"('fraction', {share:g}) of the assumed {DEFAULT_CONTEXT_WINDOW:,}-token window "
                "(no model profile)",
            )
        return Ceiling(
            int(window * share), f"('fraction', {share:g}) of {name}'s max_input_tokens {window:,}"
        )
    configured = (settings if settings is not None else Settings.load()).max_tokens
    if isinstance(configured, int):
        where = (
            "PROMPTSTRAT_MAX_TOKENS"
            if "PROMPTSTRAT_MAX_TOKENS" in os.environ
            else "max_tokens setting"
        )
        return Ceiling(configured, where)  # Settings refuses a value under 1
    if configured is not None:  # a share of the window, set as the setting
        return resolve_ceiling(configured, model=model)
    if window is not None:
        room = min(
            reply if reply is not None else DEFAULT_REPLY_ROOM, DEFAULT_REPLY_ROOM, window // 4
        )
        return Ceiling(
            window - room, f"{name}'s max_input_tokens {window:,} minus {room:,} for the reply"
        )
    return Ceiling(
        DEFAULT_MAX_TOKENS,
        f"default: a {DEFAULT_CONTEXT_WINDOW:,}-token window minus {DEFAULT_REPLY_ROOM:,} for the "
        "reply",
    )
