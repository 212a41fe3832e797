"""``PromptStrategy``, the base of every strategy, and ``apply_in_order``, the one path every front
end applies strategies by.

A strategy is a pure ``compact`` over a message list that is also a LangChain ``Runnable``;
each call's report is logged at DEBUG and, inside a run, dispatched as the ``promptstrat``
event (:func:`emit_report`). Never imports an adapter or the CLI, which build on it.
"""

from __future__ import annotations

import copy
import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForChainRun, dispatch_custom_event
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.config import get_stream_writer
from typing_extensions import Self

from langchain_promptstrat.messages import (
    coerce_messages,
    keep_prompt_floor,
    keep_read_backs_whole,
    mark_of,
    task_index,
)
from langchain_promptstrat.messages.history_memo import message_key
from langchain_promptstrat.messages.references import resolve_references
from langchain_promptstrat.report import Compacted, StrategyReport, logger, make_report
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


class PromptStrategy(Runnable[Any, list[BaseMessage]], ABC):
    """A named prompt strategy: a pure message-list transform that is also a ``Runnable`` (``prompt
    | ShortenTools() | model``).

    The input (messages, dicts, tuples or a ``PromptValue``) is never mutated: the stored
    conversation keeps full fidelity while the model sees the compacted prompt. Subclasses set
    ``strategy_name`` (the registry key) and implement :meth:`compact`; options that are
    settings are one ``TypedDict``, ``options`` (see :mod:`langchain_promptstrat.settings`),
    whose ``Args:`` entries are added to the constructor's docstring.
    """

    strategy_name: ClassVar[str] = "strategy"
    uses_save_file: ClassVar[bool] = False
    """True for the inbox: it gets the conversation's save file."""
    places_notices: ClassVar[bool] = False
    """True for the inbox: where it stands in a list is where notices a caller picked up go
    (:func:`apply_in_order`)."""
    carries_replay: ClassVar[bool] = False
    """True when ``compact_for_request`` takes ``carried``: the replay a graph front end keeps in
    the conversation's state."""
    options: ClassVar[Any] = None
    """The ``TypedDict`` of this strategy's options that are settings, or None."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and cls.options is not None:
            init.__doc__ = document_options(init.__doc__, option_keys(cls))

    def __init__(self, settings: Settings | None = None, **overrides: Any) -> None:
        self.settings = Settings.load(settings, **overrides)

    @abstractmethod
    def compact(
        self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None
    ) -> Compacted:
        """Return the messages the model should see and a report; never mutate ``messages``."""

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

    def save_file_from_config(self, config: RunnableConfig | None) -> Path | None:
        """Return the conversation's save file named in ``config["configurable"]["save_file"]``."""
        value = ((config or {}).get("configurable") or {}).get("save_file")
        return Path(value) if value else None

    def pick_up_notices(
        self,
        messages: list[BaseMessage],
        *,
        save_file: str | os.PathLike[str] | None = None,
        config: RunnableConfig | None = None,
    ) -> Compacted:
        """Return ``messages`` with the notices this strategy places appended (the inbox's
        override); any other strategy compacts."""
        return self.compact(messages, save_file=save_file)

    def invoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Return the transformed messages; the report goes to the log and the run's callbacks."""
        return self._call_with_config(self._invoke, input, config, run_type="prompt")

    def _invoke(
        self, input: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig
    ) -> list[BaseMessage]:
        save_file = self.save_file_from_config(config) if self.uses_save_file else None
        return apply_in_order([self], coerce_messages(input), save_file=save_file, config=config)[0]

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        """Return the registry key as the run name, so traces show which strategy ran."""
        return super().get_name(suffix, name=name or self.strategy_name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def compact_one(
    strategy: PromptStrategy,
    messages: list[BaseMessage],
    save_file: Any,
    request: dict[str, Any] | None,
) -> Compacted:
    """Return ``strategy``'s result; a strategy bounded by a ceiling also gets the request's model,
    tools, system prompt and ``max_tokens``.

    ``carried`` (the replay a graph front end keeps in the conversation's state) goes only to a
    strategy that carries its replay.
    """
    bounded = getattr(strategy, "compact_for_request", None)
    if request and callable(bounded):
        if "carried" in request and not strategy.carries_replay:
            request = {k: v for k, v in request.items() if k != "carried"}
        return bounded(messages, **request)  # type: ignore[no-any-return]
    return strategy.compact(messages, save_file=save_file if strategy.uses_save_file else None)


def _with_notices(messages: list[BaseMessage], notices: list[BaseMessage]) -> Compacted:
    out = [*messages, *notices]
    files = [(mark_of(m) or {}).get("file") for m in notices]
    return Compacted(out, make_report("inbox", messages, out, delivered=len(notices), files=files))


def apply_in_order(
    strategies: Sequence[PromptStrategy],
    source: list[BaseMessage],
    *,
    notices: Sequence[BaseMessage] | None = None,
    save_file: str | os.PathLike[str] | None = None,
    config: RunnableConfig | None = None,
    request: dict[str, Any] | None = None,
) -> tuple[list[BaseMessage], list[StrategyReport]]:
    """Return what the model should see and each strategy's report: the one path of every front end.

    The strategies run in order on ``source``. Where the inbox stands (``places_notices``) the
    notices go: ``notices`` when the caller picked them up (the graph front ends, as a
    checkpointed task), else the inbox picks them up there itself. Each report is emitted in
    the run ``config``; ``request`` (``model``, ``tools``, ``system``, ``max_tokens``) reaches
    the strategies bounded by a ceiling. Whatever a strategy returned, the result keeps the
    prompt floor (never without the task, never a broken tool pair), the newest step's
    read-back answers whole, and every reference to lines another output shows true
    (:func:`~langchain_promptstrat.messages.references.resolve_references`).
    """
    current = list(source)
    delivered: list[BaseMessage] = []
    reports: list[StrategyReport] = []
    for strategy in strategies:
        if strategy.places_notices and notices is not None:
            result = _with_notices(current, list(notices))
        elif strategy.places_notices:
            result = strategy.pick_up_notices(current, save_file=save_file, config=config)
        else:
            result = compact_one(strategy, current, save_file, request)
        if strategy.places_notices:
            delivered += result.messages[len(current) :]
        emit_report(result, config)
        warn_floor_over_ceiling(source, result.report)
        current = keep_read_backs_whole(source, result.messages)
        reports.append(result.report)
    handles = all(strategy.settings.read_back_handles for strategy in strategies)
    prompt = keep_prompt_floor([*source, *delivered], current)
    return resolve_references(source, prompt, handles=handles), reports
