"""Deterministic synthetic text for the test doubles: word lists, a ~64 KB pool of realistic lines
per output style, and size draws.

Sizes: a truncated Pareto for tool outputs (most small, a long tail), log-uniform for
arguments. Must stay a pure function of the seeded ``random.Random`` it is handed (no
``hash()``, clock or uuid); builds no messages and imports nothing from LangChain.
"""

from __future__ import annotations

import itertools
import json
import random
from functools import cache

_PARETO_ALPHA = 0.7
"""Tail index of the truncated Pareto used for output sizes: median ~2.7x the minimum,
mean ~7x (for 200..20,000 bytes), a few percent of outputs within 2x of the maximum."""

WORDS = (
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

DIRS = (
    "src core utils api services models handlers internal pkg lib app tests fixtures "
    "integration unit adapters storage db migrations config scripts tools docs"
).split()

EXTS = (".py", ".py", ".py", ".ts", ".go", ".md", ".yaml", ".json", ".toml", ".sql")

_LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR")
_METHODS = ("GET", "GET", "POST", "PUT", "DELETE")
_STATUSES = (200, 200, 200, 201, 204, 304, 400, 404, 409, 500, 503)

_CODE_TEMPLATES = (
    "def {a}_{b}(self, {c}: int, {d}: str | None = None) -> dict[str, Any]:",
    '    """Return the {a} {b} for the given {c}."""',
    "    if {c} is None:",
    '        raise ValueError(f"missing {c}: {{{d}!r}}")',
    "    result = self._{a}.get({c}, default={d})",
    "    for {b} in sorted(self.{c}_{d}, key=lambda x: x.{a}):",
    "        total += {b}.{c} * {n}",
    '    return {{"{a}": {a}, "{b}": {b}, "count": {n}}}',
    "class {A}{B}({C}Base):",
    "    {a}_{b}: list[{C}] = field(default_factory=list)",
    "import {a}.{b} as {c}",
    "from .{a} import {B}{C}, {a}_{d}",
    '        logger.debug("{a} {b} took %.2fms", elapsed * {n})',
    "    # TODO({a}): handle the {b} {c} case before {d}",
    '    assert {a}_{b} >= {n}, "{c} {d} out of range"',
    "",
)


def _pool_lines(style: str, rng: random.Random, n: int) -> list[str]:
    w = WORDS
    lines: list[str] = []
    for i in range(n):
        a, b, c, d = rng.choice(w), rng.choice(w), rng.choice(w), rng.choice(w)
        num = rng.randint(1, 99999)
        names = dict(
            a=a, b=b, c=c, d=d, n=num % 1000, A=a.capitalize(), B=b.capitalize(), C=c.capitalize()
        )
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
            path = "/".join(rng.choice(DIRS) for _ in range(depth))
            lines.append(
                f"-rw-r--r--  1 agent staff {rng.randint(0, 250000):>8} "
                f"May {rng.randint(1, 28):>2} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} "
                f"{path}/{a}_{b}{rng.choice(EXTS)}"
            )
        elif style == "code":
            lines.append(rng.choice(_CODE_TEMPLATES).format(**names))
        elif style == "grep":
            path = "/".join(rng.choice(DIRS) for _ in range(rng.randint(1, 3)))
            code = (rng.choice(_CODE_TEMPLATES) or "    pass").format(**names)
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
            lines.append(f"{num},{a}_{b},{c},{rng.randint(-500, 5000)},{rng.random():.3f},{ts}")
        else:  # pragma: no cover - internal
            raise AssertionError(style)
    return lines


@cache
def _pool(style: str) -> tuple[str, list[int]]:
    """Return ~64 KB of realistic ASCII lines of one style (the same in every process) and where its
    lines start."""
    lines = _pool_lines(style, random.Random(f"promptstrat:pool:{style}"), 900)
    starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    return "\n".join(lines) + "\n", starts


def pool_text(style: str, rng: random.Random, length: int) -> str:
    """Return ``length`` characters of pool text, starting at a random line (the pool repeated as
    often as needed)."""
    if length <= 0:
        return ""
    text, starts = _pool(style)
    start = rng.choice(starts)
    return (text * (length // len(text) + 2))[start : start + length]


def heavy_tailed(rng: random.Random, lo: int, hi: int) -> int:
    """Return an int in [lo, hi] from a truncated Pareto: most near lo, a long tail to hi."""
    if hi <= lo:
        return lo
    a = _PARETO_ALPHA
    base = max(lo, 1)
    ratio = (base / hi) ** a
    u = rng.random()
    x = base / (1.0 - u * (1.0 - ratio)) ** (1.0 / a)
    return max(lo, min(hi, int(x)))


def log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    if hi <= lo:
        return lo
    return max(lo, min(hi, int(lo * (hi / lo) ** rng.random())))


def sized_text(header: str, style: str, rng: random.Random, size: int) -> str:
    """Return exactly ``size`` characters: ``header`` then pool text of ``style``."""
    if len(header) >= size:
        return header[:size]
    return header + pool_text(style, rng, size - len(header))
