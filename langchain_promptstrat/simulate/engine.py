"""The replay engine: build the strategies, apply each before every prompt, count, and return a result.

:func:`simulate` takes a simulated agent run (:func:`~langchain_promptstrat.testing.iter_agent_run`)
or your own prompts, resolves each entry (a registry name, a pipeline of names, a
``PromptStrategy``, a callable; :func:`build_strategy` gives a budget-aiming strategy the
shared ``max_tokens``), adds the peers (:mod:`~langchain_promptstrat.simulate.peers`),
replays every one over the same prompts with the same counter, and returns a
:class:`~langchain_promptstrat.simulate.results.SimulationResult`. The definitions of its
figures are in :mod:`langchain_promptstrat.simulate`.

Must not define a figure (``figures``), format one (``output``) or know a peer's settings
(``peers``).
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_promptstrat.cache_rules import CACHE_RULES, ToolSchemas, make_cache_rule
from langchain_promptstrat.defaults import DEFAULT_CACHED_FRACTION, DEFAULT_MAX_TOKENS, DEFAULT_TOOL_CALLS
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.registry import DEFAULT_STRATEGIES, CallableStrategy, available_strategies, get_strategy, split_strategy_names
from langchain_promptstrat.report import Compacted
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.simulate.figures import _PromptTokens, _shared_prefix, canonical_message, is_degenerate
from langchain_promptstrat.simulate.peers import _Apply, _peers
from langchain_promptstrat.simulate.recall import CallTargets, TermIndex, recall_counts
from langchain_promptstrat.simulate.results import SimulationResult, StrategyRun
from langchain_promptstrat.strategy_names import BUILTIN_STRATEGIES
from langchain_promptstrat.strategies.cache_breakpoints import CacheBreakpoints
from langchain_promptstrat.strategy import PromptStrategy
from langchain_promptstrat.testing import iter_agent_run
from langchain_promptstrat.testing.tools import AGENT_RUN_TOOLS
from langchain_promptstrat.tokens import TokenCounter, as_token_counter, tool_schema_tokens

__all__ = [
    "DEFAULT_LIST_ROW",
    "ProgressHook",
    "StrategyEntry",
    "answers_in_prompts",
    "build_strategy",
    "default_rows",
    "default_strategy_names",
    "simulate",
    "with_cache_breakpoints",
]

ProgressHook = Callable[[str, int, int], None]
"""``hook(label, done, total)``: called after each prompt of each replay."""

StrategyEntry = str | PromptStrategy | Callable[[list[BaseMessage]], Any]


def build_strategy(
    name: str,
    *,
    settings: Settings | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    token_counter: Any = None,
) -> tuple[PromptStrategy, dict[str, Any]]:
    """Return the registry strategy ``name`` and the extra arguments it was built with.

    A strategy that aims at a token budget is built with ``max_tokens`` (and the shared
    ``token_counter`` when it takes one); the others are built from their settings alone.
    Acceptance is found by trying: ``get_strategy`` raises ``TypeError`` (a constructor
    without the parameter) or :class:`ConfigError` (``unknown setting``) for an argument a
    strategy does not take, and the next, smaller set of arguments is tried. The error of
    the last try (no extra argument) is the one raised, so a strategy that needs something
    else (``summary`` needs a model) fails with its own message.
    """
    attempts: list[dict[str, Any]] = [{"max_tokens": max_tokens}, {}]
    if token_counter is not None:
        attempts.insert(0, {"max_tokens": max_tokens, "token_counter": token_counter})
    for extra in attempts[:-1]:
        try:
            return get_strategy(name, settings, **extra), {k: v for k, v in extra.items() if k == "max_tokens"}
        except (TypeError, ConfigError):
            continue
    return get_strategy(name, settings), {}


def with_cache_breakpoints(entries: Sequence[Any], **build: Any) -> list[PromptStrategy]:
    """Return each entry (a registry name, comma pipeline or strategy) wrapped in :class:`~langchain_promptstrat.strategies.cache_breakpoints.CacheBreakpoints`.

    ``build`` (``max_tokens``, ``token_counter``) goes to
    :func:`build_strategy` for names, as a replay builds them.
    """
    wrapped: list[PromptStrategy] = []
    for entry in entries:
        if isinstance(entry, str):
            parts = split_strategy_names(entry)
            inner: Any = [build_strategy(p, **build)[0] for p in parts]
            label = f"{','.join(parts)}+breakpoints"
        else:
            inner, label = [entry], None
        wrapped.append(CacheBreakpoints(inner, name=label))
    return wrapped


def default_strategy_names(*, settings: Settings | None = None, max_tokens: int = DEFAULT_MAX_TOKENS) -> list[str]:
    """Return ``none`` then every installed built-in strategy a replay can build, in registry order.

    Left out: strategies that cannot be built without more than settings and ``max_tokens``
    (``summary`` needs a model), and those that use the conversation's save file (the
    inbox): a replay has no inbox, so they would only repeat ``none``. Name them explicitly
    to replay them anyway. A built-in whose module fails to import is left out with a
    warning.
    """
    available = set(available_strategies())
    names = ["none"]
    for name in BUILTIN_STRATEGIES:
        if name == "none" or name not in available:
            continue
        try:
            strategy, _ = build_strategy(name, settings=settings, max_tokens=max_tokens)
        except (TypeError, ConfigError):
            continue
        except ImportError as exc:
            warnings.warn(f"built-in strategy {name!r} cannot be imported ({exc}); leaving it out", RuntimeWarning, stacklevel=2)
            continue
        if not strategy.uses_save_file:
            names.append(name)
    return names


DEFAULT_LIST_ROW = ",".join(n for n in DEFAULT_STRATEGIES if n != "inbox")
"""The default list as a replay's row: :data:`DEFAULT_STRATEGIES` without the inbox (a replay has none)."""


