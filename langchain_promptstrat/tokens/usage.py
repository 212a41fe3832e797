"""What a provider billed for a request, as its answer reports it, and the :class:`Calibration` a
ceiling is divided by.

LangChain puts it on an answer as ``usage_metadata`` (``input_tokens``,
``input_token_details["cache_read"]``); an answer read from a file may have only the
provider's ``usage`` dict in ``response_metadata`` (OpenAI's ``prompt_tokens`` and
``prompt_tokens_details.cached_tokens``, or Anthropic's ``input_tokens`` and cache fields); a
transcript may carry a ``NAME.usage.json`` beside it, one ``{"prompt_tokens", "cached_tokens"}``
entry per assistant message. Anything else is no figure: :func:`billed_input` answers None,
never raises. A replay carries the calibration from call to call (``observe`` each answer with
what was sent for it): a function of the history.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

__all__ = [
    "BilledInput",
    "Calibration",
    "billed_input",
    "calibration_for",
    "history_calibration",
    "read_usage_file",
]


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
    """Return the billed input of an OpenAI (``prompt_tokens``) or Anthropic (``input_tokens``)
    ``usage`` dict."""
    if (
        "prompt_tokens" in usage
    ):  # OpenAI's usage, or a usage file's entry (cached_tokens beside it)
        details = usage.get("prompt_tokens_details")
        cached = _count((details if isinstance(details, Mapping) else usage).get("cached_tokens"))
        tokens = _count(usage["prompt_tokens"])
    else:
        parts = [
            _count(usage.get(k))
            for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        ]
        tokens = None if parts[0] is None else sum(p or 0 for p in parts)
        cached = parts[1]
    return _billed(tokens, cached)


def _billed(tokens: int | None, cached: int | None) -> BilledInput | None:
    """Return the billed input, None without a token figure; a cached part larger than the whole is
    not reported."""
    if not tokens:
        return None
    return BilledInput(tokens, cached if cached is not None and cached <= tokens else None)


def _reported(message: AIMessage) -> list[tuple[bool, Any]]:
    """Return the usage objects ``message`` carries, each with whether it is LangChain's
    ``usage_metadata``.

    A role-style file's ``usage_metadata`` or ``usage`` key lands in ``additional_kwargs``
    (``convert_to_messages`` keeps unknown keys there), so it is read there too.
    """
    metadata = message.response_metadata if isinstance(message.response_metadata, Mapping) else {}
    kwargs = message.additional_kwargs if isinstance(message.additional_kwargs, Mapping) else {}
    found = [
        (True, message.usage_metadata),
        (True, kwargs.get("usage_metadata")),
        (False, metadata.get("token_usage")),
        (False, metadata.get("usage")),
        (False, kwargs.get("usage")),
    ]
    return [(langchain, usage) for langchain, usage in found if usage is not None]


def billed_input(message: BaseMessage) -> BilledInput | None:
    """Return what the provider billed for the request ``message`` answered, or None when it
    reported no usable figure."""
    if not isinstance(message, AIMessage):
        return None
    for langchain, usage in _reported(message):
        if not isinstance(usage, Mapping):
            continue
        if not langchain:
            return _from_provider_dict(usage)
        details = usage.get("input_token_details")
        cached = _count(details.get("cache_read")) if isinstance(details, Mapping) else None
        billed = _billed(_count(usage.get("input_tokens")), cached)
        if billed is not None:
            return billed
    return None


def read_usage_file(path: str | Path) -> list[BilledInput | None]:
    """Return the entries of a ``NAME.usage.json`` file: one per assistant message of its
    transcript, None where unreported.

    Raises:
        OSError: The file cannot be read.
        ValueError: It is not a JSON list of ``{"prompt_tokens", "cached_tokens"}`` objects (or
            nulls).
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(
        entry is None or isinstance(entry, Mapping) for entry in data
    ):
        raise ValueError(
            f"{path}: expected a JSON list of {{'prompt_tokens', 'cached_tokens'}} objects"
        )
    return [None if entry is None else _from_provider_dict(entry) for entry in data]


UPPER = 3.0
"""The largest factor: CJK text counts 2-3x the package's count; a larger ratio is an error, not a
count."""
MATCHES = 0.02
"""A ratio within this of 1.0 is a count that matches (the default's ``stable_token_margin`` covers
it): factor 1.0."""
RECENT = 8
"""How many of the newest answers' ratios the estimate reads."""
PRIORS = {"gemini": 1.2}
"""The factor before any answer reported usage, by provider family (a model name that contains the
key).

Gemini: the 95th percentile of Gemini 3 Pro's input tokens over the package's count, 1.203 over
1,585 calls of 15 runs (``python benchmarks/provider_counts.py``); other families keep today's
margin."""


