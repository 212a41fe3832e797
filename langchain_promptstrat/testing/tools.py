"""Synthetic agent runs: the simulated tools and their schemas, the run builders, and a sized
LangChain tool.

Must stay deterministic (text from :mod:`~langchain_promptstrat.testing.text_pools` and seeded
``random.Random`` streams, never the network, a clock or ``hash()``): the digests replay these runs.
"""

from __future__ import annotations

import collections
import copy
import hashlib
import json
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.testing.text_pools import (
    DIRS,
    EXTS,
    WORDS,
    heavy_tailed,
    log_uniform,
    pool_text,
    sized_text,
)


def _words(rng: random.Random, length: int, sep: str = " ") -> str:
    out: list[str] = []
    n = 0
    while n < length:
        w = rng.choice(WORDS)
        out.append(w)
        n += len(w) + len(sep)
    return sep.join(out)[:length]


def _path(rng: random.Random) -> str:
    depth = rng.randint(1, 5)
    p = "/workspace/repo/" + "/".join(rng.choice(DIRS) for _ in range(depth))
    return p + f"/{rng.choice(WORDS)}_{rng.choice(WORDS)}{rng.choice(EXTS)}"


def _command(rng: random.Random, length: int) -> str:
    # the varied part of each fragment comes first, so short commands still differ
    w, d = WORDS, DIRS
    frags = (
        lambda: f"pytest -x -k {rng.choice(w)}_{rng.choice(w)} tests/{rng.choice(d)}/",
        lambda: f"grep -rn '{rng.choice(w)}_{rng.choice(w)}' {rng.choice(d)}/",
        lambda: (
            f"head -n {rng.randint(20, 400)} {rng.choice(d)}/{rng.choice(w)}_{rng.choice(w)}.py"
        ),
        lambda: f"git log -n {rng.randint(5, 50)} --grep={rng.choice(w)} -- {rng.choice(d)}/",
        lambda: (
            f"./scripts/{rng.choice(w)}_{rng.choice(w)}.sh --{rng.choice(w)} {rng.randint(1, 999)}"
        ),
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
    w = WORDS
    s = (
        f"SELECT {rng.choice(w)}_id, {rng.choice(w)}, {rng.choice(w)}_at FROM "
        f"{rng.choice(w)}_{rng.choice(w)} WHERE {rng.choice(w)} = %s"
    )
    while len(s) < length:
        s += rng.choice(
            (
                f" AND {rng.choice(w)}_{rng.choice(w)} IS NOT NULL",
                f" AND {rng.choice(w)} > {rng.randint(0, 10000)}",
                f" OR {rng.choice(w)} IN (SELECT id FROM {rng.choice(w)} WHERE {rng.choice(w)} = "
                "%s)",
                f" ORDER BY {rng.choice(w)}_at DESC",
            )
        )
    return s[:length]


def _url(rng: random.Random, length: int) -> str:
    s = f"https://api.{rng.choice(WORDS)}.example.com/v{rng.randint(1, 3)}/{rng.choice(WORDS)}?"
    params: list[str] = []
    while len(s) + sum(len(p) + 1 for p in params) < length:
        params.append(f"{rng.choice(WORDS)}={_words(rng, rng.randint(3, 40), '+')}")
    return (s + "&".join(params))[:length]


def _date(rng: random.Random) -> str:
    return f"20{rng.randint(19, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


# Each tool: (name, weight, output style, args builder(rng, L), output header(args)).
# L is the length of the tool's main string argument, drawn from arg_bytes.
SimulatedTool = tuple[
    str, float, str, Callable[[random.Random, int], dict[str, Any]], Callable[[dict[str, Any]], str]
]

SIMULATED_TOOLS: tuple[SimulatedTool, ...] = (
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
            "paths": [f"{rng.choice(DIRS)}/" for _ in range(rng.randint(1, 4))],
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
            "old_text": pool_text("code", rng, max(L // 3, 1)),
            "new_text": pool_text("code", rng, L),
        },
        lambda a: f"Edited {a['path']}. New contents around the edit:\n",
    ),
    (
        "query_db",
        0.08,
        "csv",
        lambda rng, L: {
            "sql": _sql(rng, L),
            "params": [rng.randint(1, 10**6), rng.choice(WORDS), rng.random() < 0.5],
            "limit": rng.choice((50, 100, 500, 1000)),
        },
        lambda a: f"-- {a['sql'][:100]}\nid,name,kind,value,ratio,updated_at\n",
    ),
    (
        "list_dir",
        0.06,
        "listing",
        lambda rng, L: {
            "path": "/workspace/repo/"
            + "/".join(rng.choice(DIRS) for _ in range(rng.randint(1, 4))),
            "glob": f"*{rng.choice(WORDS)}*{rng.choice(EXTS)}",
            "depth": rng.randint(1, 4),
            "max_entries": rng.randint(50, 5000),
            "ignore": [
                ".git",
                "__pycache__",
                *rng.sample(("node_modules", "*.pyc", ".venv", "build"), 2),
            ],
        },
        lambda a: f"{a['path']}:\ntotal {len(a['path']) * 37}\n",
    ),
)
SIMULATED_TOOL_WEIGHTS = tuple(t[1] for t in SIMULATED_TOOLS)


def _tool(
    name: str, description: str, properties: dict[str, Any], required: Sequence[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(required)},
        },
    }


