"""Replay a long agent run through prompt strategies and return what each one sends and costs.

The engine behind ``promptstrat simulate`` and ``benchmarks/compare.py``: no model, no network,
no key. Every strategy and peer replays the same prompts (the same message objects, in order,
one strategy object per replay) and is counted with the same token counter (default:
:class:`~langchain_promptstrat.tokens.TokenCounter`, cl100k_base). The figures, per prompt ``k``:

* ``tokens[k]``: the messages sent plus the bound tools' schemas, which every request carries
  (:data:`AGENT_RUN_TOOLS` in a simulated run, a transcript's saved ``tools``). The strategies'
  request names the tools, as the middleware's does.
* ``cached_tokens[k]``: the schemas and the longest run of leading messages byte-identical to
  prompt ``k - 1``'s, compared on :func:`canonical_message` (0 for the first prompt);
  ``reuse[k] = cached_tokens[k] / tokens[k]``, averaged over the run. An upper bound of what a
  provider serves (it caches in blocks and evicts; :mod:`~langchain_promptstrat.cache_rules`
  applies OpenAI's and Anthropic's own rules).
* cost: ``cached_tokens * cached_fraction + (tokens - cached_tokens)`` in input-token units
  (dollars with ``price_per_mtok``); strategy time: wall time inside the strategy only.
* degenerate: a prompt of system messages only, or without the task (the first real user
  message) or the last real user message.
* unresolved references: references to lines another output shows (``[12 lines as in the
  output of call_ab12 (bash) above]``) whose named output does not show those lines in the
  prompt (:func:`~langchain_promptstrat.messages.references.unresolved_references`).
* next-action recall, for replayed prompts only: :mod:`~langchain_promptstrat.simulate.recall`.

Strategies are applied as every front end applies them (:func:`apply_in_order`). Peers
(``peers=True``), at the same ``max_tokens`` where they take one: ``trim_messages`` as LangGraph's
documented ``pre_model_hook`` sets it up (``strategy="last"``, ``start_on="human"``,
``end_on=("human", "tool")``, ``include_system=True``); ``ContextEditingMiddleware`` with
``ClearToolUsesEdit(trigger=max_tokens)`` (its defaults; left out with a note without the ``agents``
extra); SWE-agent's observation masking, :func:`observation_masking`, at ``n=10`` with ``polling`` 1
and 5. The table and the plot are in :mod:`~langchain_promptstrat.simulate.output`.
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_promptstrat.cache_rules import CACHE_RULES, ToolSchemas, make_cache_rule
from langchain_promptstrat.defaults import (
    DEFAULT_CACHED_FRACTION,
    DEFAULT_TOOL_CALLS,
    LONG_RUN_CALLS,
    SIMULATED_MAX_TOKENS,
)
from langchain_promptstrat.errors import ConfigError, renamed_attributes
from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.messages import content_text, is_real_user_message, task_index
from langchain_promptstrat.messages.references import unresolved_references
from langchain_promptstrat.registry import (
    BUILTIN_STRATEGIES,
    CallableStrategy,
    available_strategies,
    get_strategy,
)
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.simulate.output import (
    DEFAULT_LIST_ROW,
    SimulationResult,
    StrategyRun,
    estimated_cost,
    format_table,
    plot,
    result_from_json,
    result_to_json,
)
from langchain_promptstrat.simulate.recall import (
    OLD_AFTER,
    CallTargets,
    RecallCounts,
    TermIndex,
    code_references,
    recall_counts,
    terms,
)
from langchain_promptstrat.strategies.cache_breakpoints import CacheBreakpoints
from langchain_promptstrat.strategies.inbox import Inbox
from langchain_promptstrat.strategy import (
    PromptRequest,
    PromptStrategy,
    apply_in_order,
    split_strategy_names,
)
from langchain_promptstrat.testing import ScriptedChatModel, iter_agent_run
from langchain_promptstrat.testing.tools import AGENT_RUN_TOOLS
from langchain_promptstrat.tokens import TokenCounter, as_token_counter, tool_schema_tokens

__all__ = [
    "AGENT_RUN_TOOLS",
    "DEFAULT_CACHED_FRACTION",
    "DEFAULT_LIST_ROW",
    "SIMULATED_MAX_TOKENS",
    "DEFAULT_TOOL_CALLS",
    "OLD_AFTER",
    "PEER_CLEAR_TOOL_USES",
    "PEER_OBSERVATION_MASKING",
    "PEER_TRIM_MESSAGES",
    "CallTargets",
    "ProgressHook",
    "RecallCounts",
    "SimulationResult",
    "StrategyEntry",
    "StrategyRun",
    "answers_in_prompts",
    "build_strategy",
    "cache_reuse",
    "canonical_message",
    "code_references",
    "default_rows",
    "default_strategy_names",
    "estimated_cost",
    "format_table",
    "is_degenerate",
    "observation_masking",
    "plot",
    "recall_counts",
    "result_from_json",
    "result_to_json",
    "shared_prefix_length",
    "simulate",
    "terms",
    "with_cache_breakpoints",
]

__getattr__ = renamed_attributes(
    __name__, globals(), {"DEFAULT_MAX_TOKENS": "SIMULATED_MAX_TOKENS"}
)  # the old name of simulate's token target, kept one release

ProgressHook = Callable[[str, int, int], None]
"""``hook(label, done, total)``: called after each prompt of each replay."""

StrategyEntry = str | PromptStrategy | Callable[[list[BaseMessage]], Any]
Apply = Callable[[list[BaseMessage]], list[BaseMessage]]
"""A strategy as a replay applies it: the prompt before the model call in, the prompt sent out."""

PEER_TRIM_MESSAGES = "trim_messages"
PEER_CLEAR_TOOL_USES = "ClearToolUsesEdit"
PEER_OBSERVATION_MASKING = "LastNObservations"
MASKING_SETTINGS: tuple[tuple[int, int], ...] = ((10, 1), (10, 5))
"""``(n, polling)`` of the masking rows: the paper's setting ("The Complexity Trap"), and
SWE-agent's cache-friendlier polling."""

