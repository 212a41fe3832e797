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
    cl100k_base, which the package ships; injectable).

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

Next-action recall
    For replayed prompts (``prompts=``, transcripts), the share of the references the
    agent's real next message used, from earlier tool outputs, that each prompt sent still
    holds in original text: recall, old recall and outputs-only recall, with their
    reference counts. Defined precisely in :mod:`~langchain_promptstrat.simulate.recall`.
    ``none`` scores 1.0; a simulated run measures none (its next actions are scripted).

Mean prompt
    ``tokens sent / model calls``: what a strategy keeps of the history, on average.

Peers (``peers=True``), with the same counter and, where they take one, the same target ``max_tokens``
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
    * Observation masking as SWE-agent's ``LastNObservations`` does it, ``n=10`` (the
      setting of the paper "The Complexity Trap"), once with ``polling=1`` and once with
      ``polling=5``: every tool output but the last ``n`` (to ``n + polling``) has its
      content replaced by ``Old environment output: (L lines omitted)``; no token target
      (:func:`~langchain_promptstrat.simulate.peers.observation_masking`).

Our ladder strategies that aim at a token budget are built with the same ``max_tokens``
when they accept it (see :func:`build_strategy`).

The modules behind it: ``engine`` (building the strategies, the replay, :func:`simulate`),
``figures`` (canonical message, shared prefix, cache reuse, cost, degenerate prompts),
``recall`` (next-action recall), ``peers`` (``trim_messages``, ``ClearToolUsesEdit`` and
observation masking as set up above), ``results``
(:class:`StrategyRun`, :class:`SimulationResult`, JSON in and out) and ``output`` (the
table and the plot). The simulated agent's tool schemas live with its tools, in
:mod:`langchain_promptstrat.testing.tools`. Import from here; this module only re-exports.
"""

from __future__ import annotations

from langchain_promptstrat.defaults import DEFAULT_CACHED_FRACTION, DEFAULT_MAX_TOKENS, DEFAULT_TOOL_CALLS
from langchain_promptstrat.simulate.engine import (
    DEFAULT_LIST_ROW,
    ProgressHook as ProgressHook,
    StrategyEntry as StrategyEntry,
    answers_in_prompts,
    build_strategy,
    default_rows,
    default_strategy_names,
    simulate,
    with_cache_breakpoints,
)
from langchain_promptstrat.simulate.figures import (
    cache_reuse,
    canonical_message,
    estimated_cost,
    is_degenerate,
    shared_prefix_length,
)
from langchain_promptstrat.simulate.output import format_table, plot
from langchain_promptstrat.simulate.peers import PEER_CLEAR_TOOL_USES, PEER_OBSERVATION_MASKING, PEER_TRIM_MESSAGES, observation_masking
from langchain_promptstrat.simulate.recall import OLD_AFTER, CallTargets, RecallCounts, code_references, recall_counts, terms
from langchain_promptstrat.simulate.results import SimulationResult, StrategyRun, result_from_json, result_to_json
from langchain_promptstrat.testing.tools import AGENT_RUN_TOOLS

__all__ = [
    "AGENT_RUN_TOOLS",
    "DEFAULT_CACHED_FRACTION",
    "DEFAULT_LIST_ROW",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TOOL_CALLS",
    "OLD_AFTER",
    "PEER_CLEAR_TOOL_USES",
    "PEER_OBSERVATION_MASKING",
    "PEER_TRIM_MESSAGES",
    "CallTargets",
    "RecallCounts",
    "SimulationResult",
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
