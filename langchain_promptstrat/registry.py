"""Applying strategies to a conversation: ``prepare_prompt``, ``apply_strategies``, ``prompt_for_model``.

Each hands its strategies to the one apply path, :func:`~langchain_promptstrat.strategy.apply_in_order`.
Names resolve to strategies in :mod:`langchain_promptstrat.strategy_names` (whose public
names are also importable from here). Above the strategies: no strategy imports it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from langchain_promptstrat.ceiling import MaxTokens, check_max_tokens
from langchain_promptstrat.messages import coerce_messages, tool_results_as_tool_messages
from langchain_promptstrat.report import StrategyReport
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategy import PromptStrategy, apply_in_order
from langchain_promptstrat.strategy_names import (
    DEFAULT_STRATEGIES as DEFAULT_STRATEGIES, CallableStrategy as CallableStrategy, StrategySpec as StrategySpec,
    available_strategies as available_strategies, get_strategy as get_strategy, register_strategy as register_strategy,
    registrations, resolve_strategies as resolve_strategies, split_strategy_names as split_strategy_names,
    unregister_strategy as unregister_strategy,
)


def apply_strategies(
    messages: Any,
    strategies: StrategySpec | Sequence[StrategySpec] | None = None,
    *,
    save_file: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    config: RunnableConfig | None = None,
    max_tokens: MaxTokens = None,
) -> tuple[list[BaseMessage], list[StrategyReport]]:
    """Return the messages after every strategy in sequence, kept above the prompt floor, and each strategy's report.

    ``max_tokens`` (tokens, or ``("fraction", share)``) is the ceiling of the strategies that
    take one. The ``inbox`` picks up its notices where it stands and acknowledges them at once.
    """
    request = {"max_tokens": check_max_tokens(max_tokens)} if max_tokens is not None else None
    resolved = _strategies_for_call(strategies, settings)
    return apply_in_order(resolved, coerce_messages(messages), save_file=save_file, config=config, request=request)


_SHARED_SPECS = 16
_shared: OrderedDict[tuple[Any, ...], list[PromptStrategy]] = OrderedDict()
_shared_lock = threading.Lock()


def _strategies_for_call(strategies: StrategySpec | Sequence[StrategySpec] | None, settings: Settings | None) -> list[PromptStrategy]:
    """Return the strategies of a spec of names: the same objects while the names, settings and registrations are.

    A loop calling ``prepare_prompt`` before every model call then resumes from its previous
    call (the default's memo) instead of replaying the history; a prompt is a pure function of
    the history, so sharing the objects changes none. Objects and callables are used as given.
    """
    if isinstance(strategies, (tuple, list)):
        objects = [s for s in strategies if isinstance(s, PromptStrategy)]
        if len(objects) == len(strategies):
            return objects  # objects need no settings: nothing to build
    names = (strategies,) if strategies is None or isinstance(strategies, str) else strategies
    if not isinstance(names, (tuple, list)) or not all(name is None or isinstance(name, str) for name in names):
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
    """Return the messages the model should see, after applying ``strategies`` in sequence; the input is never mutated.

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
    return apply_strategies(messages, strategies, save_file=save_file, settings=settings, max_tokens=max_tokens)[0]


def prompt_for_model(
    strategies: Sequence[PromptStrategy],
    messages: Sequence[BaseMessage],
    notices: Sequence[BaseMessage] = (),
    *,
    save_file: str | os.PathLike[str] | None = None,
    config: RunnableConfig | None = None,
    request: dict[str, Any] | None = None,
) -> list[BaseMessage]:
    """Return what the model should see when the caller picked up the notices (to acknowledge them once stored or answered).

    The graph front ends and :func:`~langchain_promptstrat.pickup.inbox_pickup` come here; the
    ``inbox`` strategy then only places the notices.
    """
    source = tool_results_as_tool_messages(list(messages))
    return apply_in_order(strategies, source, notices=notices, save_file=save_file, config=config, request=request)[0]
