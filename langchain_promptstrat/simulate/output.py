"""A replay's result: :class:`StrategyRun` and :class:`SimulationResult`, their JSON, the table
``promptstrat simulate`` prints, and the plot.

The table is laid out by :mod:`langchain_promptstrat.text_table`; the plot needs matplotlib
(the ``plot`` extra), imported only when one is drawn. Nothing here replays: see
:mod:`langchain_promptstrat.simulate`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from langchain_promptstrat.cache_rules import ANTHROPIC_WRITE_MULTIPLIER
from langchain_promptstrat.ceiling import DEFAULT_MAX_TOKENS
from langchain_promptstrat.defaults import DEFAULT_CACHED_FRACTION, SIMULATED_MAX_TOKENS
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.registry import DEFAULT_STRATEGIES
from langchain_promptstrat.simulate.recall import OLD_AFTER
from langchain_promptstrat.text_table import fit_lines, render_table

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox


DEFAULT_LIST_ROW = ",".join(n for n in DEFAULT_STRATEGIES if n != "inbox")
"""The default list as a replay's row: :data:`DEFAULT_STRATEGIES` without the inbox (a replay has
none)."""


def estimated_cost(
    tokens: int, cached_tokens: int, cached_fraction: float = DEFAULT_CACHED_FRACTION
) -> float:
    """Return the cost of a prompt in input-token units, cached tokens billed at
    ``cached_fraction``."""
    return cached_tokens * cached_fraction + (tokens - cached_tokens)


@dataclass
class StrategyRun:
    """One strategy's replay: per-call figures, in model-call order.

    ``kind`` is ``"ours"`` (registry strategies), ``"peer"`` or ``"custom"`` (objects and
    callables passed in); ``options`` the arguments it was built with beyond its settings.
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
    """Tokens read from the cache under the provider rule (``cache`` not ``prefix``)."""
    provider_written_tokens: list[int] = field(default_factory=list)
    """Tokens written to the cache under the provider rule (billed at the write multiplier)."""
    recall: list[list[int]] = field(default_factory=list)
    """Per call, :meth:`RecallCounts.as_list`; empty when the replay measured none."""
    unresolved: list[int] = field(default_factory=list)
    """Per call, the references of the prompt sent that do not resolve (0 from the apply path)."""

    @property
    def calls(self) -> int:
        return len(self.tokens)

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens)

    @property
    def peak_tokens(self) -> int:
        return max(self.tokens, default=0)

    @property
    def mean_reuse(self) -> float:
        return sum(self.reuse) / len(self.reuse) if self.reuse else 0.0

    @property
    def strategy_seconds(self) -> float:
        return sum(self.seconds)

    @property
    def degenerate_calls(self) -> int:
        return sum(self.degenerate)

    @property
    def unresolved_references(self) -> int:
        return sum(self.unresolved)

    @property
    def mean_tokens(self) -> float:
        return self.total_tokens / self.calls if self.calls else 0.0

    @property
    def ceiling(self) -> int | None:
        """Return the tokens this row was given to stay under (``max_tokens``, ``trigger``)."""
        given = self.options.get("max_tokens", self.options.get("trigger"))
        return given if isinstance(given, int) and not isinstance(given, bool) else None

    @property
    def calls_over_ceiling(self) -> int | None:
        """Return how many prompts sent (tool schemas included) went over :attr:`ceiling`."""
        ceiling = self.ceiling
        return None if ceiling is None else sum(t > ceiling for t in self.tokens)

    def recall_summary(self) -> dict[str, Any] | None:
        """Return recall, old and outputs-only recall with their reference counts (None when not
        measured; a share of 0 references is None)."""
        if not self.recall:
            return None
        sums = [sum(call[i] for call in self.recall if i < len(call)) for i in range(7)]

        def share(kept: int, of: int) -> float | None:
            return kept / of if of else None

        return {
            "references": sums[0],
            "recall": share(sums[1], sums[0]),
            "old_references": sums[2],
            "old_recall": share(sums[3], sums[2]),
            "outputs_only_references": sums[4],
            "outputs_only_recall": share(sums[5], sums[4]),
            "recoverable": share(sums[6], sums[4] - sums[5]),
        }

    def cost(self, cached_fraction: float = DEFAULT_CACHED_FRACTION) -> float:
        """Return the run's input cost in input-token units."""
        return sum(
            estimated_cost(t, c, cached_fraction)
            for t, c in zip(self.tokens, self.cached_tokens, strict=False)
        )

    def provider_cost(
        self, cached_fraction: float = DEFAULT_CACHED_FRACTION, write_multiplier: float = 0.0
    ) -> float:
        """Return the run's input cost under the provider rule: reads at ``cached_fraction``, writes
        at ``write_multiplier``."""
        return sum(
            r * cached_fraction + w * write_multiplier + (t - r - w)
            for t, r, w in zip(
                self.tokens, self.provider_cached_tokens, self.provider_written_tokens, strict=False
            )
        )

    def provider_summary(
        self, cached_fraction: float = DEFAULT_CACHED_FRACTION, write_multiplier: float = 0.0
    ) -> dict[str, Any]:
        """Return the provider-rule figures: tokens read and written, mean reuse, cost and price
        multiplier."""
        total = self.total_tokens
        cost = self.provider_cost(cached_fraction, write_multiplier)
        reuse = [
            r / t if t else 0.0
            for t, r in zip(self.tokens, self.provider_cached_tokens, strict=False)
        ]
        return {
            "cached_tokens": sum(self.provider_cached_tokens),
            "written_tokens": sum(self.provider_written_tokens),
            "cache_reuse": sum(reuse) / len(reuse) if reuse else 0.0,
            "cost_units": cost,
            "price_multiplier": cost / total if total else 0.0,
        }

    def summary(
        self, cached_fraction: float = DEFAULT_CACHED_FRACTION, price_per_mtok: float | None = None
    ) -> dict[str, Any]:
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
            "strategy_ms_per_call": 1000 * self.strategy_seconds / self.calls
            if self.calls
            else 0.0,
            "degenerate_calls": self.degenerate_calls,
            "unresolved_references": self.unresolved_references,
            "mean_tokens": self.mean_tokens,
            "ceiling": self.ceiling,
            "calls_over_ceiling": self.calls_over_ceiling,
        }
        data.update(self.recall_summary() or {})
        if price_per_mtok is not None:
            data["cost_dollars"] = cost * price_per_mtok / 1_000_000
        return data


