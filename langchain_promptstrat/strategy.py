"""``PromptStrategy``, the base of every strategy; ``PromptRequest``, what one model call gives
the strategies; and ``apply_in_order``, the one path every front end applies strategies by.

A strategy's one method is ``apply(messages, request) -> Compacted``, pure but for the inbox's
pickup; a strategy is also a LangChain ``Runnable``. Each call's report is logged at DEBUG and,
inside a run, dispatched as the ``promptstrat`` event (:func:`emit_report`). Never imports an
adapter or the CLI, which build on it.
"""

from __future__ import annotations

import copy
import os
import threading
from abc import ABC
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from langchain_core.callbacks import CallbackManagerForChainRun, dispatch_custom_event
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.config import get_stream_writer
from typing_extensions import Self

from langchain_promptstrat.ceiling import MaxTokens
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.messages import (
    coerce_messages,
    keep_prompt_floor,
    keep_read_backs_whole,
    task_index,
)
from langchain_promptstrat.messages.history_memo import message_key
from langchain_promptstrat.messages.references import resolve_references
from langchain_promptstrat.report import Compacted, StrategyReport, logger
from langchain_promptstrat.settings import Settings, document_options, option_keys

REPORT_EVENT = "promptstrat"
"""Name of the custom callback event that carries each strategy call's report."""


def emit_report(result: Compacted, config: RunnableConfig | None = None) -> None:
    """Log ``result.report`` at DEBUG and, inside a LangChain run (``config``, else the one the
    caller is in), dispatch it as an event."""
    data = result.report.as_dict()
    logger.debug("%s: %s", result.report.strategy, data)
    if config is None:
        config = var_child_runnable_config.get()
    if config is not None and config.get("callbacks") is not None:
        try:
            dispatch_custom_event(REPORT_EVENT, data, config=config)
        except RuntimeError:  # no parent run to attach the event to: logging is enough
            pass
    try:
        writer = get_stream_writer()
    except (RuntimeError, KeyError):  # not inside a LangGraph run: nothing streams
        return
    # stream_mode="custom": the figures only (numbers, names, flags), small enough for every model
    # call
    writer(
        {
            REPORT_EVENT: {
                k: v
                for k, v in data.items()
                if v is None
                or isinstance(v, (bool, int, float))
                or (isinstance(v, str) and len(v) <= 200)
            }
        }
    )


FLOOR_WARNINGS_KEPT = 1024
"""Conversations (with their ceiling) remembered as warned that their floor is over the ceiling."""
_floor_warned: OrderedDict[tuple[int, int], None] = OrderedDict()
_floor_lock = threading.Lock()


def warn_floor_over_ceiling(source: Sequence[BaseMessage], report: StrategyReport) -> None:
    """Log a warning, once per conversation and ceiling, when ``report`` says the floor is over it.

    The floor (system prompt, task, newest user message, newest step with its outputs
    shortened, bound tools) is never dropped, so the model gets more than the ceiling; an
    agent's loop meets it at every call, and one warning per call would bury it.
    """
    details = report.details
    if not details.get("floor_over_ceiling"):
        return
    task = task_index(source)
    key = (message_key(source[task]) if task is not None else 0, int(details["ceiling"]))
    with _floor_lock:
        if key in _floor_warned:
            return
        _floor_warned[key] = None
        while len(_floor_warned) > FLOOR_WARNINGS_KEPT:
            _floor_warned.popitem(last=False)
    logger.warning(
        "the prompt's floor is over the context ceiling: %s tokens sent against a ceiling of %s "
        "(%s after the counter's margin); the system prompt, the task, the newest user message and "
        "the newest step, its outputs shortened (bound tools included), are never dropped: raise "
        "max_tokens or shorten them (said once for this conversation and ceiling; the report's "
        "floor_over_ceiling says it at every call)",
        f"{details['tokens_after']:,}",
        f"{details['ceiling']:,}",
        f"{details['budget']:,}",
    )


class Carried(Protocol):
    """A value a strategy carries from one model call of a conversation to the next, which a graph
    front end keeps in the conversation's state: read before the call, set after it."""

    value: dict[str, Any] | None


@dataclass(frozen=True)
class PromptRequest:
    """What one model call gives the strategies besides its messages; every field may be left out.

    A front end fills what it knows: the middleware all of it, the hook what it was given,
    ``prepare_prompt`` its ``max_tokens`` and ``save_file``. Each strategy reads what concerns it
    and ignores the rest.
    """

    model: Any = None
    """The chat model that answers; its profile gives the window when no ceiling is given."""
    tools: Sequence[Any] | None = None
    """The tools bound to the model (None: not given); their schemas count against the ceiling."""
    system: Sequence[BaseMessage] = ()
    """The system prompt sent outside the messages; it counts against the ceiling."""
    max_tokens: MaxTokens = None
    """The front end's ceiling, which wins over a strategy's own."""
    carried: Carried | None = None
    """The replay a graph front end carries in the conversation's state (the default's)."""
    save_file: str | os.PathLike[str] | None = None
    """The conversation's save file, whose inbox the ``inbox`` strategy reads."""
    config: RunnableConfig | None = None
    """The run's config: its thread names the inbox the ``inbox`` strategy reads."""
    notices: Sequence[BaseMessage] | None = None
    """Notices the front end picked up itself (None: none picked up, so the ``inbox`` strategy picks
    up): the ``inbox`` strategy places them where it stands and reads no inbox."""


