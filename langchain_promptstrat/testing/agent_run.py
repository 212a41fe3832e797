"""Builders of long, realistic agent conversations, without running a model or an agent.

:func:`iter_agent_run` yields the prompt of every model call of a synthetic agent run (the
point where a prompt strategy runs) and :func:`build_agent_run` returns the last one: a
system message and a task, then steps of an AIMessage with parallel tool calls (drawn from
:data:`~langchain_promptstrat.testing.tools.SIMULATED_TOOLS`) and their ToolMessages, user
turns now and then, optionally recorded the way an OpenAI or Anthropic integration does.
5,000 tool calls take well under a second.

Must stay deterministic (the same arguments give the same messages, ids included, in
every process) and must not call a model, a tool or the network. The provider shapes are
written here only as test data; reading how a tool call is recorded is the job of
:mod:`langchain_promptstrat.messages`, not of this module.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.testing.text_pools import heavy_tailed, log_uniform, sized_text
from langchain_promptstrat.testing.tools import SIMULATED_TOOL_WEIGHTS, SIMULATED_TOOLS


Mirror = Literal["openai", "anthropic", "mixed"]

_AI_TEXTS = (
    "Let me look at that.",
    "I'll check the relevant files first.",
    "Checking the logs for the failing request.",
    "Searching for prior reports of this error.",
    "That narrows it down; reading the handler next.",
    "Running the tests to confirm.",
    "I need more context on the schema.",
    "Comparing the two versions now.",
    "The previous output was truncated, fetching the rest.",
    "Let me verify the fix before moving on.",
    "Looking for other call sites.",
    "Re-reading the config to be sure.",
)

_USER_TURNS = (
    "Also check whether the migration handles NULL values in the legacy rows.",
    "Quick update: the staging deploy failed again, please look at that first.",
    "Can you summarize what you found so far before continuing?",
    "Please don't touch the public API; keep the changes internal.",
    "The customer says the timeout happens only with large batches, focus there.",
    "Skip the docs for now and concentrate on the failing tests.",
    "Good progress. Please also compare with how version 2.3 behaved.",
    "One more thing: make sure the fix works on Python 3.10 too.",
)


def _check_range(name: str, value: tuple[int, int]) -> tuple[int, int]:
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a (min, max) pair, got {value!r}") from None
    if lo < 0 or hi < lo:
        raise ConfigError(f"{name} must satisfy 0 <= min <= max, got {value!r}")
    return int(lo), int(hi)


def _tool_call_dict(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _ai_message(
    text: str, calls: list[tuple[str, str, dict[str, Any]]], style: str | None, msg_id: str
) -> AIMessage:
    """Return the AIMessage carrying ``calls`` in the shape provider ``style`` produces."""
    tool_calls = [_tool_call_dict(cid, name, args) for cid, name, args in calls]
    if style == "openai":
        raw = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, separators=(",", ":"))},
            }
            for cid, name, args in calls
        ]
        return AIMessage(
            content=text,
            tool_calls=tool_calls,
            additional_kwargs={"tool_calls": raw},
            response_metadata={"model_provider": "openai"},
            id=msg_id,
        )
    if style == "anthropic":
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        blocks.extend(
            {"type": "tool_use", "id": cid, "name": name, "input": copy.deepcopy(args)}
            for cid, name, args in calls
        )
        return AIMessage(
            content=blocks,  # type: ignore[arg-type]
            tool_calls=tool_calls,
            response_metadata={"model_provider": "anthropic"},
            id=msg_id,
        )
    return AIMessage(content=text, tool_calls=tool_calls, id=msg_id)


_DEFAULT_TASK = (
    "Users report intermittent 503 errors from the ingestion API since the last release. "
    "Find the root cause in the repository, fix it, make sure the test suite passes, and "
    "write a short summary of what changed and why."
)


def iter_agent_run(
    n_tool_calls: int = 400,
    *,
    seed: int = 0,
    parallel_max: int = 3,
    repeat_rate: float = 0.08,
    user_turn_every: tuple[int, int] | None = (60, 120),
    output_bytes: tuple[int, int] = (200, 20_000),
    arg_bytes: tuple[int, int] = (20, 600),
    system: str | None = "You are a careful research agent.",
    task: str = _DEFAULT_TASK,
    mirror: Mirror | None = None,
) -> Iterator[list[BaseMessage]]:
    """Yield the prompt of every model call of a synthetic agent run, as a growing list.

    The first yield is ``[SystemMessage, HumanMessage(task)]`` (no SystemMessage if
    ``system`` is None); each further yield is the previous list plus one step -- an
    AIMessage with 1..``parallel_max`` tool calls and one ToolMessage per call, in call
    order -- plus, when a user turn is due, a HumanMessage. So each yielded list is
    exactly what the model sees at its next call, the point where a prompt strategy
    runs; the last yield ends with the ``n_tool_calls``-th ToolMessage. Every yield is a
    new list; the message objects are shared between yields and must not be mutated.
    New messages of a step are ``snapshot[len(previous):]``.

    See :func:`build_agent_run` for the parameters.
    """
    if n_tool_calls < 0:
        raise ConfigError(f"n_tool_calls must be >= 0, got {n_tool_calls}")
    if parallel_max < 1:
        raise ConfigError(f"parallel_max must be >= 1, got {parallel_max}")
    if not 0.0 <= repeat_rate <= 1.0:
        raise ConfigError(f"repeat_rate must be in [0, 1], got {repeat_rate}")
    if mirror not in (None, "openai", "anthropic", "mixed"):
        raise ConfigError(
            f"mirror must be None, 'openai', 'anthropic' or 'mixed', got {mirror!r}"
        )
    out_lo, out_hi = _check_range("output_bytes", output_bytes)
    arg_lo, arg_hi = _check_range("arg_bytes", arg_bytes)
    arg_lo = max(arg_lo, 1)
    arg_hi = max(arg_hi, arg_lo)
    user_range = None if user_turn_every is None else _check_range("user_turn_every", user_turn_every)
    if user_range is not None and user_range[0] < 1:
        raise ConfigError(f"user_turn_every must be >= 1, got {user_turn_every!r}")

    # Independent streams, so e.g. changing mirror or output_bytes leaves the tool
    # calls (names, args, ids) untouched.
    def stream(purpose: str) -> random.Random:
        return random.Random(f"promptstrat:agent_run:{seed}:{purpose}")

    rng_steps = stream("steps")
    rng_args = stream("args")
    rng_out = stream("outputs")
    rng_user = stream("user")
    rng_mirror = stream("mirror")

    parallel_choices = list(range(1, parallel_max + 1))
    parallel_weights = [1.0 / k for k in parallel_choices]

    messages: list[BaseMessage] = []

    def next_id() -> str:
        return f"msg_{len(messages):05d}"

    if system is not None:
        messages.append(SystemMessage(content=system, id=next_id()))
    messages.append(HumanMessage(content=task, id=next_id()))
    yield list(messages)

    history: list[tuple[str, dict[str, Any], str]] = []  # (name, args, output)
    next_user_at = (
        rng_user.randint(*user_range) if user_range is not None else n_tool_calls + 1
    )
    made = 0
    while made < n_tool_calls:
        k = min(rng_steps.choices(parallel_choices, parallel_weights)[0], n_tool_calls - made)
        text = rng_steps.choice(_AI_TEXTS) if rng_steps.random() < 0.35 else ""
        calls: list[tuple[str, str, dict[str, Any]]] = []
        outputs: list[str] = []
        for _ in range(k):
            made += 1
            call_id = f"call_{made:04d}"
            if history and rng_steps.random() < repeat_rate:
                name, args, output = history[rng_steps.randrange(len(history))]
                args = copy.deepcopy(args)
            else:
                spec = rng_steps.choices(SIMULATED_TOOLS, SIMULATED_TOOL_WEIGHTS)[0]
                name, _, style, make_args, header = spec
                args = make_args(rng_args, log_uniform(rng_args, arg_lo, arg_hi))
                size = heavy_tailed(rng_out, out_lo, out_hi)
                output = sized_text(header(args), style, rng_out, size)
            calls.append((call_id, name, args))
            outputs.append(output)
        # repeats copy earlier steps only, never a sibling in the same step
        history.extend(
            (name, args, output) for (_, name, args), output in zip(calls, outputs)
        )

        if mirror == "mixed":
            style_now: str | None = rng_mirror.choice((None, "openai", "anthropic"))
        else:
            style_now = mirror
        messages.append(_ai_message(text, calls, style_now, next_id()))
        for (call_id, name, _), output in zip(calls, outputs):
            messages.append(
                ToolMessage(content=output, tool_call_id=call_id, name=name, id=next_id())
            )
        if made >= next_user_at and made < n_tool_calls:
            messages.append(HumanMessage(content=rng_user.choice(_USER_TURNS), id=next_id()))
            next_user_at = made + rng_user.randint(*user_range)  # type: ignore[misc]
        yield list(messages)


def build_agent_run(
    n_tool_calls: int = 400,
    *,
    seed: int = 0,
    parallel_max: int = 3,
    repeat_rate: float = 0.08,
    user_turn_every: tuple[int, int] | None = (60, 120),
    output_bytes: tuple[int, int] = (200, 20_000),
    arg_bytes: tuple[int, int] = (20, 600),
    system: str | None = "You are a careful research agent.",
    task: str = _DEFAULT_TASK,
    mirror: Mirror | None = None,
) -> list[BaseMessage]:
    """Return the message list of a synthetic long agent run, ending after its last ToolMessage.

    A realistic stand-in for a coding/research agent's history, to measure and test
    prompt strategies without running a model:

    * ``[SystemMessage(system)?, HumanMessage(task)]``, then steps of an AIMessage
      (about a third carry a short text) with 1..``parallel_max`` parallel tool calls
      (fewer calls more likely; ids ``call_0001``, ``call_0002``... in order) followed
      by one ToolMessage per call, in call order, with ``tool_call_id`` and ``name``.
    * Tools: read_file, run_shell, web_search, grep, http_get, edit_file, query_db,
      list_dir. Each call's main string argument (command, query, sql, url, code...)
      has a log-uniform length in ``arg_bytes``; args also hold ints, bools, lists and
      nested dicts.
    * Tool outputs are realistic ASCII text (log lines, JSON, file listings, code, grep
      hits, search results, CSV) whose length -- characters == bytes -- follows a
      truncated Pareto over ``output_bytes``: median around 2.7x the minimum, a few
      percent near the maximum.
    * About ``repeat_rate`` of the calls repeat the name and exact args of a call from an
      earlier step, with a new id, and get the identical output (re-reading a file).
    * After every ``user_turn_every`` (min, max) tool calls, drawn from the seed, a new
      user HumanMessage arrives (never after the last step); None disables them.
    * ``mirror`` also writes the calls the way a provider integration does: ``"openai"``
      puts OpenAI ``tool_calls`` (JSON string arguments) in ``additional_kwargs``;
      ``"anthropic"`` makes ``content`` a list of an optional text block plus one
      ``tool_use`` block per call; ``"mixed"`` picks one of None/openai/anthropic per
      step. ``tool_calls`` is always set. Mirrored messages carry
      ``response_metadata["model_provider"]``.

    Exactly ``n_tool_calls`` ToolMessages. Fully deterministic from the arguments,
    message ids included (``msg_00000``... by position); the tool calls do not depend on
    ``mirror``, ``output_bytes`` or ``user_turn_every``. 5,000 tool calls take well under
    a second.
    """
    last: list[BaseMessage] = []
    for last in iter_agent_run(
        n_tool_calls,
        seed=seed,
        parallel_max=parallel_max,
        repeat_rate=repeat_rate,
        user_turn_every=user_turn_every,
        output_bytes=output_bytes,
        arg_bytes=arg_bytes,
        system=system,
        task=task,
        mirror=mirror,
    ):
        pass
    return last
