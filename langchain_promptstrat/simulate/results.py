"""What a replay returns: :class:`StrategyRun` (one strategy's per-call figures and their sums),
:class:`SimulationResult` (every run with what is needed to read it), and their JSON form.

:func:`result_to_json` writes what ``promptstrat simulate --json`` prints;
:func:`result_from_json` reads it back (summaries are recomputed from the per-call figures).
Must not replay anything (``engine``) nor format a table or plot (``output``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_promptstrat.cache_rules import ANTHROPIC_WRITE_MULTIPLIER
from langchain_promptstrat.defaults import DEFAULT_CACHED_FRACTION
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.simulate.figures import estimated_cost

__all__ = ["SimulationResult", "StrategyRun", "result_from_json", "result_to_json"]


@dataclass
class StrategyRun:
    """One strategy's replay: per-call figures, in model-call order.

    ``kind`` is ``"ours"`` for registry strategies, ``"peer"`` for the peers, ``"custom"``
    for objects and callables the caller passed; ``options`` the arguments it was built
    with beyond its settings (for instance the ``max_tokens`` target).
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
    """Tokens read from the cache under the provider rule (``cache`` not ``prefix``; see :mod:`~langchain_promptstrat.cache_rules`)."""
    provider_written_tokens: list[int] = field(default_factory=list)
    """Tokens written to the cache under the provider rule (billed at the write multiplier)."""
    recall: list[list[int]] = field(default_factory=list)
    """Per call, the next-action references ``[counted, recalled, old, old recalled, outputs-only, outputs-only recalled, recoverable]``
    (see :mod:`~langchain_promptstrat.simulate.recall`); empty when the replay measured none."""

    @property
    def calls(self) -> int:
        """Return the number of model calls replayed."""
        return len(self.tokens)

    @property
    def total_tokens(self) -> int:
        """Return the prompt tokens sent over the run."""
        return sum(self.tokens)

    @property
    def peak_tokens(self) -> int:
        """Return the largest prompt sent, in tokens."""
        return max(self.tokens, default=0)

    @property
    def mean_reuse(self) -> float:
        """Return the mean over calls of the share of each prompt cached from the previous one."""
        return sum(self.reuse) / len(self.reuse) if self.reuse else 0.0

    @property
    def strategy_seconds(self) -> float:
        """Return the wall time spent inside the strategy over the run."""
        return sum(self.seconds)

    @property
    def degenerate_calls(self) -> int:
        """Return how many prompts sent were degenerate."""
        return sum(self.degenerate)

    @property
    def mean_tokens(self) -> float:
        """Return the mean prompt sent, in tokens: what a strategy keeps of the history, on average."""
        return self.total_tokens / self.calls if self.calls else 0.0

    def recall_summary(self) -> dict[str, Any] | None:
        """Return recall, old recall and outputs-only recall with their reference counts (None when not measured).

        A recall whose count is 0 is None: nothing of that kind was used, so nothing could be lost.
        """
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
        return sum(estimated_cost(t, c, cached_fraction) for t, c in zip(self.tokens, self.cached_tokens))

    def provider_cost(self, cached_fraction: float = DEFAULT_CACHED_FRACTION, write_multiplier: float = 0.0) -> float:
        """Return the run's input cost under the provider rule: reads at ``cached_fraction``, writes at ``write_multiplier``."""
        return sum(
            r * cached_fraction + w * write_multiplier + (t - r - w)
            for t, r, w in zip(self.tokens, self.provider_cached_tokens, self.provider_written_tokens)
        )

    def provider_summary(self, cached_fraction: float = DEFAULT_CACHED_FRACTION, write_multiplier: float = 0.0) -> dict[str, Any]:
        """Return the provider-rule figures: tokens read and written, mean reuse, cost and price multiplier."""
        total = self.total_tokens
        cost = self.provider_cost(cached_fraction, write_multiplier)
        reuse = [r / t if t else 0.0 for t, r in zip(self.tokens, self.provider_cached_tokens)]
        return {
            "cached_tokens": sum(self.provider_cached_tokens),
            "written_tokens": sum(self.provider_written_tokens),
            "cache_reuse": sum(reuse) / len(reuse) if reuse else 0.0,
            "cost_units": cost,
            "price_multiplier": cost / total if total else 0.0,
        }

    def summary(self, cached_fraction: float = DEFAULT_CACHED_FRACTION, price_per_mtok: float | None = None) -> dict[str, Any]:
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
            "strategy_ms_per_call": 1000 * self.strategy_seconds / self.calls if self.calls else 0.0,
            "degenerate_calls": self.degenerate_calls,
            "mean_tokens": self.mean_tokens,
        }
        recall = self.recall_summary()
        if recall is not None:
            data.update(recall)
        if price_per_mtok is not None:
            data["cost_dollars"] = cost * price_per_mtok / 1_000_000
        return data