PER_CALL = (
    "tokens",
    "cached_tokens",
    "reuse",
    "seconds",
    "degenerate",
    "recall",
    "provider_cached_tokens",
    "provider_written_tokens",
    "unresolved",
)
"""The per-call lists of a :class:`StrategyRun`, in the order ``--json`` prints them."""


@dataclass
class SimulationResult:
    """Every replay of one run, with what is needed to read the figures."""

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
    """The transcripts replayed, when the prompts came from files
    (:mod:`langchain_promptstrat.replay`)."""
    tool_schemas: list[tuple[int, int]] = field(default_factory=list)
    """``(tools, tokens)`` of the tool schemas counted in every prompt, one pair per replayed run
    (one per file)."""
    recall_measured: bool = False
    bill: str = "package"
    """``provider``: each call of a transcript that carries usage is scaled to what the provider
    billed (:mod:`langchain_promptstrat.replay`)."""

    @property
    def write_multiplier(self) -> float:
        """Return the price multiplier of cache writes under ``cache_rule`` (1.25 for Anthropic,
        else 0)."""
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


def result_to_json(result: SimulationResult) -> dict[str, Any]:
    """Return what ``promptstrat simulate --json`` prints: run parameters, then per strategy its
    summary and per-call figures."""
    provider = result.cache_rule != "prefix"
    shown = {
        "recall": result.recall_measured,
        "provider_cached_tokens": provider,
        "provider_written_tokens": provider,
    }
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
        "recall_measured": result.recall_measured,
        "bill": result.bill,
        "strategies": [
            {
                "name": run.name,
                "kind": run.kind,
                "options": dict(run.options),
                "summary": run.summary(result.cached_fraction, result.price_per_mtok),
                **(
                    {
                        "provider_summary": run.provider_summary(
                            result.cached_fraction, result.write_multiplier
                        )
                    }
                    if provider
                    else {}
                ),
                "per_call": {
                    name: copy.deepcopy(getattr(run, name))
                    for name in PER_CALL
                    if shown.get(name, True)
                },
            }
            for run in result.runs
        ],
    }


