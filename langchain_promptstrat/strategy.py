"""``PromptStrategy``, the base of every strategy; ``PromptRequest``, what one model call gives
the strategies; and ``apply_in_order``, the one path every front end applies strategies by.

A strategy's one method is ``apply(messages, request) -> Compacted``, pure but for the inbox's
pickup; a strategy is also a LangChain ``Runnable``. Each call's report is logged at DEBUG and,
inside a run, dispatched as the ``promptstrat`` event (:func:`emit_report`). Never imports an
adapter or the CLI, which build on it.
"""

from __future__ import annotations

import copy
import inspect
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
from typing_extensions import Self, dataclass_transform

from langchain_promptstrat.ceiling import MaxTokens
from langchain_promptstrat.errors import ConfigError, warn_renamed
from langchain_promptstrat.messages import (
    coerce_messages,
    keep_prompt_floor,
    keep_read_backs_whole,
    task_index,
)
from langchain_promptstrat.messages.history_memo import message_key
from langchain_promptstrat.messages.references import resolve_references
from langchain_promptstrat.report import Compacted, StrategyReport, logger
from langchain_promptstrat.settings import (
    RENAMED_KEYS,
    Settings,
    describe_setting,
    document_options,
    options_of,
    settings_with_options,
)

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


SETTINGS_DOC = (
    "Options shared with other strategies (default: read from the environment now); the "
    "options below win over it."
)


@dataclass(frozen=True)
class Argument:
    """A constructor argument of a strategy that is not an option of :class:`Settings` (a model, a
    token counter, a ceiling given to this strategy alone), as :func:`argument` declares it."""

    default: Any
    doc: str
    kw_only: bool = True


def argument(*, default: Any = None, doc: str = "", kw_only: bool = True) -> Any:
    """Declare a strategy's constructor argument that is not a setting: ``model: Any =
    argument(default=None, doc="The chat model ...")``; the checkers read it as a field."""
    return Argument(default, doc, kw_only)


@dataclass_transform(kw_only_default=True, field_specifiers=(argument,))
class _DeclaredStrategy(Runnable[Any, list[BaseMessage]], ABC):
    """The root the type checkers read each strategy's constructor from: the fields of the options
    classes it inherits (:mod:`~langchain_promptstrat.options`) and its own :func:`argument`
    declarations, each a keyword of its declared type."""


class PromptStrategy(_DeclaredStrategy):
    """A named prompt strategy: a message-list transform that is also a ``Runnable`` (``prompt |
    ShortenTools() | model``).

    The input (messages, dicts, tuples or a ``PromptValue``) is never mutated: the stored
    conversation keeps full fidelity while the model sees the compacted prompt. Subclasses set
    ``strategy_name`` (the registry key) and implement :meth:`apply`. A strategy's options are
    the fields of the options class it inherits (``class ShortenTools(PromptStrategy,
    ShortenToolsOptions)``) and its :func:`argument` declarations: its constructor, its
    ``Args:`` text and its refusal of anything else are written from them, and an option left
    out comes from ``settings``, else the environment, else its default. A subclass written
    against ``compact(messages, *, save_file=None)`` implements that instead: :meth:`apply`
    calls it.
    """

    strategy_name: ClassVar[str] = "strategy"
    arguments: ClassVar[dict[str, Argument]] = {}
    """This class's :func:`argument` declarations and its bases', by name, in declaration order."""
    settings: Settings = argument(default=None, doc=SETTINGS_DOC, kw_only=False)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = {k: v for k, v in vars(cls).items() if isinstance(v, Argument)}
        for name, declaration in declared.items():
            setattr(cls, name, declaration.default)
        cls.arguments = {**cls.arguments, **declared}
        own = vars(cls).get("__init__")
        if own is not None:  # a constructor of its own: its options join its Args: text
            entries = {key: describe_setting(key) for key in options_of(cls)}
            own.__doc__ = document_options(own.__doc__, entries)
        else:
            inherited = next(
                k.__dict__["__init__"] for k in cls.__mro__ if "__init__" in k.__dict__
            )
            if inherited is PromptStrategy.__init__ or hasattr(inherited, "declared_by"):
                cls.__init__ = _constructor(cls)  # type: ignore[method-assign]
        if cls.apply is PromptStrategy.apply and cls.compact is PromptStrategy.compact:
            raise TypeError(f"{cls.__name__} must implement apply(messages, request)")

    def __init__(self, settings: Settings | None = None, **given: Any) -> None:
        for name, declaration in type(self).arguments.items():
            renamed = [old for old, new in RENAMED_KEYS.items() if new == name and old in given]
            for old in renamed:  # a setting's old name that is now this argument's
                warn_renamed(f"{type(self).__name__}'s {old}=", f"{name}=")
                value = given.pop(old)
                given.setdefault(name, value)
            setattr(self, name, given.pop(name, declaration.default))
        self.settings = settings_with_options(type(self), settings, given)
        for key in options_of(type(self)):
            setattr(self, key, getattr(self.settings, key))
        self.__post_init__()

    def __post_init__(self) -> None:
        """Finish building once the arguments and options are set (a subclass's own checks)."""

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


del PromptStrategy.settings  # declared for the checkers; every strategy sets its own


def _constructor(cls: type[PromptStrategy]) -> Any:
    """Return the constructor of ``cls`` written from its declarations: ``PromptStrategy.__init__``
    with the signature and ``Args:`` text of ``cls``'s arguments and options."""

    def __init__(self: PromptStrategy, settings: Settings | None = None, **given: Any) -> None:
        PromptStrategy.__init__(self, settings, **given)

    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY),
        inspect.Parameter("settings", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
        *(
            inspect.Parameter(name, keyword, default=declaration.default)
            for name, declaration in cls.arguments.items()
        ),
        *(inspect.Parameter(key, keyword, default=None) for key in options_of(cls)),
    ]
    entries = {
        "settings": SETTINGS_DOC,
        **{name: declaration.doc for name, declaration in cls.arguments.items()},
        **{key: describe_setting(key) for key in options_of(cls)},
    }
    doc = (
        "Build the strategy; an option left out comes from ``settings``, else the environment, "
        "else its default.\n\nArgs:\n\nRaises:\n    ConfigError: A value is out of range, or a "
        "keyword is not one of these options."
    )
    __init__.__doc__ = document_options(doc, entries)
    __init__.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.declared_by = cls  # type: ignore[attr-defined]
    return __init__


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
