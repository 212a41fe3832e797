"""Strategy names and applying them: the built-in table, ``register_strategy``,
``resolve_strategies``, ``prepare_prompt``.

A name resolves to a registered strategy, else a built-in (imported on first use from its
``"module:Class"`` string, so this module sits below the strategies, which resolve a ladder's
rungs here), else an entry point of ``langchain_promptstrat.strategies``: a class is built with
the settings, an instance is used as is, a plain ``messages -> messages`` callable is wrapped.
``prepare_prompt``, ``apply_strategies`` and ``prompt_for_model`` hand the strategies to the one
apply path, :func:`~langchain_promptstrat.strategy.apply_in_order`.
"""

from __future__ import annotations

import importlib
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any, NoReturn

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from langchain_promptstrat.ceiling import MaxTokens, check_max_tokens
from langchain_promptstrat.defaults import DEFAULT_STRATEGIES as DEFAULT_STRATEGIES  # re-exported
from langchain_promptstrat.errors import ConfigError, UnknownStrategyError
from langchain_promptstrat.messages import coerce_messages, tool_results_as_tool_messages
from langchain_promptstrat.report import Compacted, StrategyReport, make_report
from langchain_promptstrat.settings import Settings, environment_variables, settings_with_options
from langchain_promptstrat.strategy import (
    NO_REQUEST,
    PromptRequest,
    PromptStrategy,
    apply_in_order,
    split_strategy_names,
)

BUILTIN_STRATEGIES: dict[str, str] = {
    "none": "langchain_promptstrat.strategies.none:NoStrategy",
    "dedupe_outputs": "langchain_promptstrat.strategies.dedupe_outputs:DedupeOutputs",
    "shorten_tools": "langchain_promptstrat.strategies.shorten_tools:ShortenTools",
    "shorten_tools_epoch": "langchain_promptstrat.strategies.epoch:ShortenToolsEpoch",
    "shorten_tools_epoch_increment": (
        "langchain_promptstrat.strategies.epoch:ShortenToolsEpochIncrement"
    ),
    "shorten_tools_epoch_stable": (
        "langchain_promptstrat.strategies.epoch_stable:ShortenToolsEpochStable"
    ),
    "inbox": "langchain_promptstrat.strategies.inbox:Inbox",
    "tool_results": "langchain_promptstrat.strategies.tool_results:ToolResults",
    "sliding_window": "langchain_promptstrat.strategies.sliding_window:SlidingWindow",
    "summary": "langchain_promptstrat.strategies.summary:Summary",
}
"""Registry key -> ``module:attribute`` of each built-in strategy class, imported on first use."""

ENTRY_POINT_GROUP = "langchain_promptstrat.strategies"

StrategySpec = str | PromptStrategy | Callable[[list[BaseMessage]], Any]

_registered: dict[str, Any] = {}
_registrations = 0
"""How many times a name was registered or removed (see :func:`registrations`)."""
_lock = threading.Lock()
_warned_missing_defaults: set[str] = set()


class CallableStrategy(PromptStrategy):
    """Wraps a plain ``messages -> messages`` callable so it runs, reports and composes like a
    strategy."""

    def __init__(
        self, func: Callable[[list[BaseMessage]], Any], name: str | None = None, **unknown: NoReturn
    ) -> None:
        """Wrap ``func``.

        Args:
            func: Called with a copy of the messages; its answer is read back as messages.
            name: The strategy name in reports and traces (default: the callable's name).

        Raises:
            ConfigError: A keyword that is not one of these options.
        """
        super().__init__(settings_with_options(type(self), None, unknown))
        self.func = func
        self.strategy_name = name or str(getattr(func, "__name__", "callable"))  # type: ignore[misc]

    def apply(self, messages: list[BaseMessage], request: PromptRequest = NO_REQUEST) -> Compacted:
        """Return the callable's answer read back as messages; a callable gets the messages only."""
        out = coerce_messages(self.func(list(messages)))
        return Compacted(out, make_report(self.strategy_name, messages, out))

    def __repr__(self) -> str:
        return f"CallableStrategy({self.strategy_name!r})"


def register_strategy(
    name: str, factory: type[PromptStrategy] | PromptStrategy | Callable[..., Any]
) -> None:
    """Make ``name`` resolve to ``factory`` (a strategy class, a strategy, or a ``messages ->
    messages`` callable), shadowing a built-in of that name."""
    if not isinstance(name, str) or not name or "," in name or any(c.isspace() for c in name):
        raise ConfigError(
            f"strategy name must be a non-empty string without commas or spaces, got {name!r}"
        )
    if not callable(factory) and not isinstance(factory, PromptStrategy):
        raise ConfigError(
            f"strategy {name!r}: expected a PromptStrategy or a callable, got "
            f"{type(factory).__name__}"
        )
    global _registrations
    with _lock:
        _registered[name] = factory
        _registrations += 1