def result_from_json(data: Mapping[str, Any]) -> SimulationResult:
    """Return the :class:`SimulationResult` that :func:`result_to_json` wrote (summaries are
    recomputed)."""
    try:
        runs = [
            StrategyRun(
                name=s["name"],
                kind=s["kind"],
                options=dict(s.get("options") or {}),
                **{k: list(v) for k, v in s["per_call"].items()},
            )
            for s in data["strategies"]
        ]
        return SimulationResult(
            runs=runs,
            **{
                key: data[key]
                for key in ("n_tool_calls", "seed", "model_calls", "cached_fraction", "max_tokens")
            },
            token_counter=data["token_counter"]["name"],
            exact_tokens=data["token_counter"]["exact"],
            price_per_mtok=data.get("price_per_mtok"),
            notes=list(data.get("notes") or []),
            cache_rule=data.get("cache_rule", "prefix"),
            files=list(data.get("files") or []),
            tool_schemas=[
                (int(t["tools"]), int(t["tokens"])) for t in data.get("tool_schemas") or []
            ],
            recall_measured=bool(data.get("recall_measured", False)),
            bill=data.get("bill", "package"),
        )
    except (KeyError, TypeError) as exc:
        raise ConfigError(
            f"not a simulation result written by result_to_json: missing or malformed {exc}"
        ) from None


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base else "-"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


DEFAULT_MARK = "* default list"
"""The default list's row label: first in the table, its strategies named in the header."""


def _ceiling_line(result: SimulationResult) -> list[str]:
    """Return the header line giving the ceiling of the rows that take one and where it came from:
    simulate's default is not apply's."""
    if not any(r.options.get("max_tokens") or r.options.get("trigger") for r in result.runs):
        return []
    source = (
        f"simulate's default; apply and stats use {DEFAULT_MAX_TOKENS:,}"
        if result.max_tokens == SIMULATED_MAX_TOKENS
        else "--max-tokens"
    )
    peers = " and the peers" if any(r.kind == "peer" for r in result.runs) else ""
    return [
        f"Ceiling {result.max_tokens:,} tokens ({source}) for the strategies that take one{peers}."
    ]


def _source_line(result: SimulationResult) -> str:
    """Return the header's first line: what was replayed (the built-in run, one file, or the files
    of a folder)."""
    if result.n_tool_calls is not None:
        return (
            f"Simulated agent run: {result.n_tool_calls:,} tool calls, "
            f"{result.model_calls:,} model calls, seed {result.seed}."
        )
    if len(result.files) == 1:
        return f"Replayed {result.files[0]}: {result.model_calls:,} model calls."
    if result.files:
        folder, calls = os.path.commonpath(result.files), result.model_calls
        return f"Replayed {len(result.files):,} transcripts in {folder}: {calls:,} model calls."
    return f"Replayed prompts: {result.model_calls:,} model calls."


