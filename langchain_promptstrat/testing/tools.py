"""The tools of synthetic agent runs: the simulated tools the run builders call, and a real sized LangChain tool.

* :data:`SIMULATED_TOOLS` -- read_file, run_shell, web_search, grep, http_get, edit_file,
  query_db, list_dir: for each, its weight, its output style, a builder of realistic
  arguments (ints, bools, lists, nested dicts, one main string of a chosen length) and
  the header its output starts with. :func:`~langchain_promptstrat.testing.build_agent_run`
  draws its tool calls from them; no tool is ever run.
* :data:`AGENT_RUN_TOOLS` -- the schemas (OpenAI tool format) of those same tools, which
  every request of the simulated agent carries; ``simulate`` counts them in every prompt.
* :func:`make_sized_tool` -- a ``StructuredTool`` whose output size and text depend only
  on its arguments, to drive a real agent graph with
  :meth:`~langchain_promptstrat.testing.ScriptedChatModel.long_run`.

Must not build messages (the run builders do) and must stay deterministic: the output
text comes from :mod:`~langchain_promptstrat.testing.text_pools` and a seeded
``random.Random``, never from the network, a clock or ``hash()``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from typing import Any, Callable

from langchain_core.tools import BaseTool, StructuredTool

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.testing.text_pools import DIRS, EXTS, WORDS, heavy_tailed, pool_text, sized_text


# --------------------------------------------------------------------------------------
# Simulated tools (their calls and outputs are built, never run)
# --------------------------------------------------------------------------------------


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
                f" OR {rng.choice(w)} IN (SELECT id FROM {rng.choice(w)} WHERE {rng.choice(w)} = %s)",
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
            "path": "/workspace/repo/" + "/".join(rng.choice(DIRS) for _ in range(rng.randint(1, 4))),
            "glob": f"*{rng.choice(WORDS)}*{rng.choice(EXTS)}",
            "depth": rng.randint(1, 4),
            "max_entries": rng.randint(50, 5000),
            "ignore": [".git", "__pycache__", *rng.sample(("node_modules", "*.pyc", ".venv", "build"), 2)],
        },
        lambda a: f"{a['path']}:\ntotal {len(a['path']) * 37}\n",
    ),
)
SIMULATED_TOOL_WEIGHTS = tuple(t[1] for t in SIMULATED_TOOLS)


# --------------------------------------------------------------------------------------
# Schemas of the simulated tools (what the simulated agent's requests carry)
# --------------------------------------------------------------------------------------


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
        size = heavy_tailed(rng, lo, hi)
        style = _OUTPUT_STYLES[int(digest[16:18], 16) % len(_OUTPUT_STYLES)]
        header = f"[{name} page={page}] {query[:80]}\n"
        return sized_text(header, style, rng, size)

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
