"""What a provider billed for a request, as the answer to it reports: the input tokens and their cached part.

Every LangChain chat model puts it on its answer as ``usage_metadata`` (``input_tokens``,
``input_token_details["cache_read"]``), the provider's own figures summed the same way for
every provider (Anthropic's cache reads and writes are in ``input_tokens``). An answer read
from an OpenAI-format file may have only the provider's ``usage`` dict, kept in
``response_metadata`` (``token_usage`` or ``usage``: ``prompt_tokens`` and
``prompt_tokens_details.cached_tokens``, or Anthropic's ``input_tokens`` with its cache
fields). A transcript file can carry it beside it, as ``NAME.usage.json``: one entry per
assistant message, in order, ``{"prompt_tokens": int | null, "cached_tokens": int | null}``.

Anything else (a missing field, zero, a negative or non-integer count, a string) is not a
figure: :func:`billed_input` answers None for it and never raises, so one odd answer can
only be left out of an estimate, never break a model call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

__all__ = ["BilledInput", "billed_input", "read_usage_file"]


@dataclass(frozen=True)
class BilledInput:
    """The input of one request as the provider billed it."""

    tokens: int
    """Every input token of the request: messages, tool schemas and the provider's framing."""
    cached: int | None = None
    """The part of ``tokens`` served from the provider's prompt cache, when reported."""


def _count(value: Any) -> int | None:
    """Return ``value`` as a token count, or None when it is not a non-negative integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _from_provider_dict(usage: Mapping[str, Any]) -> BilledInput | None:
    """Return the billed input of an OpenAI (``prompt_tokens``) or Anthropic (``input_tokens``) ``usage`` dict."""
    if "prompt_tokens" in usage:  # OpenAI's usage, or a usage file's entry (cached_tokens beside it)
        details = usage.get("prompt_tokens_details")
        cached = _count((details if isinstance(details, Mapping) else usage).get("cached_tokens"))
        tokens = _count(usage["prompt_tokens"])
    else:
        parts = [_count(usage.get(k)) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
        tokens = None if parts[0] is None else sum(p or 0 for p in parts)
        cached = parts[1]
    if not tokens:
        return None
    return BilledInput(tokens, cached if cached is not None and cached <= tokens else None)


def billed_input(message: BaseMessage) -> BilledInput | None:
    """Return what the provider billed for the request ``message`` answered, or None when it reported no usable figure."""
    if not isinstance(message, AIMessage):
        return None
    usage: Any = message.usage_metadata
    if isinstance(usage, Mapping):
        tokens = _count(usage.get("input_tokens"))
        if tokens:
            details = usage.get("input_token_details")
            cached = _count(details.get("cache_read")) if isinstance(details, Mapping) else None
            return BilledInput(tokens, cached if cached is not None and cached <= tokens else None)
    metadata = message.response_metadata if isinstance(message.response_metadata, Mapping) else {}
    for key in ("token_usage", "usage"):
        found = metadata.get(key)
        if isinstance(found, Mapping):
            return _from_provider_dict(found)
    return None


def read_usage_file(path: str | Path) -> list[BilledInput | None]:
    """Return the entries of a ``NAME.usage.json`` file: one per assistant message of its transcript, None where unreported.

    Raises:
        OSError: The file cannot be read.
        ValueError: It is not a JSON list of ``{"prompt_tokens", "cached_tokens"}`` objects (or nulls).
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(entry is None or isinstance(entry, Mapping) for entry in data):
        raise ValueError(f"{path}: expected a JSON list of {{'prompt_tokens', 'cached_tokens'}} objects")
    return [None if entry is None else _from_provider_dict(entry) for entry in data]