def _param(kind: str, description: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **more}


AGENT_RUN_TOOLS: tuple[dict[str, Any], ...] = (
    _tool(
        "read_file",
        "Read a range of lines of a text file in the repository.",
        {
            "path": _param("string", "Path of the file, relative to the repository root."),
            "start_line": _param("integer", "First line to read (1-based)."),
            "end_line": _param("integer", "Last line to read (inclusive)."),
        },
        ["path"],
    ),
    _tool(
        "run_shell",
        "Run a shell command in the repository's working directory and return its output and exit "
        "code.",
        {
            "command": _param("string", "The command line to run with bash."),
            "timeout_s": _param("integer", "Seconds before the command is killed."),
            "env": _param(
                "object", "Extra environment variables.", additionalProperties={"type": "string"}
            ),
        },
        ["command"],
    ),
    _tool(
        "web_search",
        "Search the web and return the top results with their titles, URLs and snippets.",
        {
            "query": _param("string", "What to search for."),
            "max_results": _param("integer", "How many results to return."),
            "filters": _param(
                "object",
                "Optional restrictions.",
                properties={
                    "site": _param("string", "Only results from this site."),
                    "date_range": _param(
                        "object",
                        "Only results published in this range.",
                        properties={
                            "from": _param("string", "Start date, YYYY-MM-DD."),
                            "to": _param("string", "End date, YYYY-MM-DD."),
                        },
                    ),
                },
            ),
        },
        ["query"],
    ),
    _tool(
        "grep",
        "Search files for a regular expression and return the matching lines with their file and "
        "line number.",
        {
            "pattern": _param("string", "Regular expression to search for."),
            "paths": _param("array", "Files or directories to search.", items={"type": "string"}),
            "options": _param(
                "object",
                "Search options.",
                properties={
                    "ignore_case": _param("boolean", "Match case-insensitively."),
                    "context_lines": _param("integer", "Lines of context around each match."),
                },
            ),
        },
        ["pattern"],
    ),
    _tool(
        "http_get",
        "Send an HTTP GET request and return the status line, headers and body.",
        {
            "url": _param("string", "The URL to fetch."),
            "headers": _param(
                "object", "Request headers.", additionalProperties={"type": "string"}
            ),
        },
        ["url"],
    ),
    _tool(
        "edit_file",
        "Replace an exact piece of text in a file and return the file around the edit.",
        {
            "path": _param("string", "Path of the file, relative to the repository root."),
            "old_text": _param("string", "The text to replace; it must occur exactly once."),
            "new_text": _param("string", "The replacement text."),
        },
        ["path", "old_text", "new_text"],
    ),
    _tool(
        "query_db",
        "Run a read-only SQL query on the application database and return the rows as CSV.",
        {
            "sql": _param("string", "The SQL query, with ? placeholders."),
            "params": _param("array", "Values for the placeholders.", items={}),
            "limit": _param("integer", "Maximum number of rows."),
        },
        ["sql"],
    ),
    _tool(
        "list_dir",
        "List the entries of a directory, recursively up to a depth.",
        {
            "path": _param("string", "The directory to list."),
            "glob": _param("string", "Only entries whose name matches this pattern."),
            "depth": _param("integer", "How many levels to descend."),
            "max_entries": _param("integer", "Stop after this many entries."),
            "ignore": _param("array", "Names or patterns to leave out.", items={"type": "string"}),
        },
        ["path"],
    ),
)
"""The schemas (OpenAI tool format) of :data:`SIMULATED_TOOLS`, which every request of a simulated
run carries."""


_OUTPUT_STYLES = ("log", "json", "listing", "code", "grep", "search", "csv")


