"""What a provider's prompt cache would serve and bill, call by call, under its own rules.

The simulation's ``prefix`` figure is an upper bound; a rule sees the prompts sent, in order,
with each message's token count, and returns per prompt the tokens **read** from the cache and
**written** to it. Messages are compared by a hash chain over their canonical form, after the
bound tools' schemas (:class:`ToolSchemas`), which both providers cache first.

``openai``: the longest prefix of whole messages shared with the previous prompt, rounded down
to ``1024 + 128 k`` (0 below 1,024); nothing billed for writing. ``anthropic``: the messages
carrying ``cache_control`` (else, as ``AnthropicPromptCachingMiddleware`` asks, the last tool,
the system message and the last message), the last 4 honoured; each looks for an entry at its
position and up to 20 blocks before it (a block per content block, tool call and tool), the
longest hit is read; an earlier breakpoint over at least 1,024 tokens made an entry; the tokens
from the read position to the last breakpoint are written, billed at 1.25.

By hand: a 2,000-token system message, then 10 messages of 100 tokens. Under ``openai`` the
second prompt (two messages more) reads ``1024 + 128 * 15 = 2944``. Under ``anthropic`` the
first writes 3,000 and reads 0; the second reads 3,000 and writes 200.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from langchain_promptstrat.defaults import (
    CACHE_RULES as CACHE_RULES,
)  # simulate imports it from here
from langchain_promptstrat.messages.history_memo import caches_enabled

OPENAI_MIN_TOKENS = 1024
OPENAI_INCREMENT = 128
ANTHROPIC_MIN_TOKENS = 1024
ANTHROPIC_LOOKBACK_BLOCKS = 20
ANTHROPIC_MAX_BREAKPOINTS = 4
ANTHROPIC_WRITE_MULTIPLIER = 1.25


def openai_cached_tokens(shared_tokens: int) -> int:
    """Return what OpenAI serves from its cache for a shared prefix of ``shared_tokens``: 0 under
    1,024, else 1024 + 128 k."""
    if shared_tokens < OPENAI_MIN_TOKENS:
        return 0
    return OPENAI_MIN_TOKENS + OPENAI_INCREMENT * (
        (shared_tokens - OPENAI_MIN_TOKENS) // OPENAI_INCREMENT
    )


def message_blocks(message: BaseMessage) -> int:
    """Return how many Anthropic content blocks ``message`` becomes: one per content block (a string
    is one), plus one per tool call."""
    content = message.content
    if isinstance(content, list):
        blocks = sum(
            1 for b in content if not (isinstance(b, dict) and b.get("type") == "tool_use")
        )
    else:
        blocks = 1 if content or not isinstance(message, AIMessage) else 0
    if isinstance(message, AIMessage):
        blocks += len(message.tool_calls)
    return max(blocks, 1)


def has_cache_control(message: BaseMessage) -> bool:
    """Return whether a content block of ``message`` carries an Anthropic ``cache_control``
    breakpoint."""
    content = message.content
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("cache_control") for b in content
    )


@dataclass(frozen=True)
class ToolSchemas:
    """The bound tools' schemas every request of a replay carries before its messages: their tokens,
    one block per tool, their JSON as ``key``."""

    tokens: int
    blocks: int
    key: str = ""


@dataclass
class CacheRule:
    """A provider's cache over one replay: feed it each prompt sent, in order, with its per-message
    token counts."""

    canonical: Callable[[BaseMessage], str]
    tools: ToolSchemas | None = None
    """The tool schemas every prompt carries before its messages (None: no tools)."""
    _keys: dict[int, tuple[BaseMessage, str]] = field(default_factory=dict, init=False)

    def hashes(self, prompt: Sequence[BaseMessage]) -> list[int]:
        """Return the prefix hashes of ``prompt``, reusing the canonical key of message objects seen
        in the previous prompt."""
        keys: dict[int, tuple[BaseMessage, str]] = {}
        out: list[int] = []
        h = self.start
        seen = self._keys if caches_enabled() else {}
        for message in prompt:
            known = seen.get(id(message))
            key = known[1] if known is not None and known[0] is message else self.canonical(message)
            keys[id(message)] = (message, key)
            h = hash((h, key))
            out.append(h)
        self._keys = keys if caches_enabled() else {}
        return out

    @property
    def start(self) -> int:
        """Return the hash the chain starts from: the tool schemas'."""
        return hash(("tools", self.tools.key)) if self.tools else 0

    def observe(
        self, prompt: Sequence[BaseMessage], counts: Sequence[int]
    ) -> tuple[int, int]:  # pragma: no cover - abstract
        """Return (tokens read from the cache, tokens written to it) for ``prompt``."""
        raise NotImplementedError


