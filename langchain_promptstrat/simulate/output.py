"""A replay's result for people: the aligned text table ``promptstrat simulate`` prints, and the plot.

:func:`format_table` lays the rows out with :mod:`langchain_promptstrat.text_table` (the
formatter the CLI uses too); :func:`plot` draws tokens and cache reuse per call with
matplotlib, imported only when a plot is asked for (the ``plot`` extra).

Must not compute a figure (it reads a :class:`~langchain_promptstrat.simulate.results.SimulationResult`).
"""

from __future__ import annotations

import os
from typing import Any

from langchain_promptstrat.cache_rules import ANTHROPIC_WRITE_MULTIPLIER
from langchain_promptstrat.ceiling import DEFAULT_CEILING
from langchain_promptstrat.defaults import DEFAULT_MAX_TOKENS, DEFAULT_TOOL_CALLS
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.simulate.engine import DEFAULT_LIST_ROW
from langchain_promptstrat.simulate.recall import OLD_AFTER
from langchain_promptstrat.simulate.results import SimulationResult
from langchain_promptstrat.text_table import fit_lines, render_table

__all__ = ["format_table", "plot"]


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base else "-"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value >= 0.1 else f"{1000 * value:.1f} ms"


def _ceiling_line(result: SimulationResult) -> list[str]:
    """Return the header line saying which ceiling the runs that take one were given and where it came from (none if no run takes one).

    simulate's default differs from the one ``apply``, ``stats`` and the agents use, so a
    reader comparing them must see which one a table was made with.
    """
    targeted = [r.name for r in result.runs if r.options.get("max_tokens") or r.options.get("trigger")]
    if not targeted:
        return []
    source = (
        f"simulate's default, low enough that every strategy and peer acts on its {DEFAULT_TOOL_CALLS}-call run; apply and stats use "
        f"PROMPTSTRAT_MAX_TOKENS, else {DEFAULT_CEILING:,}; an agent also its model's profile"
        if result.max_tokens == DEFAULT_MAX_TOKENS else "from --max-tokens or max_tokens="
    )
    return [
        f"Ceiling {result.max_tokens:,} tokens ({source}) for: {', '.join(targeted)} (trim_messages' max_tokens, "
        "ClearToolUsesEdit's trigger, the max_tokens of strategies that take one)."
    ]


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
    columns.append("mean prompt")
    if result.recall_measured:
        columns += ["recall", "old recall", "outputs-only"]
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
        row.append(f"{s['mean_tokens']:,.0f}")
        if result.recall_measured:
            row += [_share(s.get("recall")), _share(s.get("old_recall")), _share(s.get("outputs_only_recall"))]
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
    header = [source, *_ceiling_line(result), f"Tokens: {result.token_counter} ({exact}), the same counter for every row{ids}{_schemas_text(result)}. "
        f"Cached input billed at {result.cached_fraction:g} of the input price{price}.",
    ]
    out = [*fit_lines(header, width), "", *render_table(columns, rows, width), ""]
    footnotes = [
        "cache reuse: mean over calls of the share of each prompt whose leading messages repeat the previous",
        "  prompt's byte for byte (whole messages: an upper bound of a provider's block cache).",
        f"cost: input-token units, cached tokens at {result.cached_fraction:g}. strategy time: wall time inside the strategy.",
        "degenerate: prompts holding only system messages, or without the task (first user message) or the last user message.",
        "mean prompt: tokens per prompt sent, on average (what the strategy keeps of the history).",
    ]
    if result.recall_measured:
        first = result.runs[0].recall_summary() if result.runs else None
        counts = (f" ({first['references']:,} references, {first['old_references']:,} old, "
                  f"{first['outputs_only_references']:,} outputs-only)") if first else ""
        footnotes += [
            "recall: share of the code-like words of each real next action, found in an earlier tool output, that the prompt",
            f"  still holds in original text{counts}; old: last seen {OLD_AFTER}+ tool outputs earlier; outputs-only: old and in no",
            "  other message. Defined in langchain_promptstrat.simulate.recall.",
        ]
    else:
        footnotes.append("recall: not measured, a simulated run has no real next action (replay transcripts to measure it).")
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