def format_table(result: SimulationResult, width: int | None = None) -> str:
    """Return the result as an aligned text table, the default list's row first, with a short header
    and footnotes.

    With a ``none`` run among others, ``cost/none`` is each run's cost as a multiple of it.
    Every line fits ``width`` (None: no limit); the figures left out are in :func:`result_to_json`.
    """
    base = result.baseline if len(result.runs) > 1 else None
    columns = ["strategy", "peak tokens", "cache reuse", "cost/none" if base else "cost (units)"]
    if result.price_per_mtok is not None:
        columns.append("cost ($)")
    rule = result.cache_rule if result.cache_rule != "prefix" else None
    if rule:
        columns += [f"{rule} reuse", f"{rule} cost/none" if base else f"{rule} cost"]
    columns.append("mean prompt")
    if result.recall_measured:
        columns += ["recall", "old recall", "outputs-only", "recoverable"]
    columns += ["unresolved refs", "ms per call"]
    rows: list[list[str]] = []
    runs = sorted(result.runs, key=lambda run: not _is_default(run.name))  # the default list first
    for run in runs:
        s = run.summary(result.cached_fraction, result.price_per_mtok)
        label = (
            DEFAULT_MARK
            if _is_default(run.name)
            else f"{run.name} (peer)"
            if run.kind == "peer"
            else run.name
        )
        marked = " over" if s["calls_over_ceiling"] else ""
        row = [
            label,
            f"{s['peak_tokens']:,}{marked}",
            f"{100 * s['cache_reuse']:.1f}%",
            _ratio(s["cost_units"], base.cost(result.cached_fraction))
            if base
            else f"{s['cost_units']:,.0f}",
        ]
        if result.price_per_mtok is not None:
            row.append(f"{s['cost_dollars']:,.2f}")
        if rule:
            p = run.provider_summary(result.cached_fraction, result.write_multiplier)
            row += [
                f"{100 * p['cache_reuse']:.1f}%",
                _ratio(
                    p["cost_units"],
                    base.provider_cost(result.cached_fraction, result.write_multiplier),
                )
                if base
                else f"{p['cost_units']:,.0f}",
            ]
        row.append(f"{s['mean_tokens']:,.0f}")
        if result.recall_measured:
            row += [
                _share(s.get("recall")),
                _share(s.get("old_recall")),
                _share(s.get("outputs_only_recall")),
                _share(s.get("recoverable")),
            ]
        row += [f"{s['unresolved_references']:,}", f"{s['strategy_ms_per_call']:.2f}"]
        rows.append(row)
    exact = {True: "exact", False: "approximate", None: "as counted"}[result.exact_tokens]
    price = (
        f"; ${result.price_per_mtok:g} per million input tokens"
        if result.price_per_mtok is not None
        else ""
    )
    billed = (
        ", each call scaled to the provider's bill where it reports usage (--bill provider)"
        if result.bill == "provider"
        else ""
    )
    ids = (
        ", call ids included"
        if result.exact_tokens is not None and "call_ids=False" not in result.token_counter
        else ""
    )
    header = [
        _source_line(result),
        *_ceiling_line(result),
        f"Tokens: {result.token_counter} ({exact}){ids}{_schemas_text(result)}{billed}; cached "
        f"input at {result.cached_fraction:g} of the price{price}.",
    ]
    if any(_is_default(run.name) for run in runs):
        header.append(
            f"{DEFAULT_MARK}: {DEFAULT_LIST_ROW}, what an agent gets when it names no strategy (a "
            "replay has no inbox)."
        )
    out = [*fit_lines(header, width), "", *render_table(columns, rows, width), ""]
    degenerate = [
        f"{label} {run.degenerate_calls:,}"
        for run, (label, *_) in zip(runs, rows, strict=False)
        if run.degenerate_calls
    ]
    over = [
        f"{label} on {run.calls_over_ceiling:,} of {run.calls:,} calls"
        for run, (label, *_) in zip(runs, rows, strict=False)
        if run.calls_over_ceiling
    ]
    went_over = (
        f"over: the prompt sent (tool schemas included) went over the {result.max_tokens:,} tokens "
        f"the row was given: {', '.join(over)}; why a strategy goes over: docs/cli.md."
    )
    footnotes = [
        *([went_over] if over else []),
        "cache reuse: mean over calls of the share of each prompt whose leading messages repeat "
        "the previous "
        "prompt's byte for byte (whole messages: an upper bound of a provider's block cache).",
        f"cost: input tokens, cached ones at {result.cached_fraction:g}. ms per call: time inside "
        "the strategy. "
        "mean prompt: tokens per prompt sent.",
        "degenerate prompts (only system messages, or without the task or the last user message): "
        + (", ".join(degenerate) if degenerate else "none in any row")
        + ".",
        "unresolved refs: references to lines another output shows ('[12 lines as in the output of "
        "call_ab12 (bash) above]') whose output does not show them in the prompt; the apply path "
        "rewrites each (docs/default.md).",
    ]
    if result.recall_measured:
        first = result.runs[0].recall_summary() if result.runs else None
        counts = (
            (
                f" ({first['references']:,} references, {first['old_references']:,} old, "
                f"{first['outputs_only_references']:,} outputs-only)"
            )
            if first
            else ""
        )
        footnotes += [
            "recall: share of the code-like words of each real next action, found in an earlier "
            "tool output, that the prompt "
            f"still holds in original text{counts}; old: last seen {OLD_AFTER}+ tool outputs "
            "earlier; outputs-only: old and in no "
            "other message; recoverable: of the outputs-only ones lost, the share held by a call "
            "the prompt names for read_back "
            "(a handle or a range). Defined in langchain_promptstrat.simulate.recall.",
        ]
    else:
        footnotes.append(
            "recall: not measured, a simulated run has no real next action (replay transcripts to "
            "measure it)."
        )
    if rule == "openai":
        footnotes.append(
            "openai reuse/cost: OpenAI's automatic prefix cache: the shared prefix from 1,024 "
            "tokens in 128-token steps."
        )
    elif rule == "anthropic":
        footnotes.append(
            "anthropic reuse/cost: Anthropic's breakpoints (cache_control marks, else system and "
            "tail), 20-block "
            f"lookback; reads at {result.cached_fraction:g}, writes at "
            f"{ANTHROPIC_WRITE_MULTIPLIER:g}."
        )
    out += fit_lines(footnotes, width)
    out += fit_lines([f"note: {n}" for n in result.notes], width)
    return "\n".join(out)


