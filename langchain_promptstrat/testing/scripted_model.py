"""Offline test doubles: a scripted tool-calling chat model, a sized tool, and builders
of long, realistic agent conversations.

Everything here is deterministic: the same arguments and seed give the same messages,
ids included, in every process (no ``hash()``, no uuids, no clock). Nothing needs a
network or an API key, so tests, benchmarks, ``promptstrat simulate`` and notebooks
can replay agent runs of hundreds or thousands of tool calls in seconds.

Two ways to get a long run:

* :func:`build_agent_run` / :func:`iter_agent_run` build the message list directly,
  fast (5,000 tool calls well under a second), without running any agent.
* :meth:`ScriptedChatModel.long_run` plus :func:`make_sized_tool` drive a real
  ``langchain.agents.create_agent`` or ``langgraph.prebuilt.create_react_agent``
  graph end to end, so middleware and hooks run exactly as in production.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from langchain_promptstrat.errors import ConfigError

__all__ = [
    "DEFAULT_FINAL_ANSWER",
    "Mirror",
    "ScriptStep",
    "ScriptedChatModel",
    "build_agent_run",
    "iter_agent_run",
    "make_sized_tool",
]

DEFAULT_FINAL_ANSWER = "done"
"""What :class:`ScriptedChatModel` answers once its script is exhausted."""

Mirror = Literal["openai", "anthropic", "mixed"]
ScriptStep = Any  # AIMessage | str | dict[str, Any] | BaseException, see ScriptedChatModel

_PARETO_ALPHA = 0.7
"""Tail index of the truncated Pareto used for output sizes: median ~2.7x the minimum,
mean ~7x (for 200..20,000 bytes), a few percent of outputs within 2x of the maximum."""


# --------------------------------------------------------------------------------------
# Scripted chat model
# --------------------------------------------------------------------------------------


@dataclass
class _ScriptState:
    """Mutable replay state, shared by every binding and copy of one model."""

    cursor: int = 0
    calls: list[list[BaseMessage]] = field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = field(default_factory=list)


def _call_id(n: int) -> str:
    return f"call_{n:04d}"


def _normalize_step(step: Any, counter: list[int]) -> AIMessage | BaseException:
    """Return the AIMessage (or exception) one script step stands for.

    Tool-call ids that are missing are numbered from ``counter`` so the ids depend only
    on the position of the call in the script.
    """
    if isinstance(step, BaseException):
        return step
    if isinstance(step, str):
        return AIMessage(content=step)
    if isinstance(step, AIMessage):
        if not step.tool_calls or all(tc.get("id") for tc in step.tool_calls):
            counter[0] += len(step.tool_calls)
            return step
        calls = []
        for tc in step.tool_calls:
            counter[0] += 1
            calls.append({**tc, "id": tc.get("id") or _call_id(counter[0])})
        return step.model_copy(update={"tool_calls": calls})
    if isinstance(step, dict):
        unknown = set(step) - {"tool_calls", "content", "id"}
        if unknown:
            raise ConfigError(
                f"script step has unknown keys {sorted(unknown)}; "
                "expected 'tool_calls', 'content', 'id'"
            )
        calls = []
        for spec in step.get("tool_calls") or []:
            if not isinstance(spec, dict) or "name" not in spec:
                raise ConfigError(f"tool call spec needs a 'name': {spec!r}")
            extra = set(spec) - {"name", "args", "id"}
            if extra:
                raise ConfigError(f"tool call spec has unknown keys {sorted(extra)}")
            counter[0] += 1
            calls.append(
                {
                    "name": spec["name"],
                    "args": dict(spec.get("args") or {}),
                    "id": spec.get("id") or _call_id(counter[0]),
                    "type": "tool_call",
                }
            )
        return AIMessage(content=step.get("content", ""), tool_calls=calls, id=step.get("id"))
    raise ConfigError(
        "a script step must be an AIMessage, a str, a {'tool_calls': [...]} dict or an "
        f"exception, got {type(step).__name__}"
    )


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays a fixed script of answers and records every prompt.

    Each model call returns the next step of ``script``:

    * an ``AIMessage`` -- returned as is (a copy), with ``id`` and missing tool-call ids
      filled in deterministically;
    * a ``str`` -- a final text answer;
    * a dict ``{"tool_calls": [{"name": ..., "args": {...}, "id"?: ...}], "content"?: str}``
      -- an answer with tool calls; ids are generated as ``call_0001``, ``call_0002``...
      numbered by the position of the call in the script;
    * an exception instance -- raised by that call (to test retries and error paths).

    Once the script is exhausted every further call answers ``final_answer`` (default
    ``"done"``), so an agent loop always terminates. Answer ids are ``ai_0001``,
    ``ai_0002``... by call number.

    ``calls`` holds a copy of each message list the model was sent (a new list holding
    the same message objects, in order) and ``call_kwargs`` the keyword arguments of
    that call (``tools``, ``tool_choice``... from :meth:`bind_tools`). Both, and the script
    cursor, live in one private state object shared by ``bind_tools``/``bind`` bindings
    and ``model_copy`` copies, so whatever runnable an agent framework wraps around the
    model, tests read the record from the original instance. Use :meth:`reset` to
    replay from the start. Not thread-safe; the cursor advances once per call in call
    order.

    ``with_structured_output`` works through the default implementation: script a tool
    call named after the schema (e.g. ``{"tool_calls": [{"name": "Answer", "args":
    {...}}]}``).
    """

    script: list[Any] = Field(default_factory=list)
    """The steps to replay, see the class docstring."""
    final_answer: str = DEFAULT_FINAL_ANSWER
    """Text answered once the script is exhausted."""
    cache: Any = False
    """Never cache: a cache hit would skip the script cursor."""

    _steps: list[AIMessage | BaseException] = PrivateAttr(default_factory=list)
    _state: _ScriptState = PrivateAttr(default_factory=_ScriptState)

    def __init__(self, script: Sequence[ScriptStep] | None = None, /, **kwargs: Any) -> None:
        """Build a model replaying ``script`` (positional or keyword)."""
        if script is not None:
            if "script" in kwargs:
                raise ConfigError("script given both positionally and as a keyword")
            kwargs["script"] = list(script)
        super().__init__(**kwargs)
        counter = [0]
        self._steps = [_normalize_step(step, counter) for step in self.script]

    # ---- record -----------------------------------------------------------------------

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """Return the message lists the model was sent, one per call, in order."""
        return self._state.calls

    @property
    def call_kwargs(self) -> list[dict[str, Any]]:
        """Return the keyword arguments (tools, tool_choice, ...) of each call, aligned with ``calls``."""
        return self._state.call_kwargs

    @property
    def cursor(self) -> int:
        """Return how many calls the model has answered so far."""
        return self._state.cursor

    @property
    def exhausted(self) -> bool:
        """Return whether the next call falls past the script (answers ``final_answer``)."""
        return self._state.cursor >= len(self._steps)

    def reset(self) -> None:
        """Rewind the script to its first step and forget the recorded calls."""
        self._state.cursor = 0
        self._state.calls.clear()
        self._state.call_kwargs.clear()

    # ---- BaseChatModel ----------------------------------------------------------------

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"n_steps": len(self.script), "final_answer": self.final_answer}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Return a binding of this same model with ``tools`` recorded in OpenAI format.

        The tools are converted with ``convert_to_openai_tool`` because
        ``create_react_agent`` inspects ``binding.kwargs["tools"]`` for
        ``{"type": "function", ...}`` dicts when handed a pre-bound model. The script
        does not look at the tools; they only end up in ``call_kwargs``.
        """
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _next_message(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        state = self._state
        state.calls.append(list(messages))
        state.call_kwargs.append(dict(kwargs))
        index = state.cursor
        state.cursor += 1
        step = self._steps[index] if index < len(self._steps) else None
        if isinstance(step, BaseException):
            raise step
        if step is None:
            message = AIMessage(content=self.final_answer)
        else:
            # copy: agent frameworks set .name and the like on what we return
            message = step.model_copy(deep=True)
        if message.id is None:
            message.id = f"ai_{index + 1:04d}"
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._next_message(messages, kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # no executor hop: keeps the cursor order identical to the await order
        message = self._next_message(messages, kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    # ---- long runs --------------------------------------------------------------------

    @classmethod
    def long_run(
        cls,
        n_tool_calls: int,
        *,
        tool_name: str | Sequence[str] = "fetch",
        parallel: int = 1,
        seed: int = 0,
        repeat_rate: float = 0.08,
        final_answer: str = DEFAULT_FINAL_ANSWER,
    ) -> ScriptedChatModel:
        """Return a model scripted to make ``n_tool_calls`` tool calls, then answer ``final_answer``.

        Calls are grouped ``parallel`` per model answer (the last answer may carry fewer),
        so the run takes ``ceil(n_tool_calls / parallel) + 1`` model calls. Each call has
        args ``{"query": str, "page": int}`` -- the signature of :func:`make_sized_tool`
        -- varied from ``seed``; about ``repeat_rate`` of the calls repeat an earlier
        call's name and args exactly (with a new id). With several ``tool_name`` values
        each call picks one from the seed.

        For langgraph versions older than 1.x, whose default recursion limit is 25,
        pass ``config={"recursion_limit": 2 * model_calls + 5}``.
        """
        if n_tool_calls < 0:
            raise ConfigError(f"n_tool_calls must be >= 0, got {n_tool_calls}")
        if parallel < 1:
            raise ConfigError(f"parallel must be >= 1, got {parallel}")
        if not 0.0 <= repeat_rate <= 1.0:
            raise ConfigError(f"repeat_rate must be in [0, 1], got {repeat_rate}")
        names = [tool_name] if isinstance(tool_name, str) else list(tool_name)
        if not names:
            raise ConfigError("tool_name must name at least one tool")
        rng = random.Random(f"promptstrat:long_run:{seed}")
        words = _WORDS
        history: list[tuple[str, dict[str, Any]]] = []
        script: list[Any] = []
        made = 0
        while made < n_tool_calls:
            k = min(parallel, n_tool_calls - made)
            step_calls: list[dict[str, Any]] = []
            for _ in range(k):
                if history and rng.random() < repeat_rate:
                    name, args = rng.choice(history)
                    args = copy.deepcopy(args)
                else:
                    name = rng.choice(names)
                    n_words = rng.randint(2, 12)
                    query = " ".join(rng.choice(words) for _ in range(n_words))
                    args = {"query": query, "page": rng.randint(0, 9)}
                step_calls.append({"name": name, "args": args})
            history.extend((c["name"], c["args"]) for c in step_calls)
            script.append({"tool_calls": step_calls})
            made += k
        return cls(script, final_answer=final_answer)


# --------------------------------------------------------------------------------------
# Text pools
# --------------------------------------------------------------------------------------

_WORDS = (
    "cache token prompt agent tool call output retry timeout index schema query vector "
    "embedding batch stream chunk parser config session worker queue latency throughput "
    "request response header payload migration table column null constraint trigger "
    "deploy build test fixture coverage lint format module package import export error "
    "warning exception trace stack frame thread process memory buffer socket handshake "
    "cluster node replica shard partition offset commit rollback snapshot checkpoint "
    "graph state reducer message history window summary budget limit quota rate user "
    "admin role permission policy audit event metric log span sampler exporter gateway "
    "router handler middleware adapter client server proxy endpoint route version "
    "release branch merge conflict diff patch hunk file path directory symlink mount "
    "volume container image registry manifest digest layer kernel driver device"
).split()

_DIRS = (
    "src core utils api services models handlers internal pkg lib app tests fixtures "
    "integration unit adapters storage db migrations config scripts tools docs"
).split()

_EXTS = (".py", ".py", ".py", ".ts", ".go", ".md", ".yaml", ".json", ".toml", ".sql")

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

_LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR")
_METHODS = ("GET", "GET", "POST", "PUT", "DELETE")
_STATUSES = (200, 200, 200, 201, 204, 304, 400, 404, 409, 500, 503)

_CODE_TEMPLATES = (
    "def {a}_{b}(self, {c}: int, {d}: str | None = None) -> dict[str, Any]:",
    '    """Return the {a} {b} for the given {c}."""',
    "    if {c} is None:",
    "        raise ValueError(f\"missing {c}: {{{d}!r}}\")",
    "    result = self._{a}.get({c}, default={d})",
    "    for {b} in sorted(self.{c}_{d}, key=lambda x: x.{a}):",
    "        total += {b}.{c} * {n}",
    "    return {{\"{a}\": {a}, \"{b}\": {b}, \"count\": {n}}}",
    "class {A}{B}({C}Base):",
    "    {a}_{b}: list[{C}] = field(default_factory=list)",
    "import {a}.{b} as {c}",
    "from .{a} import {B}{C}, {a}_{d}",
    "        logger.debug(\"{a} {b} took %.2fms\", elapsed * {n})",
    "    # TODO({a}): handle the {b} {c} case before {d}",
    "    assert {a}_{b} >= {n}, \"{c} {d} out of range\"",
    "",
)


def _pool_lines(style: str, rng: random.Random, n: int) -> list[str]:
    w = _WORDS
    lines: list[str] = []
    for i in range(n):
        a, b, c, d = rng.choice(w), rng.choice(w), rng.choice(w), rng.choice(w)
        num = rng.randint(1, 99999)
        ts = (
            f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
            f".{rng.randint(0, 999):03d}Z"
        )
        if style == "log":
            lines.append(
                f"{ts} {rng.choice(_LEVELS):<5} [{a}-worker-{rng.randint(0, 15)}] "
                f"request_id={num:08x} {rng.choice(_METHODS)} /api/v1/{b}/{num} "
                f"{rng.choice(_STATUSES)} {rng.randint(1, 2500)}ms {c}={d}"
            )
        elif style == "json":
            tags = json.dumps([rng.choice(w) for _ in range(rng.randint(0, 3))])
            lines.append(
                f'  {{"id": {num}, "name": "{a}_{b}", "status": "{c}", "tags": {tags}, '
                f'"score": {rng.random():.4f}, "updated_at": "{ts}"}},'
            )
        elif style == "listing":
            depth = rng.randint(1, 4)
            path = "/".join(rng.choice(_DIRS) for _ in range(depth))
            lines.append(
                f"-rw-r--r--  1 agent staff {rng.randint(0, 250000):>8} "
                f"May {rng.randint(1, 28):>2} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} "
                f"{path}/{a}_{b}{rng.choice(_EXTS)}"
            )
        elif style == "code":
            tpl = rng.choice(_CODE_TEMPLATES)
            lines.append(
                tpl.format(
                    a=a, b=b, c=c, d=d, n=num % 1000,
                    A=a.capitalize(), B=b.capitalize(), C=c.capitalize(),
                )
            )
        elif style == "grep":
            depth = rng.randint(1, 3)
            path = "/".join(rng.choice(_DIRS) for _ in range(depth))
            tpl = rng.choice(_CODE_TEMPLATES) or "    pass"
            code = tpl.format(
                a=a, b=b, c=c, d=d, n=num % 1000,
                A=a.capitalize(), B=b.capitalize(), C=c.capitalize(),
            )
            lines.append(f"{path}/{a}_{b}.py:{rng.randint(1, 2400)}:{code}")
        elif style == "search":
            k = i % 3
            if k == 0:
                lines.append(f"{i // 3 + 1}. {a.capitalize()} {b} {c}: how to fix {d} errors")
            elif k == 1:
                lines.append(f"   https://{a}.example.org/{b}/{c}-{d}-{num}")
            else:
                lines.append(
                    "   " + " ".join(rng.choice(w) for _ in range(rng.randint(8, 20))) + "..."
                )
        elif style == "csv":
            lines.append(
                f"{num},{a}_{b},{c},{rng.randint(-500, 5000)},{rng.random():.3f},{ts}"
            )
        else:  # pragma: no cover - internal
            raise AssertionError(style)
    return lines


@dataclass(frozen=True)
class _Pool:
    text: str  # the pool twice over, so any slice of up to len(pool) is contiguous
    size: int
    starts: tuple[int, ...]  # offsets of line starts in the first copy


@lru_cache(maxsize=None)
def _pool(style: str) -> _Pool:
    """Return ~64 KB of realistic ASCII lines of one style, the same in every process."""
    rng = random.Random(f"promptstrat:pool:{style}")
    lines = _pool_lines(style, rng, 900)
    text = "\n".join(lines) + "\n"
    starts = [0]
    for i, ch in enumerate(text[:-1]):
        if ch == "\n":
            starts.append(i + 1)
    return _Pool(text=text + text, size=len(text), starts=tuple(starts))


def _slice(style: str, rng: random.Random, length: int) -> str:
    """Return ``length`` characters of pool text, starting at a random line."""
    if length <= 0:
        return ""
    pool = _pool(style)
    start = rng.choice(pool.starts)
    if length <= pool.size:
        return pool.text[start : start + length]
    reps = length // pool.size + 2
    return (pool.text[pool.size :] * reps)[start : start + length]


def _heavy_tailed(rng: random.Random, lo: int, hi: int) -> int:
    """Return an int in [lo, hi] from a truncated Pareto: most near lo, a long tail to hi."""
    if hi <= lo:
        return lo
    a = _PARETO_ALPHA
    base = max(lo, 1)
    ratio = (base / hi) ** a
    u = rng.random()
    x = base / (1.0 - u * (1.0 - ratio)) ** (1.0 / a)
    return max(lo, min(hi, int(x)))


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    if hi <= lo:
        return lo
    return max(lo, min(hi, int(lo * (hi / lo) ** rng.random())))


def _sized_text(header: str, style: str, rng: random.Random, size: int) -> str:
    """Return exactly ``size`` characters: ``header`` then pool text of ``style``."""
    if len(header) >= size:
        return header[:size]
    return header + _slice(style, rng, size - len(header))


# --------------------------------------------------------------------------------------
# Sized tool
# --------------------------------------------------------------------------------------

_OUTPUT_STYLES = ("log", "json", "listing", "code", "grep", "search", "csv")


def make_sized_tool(
    name: str = "fetch",
    *,
    sizes: int | tuple[int, int] = (200, 20_000),
    seed: int = 0,
    description: str | None = None,
) -> BaseTool:
    """Return a LangChain tool ``name(query: str, page: int = 0) -> str`` with sized, deterministic output.

    The output length (characters == bytes, ASCII) is ``sizes`` if an int, else drawn
    from a truncated Pareto over the ``(min, max)`` range, so most outputs are small
    and a few reach the maximum -- the shape that makes prompt strategies matter. The
    size and text depend only on ``(seed, name, query, page)`` through a SHA-256 digest,
    so a repeated call returns the identical output and runs reproduce across
    processes. Matches the calls scripted by :meth:`ScriptedChatModel.long_run`. Sync
    and async.
    """
    if isinstance(sizes, int):
        lo = hi = sizes
    else:
        lo, hi = sizes
    if lo < 0 or hi < lo:
        raise ConfigError(f"sizes must be an int >= 0 or a (min, max) range, got {sizes!r}")

    def _output(query: str, page: int = 0) -> str:
        key = json.dumps([seed, name, query, page])
        digest = hashlib.sha256(key.encode()).hexdigest()
        rng = random.Random(int(digest[:16], 16))
        size = _heavy_tailed(rng, lo, hi)
        style = _OUTPUT_STYLES[int(digest[16:18], 16) % len(_OUTPUT_STYLES)]
        header = f"[{name} page={page}] {query[:80]}\n"
        return _sized_text(header, style, rng, size)

    def fetch(query: str, page: int = 0) -> str:
        return _output(query, page)

    async def afetch(query: str, page: int = 0) -> str:
        return _output(query, page)

    return StructuredTool.from_function(
        func=fetch,
        coroutine=afetch,
        name=name,
        description=description
        or f"Fetch page `page` of results for `query` ({name}). Returns plain text.",
    )


# --------------------------------------------------------------------------------------
# Conversation builders
# --------------------------------------------------------------------------------------


def _words(rng: random.Random, length: int, sep: str = " ") -> str:
    out: list[str] = []
    n = 0
    while n < length:
        w = rng.choice(_WORDS)
        out.append(w)
        n += len(w) + len(sep)
    return sep.join(out)[:length]


def _path(rng: random.Random) -> str:
    depth = rng.randint(1, 5)
    p = "/workspace/repo/" + "/".join(rng.choice(_DIRS) for _ in range(depth))
    return p + f"/{rng.choice(_WORDS)}_{rng.choice(_WORDS)}{rng.choice(_EXTS)}"


def _command(rng: random.Random, length: int) -> str:
    # the varied part of each fragment comes first, so short commands still differ
    w, d = _WORDS, _DIRS
    frags = (
        lambda: f"pytest -x -k {rng.choice(w)}_{rng.choice(w)} tests/{rng.choice(d)}/",
        lambda: f"grep -rn '{rng.choice(w)}_{rng.choice(w)}' {rng.choice(d)}/",
        lambda: f"head -n {rng.randint(20, 400)} {rng.choice(d)}/{rng.choice(w)}_{rng.choice(w)}.py",
        lambda: f"git log -n {rng.randint(5, 50)} --grep={rng.choice(w)} -- {rng.choice(d)}/",
        lambda: f"./scripts/{rng.choice(w)}_{rng.choice(w)}.sh --{rng.choice(w)} {rng.randint(1, 999)}",
        lambda: f"ls -la {rng.choice(d)}/{rng.choice(w)}_{rng.choice(w)}",
        lambda: f'echo "{_words(rng, rng.randint(10, 60))}"',
    )
    parts: list[str] = []
    n = 0
    while n < length:
        frag = rng.choice(frags)()
        parts.append(frag)
        n += len(frag) + 4
    return " && ".join(parts)[:length]


def _sql(rng: random.Random, length: int) -> str:
    w = _WORDS
    s = (
        f"SELECT {rng.choice(w)}_id, {rng.choice(w)}, {rng.choice(w)}_at FROM "
        f"{rng.choice(w)}_{rng.choice(w)} WHERE {rng.choice(w)} = %s"
    )
    while len(s) < length:
        s += rng.choice(
            (
                f" AND {rng.choice(w)}_{rng.choice(w)} IS NOT NULL",
                f" AND {rng.choice(w)} > {rng.randint(0, 10000)}",
                f" OR {rng.choice(w)} IN (SELECT id FROM {rng.choice(w)} WHERE {rng.choice(w)} = %s)",
                f" ORDER BY {rng.choice(w)}_at DESC",
            )
        )
    return s[:length]


def _url(rng: random.Random, length: int) -> str:
    s = f"https://api.{rng.choice(_WORDS)}.example.com/v{rng.randint(1, 3)}/{rng.choice(_WORDS)}?"
    params: list[str] = []
    while len(s) + sum(len(p) + 1 for p in params) < length:
        params.append(f"{rng.choice(_WORDS)}={_words(rng, rng.randint(3, 40), '+')}")
    return (s + "&".join(params))[:length]


def _date(rng: random.Random) -> str:
    return f"20{rng.randint(19, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


# Each tool: (name, weight, output style, args builder(rng, L), output header(args)).
# L is the length of the tool's main string argument, drawn from arg_bytes.
_ToolSpec = tuple[
    str, float, str, Callable[[random.Random, int], dict[str, Any]], Callable[[dict[str, Any]], str]
]

_TOOLS: tuple[_ToolSpec, ...] = (
    (
        "read_file",
        0.22,
        "code",
        lambda rng, L: {
            "path": _path(rng),
            "start_line": (s := rng.randint(1, 800)),
            "end_line": s + rng.randint(20, 400),
        },
        lambda a: f"# {a['path']} lines {a['start_line']}-{a['end_line']}\n",
    ),
    (
        "run_shell",
        0.18,
        "log",
        lambda rng, L: {
            "command": _command(rng, L),
            "timeout_s": rng.choice((30, 60, 120, 600)),
            "env": {"CI": "1", "PYTHONHASHSEED": str(rng.randint(0, 9))},
        },
        lambda a: f"$ {a['command'][:100]}\nexit code: 0\n",
    ),
    (
        "web_search",
        0.14,
        "search",
        lambda rng, L: {
            "query": _words(rng, L),
            "max_results": rng.choice((5, 10, 20)),
            "filters": {
                "site": rng.choice((None, "stackoverflow.com", "github.com", "docs.python.org")),
                "date_range": {"from": _date(rng), "to": "2025-01-01"},
            },
        },
        lambda a: f"Results for: {a['query'][:100]}\n",
    ),
    (
        "grep",
        0.12,
        "grep",
        lambda rng, L: {
            "pattern": "(" + _words(rng, max(L - 2, 1), "|") + ")",
            "paths": [f"{rng.choice(_DIRS)}/" for _ in range(rng.randint(1, 4))],
            "options": {"ignore_case": rng.random() < 0.5, "context_lines": rng.randint(0, 5)},
        },
        lambda a: f"grep -rn {a['pattern'][:60]!r} {' '.join(a['paths'])}\n",
    ),
    (
        "http_get",
        0.10,
        "json",
        lambda rng, L: {
            "url": _url(rng, L),
            "headers": {"Accept": "application/json", "X-Request-Id": f"{rng.getrandbits(32):08x}"},
        },
        lambda a: f"HTTP/1.1 200 OK  GET {a['url'][:100]}\n[\n",
    ),
    (
        "edit_file",
        0.10,
        "code",
        lambda rng, L: {
            "path": _path(rng),
            "old_text": _slice("code", rng, max(L // 3, 1)),
            "new_text": _slice("code", rng, L),
        },
        lambda a: f"Edited {a['path']}. New contents around the edit:\n",
    ),
    (
        "query_db",
        0.08,
        "csv",
        lambda rng, L: {
            "sql": _sql(rng, L),
            "params": [rng.randint(1, 10**6), rng.choice(_WORDS), rng.random() < 0.5],
            "limit": rng.choice((50, 100, 500, 1000)),
        },
        lambda a: f"-- {a['sql'][:100]}\nid,name,kind,value,ratio,updated_at\n",
    ),
    (
        "list_dir",
        0.06,
        "listing",
        lambda rng, L: {
            "path": "/workspace/repo/" + "/".join(rng.choice(_DIRS) for _ in range(rng.randint(1, 4))),
            "glob": f"*{rng.choice(_WORDS)}*{rng.choice(_EXTS)}",
            "depth": rng.randint(1, 4),
            "max_entries": rng.randint(50, 5000),
            "ignore": [".git", "__pycache__", *rng.sample(("node_modules", "*.pyc", ".venv", "build"), 2)],
        },
        lambda a: f"{a['path']}:\ntotal {len(a['path']) * 37}\n",
    ),
)
_TOOL_WEIGHTS = tuple(t[1] for t in _TOOLS)


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
                spec = rng_steps.choices(_TOOLS, _TOOL_WEIGHTS)[0]
                name, _, style, make_args, header = spec
                args = make_args(rng_args, _log_uniform(rng_args, arg_lo, arg_hi))
                size = _heavy_tailed(rng_out, out_lo, out_hi)
                output = _sized_text(header(args), style, rng_out, size)
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
