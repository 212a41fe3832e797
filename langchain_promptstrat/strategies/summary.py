"""summary: the oldest stretch of the conversation is replaced by a summary a chat model writes.

In a ladder it goes after ``ToolResults`` and before ``SlidingWindow`` (which would drop what
it summarises). Each round, while over target, takes the first tier with work: the oldest
earlier turns; their summaries combined; the task's oldest steps (never the newest
``keep_steps``); the task's summaries combined. A stretch is whole turns or steps, sent as
plain text, so no tool pair is split; its summary names the calls it stands for as a range
``read_back`` reads (the ``read_back_handles`` setting). A model that fails, answers nothing
or answers no smaller ends the rounds. Answers are remembered by the text sent, so replays
ask once.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.messages import (
    CountTokens,
    canonical_json,
    content_text,
    index_tool_calls,
    is_real_user_message,
    mark,
    recorded_calls,
)
from langchain_promptstrat.messages.history_memo import SizedCache
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.ladder_machinery.rungs import (
    NOTE_KIND,
    SUMMARY_KIND,
    Plan,
    Rewrite,
    Rung,
    call_spans,
    calls_among,
    kind_of,
    read_back_range,
    represented,
)
from langchain_promptstrat.strategies.sliding_window import layout
from langchain_promptstrat.strategy import PromptStrategy
from langchain_promptstrat.tokens import message_counter

DEFAULT_SUMMARY_TOKENS = 800
"""Tokens a summary is expected to take: the model is asked for about this much."""

SUMMARY_INSTRUCTIONS = (
    "You condense part of a conversation between a user and an AI agent so the agent can "
    "continue without it. Summarise the transcript you are given: the user's requests and "
    "constraints, what the agent did and found (tools called, key results, names, numbers, "
    "errors), decisions taken, and what is still open. Keep facts exact and invent nothing. "
    "Answer with the summary only, in at most about {words} words."
)
COMBINE_INSTRUCTIONS = (
    "You condense the summaries of earlier parts of a conversation between a user and an AI "
    "agent into one summary, oldest first, keeping every fact the agent may still need and "
    "inventing nothing. Answer with the summary only, in at most about {words} words."
)
SUMMARY_TEXT = (
    "[compacted:summary] Summary of {n} earlier {messages}, written to free context:\n\n{summary}"
)
CALLS_SUMMARY_TEXT = (
    "[compacted:summary] Summary of {n} earlier {messages}, written to free context; {calls}.\n\n"
    "{summary}"
)
"""The summary naming the calls it stands for (``calls``: :func:`.ladder.read_back_range`)."""

_TIER_NAMES = ("turns", "turn_summaries", "steps", "step_summaries")


def summary_message(
    summary: str, *, messages: int, tier: str, calls: list[int] | None = None
) -> HumanMessage:
    """Return the marked user-role message carrying ``summary`` of ``messages`` original messages.

    With ``calls`` (``[first, last]``, numbers in the stored conversation) it names the calls
    it stands for and how to read them back, and its mark keeps them.
    """
    words = {"n": messages, "messages": "message" if messages == 1 else "messages"}
    meta = {"strategy": "summary", "messages": messages, "tier": tier}
    if calls is None:
        text = SUMMARY_TEXT.format(**words, summary=summary)
        return mark(HumanMessage(text), SUMMARY_KIND, notice=True, **meta)
    text = CALLS_SUMMARY_TEXT.format(**words, calls=read_back_range(calls), summary=summary)
    return mark(HumanMessage(text), SUMMARY_KIND, notice=True, **meta, calls=calls)


def render(stretch: Sequence[BaseMessage]) -> str:
    """Return ``stretch`` as a plain-text transcript: who said what, which tools ran and what they
    returned."""
    index = index_tool_calls(stretch)
    parts: list[str] = []
    for i, message in enumerate(stretch):
        text = content_text(message.content).strip()
        kind = kind_of(message)
        if kind == SUMMARY_KIND:
            parts.append(f"Summary of earlier messages:\n{text}")
        elif kind == NOTE_KIND or (
            isinstance(message, HumanMessage) and not is_real_user_message(message)
        ):
            parts.append(f"Notice: {text}")
        elif isinstance(message, HumanMessage):
            parts.append(f"User: {text}")
        elif isinstance(message, AIMessage):
            lines = [f"Assistant: {text}"] if text else []
            for _, name, args in recorded_calls(message):
                lines.append(f"Assistant called {name}({canonical_json(args)})")
            parts.append("\n".join(lines) or "Assistant: (no text)")
        elif isinstance(message, ToolMessage):
            call = index.call_answered_by(i)
            parts.append(
                f"Result of {message.name or (call.name if call else '') or 'a tool'}: {text}"
            )
        else:
            parts.append(f"{message.type}: {text}")
    return "\n\n".join(parts)


def _next_stretch(
    messages: Sequence[BaseMessage],
    keep_steps: int,
    count_one: Callable[[BaseMessage], int],
    need: int,
) -> tuple[str, range] | None:
    """Return the tier and index range of the next stretch to summarise, or None when none is left.

    A plain stretch takes as few of its oldest units as free ``need`` tokens. The run's
    task (first real user message) is never in a stretch, nor joined across.
    """
    parts = layout(messages, keep_steps, keep_task=True)
    for tier, units in ((0, parts.history), (2, parts.task)):
        runs: list[list[range]] = [[]]
        groups: list[list[range]] = [[]]  # the units on each side of the run's task
        for unit in units:
            if groups[-1] and groups[-1][-1].stop != unit.start:
                groups.append([])
                runs.append([])
            groups[-1].append(unit)
            if kind_of(messages[unit.start]) == SUMMARY_KIND:
                runs.append([])
            else:
                runs[-1].append(unit)
        plain = next(
            (
                run
                for run in runs
                if run and not all(kind_of(messages[i]) == NOTE_KIND for u in run for i in u)
            ),
            None,
        )
        if plain:
            freed, taken = 0, 0
            for unit in plain:
                taken += 1
                freed += sum(count_one(messages[i]) for i in unit)
                if freed >= need:
                    break
            return _TIER_NAMES[tier], range(plain[0].start, plain[taken - 1].stop)
        for group in groups:
            summaries = [unit for unit in group if kind_of(messages[unit.start]) == SUMMARY_KIND]
            if len(summaries) >= 2:
                return _TIER_NAMES[tier + 1], range(summaries[0].start, summaries[-1].stop)
    return None


# --------------------------------------------------------------------------- asking the model


@dataclass
class _ModelRequest:
    """One summary to write: ``prompt`` for ``model``; answers the text, or the exception raised."""

    model: Any
    prompt: list[BaseMessage]
    answers: SizedCache[tuple[str, ...], str]
    """Answers by the text sent; one used is stored again, so the answers used last are the ones
    kept."""

    def _sent(self) -> tuple[str, ...]:
        return tuple(content_text(m.content) for m in self.prompt)

    def _remember(self, answer: Any) -> str:
        text = content_text(getattr(answer, "content", answer))
        if text.strip():
            self.answers.put(self._sent(), text, 1)
        return text

    def ask(self) -> Any:
        try:
            return self._remember(self.answers.get(self._sent()) or self.model.invoke(self.prompt))
        except Exception as exc:  # a failing summariser ends the rounds, it never breaks the prompt
            return exc

    async def aask(self) -> Any:
        try:
            return self._remember(
                self.answers.get(self._sent()) or await self.model.ainvoke(self.prompt)
            )
        except Exception as exc:
            return exc


class SummaryFailedWarning(RuntimeWarning):
    """The summariser model failed; the prompt was sent without that summary (see ``on_error``)."""


class _LazyChatModel:
    """A chat model named by a string (``"openai:gpt-4o-mini"``), built by ``init_chat_model`` at
    its first call."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"init_chat_model({self.spec!r})"

    def resolve(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from langchain.chat_models import init_chat_model
                except ImportError:
                    raise ConfigError(
                        f"the model string {self.spec!r} needs the langchain package: "
                        f"{install_hint('agents')}"
                    ) from None
                self._model = init_chat_model(self.spec)
            return self._model

    def invoke(self, prompt: list[BaseMessage]) -> Any:
        return self.resolve().invoke(prompt)

    async def ainvoke(self, prompt: list[BaseMessage]) -> Any:
        return await self.resolve().ainvoke(prompt)


class Summary(Rung):
    """``summary``: replace the oldest stretches by summaries a chat model writes, to fit a token
    target.

    ``Summary(model, max_tokens=100_000)`` or ``get_strategy("summary", model=model)``;
    ``model`` is a LangChain chat model or a model string for ``init_chat_model``.
    """

    strategy_name = "summary"

    def __init__(
        self,
        model: Any = None,
        /,
        settings: Settings | None = None,
        *,
        max_tokens: int | None = None,
        token_counter: Any = None,
        summary_tokens: int = DEFAULT_SUMMARY_TOKENS,
        cache_size: int = 256,
        on_error: Literal["warn", "raise"] = "warn",
        keep_steps: int | None = None,
        **given: NoReturn,
    ) -> None:
        """Build the rung; a settings option left at None comes from ``settings``, else the
        environment, else its default.

        Args:
            model: The chat model that writes the summaries, or a model string for
                ``init_chat_model``. Required (positional; ``model=`` through
                ``get_strategy``).
            settings: Thresholds shared with other strategies (default: read from the
                environment now); the options below win over it.
            max_tokens: The token target when the rung is used on its own (0: rewrite all it
                may). Default: the ``max_tokens`` setting (``PROMPTSTRAT_MAX_TOKENS``), else
                100,000; a ladder gives its own.
            token_counter: None (cl100k_base), a ``TokenCounter``, a chat model or any
                ``messages -> int`` callable (a ladder uses its own).
            summary_tokens: The length asked of each summary, in tokens. Default 800.
            cache_size: Answers remembered, by the exact text sent. Default 256.
            on_error: ``"warn"`` (a failing model gives a warning and the prompt goes on
                without that summary) or ``"raise"``. Default ``"warn"``.

        Raises:
            ConfigError: No model, a value out of range, or a keyword that is not one of
                these options.
        """
        extra: dict[str, Any] = dict(given)
        if isinstance(
            model, Settings
        ):  # get_strategy("summary", settings, model=...) passes settings first
            if settings is not None:
                raise ConfigError("settings given twice: as the first argument and as settings=")
            model, settings = None, model
        keyword = extra.pop("model", None)
        if model is not None and keyword is not None:
            raise ConfigError("model given twice: positionally and as model=")
        model = model if keyword is None else keyword
        PromptStrategy.__init__(  # the rung's arguments and options, checked as for any strategy
            self,
            settings,
            max_tokens=max_tokens,
            token_counter=token_counter,
            keep_steps=keep_steps,
            **extra,
        )
        if model is None:
            raise ConfigError(
                "summary needs a chat model to write its summaries: Summary(model), "
                "get_strategy('summary', model=model), or "
                "CompactionLadder([ToolResults(), Summary(model), SlidingWindow()], max_tokens=...)"
            )
        if isinstance(model, str):
            if not model.strip():
                raise ConfigError(
                    "summary's model string is empty; name a model, e.g. 'openai:gpt-4o-mini'"
                )
            model = _LazyChatModel(model.strip())
        if on_error not in ("warn", "raise"):
            raise ConfigError(f"on_error={on_error!r}: expected 'warn' or 'raise'")
        if not callable(getattr(model, "invoke", None)):
            raise ConfigError(
                "summary needs a LangChain chat model (with invoke/ainvoke), got "
                f"{type(model).__name__}"
            )
        if (
            isinstance(summary_tokens, bool)
            or not isinstance(summary_tokens, int)
            or summary_tokens < 1
        ):
            raise ConfigError(
                f"summary_tokens={summary_tokens!r} must be a whole number of tokens >= 1"
            )
        self.model = model
        self.on_error = on_error
        self.summary_tokens = summary_tokens
        self._answers: SizedCache[tuple[str, ...], str] = SizedCache(cache_size, cache_size)

    def __repr__(self) -> str:
        return (
            f"Summary({self.model!r})"
            if isinstance(self.model, _LazyChatModel)
            else f"Summary({type(self.model).__name__})"
        )

    def plan(
        self, messages: Sequence[BaseMessage], *, max_tokens: int, counter: CountTokens
    ) -> Plan:
        """Return the plan of the summary rounds, asking this rung's model (answers remembered).

        Declines when under target, when nothing is left, or when the first round fails. A
        failing model is never silent: ``on_error="warn"`` warns (:class:`SummaryFailedWarning`)
        and reports the reason, ``"raise"`` raises its exception.
        """
        current = list(messages)
        tokens = counter(current)
        if tokens <= max_tokens:
            return Rewrite(None, {"reason": "under target"})
        count_one = message_counter(counter)
        words = max(self.summary_tokens * 3 // 4, 20)
        rounds: list[dict[str, Any]] = []
        stopped = "nothing left to summarise"
        for _ in range(len(current) + 1):  # each round consumes a unit or merges summaries
            if tokens <= max_tokens:
                stopped = "under target"
                break
            choice = _next_stretch(
                current,
                self.settings.keep_steps,
                count_one,
                tokens - max_tokens + self.summary_tokens,
            )
            if choice is None:
                stopped = "nothing left to summarise"
                break
            tier, span = choice
            stretch = current[span.start : span.stop]
            instructions = (
                COMBINE_INSTRUCTIONS if tier.endswith("summaries") else SUMMARY_INSTRUCTIONS
            ).format(words=words)
            answer = yield _ModelRequest(
                self.model,
                [SystemMessage(instructions), HumanMessage(render(stretch))],
                self._answers,
            )
            if isinstance(answer, BaseException):
                if self.on_error == "raise":
                    raise answer
                stopped = f"model failed: {type(answer).__name__}: {str(answer)[:200]}"
                warnings.warn(
                    f"summary: the model failed ({type(answer).__name__}: "
                    f"{' '.join(str(answer).split())[:300]}); "
                    "the prompt goes to the model without this summary. Summary(..., "
                    "on_error='raise') raises instead.",
                    SummaryFailedWarning,
                    stacklevel=2,
                )
                break
            text = str(answer or "").strip()
            if not text:
                stopped = "model answered nothing"
                break
            handles = self.settings.read_back_handles
            calls = calls_among(call_spans(current), span) if handles else None
            represents = sum(represented(m) for m in stretch)
            replacement = summary_message(text, messages=represents, tier=tier, calls=calls)
            stretch_tokens = sum(count_one(m) for m in stretch)
            summary_tokens = count_one(replacement)
            if summary_tokens >= stretch_tokens:
                stopped = f"summary no smaller ({summary_tokens} >= {stretch_tokens} tokens)"
                break
            current = [*current[: span.start], replacement, *current[span.stop :]]
            tokens = counter(current)
            rounds.append(
                {
                    "tier": tier,
                    "messages": len(stretch),
                    "replaced": stretch_tokens,
                    "summary": summary_tokens,
                }
            )
        if not rounds:
            return Rewrite(None, {"reason": stopped})
        return Rewrite(current, {"rounds": rounds, "stopped": stopped})