def default_rows(*, settings: Settings | None = None, max_tokens: int = DEFAULT_MAX_TOKENS) -> list[str]:
    """Return what a replay shows when no strategy is named: :func:`default_strategy_names`, then the default list as one pipeline row.

    The default list is :data:`DEFAULT_STRATEGIES` without the inbox (a replay has none),
    added when it holds more than one strategy.
    """
    names = default_strategy_names(settings=settings, max_tokens=max_tokens)
    default_list = DEFAULT_LIST_ROW.split(",")
    if len(default_list) > 1 and all(n in names for n in default_list):
        names.append(DEFAULT_LIST_ROW)
    return names


def _pipeline(strategies: Sequence[PromptStrategy], tools: Sequence[Any] = ()) -> _Apply:
    """Return the strategies applied in order; one that takes the request (``compact_for_request``) is given ``tools``, as the middleware gives it."""

    def apply(prompt: list[BaseMessage]) -> list[BaseMessage]:
        current = prompt
        for strategy in strategies:
            bounded: Callable[..., Compacted] | None = getattr(strategy, "compact_for_request", None)
            if tools and callable(bounded):
                current = bounded(current, tools=tools).messages
            else:
                current = strategy.compact(current).messages
        return current

    return apply


def _resolve_entry(
    entry: StrategyEntry, *, settings: Settings | None, max_tokens: int, counter: Any, tools: Sequence[Any] = ()
) -> tuple[str, str, _Apply, dict[str, Any]]:
    """Return (label, kind, apply, options) for one entry of ``strategies``."""
    if isinstance(entry, str):
        parts = split_strategy_names(entry, source="the strategy pipeline")
        built = [build_strategy(p, settings=settings, max_tokens=max_tokens, token_counter=counter) for p in parts]
        options = {k: v for _, extra in built for k, v in extra.items()}
        return ",".join(parts), "ours", _pipeline([s for s, _ in built], tools), options
    if isinstance(entry, PromptStrategy):
        return getattr(entry, "label", None) or entry.strategy_name, "custom", _pipeline([entry], tools), {}
    if callable(entry):
        strategy = CallableStrategy(entry)
        return strategy.strategy_name, "custom", _pipeline([strategy]), {}
    raise ConfigError(f"cannot replay {entry!r}: expected a strategy name, a PromptStrategy or a callable")