NO_REQUEST = PromptRequest()
"""A request that gives nothing: a strategy applied on its own."""


class PromptStrategy(Runnable[Any, list[BaseMessage]], ABC):
    """A named prompt strategy: a message-list transform that is also a ``Runnable`` (``prompt |
    ShortenTools() | model``).

    The input (messages, dicts, tuples or a ``PromptValue``) is never mutated: the stored
    conversation keeps full fidelity while the model sees the compacted prompt. Subclasses set
    ``strategy_name`` (the registry key) and implement :meth:`apply`; options that are settings
    are one ``TypedDict``, ``options`` (see :mod:`langchain_promptstrat.settings`), whose
    ``Args:`` entries are added to the constructor's docstring. A subclass written against
    ``compact(messages, *, save_file=None)`` implements that instead: :meth:`apply` calls it.
    """

    strategy_name: ClassVar[str] = "strategy"
    options: ClassVar[Any] = None
    """The ``TypedDict`` of this strategy's options that are settings, or None."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and cls.options is not None:
            init.__doc__ = document_options(init.__doc__, option_keys(cls))
        if cls.apply is PromptStrategy.apply and cls.compact is PromptStrategy.compact:
            raise TypeError(f"{cls.__name__} must implement apply(messages, request)")

    def __init__(self, settings: Settings | None = None, **overrides: Any) -> None:
        self.settings = Settings.load(settings, **overrides)

    def apply(self, messages: list[BaseMessage], request: PromptRequest = NO_REQUEST) -> Compacted:
        """Return the messages the model should see for one model call, and a report; never mutate
        ``messages``.

        This base version serves a subclass that implements :meth:`compact` instead: it is given
        the request's save file.
        """
        return self.compact(messages, save_file=request.save_file)

    def compact(
        self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None
    ) -> Compacted:
        """Return :meth:`apply` of ``messages`` for a request that names only ``save_file``."""
        return self.apply(messages, PromptRequest(save_file=save_file))

    def without_read_back_handles(self) -> Self:
        """Return a copy with the ``read_back_handles`` setting off, or this strategy if it is off.

        For an agent without the ``read_back`` tool: no stub or notice of the copy names it. A
        copy, so an object the caller holds is left as it was.
        """
        if not self.settings.read_back_handles:
            return self
        copied = copy.copy(self)
        copied.settings = self.settings.replace(read_back_handles=False)
        return copied

    def invoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Return the transformed messages; the report goes to the log and the run's callbacks."""
        return self._call_with_config(self._invoke, input, config, run_type="prompt")

    def _invoke(
        self, input: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig
    ) -> list[BaseMessage]:
        request = PromptRequest(config=config)
        return apply_in_order([self], coerce_messages(input), request, config=config)[0]

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        """Return the registry key as the run name, so traces show which strategy ran."""
        return super().get_name(suffix, name=name or self.strategy_name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def apply_in_order(
    strategies: Sequence[PromptStrategy],
    source: list[BaseMessage],
    request: PromptRequest = NO_REQUEST,
    *,
    config: RunnableConfig | None = None,
) -> tuple[list[BaseMessage], list[StrategyReport]]:
    """Return what the model should see and each strategy's report: the one path of every front end.

    The strategies run in order on ``source``, each given ``request``; the ``inbox`` places the
    request's notices where it stands (or picks them up there itself). Each report is emitted in
    the run ``config`` (default: the request's). Whatever a strategy returned, the result keeps
    the prompt floor (never without the task, never a broken tool pair), the newest step's
    read-back answers whole, and every reference to lines another output shows true
    (:func:`~langchain_promptstrat.messages.references.resolve_references`).
    """
    config = config if config is not None else request.config
    current = list(source)
    delivered: list[BaseMessage] = []
    reports: list[StrategyReport] = []
    for strategy in strategies:
        result = strategy.apply(current, request)
        delivered += result.delivered
        emit_report(result, config)
        warn_floor_over_ceiling(source, result.report)
        current = keep_read_backs_whole(source, result.messages)
        reports.append(result.report)
    handles = all(strategy.settings.read_back_handles for strategy in strategies)
    prompt = keep_prompt_floor([*source, *delivered], current)
    return resolve_references(source, prompt, handles=handles), reports


def split_strategy_names(text: str, *, source: str = "the strategy list") -> list[str]:
    """Return the names of a comma-separated strategy list, stripped of spaces, in order; ``source``
    names the list in errors.

    Raises:
        ConfigError: The list is empty, or one of its names is.
    """
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):  # "" disabling everything, the inbox included, is never what was meant
        raise ConfigError(f"{source} is empty ({text!r}); name strategies, or 'none' to apply none")
    for k, part in enumerate(parts):
        if not part:
            before = next((p for p in reversed(parts[:k]) if p), None)
            after = next((p for p in parts[k + 1 :] if p), None)
            where = (
                f"between {before!r} and {after!r}"
                if before and after
                else f"after {before!r}"
                if before
                else f"before {after!r}"
            )
            raise ConfigError(
                f"{source} {text!r} has an empty name {where}; separate the names with single "
                "commas"
            )
    return parts
