"""The figures of a replay, prompt by prompt: what a provider caches, what it costs, what is degenerate.

:func:`canonical_message` (a message as a provider receives it), the shared prefix of two
consecutive prompts, :func:`cache_reuse`, :func:`estimated_cost`, :func:`is_degenerate`,
and the incremental token count of a prompt and its cached prefix. The definitions are in
:mod:`langchain_promptstrat.simulate`.

Pure functions of message lists and counts: must not build or run strategies (that is
``engine``), nor hold a run's results (``results``) or print them (``output``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langchain_promptstrat.defaults import DEFAULT_CACHED_FRACTION
from langchain_promptstrat.messages import is_real_user_message, task_index
from langchain_promptstrat.tokens import TokenCounter, as_token_counter

__all__ = ["cache_reuse", "canonical_message", "estimated_cost", "is_degenerate", "shared_prefix_length"]


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

    The first prompt reuses 0; an empty prompt reuses 0. See :mod:`langchain_promptstrat.simulate`.
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