def _plain_progress(total: int) -> tuple[ProgressHook, Callable[[], None]]:
    """Return a progress hook writing ``label: done/total`` on one stderr line (no tqdm needed), and its closer."""
    state = {"done": 0, "shown": -1}

    def hook(label: str, done: int, of: int) -> None:
        state["done"] += 1
        percent = 100 * state["done"] // max(total, 1)
        if percent != state["shown"]:
            state["shown"] = percent
            sys.stderr.write(f"\r{label}: {state['done']}/{total} prompts ({percent}%)\x1b[K")
            sys.stderr.flush()

    def close() -> None:
        if state["shown"] >= 0:
            sys.stderr.write("\n")
            sys.stderr.flush()

    return hook, close


def _progress_hook(progress: bool | ProgressHook | None, total: int) -> tuple[ProgressHook | None, Callable[[], None]]:
    """Return the per-prompt hook and a closer: a tqdm bar on stderr when asked or when stderr is a terminal."""
    if callable(progress):
        return progress, lambda: None
    if progress is False or (progress is None and not sys.stderr.isatty()):
        return None, lambda: None
    try:
        from tqdm import tqdm
    except ImportError:  # asked for a bar: a plain one rather than silence
        return _plain_progress(total)
    bar = tqdm(total=total, file=sys.stderr, unit="call", leave=False, dynamic_ncols=True)
    current = [""]

    def hook(label: str, done: int, of: int) -> None:
        if label != current[0]:
            current[0] = label
            bar.set_description(label, refresh=False)
        bar.update(1)

    return hook, bar.close


def _replay(
    label: str,
    kind: str,
    apply: _Apply,
    prompts: Sequence[list[BaseMessage]],
    counter: Callable[[Sequence[BaseMessage]], int],
    options: dict[str, Any],
    hook: ProgressHook | None,
    cache: str = "prefix",
    schemas: ToolSchemas | None = None,
    targets: Sequence[CallTargets | None] | None = None,
    terms: TermIndex | None = None,
) -> StrategyRun:
    run = StrategyRun(name=label, kind=kind, options=options)
    tokens = _PromptTokens(counter)
    rule = make_cache_rule(cache, canonical_message, tools=schemas)
    tokens.keep_counts = rule is not None
    fixed = schemas.tokens if schemas is not None else 0  # in every prompt, first in the cache order
    previous: list[BaseMessage] | None = None
    keys: list[str | None] | None = None
    for done, prompt in enumerate(prompts, 1):
        start = time.perf_counter()
        sent = apply(list(prompt))
        run.seconds.append(time.perf_counter() - start)
        j, keys_now = _shared_prefix(previous, keys, sent)
        total, cached = tokens.count(sent, j)
        total, cached = total + fixed, cached + (fixed if previous is not None else 0)
        run.tokens.append(total)
        run.cached_tokens.append(cached)
        run.reuse.append(cached / total if total else 0.0)
        run.degenerate.append(is_degenerate(prompt, sent))
        if targets is not None and terms is not None:
            target = targets[done - 1]
            run.recall.append(recall_counts(target, prompt, sent, terms).as_list() if target is not None else [0] * 7)
        if rule is not None:
            read, written = rule.observe(sent, tokens.last_counts)
            run.provider_cached_tokens.append(read)
            run.provider_written_tokens.append(written)
        previous, keys = sent, keys_now
        if hook is not None:
            hook(label, done, len(prompts))
    return run