@dataclass(frozen=True)
class Calibration:
    """The provider's count over the package's for a conversation's answers: what the budget is
    divided by."""

    ratios: tuple[float, ...] = ()
    """Billed ÷ sent for the newest answers that reported usage (at most :data:`RECENT`)."""
    answers: int = 0
    """Every answer that reported usage."""
    ignored: int = 0
    """Answers whose usage is no figure (missing, zero, negative, a string): left out."""
    prior: float = 1.0
    family: str | None = None
    """The provider family whose prior applies before any answer reported usage."""

    @property
    def factor(self) -> float:
        """Return the factor: the second-largest recent ratio (one odd answer moves it no further),
        in [1, UPPER]; 1.0 when it matches."""
        if not self.ratios:
            return self.prior
        ordered = sorted(self.ratios)
        estimate = min(ordered[-2] if len(ordered) > 1 else ordered[0], UPPER)
        return estimate if estimate > 1 + MATCHES else 1.0

    @property
    def source(self) -> str:
        """Return where the factor comes from: ``usage`` with n answers, ``prior:FAMILY``, or
        ``none``."""
        return (
            f"usage ({self.answers} answers)"
            if self.ratios
            else f"prior:{self.family}"
            if self.family
            else "none"
        )

    def observe(self, message: BaseMessage, sent: int) -> Calibration:
        """Return this calibration with ``message``'s usage, if it is an answer, to a prompt of
        ``sent`` tokens on the package's count.

        ``sent`` is what the strategy sent for it; a history recorded without the strategy was
        billed for more (the whole history), which reads as a larger ratio: a smaller budget.
        """
        if not isinstance(message, AIMessage) or sent <= 0:
            return self
        billed = billed_input(message)
        if billed is None:
            return replace(self, ignored=self.ignored + 1) if _reported(message) else self
        return self.learn(billed.tokens, sent)

    def learn(self, billed: int, sent: int) -> Calibration:
        """Return this calibration with one more answer: the provider billed ``billed`` for a prompt
        of ``sent`` tokens on the package's count."""
        return replace(
            self, ratios=(*self.ratios[1 - RECENT :], billed / sent), answers=self.answers + 1
        )

    def budget(self, tokens: int, extra: int = 0) -> int:
        """Return the tokens left for the messages, on the package's count, of a ceiling of
        ``tokens`` with ``extra`` sent beside them.

        The default's ``tokens`` already keeps its margin free, and the factor divides it: learned
        from earlier answers, the factor cannot foresee the ratio of the prompt about to be sent
        (a new output the package undercounts more), and the margin covers that move.
        """
        factor = self.factor
        return tokens if factor == 1.0 else int((tokens + extra) / factor) - extra

    def report(self, owner: object) -> dict[str, Any]:
        """Return the report's fields (none without usage or a prior: the factor is 1.0, source
        ``none``), warning once per ``owner`` (a strategy object) when answers' usage was
        ignored."""
        if self.ignored and owner not in _warned:
            _warned.add(owner)
            logging.getLogger("langchain_promptstrat").warning(
                "%d answer(s) reported usage that is no token count (missing, zero, negative or "
                "not an integer): ignored",
                self.ignored,
            )
        if not (self.ratios or self.family):
            return {}  # the report of a conversation without usage is today's, byte for byte
        return {"usage_factor": round(self.factor, 4), "usage_factor_source": self.source}


_warned: weakref.WeakSet[object] = weakref.WeakSet()


def calibration_for(model: Any, messages: Sequence[BaseMessage]) -> Calibration:
    """Return the calibration before any answer is read: the prior of ``model``'s family (a name or
    a chat model), else of the newest answer's ``model_name``."""
    name = (
        model
        if isinstance(model, str)
        else getattr(model, "model_name", None) or getattr(model, "model", None)
    )
    if not isinstance(name, str):
        name = next(
            (
                m.response_metadata.get("model_name")
                for m in reversed(messages)
                if isinstance(m, AIMessage)
            ),
            None,
        )
    family = next((f for f in PRIORS if isinstance(name, str) and f in name.lower()), None)
    return Calibration(prior=PRIORS[family], family=family) if family else Calibration()


def history_calibration(
    history: Sequence[BaseMessage],
    billed: Sequence[BilledInput | None],
    count: Callable[[Sequence[BaseMessage]], int],
) -> Calibration:
    """Return the calibration of a run recorded without a strategy: each answer's ``billed`` input
    (one entry per assistant message of ``history``, None where unreported) over ``count`` of the
    whole history before it, which is what was sent."""
    calibration = Calibration()
    answers = [i for i, m in enumerate(history) if isinstance(m, AIMessage)]
    for i, entry in zip(answers, billed, strict=False):
        sent = count(history[:i]) if entry is not None and i else 0
        calibration = (
            calibration.learn(entry.tokens, sent) if entry is not None and sent > 0 else calibration
        )
    return calibration