def make_sized_tool(
    name: str = "fetch",
    *,
    sizes: int | tuple[int, int] = (200, 20_000),
    seed: int = 0,
    description: str | None = None,
) -> BaseTool:
    """Return a tool ``name(query: str, page: int = 0) -> str`` (sync and async) whose output
    depends only on ``(seed, name, query, page)``.

    Its length is ``sizes``, or drawn from a truncated Pareto over ``(min, max)``: a repeated
    call returns the identical output in every process.
    """
    lo, hi = (sizes, sizes) if isinstance(sizes, int) else sizes
    if lo < 0 or hi < lo:
        raise ConfigError(f"sizes must be an int >= 0 or a (min, max) range, got {sizes!r}")

    def fetch(query: str, page: int = 0) -> str:
        key = json.dumps([seed, name, query, page])
        digest = hashlib.sha256(key.encode()).hexdigest()
        rng = random.Random(int(digest[:16], 16))
        size = heavy_tailed(rng, lo, hi)
        style = _OUTPUT_STYLES[int(digest[16:18], 16) % len(_OUTPUT_STYLES)]
        header = f"[{name} page={page}] {query[:80]}\n"
        return sized_text(header, style, rng, size)

    async def afetch(query: str, page: int = 0) -> str:
        return fetch(query, page)

    description = (
        description or f"Fetch page `page` of results for `query` ({name}). Returns plain text."
    )
    return StructuredTool.from_function(
        func=fetch, coroutine=afetch, name=name, description=description
    )


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


def _ai_message(
    text: str, calls: list[tuple[str, str, dict[str, Any]]], style: str | None, msg_id: str
) -> AIMessage:
    """Return the AIMessage carrying ``calls`` in the shape provider ``style`` produces."""
    tool_calls = [
        {"name": name, "args": args, "id": cid, "type": "tool_call"} for cid, name, args in calls
    ]
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
    """Yield the prompt of every model call of :func:`build_agent_run`'s run: a new list each time,
    sharing message objects (never mutate them)."""
    if n_tool_calls < 0:
        raise ConfigError(f"n_tool_calls must be >= 0, got {n_tool_calls}")
    if parallel_max < 1:
        raise ConfigError(f"parallel_max must be >= 1, got {parallel_max}")
    if not 0.0 <= repeat_rate <= 1.0:
        raise ConfigError(f"repeat_rate must be in [0, 1], got {repeat_rate}")
    if mirror not in (None, "openai", "anthropic", "mixed"):
        raise ConfigError(f"mirror must be None, 'openai', 'anthropic' or 'mixed', got {mirror!r}")
    out_lo, out_hi = _check_range("output_bytes", output_bytes)
    arg_lo, arg_hi = _check_range("arg_bytes", arg_bytes)
    arg_lo = max(arg_lo, 1)
    arg_hi = max(arg_hi, arg_lo)
    user_range = (
        None if user_turn_every is None else _check_range("user_turn_every", user_turn_every)
    )
    if user_range is not None and user_range[0] < 1:
        raise ConfigError(f"user_turn_every must be >= 1, got {user_turn_every!r}")

    # Independent streams, so e.g. changing mirror or output_bytes leaves the tool
    # calls (names, args, ids) untouched.
    def stream(purpose: str) -> random.Random:
        return random.Random(f"promptstrat:agent_run:{seed}:{purpose}")

    rng_steps, rng_args, rng_out, rng_user, rng_mirror = map(
        stream, ("steps", "args", "outputs", "user", "mirror")
    )

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
    next_user_at = rng_user.randint(*user_range) if user_range is not None else n_tool_calls + 1
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
            (name, args, output) for (_, name, args), output in zip(calls, outputs, strict=False)
        )

        style_now: str | None = (
            rng_mirror.choice((None, "openai", "anthropic")) if mirror == "mixed" else mirror
        )
        messages.append(_ai_message(text, calls, style_now, next_id()))
        for (call_id, name, _), output in zip(calls, outputs, strict=False):
            messages.append(
                ToolMessage(content=output, tool_call_id=call_id, name=name, id=next_id())
            )
        if made >= next_user_at and made < n_tool_calls:
            messages.append(HumanMessage(content=rng_user.choice(_USER_TURNS), id=next_id()))
            next_user_at = made + rng_user.randint(*user_range)  # type: ignore[misc]
        yield list(messages)


def build_agent_run(n_tool_calls: int = 400, **options: Any) -> list[BaseMessage]:
    """Return the messages of a synthetic agent run, ending after its ``n_tool_calls``-th
    ToolMessage; ``options`` as :func:`iter_agent_run`.

    After ``[SystemMessage(system)?, HumanMessage(task)]``: steps of an AIMessage with
    1..``parallel_max`` calls (``call_0001``...) and their ToolMessages; argument lengths
    log-uniform in ``arg_bytes``, output lengths a truncated Pareto over ``output_bytes``;
    about ``repeat_rate`` of the calls repeat an earlier step's; a user turn every
    ``user_turn_every`` (min, max) calls (None: none); ``mirror`` also records the calls as
    an integration does (``"openai"``, ``"anthropic"``, or ``"mixed"`` per step). The same
    arguments give the same messages, ids included; the calls do not depend on ``mirror``,
    ``output_bytes`` or ``user_turn_every``.
    """
    return collections.deque(iter_agent_run(n_tool_calls, **options), maxlen=1)[0]