def _schemas_text(result: SimulationResult) -> str:
    """Return how the tool schemas were counted, for the table's header (empty when no run had
    tools)."""
    with_tools = [(n, t) for n, t in result.tool_schemas if n]
    if not with_tools:
        return ", no tool schemas"
    if len(result.tool_schemas) == 1:
        n, t = with_tools[0]
        return f", the {n} tool schema{'s' if n > 1 else ''} ({t:,} tokens) in every prompt"
    low, high = min(t for _, t in with_tools), max(t for _, t in with_tools)
    span = f"{low:,}" if low == high else f"{low:,}-{high:,}"
    return (
        f", the tool schemas of the {len(with_tools)} of {len(result.tool_schemas)} files "
        f"that saved them ({span} tokens) in every prompt"
    )


def _is_default(name: str) -> bool:
    """Return whether the row ``name`` is the default list (its inbox aside: a replay has none)."""
    return name.split("#")[0] == DEFAULT_LIST_ROW


def plot(result: SimulationResult, path: str | os.PathLike[str]) -> Figure:
    """Write a figure to ``path`` (its format from the suffix) and return it: prompt tokens and
    cache reuse per call, and cost against recall.

    The default list's line is bold. With recall measured and a ``none`` row, a third panel
    puts each strategy at its cost (÷ none) and outputs-only (filled) and old (hollow) recall,
    numbered rather than named (a dozen names would cover each other), with one key under the
    panels. Drawn without pyplot, so no display or backend is involved.
    """
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, PercentFormatter
    except ImportError:
        raise ConfigError(
            f"plotting needs matplotlib, which is not installed: {install_hint('plot')}"
        ) from None
    frontier = result.recall_measured and result.baseline is not None and len(result.runs) > 1
    fig = Figure(figsize=(16, 9) if frontier else (11, 9), layout="constrained", dpi=_DPI)
    if frontier:
        grid = fig.add_gridspec(2, 2, width_ratios=(1.6, 1))
        tokens_ax = fig.add_subplot(grid[0, 0])
        reuse_ax = fig.add_subplot(grid[1, 0], sharex=tokens_ax)
        frontier_ax: Axes | None = fig.add_subplot(grid[:, 1])
    else:
        frontier_ax = None
        tokens_ax, reuse_ax = fig.subplots(2, 1, sharex=True)
    for i, run in enumerate(result.runs):
        bold = _is_default(run.name)
        style: dict[str, Any] = {
            "color": _color(i),
            "linewidth": 2.4 if bold else 1.0,
            "alpha": 1.0 if bold else 0.6,
            "linestyle": "--" if run.kind == "peer" else "-",
            "zorder": 3 if bold else 2,
        }
        label = f"{run.name} (peer)" if run.kind == "peer" else run.name
        calls = range(1, run.calls + 1)
        tokens_ax.plot(calls, run.tokens, label=f"{i + 1}  {label}" if frontier else label, **style)
        reuse_ax.plot(calls, run.reuse, **style)
        if result.cache_rule != "prefix" and run.provider_cached_tokens:
            provider = [
                r / t if t else 0.0
                for t, r in zip(run.tokens, run.provider_cached_tokens, strict=False)
            ]
            reuse_ax.plot(calls, provider, **{**style, "linestyle": ":", "linewidth": 1.6})
    if any("max_tokens" in r.options or "trigger" in r.options for r in result.runs):
        tokens_ax.axhline(
            result.max_tokens,
            color="grey",
            linewidth=0.8,
            linestyle=":",
            label=f"max_tokens {result.max_tokens:,}",
        )
    tokens_ax.set_ylabel("prompt tokens")
    tokens_ax.yaxis.set_major_formatter(
        FuncFormatter(lambda v, _: f"{v / 1000:,.0f}k" if v else "0")
    )
    tokens_ax.grid(True, alpha=0.3)
    reuse_ax.set_ylabel(
        "cache reuse (share of prompt)"
        if result.cache_rule == "prefix"
        else f"cache reuse: prefix (solid), {result.cache_rule} (dotted)"
    )
    reuse_ax.set_ylim(-0.02, 1.02)
    reuse_ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    reuse_ax.set_xlabel(
        "model call (files one after another)" if len(result.files) > 1 else "model call"
    )
    reuse_ax.grid(True, alpha=0.3)
    # the key sits under the panels, never on a line: a dozen entries cover a quarter of a panel
    fig.legend(
        *tokens_ax.get_legend_handles_labels(),
        loc="outside lower center",
        ncols=4 if frontier else 3,
        fontsize="small",
        title="strategy (bold: the default list)" + (", by number" if frontier else ""),
    )
    if result.n_tool_calls is not None:
        title = (
            f"Simulated agent run: {result.n_tool_calls:,} tool calls, "
            f"{result.model_calls:,} model calls, seed {result.seed}"
        )
    elif result.files:
        title = (
            f"Replayed transcripts: {len(result.files):,} files, {result.model_calls:,} model calls"
        )
    else:
        title = f"Replayed prompts: {result.model_calls:,} model calls"
    fig.suptitle(title)
    if frontier_ax is not None:
        _plot_frontier(result, fig, frontier_ax)
    fig.savefig(os.fspath(path), dpi=_DPI)
    return fig