def _is_default(name: str) -> bool:
    """Return whether the row ``name`` is the default list (its inbox aside: a replay has none)."""
    return name.split("#")[0] == DEFAULT_LIST_ROW


def plot(result: SimulationResult, path: str | os.PathLike[str]) -> None:
    """Write a figure to ``path``: prompt tokens and cache reuse per call, one line per strategy, and cost against recall.

    The default strategy's line is drawn bold. When recall was measured (replayed
    transcripts) and a ``none`` row exists, a third panel puts each strategy at its cost
    (÷ none) and its outputs-only recall (filled) and old recall (hollow), one point per
    strategy. Needs matplotlib (the ``plot`` extra); it is imported here, not with the
    package. The figure is drawn without pyplot, so no display or backend choice is
    involved; the file format follows the suffix (``.png``, ``.svg``, ``.pdf``).
    """
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, PercentFormatter
    except ImportError:
        raise ConfigError(f"plotting needs matplotlib, which is not installed: {install_hint('plot')}") from None
    frontier = result.recall_measured and result.baseline is not None and len(result.runs) > 1
    fig = Figure(figsize=(16, 7.5) if frontier else (11, 7.5), layout="constrained")
    if frontier:
        grid = fig.add_gridspec(2, 2, width_ratios=(1.6, 1))
        tokens_ax = fig.add_subplot(grid[0, 0])
        reuse_ax = fig.add_subplot(grid[1, 0], sharex=tokens_ax)
        _plot_frontier(result, fig.add_subplot(grid[:, 1]))
    else:
        tokens_ax, reuse_ax = fig.subplots(2, 1, sharex=True)
    for i, run in enumerate(result.runs):
        bold = _is_default(run.name)
        style: dict[str, Any] = {"color": f"C{i % 10}", "linewidth": 2.4 if bold else 1.0, "alpha": 1.0 if bold else 0.6,
                 "linestyle": "--" if run.kind == "peer" else "-", "zorder": 3 if bold else 2}
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
    reuse_ax.set_xlabel("model call (files one after another)" if len(result.files) > 1 else "model call")
    reuse_ax.grid(True, alpha=0.3)
    if result.n_tool_calls is not None:
        title = f"Simulated agent run: {result.n_tool_calls:,} tool calls, {result.model_calls:,} model calls, seed {result.seed}"
    elif result.files:
        title = f"Replayed transcripts: {len(result.files):,} files, {result.model_calls:,} model calls"
    else:
        title = f"Replayed prompts: {result.model_calls:,} model calls"
    fig.suptitle(title)
    fig.savefig(os.fspath(path), dpi=120)


def _plot_frontier(result: SimulationResult, ax: Any) -> None:
    """Draw one point per strategy: cost ÷ none across, outputs-only recall (filled) and old recall (hollow) up."""
    from matplotlib.ticker import PercentFormatter

    base = result.baseline
    assert base is not None
    base_cost = base.cost(result.cached_fraction) or 1.0
    for i, run in enumerate(result.runs):
        figures = run.recall_summary() or {}
        cost = run.cost(result.cached_fraction) / base_cost
        bold = _is_default(run.name)
        color = f"C{i % 10}"
        marker = "s" if run.kind == "peer" else "o"
        size = 140 if bold else 60
        only, old = figures.get("outputs_only_recall"), figures.get("old_recall")
        if only is not None:
            ax.scatter([cost], [only], s=size, color=color, marker=marker, zorder=3, edgecolors="black" if bold else "none")
        if old is not None:
            ax.scatter([cost], [old], s=size, facecolors="none", edgecolors=color, marker=marker, zorder=3)
        label = f"{run.name} (peer)" if run.kind == "peer" else run.name
        y = only if only is not None else old
        if y is not None:
            ax.annotate(label, (cost, y), textcoords="offset points", xytext=(6, 4), fontsize="x-small",
                        fontweight="bold" if bold else "normal")
    ax.set_xlabel("cost ÷ none (cached input at %g)" % result.cached_fraction)
    ax.set_ylabel("next-action recall: outputs-only (filled), old (hollow)")
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(-0.02, 1.05)
    ax.grid(True, alpha=0.3)
    ax.set_title("cost against what the agent used (up and left is better)", fontsize="medium")
