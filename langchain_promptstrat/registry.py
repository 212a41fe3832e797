"""Applying strategies to a conversation: ``prepare_prompt``, ``apply_strategies``, ``prompt_for_model``.

Each resolves its strategies and hands them to the one apply path,
:func:`~langchain_promptstrat.strategy.apply_in_order` (the notices at the inbox's place,
the reports, the prompt floor). Names resolve to strategies in
:mod:`langchain_promptstrat.strategy_names`, below the strategies; its public names are
re-exported here (``from langchain_promptstrat.registry import get_strategy`` keeps
working). This module is above the strategies; no strategy imports it.
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
from langchain_promptstrat.strategy_names import DEFAULT_STRATEGIES as DEFAULT_STRATEGIES
from langchain_promptstrat.strategy_names import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
from langchain_promptstrat.strategy_names import CallableStrategy as CallableStrategy
from langchain_promptstrat.strategy_names import StrategySpec as StrategySpec
from langchain_promptstrat.strategy_names import available_strategies as available_strategies
from langchain_promptstrat.strategy_names import get_strategy as get_strategy
from langchain_promptstrat.strategy_names import registrations
from langchain_promptstrat.strategy_names import register_strategy as register_strategy
from langchain_promptstrat.strategy_names import resolve_strategies as resolve_strategies
from langchain_promptstrat.strategy_names import split_strategy_names as split_strategy_names
from langchain_promptstrat.strategy_names import unregister_strategy as unregister_strategy

__all__ = ["apply_strategies", "prepare_prompt", "prompt_for_model"]


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

    ``max_tokens`` (tokens, or ``("fraction", share)``) is the context ceiling of the
    strategies that take one (the default ``shorten_tools_epoch_stable``). The ``inbox``
    strategy picks up its notices where it stands in the list and acknowledges them at once.
    """
    request = {"max_tokens": check_max_tokens(max_tokens)} if max_tokens is not None else None
    resolved = _strategies_for_call(strategies, settings)
    return apply_in_order(resolved, coerce_messages(messages), save_file=save_file, config=config, request=request)


_SHARED_SPECS = 16
_shared: OrderedDict[tuple[Any, ...], list[PromptStrategy]] = OrderedDict()
_shared_lock = threading.Lock()


def _strategies_for_call(strategies: StrategySpec | Sequence[StrategySpec] | None, settings: Settings | None) -> list[PromptStrategy]:
    """Return the strategies of a spec of names: the same objects while the names, settings and registrations are.

    A replaying strategy remembers the histories it replayed last (the default's memo), so
    a loop calling ``prepare_prompt`` before every model call resumes from its previous call
    instead of replaying the whole history again. A strategy's prompt is a pure function of
    the history, so sharing its object changes no prompt. A spec holding strategy objects
    or callables is resolved as given.
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
    """Return the messages the model should see, after applying ``strategies`` in sequence.

    ``max_tokens``: the context ceiling of the default strategy (tokens, or ``("fraction",
    0.8)`` of the model window); without it ``PROMPTSTRAT_MAX_TOKENS``, else 111,616 tokens
    (see :mod:`langchain_promptstrat.ceiling`).

    ``strategies`` takes the reference's four forms: a callable (called with the messages),
    ``None`` (``PROMPT_STRATEGY``, then :data:`DEFAULT_STRATEGIES`), a comma-separated string,
    or a list of names, ``PromptStrategy`` instances and callables. ``"none"`` is a no-op.
    ``save_file`` reaches only the strategies that use it (the inbox). The result keeps the
    prompt floor, as every front end's does. The input is never mutated.
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
    """Return what the model should see when the caller has picked up the notices: :func:`apply_strategies` with ``notices``.

    The graph front ends and :func:`~langchain_promptstrat.pickup.inbox_pickup` take the
    notices themselves (to acknowledge them only once they are stored or answered); the
    ``inbox`` strategy then only places them, after the compaction with the default order.
    """
    source = tool_results_as_tool_messages(list(messages))
    return apply_in_order(strategies, source, notices=notices, save_file=save_file, config=config, request=request)[0]