_DPI = 120
_SIZE, _DEFAULT_SIZE = 60, 140
"""Area of a frontier point in points², the default's drawn larger."""


def _color(i: int) -> str:
    return f"C{i % 10}"


def _plot_frontier(result: SimulationResult, fig: Figure, ax: Axes) -> None:
    """Draw one point per strategy: cost ÷ none across, outputs-only recall (filled) and old recall
    (hollow) up."""
    from matplotlib.ticker import PercentFormatter

    base = result.baseline
    assert base is not None
    base_cost = base.cost(result.cached_fraction) or 1.0
    points: list[tuple[float, float, float]] = []  # x, y, marker size: what a label must not cover
    labelled: list[tuple[float, float, int, bool]] = []  # x, y, number, bold: one per strategy
    for i, run in enumerate(result.runs):
        figures = run.recall_summary() or {}
        cost = run.cost(result.cached_fraction) / base_cost
        bold = _is_default(run.name)
        marker = "s" if run.kind == "peer" else "o"
        size = _DEFAULT_SIZE if bold else _SIZE
        only, old = figures.get("outputs_only_recall"), figures.get("old_recall")
        if only is not None:
            ax.scatter(
                [cost],
                [only],
                s=size,
                color=_color(i),
                marker=marker,
                zorder=3,
                edgecolors="black" if bold else "none",
            )
            points.append((cost, only, size))
        if old is not None:
            ax.scatter(
                [cost],
                [old],
                s=size,
                facecolors="none",
                edgecolors=_color(i),
                marker=marker,
                zorder=3,
            )
            points.append((cost, old, size))
        y = only if only is not None else old
        if y is not None:
            labelled.append((cost, y, i + 1, bold))
    ax.set_xlabel(f"cost ÷ none (cached input at {result.cached_fraction:g})")
    ax.set_ylabel("next-action recall: outputs-only (filled), old (hollow)")
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(-0.04, 1.06)
    ax.margins(x=0.12)
    ax.grid(True, alpha=0.3)
    ax.set_title("cost against what the agent used (up and left is better)", fontsize="medium")
    _place_labels(fig, ax, labelled, points)


_Across = Literal["left", "center", "right"]
_Up = Literal["bottom", "center", "top"]
# where a label may sit around its point, nearest first: the direction (across, up) and the text's
# alignment
_DIRECTIONS: tuple[tuple[float, float, _Across, _Up], ...] = (
    (1, 0, "left", "center"),
    (0.7, 0.7, "left", "bottom"),
    (0.7, -0.7, "left", "top"),
    (0, 1, "center", "bottom"),
    (0, -1, "center", "top"),
    (-1, 0, "right", "center"),
    (-0.7, 0.7, "right", "bottom"),
    (-0.7, -0.7, "right", "top"),
)
_DISTANCES = (0, 6, 13, 22, 34)
"""Points beyond the marker's edge: the rings of places tried, nearest first."""