def unregister_strategy(name: str) -> None:
    """Forget a strategy registered with :func:`register_strategy`; unknown names raise."""
    global _registrations
    with _lock:
        if name not in _registered:
            raise UnknownStrategyError(name, sorted(_registered))
        del _registered[name]
        _registrations += 1


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_strategies() -> list[str]:
    """Return every name :func:`get_strategy` can resolve, sorted."""
    return sorted({*BUILTIN_STRATEGIES, *_registered, *_entry_points()})


def _resolve_factory(name: str) -> Any:
    with _lock:
        if name in _registered:
            return _registered[name]
    if name in BUILTIN_STRATEGIES:
        module, attr = BUILTIN_STRATEGIES[name].split(":")
        return getattr(importlib.import_module(module), attr)
    eps = _entry_points()
    if name in eps:
        return eps[name].load()
    raise UnknownStrategyError(name, available_strategies())


def get_strategy(name: str, /, settings: Settings | None = None, **options: Any) -> PromptStrategy:
    """Return the strategy registered as ``name``, built with ``settings`` and ``options`` (which
    win over it).

    Raises:
        ConfigError: An option the strategy does not take (a strategy object or a callable takes
            none).
        UnknownStrategyError: ``name`` resolves to nothing; lists the known names.
    """
    factory = _resolve_factory(name)
    if isinstance(factory, type) and issubclass(factory, PromptStrategy):
        return factory(settings, **options)
    if options:
        built = (
            "a ready-built strategy" if isinstance(factory, PromptStrategy) else "a plain callable"
        )
        raise ConfigError(
            f"strategy {name!r} is {built} and takes no options; got {', '.join(sorted(options))}"
        )
    if isinstance(factory, PromptStrategy):
        return factory
    return CallableStrategy(factory, name)


def _prompt_strategy_source() -> str:
    """Return the name the ``prompt_strategy`` setting was read under: the environment variable that
    is set, else the key."""
    return next(
        (name for name in environment_variables("prompt_strategy") if name in os.environ),
        "the prompt_strategy setting",
    )


def registrations() -> int:
    """Return how many times a strategy name was registered or removed: a list of names resolved
    before may mean something else after."""
    return _registrations


def resolve_strategies(
    strategies: StrategySpec | Sequence[StrategySpec] | None = None,
    *,
    settings: Settings | None = None,
) -> list[PromptStrategy]:
    """Return the strategies a spec names, in order, ready to apply.

    ``None``: ``PROMPT_STRATEGY``, then :data:`DEFAULT_STRATEGIES` (whose entries that are not
    installed are skipped with a warning); a string: comma-separated names; a list: names,
    strategies or callables; a single callable as is. Unknown names raise.
    """
    settings = Settings.load(settings)
    lenient = strategies is None and settings.prompt_strategy is None
    if strategies is None:
        strategies = list(DEFAULT_STRATEGIES) if lenient else settings.prompt_strategy
    if isinstance(strategies, str):
        source = (
            _prompt_strategy_source()
            if settings.prompt_strategy is strategies
            else "the strategy list"
        )
        items: list[Any] = split_strategy_names(strategies, source=source)
    elif isinstance(strategies, PromptStrategy) or (
        callable(strategies) and not isinstance(strategies, (list, tuple))
    ):
        items = [strategies]
    elif isinstance(strategies, Iterable) and not isinstance(strategies, (bytes, Mapping)):
        items = list(strategies)
    else:
        raise ConfigError(
            f"cannot use {strategies!r} as prompt strategies: expected a name, a comma-separated "
            "string, "
            "a PromptStrategy, a callable or a list of them"
        )
    resolved: list[PromptStrategy] = []
    for position, item in enumerate(items):
        if isinstance(item, PromptStrategy):
            resolved.append(item)
        elif isinstance(item, str):
            for name in split_strategy_names(item, source=f"strategy {position} of the list"):
                try:
                    resolved.append(get_strategy(name, settings))
                except UnknownStrategyError:
                    if not lenient:
                        raise
                    if name not in _warned_missing_defaults:
                        _warned_missing_defaults.add(name)
                        warnings.warn(
                            f"default strategy {name!r} is not available; skipping it",
                            RuntimeWarning,
                            stacklevel=3,
                        )
        elif callable(item):
            resolved.append(CallableStrategy(item))
        else:
            raise ConfigError(
                f"cannot use {item!r} as a prompt strategy: expected a name, a PromptStrategy or "
                "a callable"
            )
    return resolved