# ----------------------------------------------------------------------------------------- figures


def canonical_message(message: BaseMessage) -> str:
    """Return what a provider receives of ``message`` as one string: without its local ``id`` and
    ``cache_control`` marks.

    Tool calls are read from ``tool_calls`` (an OpenAI mirror holds the same calls; an
    Anthropic ``tool_use`` block is part of the content).
    """
    data: dict[str, Any] = {
        "type": message.type,
        "content": _without_cache_control(message.content),
    }
    if message.name:
        data["name"] = message.name
    if isinstance(message, AIMessage):
        for key, calls in (
            ("tool_calls", message.tool_calls),
            ("invalid_tool_calls", message.invalid_tool_calls),
        ):
            if calls:
                data[key] = [
                    {"name": c.get("name"), "args": c.get("args"), "id": c.get("id")} for c in calls
                ]
    if isinstance(message, ToolMessage):
        data["tool_call_id"] = message.tool_call_id
    return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)


def _without_cache_control(content: Any) -> Any:
    """Return ``content`` without ``cache_control`` marks; a single marked text block becomes its
    string again, as Anthropic reads it."""
    if not isinstance(content, list) or not any(
        isinstance(b, dict) and "cache_control" in b for b in content
    ):
        return content
    blocks = [
        {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b
        for b in content
    ]
    if len(blocks) == 1 and set(blocks[0]) == {"type", "text"} and blocks[0]["type"] == "text":
        return blocks[0]["text"]
    return blocks


def _shared_prefix(
    previous: Sequence[BaseMessage] | None,
    previous_keys: list[str | None] | None,
    current: Sequence[BaseMessage],
) -> tuple[int, list[str | None]]:
    """Return the number of identical leading messages and the canonical keys computed for
    ``current``.

    The same object is the same message (no strategy mutates one), so only different objects
    are serialised, up to the first difference; the keys are handed to the next comparison.
    """
    keys: list[str | None] = [None] * len(current)
    if not previous:
        return 0, keys
    assert previous_keys is not None
    shared = min(len(previous), len(current))
    for j in range(shared):
        before, now = previous[j], current[j]
        if before is now:
            keys[j] = previous_keys[j]
            continue
        if previous_keys[j] is None:
            previous_keys[j] = canonical_message(before)
        keys[j] = canonical_message(now)
        if keys[j] != previous_keys[j]:
            return j, keys
    return shared, keys


def shared_prefix_length(previous: Sequence[BaseMessage], current: Sequence[BaseMessage]) -> int:
    """Return how many leading messages of ``current`` are byte-identical to those of
    ``previous``."""
    no_keys: list[str | None] = [None] * len(previous)
    return _shared_prefix(previous, no_keys, current)[0]


def is_degenerate(before: Sequence[BaseMessage], after: Sequence[BaseMessage]) -> bool:
    """Return whether ``after`` (the prompt sent for ``before``) holds only system messages, or lost
    the task or the last user message.

    The task is the first real user message: agent harnesses speak as the user too, so the
    last user message alone does not say what the model was asked to do.
    """
    if all(isinstance(m, SystemMessage) for m in after):
        return True
    task = task_index(before)
    users = [before[task]] if task is not None else []
    users += [m for m in reversed(before) if is_real_user_message(m)][:1]
    return any(not _kept(user, after) for user in users)


def _kept(message: BaseMessage, after: Sequence[BaseMessage]) -> bool:
    if any(m is message for m in after):
        return True
    key = canonical_message(message)
    return any(is_real_user_message(m) and canonical_message(m) == key for m in after)


class _PromptTokens:
    """Counts a prompt and its leading messages; an additive :class:`TokenCounter` counts each
    message object once over the run."""

    def __init__(
        self, counter: Callable[[Sequence[BaseMessage]], int], keep_counts: bool = False
    ) -> None:
        self.counter = counter
        self.additive = isinstance(counter, TokenCounter)
        self._previous: dict[int, tuple[BaseMessage, int]] = {}
        self.keep_counts = keep_counts
        """Also count each message of a non-additive counter (a provider rule needs per-message
        counts)."""
        self.last_counts: list[int] = []

    def count(self, prompt: Sequence[BaseMessage], prefix: int) -> tuple[int, int]:
        """Return the tokens of ``prompt`` and of its first ``prefix`` messages."""
        if not self.additive:
            total = self.counter(prompt)
            self.last_counts = [self.counter([m]) for m in prompt] if self.keep_counts else []
            return total, (min(self.counter(prompt[:prefix]), total) if prefix else 0)
        counts: list[int] = []
        for message in prompt:
            known = self._previous.get(id(message))
            counts.append(
                known[1]
                if known is not None and known[0] is message
                else self.counter.count_message(message)  # type: ignore[attr-defined]
            )
        self._previous = {id(m): (m, c) for m, c in zip(prompt, counts, strict=False)}
        self.last_counts = counts
        return sum(counts), sum(counts[:prefix])


# ----------------------------------------------------------------------------------------- peers


def observation_masking(n: int = 10, polling: int = 1) -> Apply:
    """Return SWE-agent's ``LastNObservations(n, polling)`` as a ``messages -> messages`` function.

    The observations are the task (never masked) and every tool output in order; of ``k``,
    those at positions ``1 .. (k // polling) * polling - n - 1`` have their content replaced
    by ``Old environment output: (L lines omitted)``.
    """
    if n < 1 or polling < 1:
        raise ValueError(
            f"observation masking needs n >= 1 and polling >= 1, got n={n}, polling={polling}"
        )

    def apply(prompt: list[BaseMessage]) -> list[BaseMessage]:
        task = task_index(prompt)
        observations = ([task] if task is not None else []) + [
            i for i, m in enumerate(prompt) if isinstance(m, ToolMessage)
        ]
        masked = set(observations[1 : max(0, (len(observations) // polling) * polling - n)])
        return [
            m.model_copy(
                update={
                    "content": "Old environment output: "
                    f"({len(content_text(m.content).splitlines())} lines omitted)"
                }
            )
            if i in masked
            else m
            for i, m in enumerate(prompt)
        ]

    return apply


def _clear_tool_uses_peer(counter: Any, max_tokens: int) -> Apply:
    # Imported here, not at the top: langchain is an optional extra, and without it the peer is left
    # out with a note.
    from langchain.agents.middleware import (
        ClearToolUsesEdit,
        ContextEditingMiddleware,
        ModelRequest,
        ModelResponse,
    )

    middleware = ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(trigger=max_tokens)], token_counter=counter
    )
    model = ScriptedChatModel()  # never called: the handler below answers in its place

    def apply(prompt: list[BaseMessage]) -> list[BaseMessage]:
        system = (
            prompt[0] if prompt and isinstance(prompt[0], SystemMessage) else None
        )  # create_agent keeps it out of messages
        sent: list[list[BaseMessage]] = []

        def handler(request: ModelRequest) -> ModelResponse:
            sent.append(list(request.messages))
            return ModelResponse(result=[AIMessage("")])

        messages = cast("list[AnyMessage]", list(prompt[1:] if system else prompt))
        middleware.wrap_model_call(
            ModelRequest(model=model, messages=messages, system_message=system), handler
        )
        return [system, *sent[0]] if system else sent[0]

    return apply


def _peers(
    counter: Any, max_tokens: int, notes: list[str]
) -> list[tuple[str, str, Apply, dict[str, Any]]]:
    def trim(prompt: list[BaseMessage]) -> list[BaseMessage]:
        return trim_messages(
            prompt,
            max_tokens=max_tokens,
            token_counter=counter,
            strategy="last",
            start_on="human",
            end_on=("human", "tool"),
            include_system=True,
            allow_partial=False,
        )

    options = {
        "max_tokens": max_tokens,
        "strategy": "last",
        "start_on": "human",
        "end_on": ["human", "tool"],
        "include_system": True,
    }
    peers: list[tuple[str, str, Apply, dict[str, Any]]] = [
        (PEER_TRIM_MESSAGES, "peer", trim, options)
    ]
    try:
        clear_tool_uses = _clear_tool_uses_peer(counter, max_tokens)
    except ImportError as exc:
        notes.append(
            f"{PEER_CLEAR_TOOL_USES} left out: langchain>=1.0 with agent middleware is not "
            f"installed ({exc}); "
            f"{install_hint('agents')}"
        )
    else:
        options = {
            "trigger": max_tokens,
            "keep": 3,
            "clear_at_least": 0,
            "clear_tool_inputs": False,
        }
        peers.append((PEER_CLEAR_TOOL_USES, "peer", clear_tool_uses, options))
    for n, polling in MASKING_SETTINGS:
        label = (
            f"{PEER_OBSERVATION_MASKING}(n={n})"
            if polling == 1
            else f"{PEER_OBSERVATION_MASKING}(n={n},polling={polling})"
        )
        peers.append((label, "peer", observation_masking(n, polling), {"n": n, "polling": polling}))
    return peers


# ----------------------------------------------------------------------------------------- the
# replay


def build_strategy(
    name: str,
    *,
    settings: Settings | None = None,
    max_tokens: int = SIMULATED_MAX_TOKENS,
    token_counter: Any = None,
) -> tuple[PromptStrategy, dict[str, Any]]:
    """Return the registry strategy ``name`` and the extra arguments it was built with.

    A strategy that aims at a token budget is built with ``max_tokens`` (and ``token_counter``
    when it takes one); acceptance is found by trying, smaller sets of arguments after
    ``TypeError`` or :class:`ConfigError`, so a strategy that needs something else (``summary``
    needs a model) fails with its own message on the last try, with none.
    """
    attempts: list[dict[str, Any]] = [{"max_tokens": max_tokens}, {}]
    if token_counter is not None:
        attempts.insert(0, {"max_tokens": max_tokens, "token_counter": token_counter})
    for extra in attempts[:-1]:
        try:
            return get_strategy(name, settings, **extra), {
                k: v for k, v in extra.items() if k == "max_tokens"
            }
        except (TypeError, ConfigError):
            continue
    return get_strategy(name, settings), {}


def with_cache_breakpoints(entries: Sequence[Any], **build: Any) -> list[PromptStrategy]:
    """Return each entry (a registry name, comma pipeline or strategy) wrapped in
    :class:`~langchain_promptstrat.strategies.cache_breakpoints.CacheBreakpoints`; ``build`` goes to
    :func:`build_strategy` for names."""
    wrapped: list[PromptStrategy] = []
    for entry in entries:
        if isinstance(entry, str):
            parts = split_strategy_names(entry)
            wrapped.append(
                CacheBreakpoints(
                    [build_strategy(p, **build)[0] for p in parts],
                    name=f"{','.join(parts)}+breakpoints",
                )
            )
        else:
            wrapped.append(CacheBreakpoints([entry], name=None))
    return wrapped


def default_strategy_names(
    *, settings: Settings | None = None, max_tokens: int = SIMULATED_MAX_TOKENS
) -> list[str]:
    """Return ``none`` then every installed built-in strategy a replay can build, in registry order.

    Left out: those that need more than settings and ``max_tokens`` (``summary`` needs a
    model), those that use the save file (the inbox: a replay has none), and a built-in whose
    module fails to import (with a warning).
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
            warnings.warn(
                f"built-in strategy {name!r} cannot be imported ({exc}); leaving it out",
                RuntimeWarning,
                stacklevel=2,
            )
            continue
        if not isinstance(strategy, Inbox):
            names.append(name)
    return names


def default_rows(
    *, settings: Settings | None = None, max_tokens: int = SIMULATED_MAX_TOKENS
) -> list[str]:
    """Return what a replay shows when no strategy is named: :func:`default_strategy_names`, then
    :data:`DEFAULT_LIST_ROW` when it is a pipeline."""
    names = default_strategy_names(settings=settings, max_tokens=max_tokens)
    default_list = DEFAULT_LIST_ROW.split(",")
    if len(default_list) > 1 and all(n in names for n in default_list):
        names.append(DEFAULT_LIST_ROW)
    return names


def _pipeline(strategies: Sequence[PromptStrategy], tools: Sequence[Any] = ()) -> Apply:
    """Return the strategies applied as the front ends apply them (:func:`apply_in_order`), given
    ``tools`` as the middleware gives them."""
    request = PromptRequest(tools=list(tools) if tools else None)

    def apply(prompt: list[BaseMessage]) -> list[BaseMessage]:
        return apply_in_order(strategies, prompt, request)[0]

    return apply


def _resolve_entry(
    entry: StrategyEntry,
    *,
    settings: Settings | None,
    max_tokens: int,
    counter: Any,
    tools: Sequence[Any],
) -> tuple[str, str, Apply, dict[str, Any]]:
    """Return (label, kind, apply, options) for one entry of ``strategies``."""
    if isinstance(entry, str):
        parts = split_strategy_names(entry, source="the strategy pipeline")
        built = [
            build_strategy(p, settings=settings, max_tokens=max_tokens, token_counter=counter)
            for p in parts
        ]
        options = {k: v for _, extra in built for k, v in extra.items()}
        return ",".join(parts), "ours", _pipeline([s for s, _ in built], tools), options
    if isinstance(entry, PromptStrategy):
        return (
            getattr(entry, "label", None) or entry.strategy_name,
            "custom",
            _pipeline([entry], tools),
            {},
        )
    if callable(entry):
        strategy = CallableStrategy(entry)
        return strategy.strategy_name, "custom", _pipeline([strategy]), {}
    raise ConfigError(
        f"cannot replay {entry!r}: expected a strategy name, a PromptStrategy or a callable"
    )


def _progress_hook(
    progress: bool | ProgressHook | None, total: int, unit: str = "call"
) -> tuple[ProgressHook | None, Callable[[], None]]:
    """Return the per-step hook and its closer: a bar of ``total`` ``unit``s on stderr.

    Drawn when asked or when stderr is a terminal: tqdm's, else one plain line.
    """
    if callable(progress):
        return progress, lambda: None
    if progress is False or (progress is None and not sys.stderr.isatty()):
        return None, lambda: None
    try:
        from tqdm import tqdm  # an optional dependency: without it, the plain counter below
    except ImportError:
        shown = [0, -1]  # prompts done, percent shown

        def plain(label: str, done: int, of: int) -> None:
            shown[0] += 1
            percent = 100 * shown[0] // max(total, 1)
            if percent != shown[1]:
                shown[1] = percent
                sys.stderr.write(f"\r{label}: {shown[0]:,}/{total:,} {unit}s ({percent}%)\x1b[K")
                sys.stderr.flush()

        def close() -> None:
            if shown[1] >= 0:
                sys.stderr.write("\n")
                sys.stderr.flush()

        return plain, close
    bar = tqdm(total=total, file=sys.stderr, unit=unit, leave=False, dynamic_ncols=True)

    def hook(label: str, done: int, of: int) -> None:
        if bar.desc != label:  # drawn at once: a new phase or strategy shows even between redraws
            bar.set_description(label)
        bar.update(1)

    return hook, bar.close


def _build_run(
    n_tool_calls: int, seed: int, options: Mapping[str, Any], progress: bool | ProgressHook | None
) -> list[list[BaseMessage]]:
    """Return the prompts of the simulated run, with a bar of its tool calls while it is built.

    The bar is drawn when ``progress`` draws one; a callable ``progress`` is the replay's (one
    call per prompt replayed), and building draws nothing for it.
    """
    drawn = False if callable(progress) else progress
    hook, close = _progress_hook(drawn, n_tool_calls, unit="tool call")
    prompts: list[list[BaseMessage]] = []
    try:
        for prompt in iter_agent_run(n_tool_calls, seed=seed, **dict(options)):
            if hook is not None:
                for message in prompt[len(prompts[-1]) if prompts else 0 :]:
                    if isinstance(message, ToolMessage):
                        hook("building the run", 0, n_tool_calls)
            prompts.append(prompt)
    finally:
        close()
    return prompts


def _replay(
    label: str,
    kind: str,
    apply: Apply,
    options: dict[str, Any],
    prompts: Sequence[list[BaseMessage]],
    counter: Callable[[Sequence[BaseMessage]], int],
    hook: ProgressHook | None,
    cache: str,
    schemas: ToolSchemas | None,
    targets: Sequence[CallTargets | None] | None,
    index: TermIndex,
) -> StrategyRun:
    run = StrategyRun(name=label, kind=kind, options=options)
    rule = make_cache_rule(cache, canonical_message, tools=schemas)
    tokens = _PromptTokens(counter, keep_counts=rule is not None)
    fixed = (
        schemas.tokens if schemas is not None else 0
    )  # in every prompt, first in the cache order
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
        run.unresolved.append(unresolved_references(prompt, sent))
        if targets is not None:
            target = targets[done - 1]
            run.recall.append(
                recall_counts(target, prompt, sent, index).as_list()
                if target is not None
                else [0] * 7
            )
        if rule is not None:
            read, written = rule.observe(sent, tokens.last_counts)
            run.provider_cached_tokens.append(read)
            run.provider_written_tokens.append(written)
        previous, keys = sent, keys_now
        if hook is not None:
            hook(label, done, len(prompts))
    return run


def _tool_schemas(tools: Sequence[Any], counter: Any) -> ToolSchemas | None:
    """Return what the cache rules and the counts need of ``tools``' schemas (None without
    tools)."""
    if not tools:
        return None

    def schema(tool: Any) -> Any:
        try:
            return convert_to_openai_tool(tool)
        except Exception:  # noqa: BLE001 -- tool_schema_tokens counts it by its repr too
            return repr(tool)

    key = json.dumps([schema(t) for t in tools], sort_keys=True, ensure_ascii=False, default=str)
    return ToolSchemas(tokens=tool_schema_tokens(tools, counter), blocks=len(tools), key=key)


def simulate(
    strategies: Sequence[StrategyEntry] | None = None,
    *,
    n_tool_calls: int = DEFAULT_TOOL_CALLS,
    seed: int = 0,
    token_counter: Any = None,
    cached_fraction: float = DEFAULT_CACHED_FRACTION,
    peers: bool = False,
    max_tokens: int = SIMULATED_MAX_TOKENS,
    progress: bool | ProgressHook | None = None,
    settings: Settings | None = None,
    price_per_mtok: float | None = None,
    run_options: Mapping[str, Any] | None = None,
    prompts: Iterable[Sequence[BaseMessage]] | None = None,
    cache: str = "prefix",
    tools: Sequence[Any] | None = None,
    next_actions: Sequence[BaseMessage | None] | None = None,
) -> SimulationResult:
    """Return every strategy's replay of one simulated agent run, or of your ``prompts`` (the
    figures are in the module's docstring).

    ``strategies``: registry names (a comma-separated name is a pipeline), ``PromptStrategy``
    objects or ``messages -> messages`` callables; None: :func:`default_rows`, built from
    ``settings`` (default: the environment). ``peers=True`` adds the peers. ``progress``: None
    draws a bar on stderr (building the run, then replaying it) only when it is a terminal or
    the simulated run has :data:`~langchain_promptstrat.defaults.LONG_RUN_CALLS` tool calls or
    more, True/False force it, a callable ``hook(label, done, total)`` is called after each
    prompt replayed. ``run_options`` go to :func:`~langchain_promptstrat.testing.iter_agent_run`;
    ``prompts`` replace its run (then ``n_tool_calls`` and ``seed`` are not recorded). ``cache``
    (``openai``, ``anthropic``) adds that provider's figures
    (:mod:`~langchain_promptstrat.cache_rules`). ``tools`` are the tools bound to the model
    (None: :data:`AGENT_RUN_TOOLS` for the simulated run, none for ``prompts``).
    ``next_actions`` (one per prompt, None where unknown; None: each answer as the next prompt
    holds it) measure recall; a simulated run measures none (its next actions are scripted).

    Raises:
        ConfigError: an unknown cache rule or strategy, a figure out of range, or ``next_actions``
            not one per prompt.
    """
    if cache not in CACHE_RULES:
        raise ConfigError(f"unknown cache rule {cache!r}; known: {', '.join(CACHE_RULES)}")
    if (
        isinstance(cached_fraction, bool)
        or not isinstance(cached_fraction, (int, float))
        or not 0 <= cached_fraction <= 1
    ):
        raise ConfigError(
            f"cached_fraction must be a number between 0 and 1, got {cached_fraction!r}"
        )
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ConfigError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    if price_per_mtok is not None and (
        not isinstance(price_per_mtok, (int, float))
        or not math.isfinite(price_per_mtok)
        or price_per_mtok < 0
    ):
        raise ConfigError(f"price_per_mtok must be a non-negative number, got {price_per_mtok!r}")
    counter = as_token_counter(token_counter)
    if progress is None and prompts is None and n_tool_calls >= LONG_RUN_CALLS:
        progress = True  # minutes of work: say how far it got, terminal or not
    if prompts is None:
        replayed = _build_run(n_tool_calls, seed, run_options or {}, progress)
    else:
        replayed = [list(p) for p in prompts]
        if next_actions is not None and len(next_actions) != len(replayed):
            raise ConfigError(
                f"next_actions holds {len(next_actions)} messages for {len(replayed)} prompts; "
                "give one per prompt (None where unknown)"
            )
    bound = list(AGENT_RUN_TOOLS if tools is None and prompts is None else tools or [])
    schemas = _tool_schemas(bound, counter)
    if strategies is None:
        strategies = default_rows(settings=settings, max_tokens=max_tokens)
    elif isinstance(strategies, (str, PromptStrategy)) or callable(strategies):
        strategies = [strategies]

    notes: list[str] = []
    entries = [
        _resolve_entry(e, settings=settings, max_tokens=max_tokens, counter=counter, tools=bound)
        for e in strategies
    ]
    if peers:
        entries += _peers(counter, max_tokens, notes)
    seen: dict[str, int] = {}
    for i, (label, *rest) in enumerate(entries):
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            entries[i] = (f"{label}#{seen[label]}", *rest)  # type: ignore[assignment]

    index = TermIndex()
    targets = None
    if prompts is not None:  # what each call's next action used, found once for every strategy
        answers = answers_in_prompts(replayed) if next_actions is None else list(next_actions)
        targets = [
            None if a is None else CallTargets.of(p, a, index)
            for p, a in zip(replayed, answers, strict=False)
        ]
    hook, close = _progress_hook(progress, len(replayed) * len(entries))
    try:
        runs = [
            _replay(*entry, replayed, counter, hook, cache, schemas, targets, index)
            for entry in entries
        ]
    finally:
        close()
    exact = counter.exact if isinstance(counter, TokenCounter) else None
    if exact is False:
        notes.append(
            "token counts are approximate: the tiktoken encoding could not be loaded (reinstall "
            "langchain-promptstrat, which ships cl100k_base)"
        )
    return SimulationResult(
        runs=runs,
        n_tool_calls=n_tool_calls if prompts is None else None,
        seed=seed if prompts is None else None,
        model_calls=len(replayed),
        cached_fraction=float(cached_fraction),
        max_tokens=max_tokens,
        token_counter=repr(counter)
        if isinstance(counter, TokenCounter)
        else getattr(counter, "__name__", None) or repr(counter),
        exact_tokens=exact,
        price_per_mtok=None if price_per_mtok is None else float(price_per_mtok),
        notes=notes,
        cache_rule=cache,
        tool_schemas=[(len(bound), schemas.tokens if schemas is not None else 0)],
        recall_measured=targets is not None,
    )


def cache_reuse(prompts: Iterable[Sequence[BaseMessage]], token_counter: Any = None) -> list[float]:
    """Return, for each prompt, the share of its tokens that is a cached prefix of the previous
    prompt (0 for the first)."""
    sent = [list(p) for p in prompts]
    return _replay(
        "",
        "",
        list,
        {},
        sent,
        as_token_counter(token_counter),
        None,
        "prefix",
        None,
        None,
        TermIndex(),
    ).reuse


def answers_in_prompts(prompts: Sequence[Sequence[BaseMessage]]) -> list[BaseMessage | None]:
    """Return each prompt's answer as the next prompt records it: the assistant message right after
    it, else None (always for the last)."""
    found: list[BaseMessage | None] = []
    for prompt, following in zip(prompts, prompts[1:], strict=False):
        answer = following[len(prompt)] if len(following) > len(prompt) else None
        found.append(answer if isinstance(answer, AIMessage) else None)
    return [*found, None] if prompts else []