def _place_labels(
    fig: Figure,
    ax: Axes,
    labels: list[tuple[float, float, int, bool]],
    points: list[tuple[float, float, float]],
) -> None:
    """Number each ``(x, y, number, bold)`` point at the nearest place where its label covers no
    other label, no point (``points``: every marker, ``(x, y, size)``) and stays in ``ax``.

    Measured with the figure's own renderer once the layout is fixed. Touching markers share
    one label (``4,5``); the default's is placed first; a label with no free place takes the
    one covering least, with a thin line to its point when it stands away.
    """
    from matplotlib.transforms import Bbox

    fig.draw_without_rendering()  # fix the layout and the limits the labels are measured in
    ax.set_xlim(ax.get_xlim())
    ax.set_ylim(ax.get_ylim())
    to_pixels = fig.dpi / 72
    panel = ax.get_window_extent()
    centres = [ax.transData.transform((x, y)) for x, y, _ in points]
    taken = [
        Bbox.from_extents(cx - r, cy - r, cx + r, cy + r)
        for (cx, cy), (_, _, size) in zip(centres, points, strict=False)
        for r in [(size**0.5 / 2 + 1) * to_pixels]
    ]
    touching = 2 * (_SIZE**0.5 / 2 + 1) * to_pixels  # two small markers side by side
    pixels = [ax.transData.transform((x, y)) for x, y, _, _ in labels]
    groups: list[list[int]] = []  # points whose markers touch, joined link by link
    for i in range(len(labels)):
        near = [g for g in groups if any(abs(pixels[i] - pixels[j]).max() < touching for j in g)]
        groups = [*(g for g in groups if g not in near), [i, *(j for g in near for j in g)]]
    groups.sort(key=min)
    places = sorted(
        (
            (
                labels[min(g)][0],
                labels[min(g)][1],
                sorted(labels[i][2] for i in g),
                any(labels[i][3] for i in g),
            )
            for g in groups
        ),
        key=lambda place: not place[3],
    )  # the default's label first: it gets the nearest place

    def covered(box: Bbox, own: Any) -> float:
        """Return the area ``box`` covers of labels, points and outside ``ax``, plus a charge per
        point nearer to it than its own."""
        middle = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
        mine = ((middle[0] - own[0]) ** 2 + (middle[1] - own[1]) ** 2) ** 0.5
        nearer = sum(
            1
            for c in centres
            if ((middle[0] - c[0]) ** 2 + (middle[1] - c[1]) ** 2) ** 0.5 < mine - 2 * to_pixels
        )
        outside = box.width * box.height - _intersection(box, panel)
        return sum(_intersection(box, other) for other in taken) + 10 * outside + 200 * nearer

    for x, y, numbers, bold in places:
        own = ax.transData.transform((x, y))
        edge = (
            _DEFAULT_SIZE if bold else _SIZE
        ) ** 0.5 / 2 + 2  # the marker's radius and a gap, in points
        style: dict[str, Any] = {
            "fontsize": "small",
            "fontweight": "bold" if bold else "normal",
            "annotation_clip": False,
        }
        text = ",".join(map(str, numbers))
        probe = ax.annotate(text, (x, y), xytext=(0, 0), textcoords="offset points", **style)
        best: tuple[float, int, tuple[float, float], _Across, _Up] | None = None
        for ring, distance in enumerate(_DISTANCES):
            for across, up, ha, va in _DIRECTIONS:
                offset = (across * (edge + distance), up * (edge + distance))
                probe.xyann = offset
                probe.set_horizontalalignment(ha)
                probe.set_verticalalignment(va)
                cost = covered(probe.get_window_extent(), own)
                if best is None or cost < best[0]:
                    best = (cost, ring, offset, ha, va)
            if best is not None and best[0] == 0:
                break
        probe.remove()
        assert best is not None
        _, ring, offset, ha, va = best
        line: dict[str, Any] | None = {
            "arrowstyle": "-",
            "color": "0.5",
            "linewidth": 0.6,
            "shrinkA": 1,
            "shrinkB": 3,
        }
        note = ax.annotate(
            text,
            (x, y),
            xytext=offset,
            textcoords="offset points",
            ha=ha,
            va=va,
            arrowprops=line if ring > 1 else None,
            **style,
        )
        note.set_in_layout(False)  # placed inside the panel: the layout must not move for it
        taken.append(note.get_window_extent())


def _intersection(a: Bbox, b: Bbox) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width * height if width > 0 and height > 0 else 0.0