@dataclass
class OpenAICache(CacheRule):
    """OpenAI's automatic prefix cache: the previous prompt's shared prefix, from 1,024 tokens in
    128-token steps."""

    _previous: list[int] = field(default_factory=list, init=False)
    _seen: bool = field(default=False, init=False)

    def observe(self, prompt: Sequence[BaseMessage], counts: Sequence[int]) -> tuple[int, int]:
        """Return (read, 0): the tool schemas and the shared whole-message prefix with the previous
        prompt, rounded as OpenAI caches it."""
        hashes = self.hashes(prompt)
        shared = self.tools.tokens if self.tools is not None and self._seen else 0
        for i, (now, before) in enumerate(zip(hashes, self._previous, strict=False)):
            if now != before:
                break
            shared += counts[i]
        self._previous, self._seen = hashes, True
        return openai_cached_tokens(shared), 0


@dataclass
class AnthropicCache(CacheRule):
    """Anthropic's breakpoint cache: at most 4 breakpoints, each looking back 20 blocks for an entry
    an earlier prompt wrote."""

    min_tokens: int = ANTHROPIC_MIN_TOKENS
    lookback: int = ANTHROPIC_LOOKBACK_BLOCKS
    _entries: set[int] = field(default_factory=set, init=False)

    def breakpoints(self, prompt: Sequence[BaseMessage]) -> list[int]:
        """Return the indices of the messages holding a breakpoint: the marked ones, else (last tool
        = -1,) system and tail."""
        marked = [i for i, m in enumerate(prompt) if has_cache_control(m)]
        if not marked and prompt:
            marked = [-1] if self.tools is not None else []
            marked += [0] if isinstance(prompt[0], SystemMessage) and len(prompt) > 1 else []
            marked.append(len(prompt) - 1)
        return marked[-ANTHROPIC_MAX_BREAKPOINTS:]

    def observe(self, prompt: Sequence[BaseMessage], counts: Sequence[int]) -> tuple[int, int]:
        """Return (read, written) for ``prompt`` under the breakpoint rules, then record its
        entries."""
        if not prompt:
            return 0, 0
        marks = [
            b + 1 for b in self.breakpoints(prompt)
        ]  # positions: 0 holds the tool schemas, message i is i + 1
        hashes = [self.start, *self.hashes(prompt)]
        tools = self.tools or ToolSchemas(tokens=0, blocks=0)
        ends = list(
            accumulate(map(message_blocks, prompt), initial=tools.blocks)
        )  # block index at each position's end
        cumulative = list(accumulate(counts, initial=tools.tokens))  # tokens through each position
        read = 0
        for b in marks:
            i = b
            while i >= 0 and ends[i] >= ends[b] - self.lookback:
                if hashes[i] in self._entries:
                    read = max(read, cumulative[i])
                    break
                i -= 1
        last = cumulative[marks[-1]]
        written = last - read if last >= self.min_tokens and last > read else 0
        for b in marks:
            if cumulative[b] >= self.min_tokens:
                self._entries.add(hashes[b])
        return read, written


def make_cache_rule(
    name: str, canonical: Callable[[BaseMessage], str], **options: Any
) -> CacheRule | None:
    """Return a fresh rule named ``name`` with ``options`` as its fields (None for ``prefix``, which
    the simulation computes itself)."""
    if name not in CACHE_RULES:
        raise ValueError(f"unknown cache rule {name!r}; known: {', '.join(CACHE_RULES)}")
    rule = {"openai": OpenAICache, "anthropic": AnthropicCache}.get(name)
    return rule(canonical, **options) if rule is not None else None