def apply_strategies(
    messages: Any,
    strategies: StrategySpec | Sequence[StrategySpec] | None = None,
    *,
    save_file: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    config: RunnableConfig | None = None,
    max_tokens: MaxTokens = None,
) -> tuple[list[BaseMessage], list[StrategyReport]]:
    """Return the messages after every strategy in sequence, kept above the prompt floor, and each
    strategy's report.

    ``max_tokens`` (tokens, or ``("fraction", share)``) is the ceiling of the strategies that
    take one. The ``inbox`` picks up its notices where it stands and acknowledges them at once.
    """
    request = PromptRequest(
        max_tokens=check_max_tokens(max_tokens), save_file=save_file, config=config
    )
    resolved = _strategies_for_call(strategies, settings)
    return apply_in_order(resolved, coerce_messages(messages), request)


_SHARED_SPECS = 16
_shared: OrderedDict[tuple[Any, ...], list[PromptStrategy]] = OrderedDict()
_shared_lock = threading.Lock()


def _strategies_for_call(
    strategies: StrategySpec | Sequence[StrategySpec] | None, settings: Settings | None
) -> list[PromptStrategy]:
    """Return the strategies of a spec of names: the same objects while the names, settings and
    registrations are.

    A loop calling ``prepare_prompt`` before every model call then resumes from its previous
    call (the default's memo) instead of replaying the history; a prompt is a pure function of
    the history, so sharing the objects changes none. Objects and callables are used as given.
    """
    if isinstance(strategies, (tuple, list)):
        objects = [s for s in strategies if isinstance(s, PromptStrategy)]
        if len(objects) == len(strategies):
            return objects  # objects need no settings: nothing to build
    names = (strategies,) if strategies is None or isinstance(strategies, str) else strategies
    if not isinstance(names, (tuple, list)) or not all(
        name is None or isinstance(name, str) for name in names
    ):
        return resolve_strategies(strategies, settings=settings)
    key = (tuple(names), Settings.load(settings), registrations())
    with _shared_lock:
        found = _shared.get(key)
        if found is not None:
            _shared.move_to_end(key)
            return found
    resolved = resolve_strategies(strategies, settings=key[1])
    with _shared_lock:
        _shared[key] = resolved
        while len(_shared) > _SHARED_SPECS:
            _shared.popitem(last=False)
    return resolved


def prepare_prompt(
    messages: Any,
    strategies: StrategySpec | Sequence[StrategySpec] | None = None,
    *,
    save_file: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    max_tokens: MaxTokens = None,
) -> list[BaseMessage]:
    """Return the messages the model should see, after applying ``strategies`` in sequence; the
    input is never mutated.

    Args:
        messages: The conversation (messages, dicts or tuples).
        strategies: A callable (called with the messages); ``None`` (``PROMPT_STRATEGY``, then
            :data:`DEFAULT_STRATEGIES`); a comma-separated string of names; or a list of names,
            ``PromptStrategy`` objects and callables. ``"none"`` applies nothing.
        save_file: The conversation's save file, for the strategies that use it (the inbox).
        settings: Thresholds for the strategies named (default: read from the environment).
        max_tokens: The default strategy's context ceiling (tokens, or ``("fraction", 0.8)`` of
            the model window); without it ``PROMPTSTRAT_MAX_TOKENS``, else 111,616 tokens.
    """
    return apply_strategies(
        messages, strategies, save_file=save_file, settings=settings, max_tokens=max_tokens
    )[0]


def prompt_for_model(
    strategies: Sequence[PromptStrategy],
    messages: Sequence[BaseMessage],
    request: PromptRequest = NO_REQUEST,
) -> list[BaseMessage]:
    """Return what the model should see for one model call of a front end: the one apply path on
    ``messages`` (tool results as tool messages), given ``request``.

    The graph front ends and :func:`~langchain_promptstrat.pickup.inbox_pickup` pick the notices up
    themselves (to acknowledge them once stored or answered) and pass them in the request; the
    ``inbox`` strategy then only places them.
    """
    source = tool_results_as_tool_messages(list(messages))
    return apply_in_order(strategies, source, request)[0]