def _counter_description(counter: Any) -> tuple[str, bool | None]:
    if isinstance(counter, TokenCounter):
        return repr(counter), counter.exact
    return getattr(counter, "__name__", None) or repr(counter), None


def _tool_schemas(tools: Sequence[Any], counter: Any) -> ToolSchemas | None:
    """Return what the cache rules and the counts need of ``tools``' schemas (None without tools)."""
    if not tools:
        return None
    key = json.dumps([_schema_json(t) for t in tools], sort_keys=True, ensure_ascii=False, default=str)
    return ToolSchemas(tokens=tool_schema_tokens(tools, counter), blocks=len(tools), key=key)


def _schema_json(tool: Any) -> Any:
    try:
        return convert_to_openai_tool(tool)
    except Exception:  # noqa: BLE001 -- tool_schema_tokens counts it by its repr too
        return repr(tool)


def simulate(
    strategies: Sequence[StrategyEntry] | None = None,
    *,
    n_tool_calls: int = DEFAULT_TOOL_CALLS,
    seed: int = 0,
    token_counter: Any = None,
    cached_fraction: float = DEFAULT_CACHED_FRACTION,
    peers: bool = False,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    progress: bool | ProgressHook | None = None,
    settings: Settings | None = None,
    price_per_mtok: float | None = None,
    run_options: Mapping[str, Any] | None = None,
    prompts: Iterable[Sequence[BaseMessage]] | None = None,
    cache: str = "prefix",
    tools: Sequence[Any] | None = None,
    next_actions: Sequence[BaseMessage | None] | None = None,
) -> SimulationResult:
    """Return every strategy's replay of one simulated agent run (see :mod:`langchain_promptstrat.simulate`).

    ``strategies`` holds registry names (a comma-separated name is a pipeline applied in
    order), ``PromptStrategy`` objects or ``messages -> messages`` callables; ``None``
    means :func:`default_strategy_names`. ``peers=True`` adds ``trim_messages`` and
    ``ClearToolUsesEdit`` at ``max_tokens``. ``token_counter`` is anything
    :func:`~langchain_promptstrat.tokens.as_token_counter` accepts. ``progress``: ``None``
    shows a tqdm bar on stderr only when stderr is a terminal, ``True``/``False`` force it
    on/off (without tqdm installed, a plain one-line counter instead), a callable ``hook(label, done, total)`` is called after each prompt.
    ``run_options`` go to :func:`~langchain_promptstrat.testing.iter_agent_run` (``mirror``,
    ``user_turn_every``...); ``prompts`` replaces the simulated run with your own sequence
    of prompts (then ``n_tool_calls`` and ``seed`` are not recorded). ``settings`` build the
    named strategies (default: the environment, then the defaults); ``price_per_mtok``
    adds a cost in dollars to the output. ``cache`` (``openai`` or ``anthropic``) adds the
    figures of that provider's cache rules beside the prefix upper bound (see
    :mod:`~langchain_promptstrat.cache_rules`). ``tools`` are the tools bound to the model
    (LangChain tools, functions or schema dicts), whose schemas every prompt carries and
    every figure counts; None means :data:`AGENT_RUN_TOOLS` for the simulated run and no
    tools for ``prompts``; ``[]`` none. ``next_actions`` (one per prompt, None where
    unknown) are the assistant messages that answered ``prompts``, from which next-action
    recall is measured (:mod:`~langchain_promptstrat.simulate.recall`); None means each
    prompt's answer as the next prompt holds it (the last prompt's is unknown). A simulated
    run measures no recall: its next actions are scripted.
    """
    if cache not in CACHE_RULES:
        raise ConfigError(f"unknown cache rule {cache!r}; known: {', '.join(CACHE_RULES)}")
    if isinstance(cached_fraction, bool) or not isinstance(cached_fraction, (int, float)) or not 0 <= cached_fraction <= 1:
        raise ConfigError(f"cached_fraction must be a number between 0 and 1, got {cached_fraction!r}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ConfigError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    if price_per_mtok is not None and (not isinstance(price_per_mtok, (int, float)) or not math.isfinite(price_per_mtok) or price_per_mtok < 0):
        raise ConfigError(f"price_per_mtok must be a non-negative number, got {price_per_mtok!r}")
    counter = as_token_counter(token_counter)
    calls_recorded: int | None
    seed_recorded: int | None
    if prompts is None:
        replayed = list(iter_agent_run(n_tool_calls, seed=seed, **dict(run_options or {})))
        calls_recorded, seed_recorded = n_tool_calls, seed
    else:
        replayed = [list(p) for p in prompts]
        calls_recorded = seed_recorded = None
        if next_actions is not None and len(next_actions) != len(replayed):
            raise ConfigError(f"next_actions holds {len(next_actions)} messages for {len(replayed)} prompts; give one per prompt (None where unknown)")
    bound = list(AGENT_RUN_TOOLS if tools is None and prompts is None else tools or [])
    schemas = _tool_schemas(bound, counter)
    if strategies is None:
        strategies = default_rows(settings=settings, max_tokens=max_tokens)
    elif isinstance(strategies, (str, PromptStrategy)) or callable(strategies):
        strategies = [strategies]

    notes: list[str] = []
    entries = [_resolve_entry(e, settings=settings, max_tokens=max_tokens, counter=counter, tools=bound) for e in strategies]
    if peers:
        entries += _peers(counter, max_tokens, notes)
    seen: dict[str, int] = {}
    for i, (label, *rest) in enumerate(entries):
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            entries[i] = (f"{label}#{seen[label]}", *rest)  # type: ignore[assignment]

    terms = TermIndex() if prompts is not None else None
    targets = _call_targets(replayed, next_actions, terms) if terms is not None else None
    hook, close = _progress_hook(progress, len(replayed) * len(entries))
    try:
        runs = [
            _replay(label, kind, apply, replayed, counter, options, hook, cache, schemas, targets, terms)
            for label, kind, apply, options in entries
        ]
    finally:
        close()
    name, exact = _counter_description(counter)
    if exact is False:
        notes.append("token counts are approximate: the tiktoken encoding could not be loaded (reinstall langchain-promptstrat, which ships cl100k_base)")
    return SimulationResult(
        runs=runs,
        n_tool_calls=calls_recorded,
        seed=seed_recorded,
        model_calls=len(replayed),
        cached_fraction=float(cached_fraction),
        max_tokens=max_tokens,
        token_counter=name,
        exact_tokens=exact,
        price_per_mtok=None if price_per_mtok is None else float(price_per_mtok),
        notes=notes,
        cache_rule=cache,
        tool_schemas=[(len(bound), schemas.tokens if schemas is not None else 0)],
        recall_measured=targets is not None,
    )


def answers_in_prompts(prompts: Sequence[Sequence[BaseMessage]]) -> list[BaseMessage | None]:
    """Return each prompt's answer as the next prompt records it: the assistant message right after it, else None (always for the last)."""
    found: list[BaseMessage | None] = []
    for prompt, following in zip(prompts, prompts[1:]):
        answer = following[len(prompt)] if len(following) > len(prompt) else None
        found.append(answer if isinstance(answer, AIMessage) else None)
    return [*found, None] if prompts else []


def _call_targets(
    prompts: Sequence[list[BaseMessage]], next_actions: Sequence[BaseMessage | None] | None, terms: TermIndex
) -> list[CallTargets | None]:
    """Return what each call's next action used (None where the answer is unknown), computed once for every strategy."""
    answers = answers_in_prompts(prompts) if next_actions is None else list(next_actions)
    return [None if answer is None else CallTargets.of(prompt, answer, terms) for prompt, answer in zip(prompts, answers)]