@dataclass
class SimulationResult:
    """Every replay of one simulated run, with what is needed to read the figures."""

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
    """The transcripts replayed, when the prompts came from files (:mod:`langchain_promptstrat.replay`)."""
    tool_schemas: list[tuple[int, int]] = field(default_factory=list)
    """``(tools, tokens)`` of the tool schemas counted in every prompt, one pair per replayed run (one per file)."""
    recall_measured: bool = False
    """Whether next-action recall was measured (replayed prompts: yes; a simulated run: no, its next actions are scripted)."""

    @property
    def write_multiplier(self) -> float:
        """Return the price multiplier of cache writes under ``cache_rule`` (1.25 for Anthropic, else 0)."""
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
    """Return the result as JSON-ready data: run parameters, then per strategy its summary and per-call figures."""
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
        "strategies": [
            {
                "name": run.name,
                "kind": run.kind,
                "options": dict(run.options),
                "summary": run.summary(result.cached_fraction, result.price_per_mtok),
                **({"provider_summary": run.provider_summary(result.cached_fraction, result.write_multiplier)}
                   if result.cache_rule != "prefix" else {}),
                "per_call": {
                    "tokens": list(run.tokens),
                    "cached_tokens": list(run.cached_tokens),
                    "reuse": list(run.reuse),
                    "seconds": list(run.seconds),
                    "degenerate": list(run.degenerate),
                    **({"recall": [list(c) for c in run.recall]} if result.recall_measured else {}),
                    **({"provider_cached_tokens": list(run.provider_cached_tokens),
                        "provider_written_tokens": list(run.provider_written_tokens)}
                       if result.cache_rule != "prefix" else {}),
                },
            }
            for run in result.runs
        ],
    }


def result_from_json(data: Mapping[str, Any]) -> SimulationResult:
    """Return the :class:`SimulationResult` that :func:`result_to_json` wrote (summaries are recomputed)."""
    try:
        runs = [
            StrategyRun(name=s["name"], kind=s["kind"], options=dict(s.get("options") or {}), **{k: list(v) for k, v in s["per_call"].items()})
            for s in data["strategies"]
        ]
        counter = data["token_counter"]
        return SimulationResult(
            runs=runs,
            n_tool_calls=data["n_tool_calls"],
            seed=data["seed"],
            model_calls=data["model_calls"],
            cached_fraction=data["cached_fraction"],
            max_tokens=data["max_tokens"],
            token_counter=counter["name"],
            exact_tokens=counter["exact"],
            price_per_mtok=data.get("price_per_mtok"),
            notes=list(data.get("notes") or []),
            cache_rule=data.get("cache_rule", "prefix"),
            files=list(data.get("files") or []),
            tool_schemas=[(int(t["tools"]), int(t["tokens"])) for t in data.get("tool_schemas") or []],
            recall_measured=bool(data.get("recall_measured", False)),
        )
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"not a simulation result written by result_to_json: missing or malformed {exc}") from None
