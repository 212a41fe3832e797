"""Specification of the replay engine: cache reuse, cost, degenerate prompts, peers, output
formats."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from realruns import realruns_dir

from langchain_promptstrat import (
    ConfigError,
    PromptStrategy,
    Settings,
    UnknownStrategyError,
    available_strategies,
    register_strategy,
    unregister_strategy,
)
from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.messages import mark
from langchain_promptstrat.messages.references import unresolved_references
from langchain_promptstrat.registry import BUILTIN_STRATEGIES
from langchain_promptstrat.replay import simulate_files
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.simulate import (
    AGENT_RUN_TOOLS,
    PEER_CLEAR_TOOL_USES,
    PEER_TRIM_MESSAGES,
    SimulationResult,
    StrategyRun,
    build_strategy,
    cache_reuse,
    canonical_message,
    default_rows,
    default_strategy_names,
    estimated_cost,
    format_table,
    is_degenerate,
    plot,
    result_from_json,
    result_to_json,
    shared_prefix_length,
    simulate,
)
from langchain_promptstrat.strategies.dedupe_outputs import DedupeOutputs
from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.testing import iter_agent_run
from langchain_promptstrat.tokens import TokenCounter, as_token_counter, tool_schema_tokens

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CALLS = 150
"""Tool calls of the engine tests' runs: long enough for shorten_tools to act, short enough to be
quick."""


def chars(messages: Sequence[BaseMessage]) -> int:
    """Count one token per character of content, so expected figures are exact."""
    return sum(len(m.content) for m in messages)


def conversation(*texts: str) -> list[BaseMessage]:
    """Return a system message then one human message per text."""
    return [SystemMessage("s" * 10), *(HumanMessage(t) for t in texts)]


@pytest.fixture(scope="module")
def compared() -> SimulationResult:
    """A 150-call replay of none and shorten_tools with both peers at a 20,000-token target."""
    return simulate(
        ["none", "shorten_tools"],
        n_tool_calls=CALLS,
        seed=0,
        peers=True,
        max_tokens=20_000,
        progress=False,
    )


class TestCanonicalMessage:
    def test_ids_and_metadata_are_not_part_of_what_a_provider_sees(self) -> None:
        """Two messages differing only in id and response_metadata serialise identically."""
        a = AIMessage("x", id="one", response_metadata={"model": "a"})
        b = AIMessage("x", id="two", response_metadata={"model": "b"})
        assert canonical_message(a) == canonical_message(b)

    def test_tool_calls_and_tool_call_ids_are_part_of_it(self) -> None:
        """A different call argument or tool_call_id gives a different serialisation."""
        call = {"name": "f", "args": {"q": 1}, "id": "c1", "type": "tool_call"}
        assert canonical_message(AIMessage("", tool_calls=[call])) != canonical_message(
            AIMessage("", tool_calls=[{**call, "args": {"q": 2}}])
        )
        assert canonical_message(ToolMessage("r", tool_call_id="c1")) != canonical_message(
            ToolMessage("r", tool_call_id="c2")
        )


class TestCacheReuse:
    def test_identical_prompts_reuse_everything_after_the_first(self) -> None:
        """The same prompt three times reuses 0, then 1.0, then 1.0."""
        prompt = conversation("task")
        assert cache_reuse([prompt, prompt, list(prompt)], chars) == [0.0, 1.0, 1.0]

    def test_a_changed_first_message_reuses_nothing(self) -> None:
        """Changing the system message breaks the whole prefix, even if the rest is identical."""
        first = conversation("task", "more")
        second = [SystemMessage("changed"), *first[1:]]
        assert cache_reuse([first, second], chars) == [0.0, 0.0]

    def test_message_ids_are_ignored(self) -> None:
        """Re-created messages with new ids still count as cached."""
        first = [SystemMessage("sys", id="a"), HumanMessage("task", id="b")]
        second = [SystemMessage("sys", id="x"), HumanMessage("task", id="y")]
        assert cache_reuse([first, second], chars) == [0.0, 1.0]

    def test_an_appended_prompt_reuses_the_previous_prompt_share(self) -> None:
        """Appending 10 characters to a 14-character prompt reuses 14 of 24."""
        first = [SystemMessage("s" * 10), HumanMessage("task")]
        second = [*first, AIMessage("a" * 10)]
        assert cache_reuse([first, second], chars) == [0.0, pytest.approx(14 / 24)]

    def test_the_prefix_stops_at_the_first_different_message(self) -> None:
        """A change in message 2 of 3 keeps only message 1 cached."""
        first = conversation("aaaa", "bbbb")
        second = conversation("aaaa", "cccc")
        assert shared_prefix_length(first, second) == 2
        assert cache_reuse([first, second], chars) == [0.0, pytest.approx(14 / 18)]

    def test_the_default_counter_counts_the_cached_prefix_in_tokens(self) -> None:
        """With the default token counter an unchanged prompt reuses 1.0, and a grown one the
        previous prompt's share of its tokens."""
        prompts = list(iter_agent_run(5, seed=1))
        assert cache_reuse([prompts[-1], prompts[-1]]) == [0.0, 1.0]
        previous, current = prompts[-2], prompts[-1]
        assert current[: len(previous)] == previous  # the agent loop only appends
        tokens = as_token_counter(None)
        assert chars(previous) / chars(current) != pytest.approx(
            tokens(previous) / tokens(current)
        )  # tokens, not characters
        assert cache_reuse([previous, current]) == [
            0.0,
            pytest.approx(tokens(previous) / tokens(current)),
        ]


class TestCost:
    def test_cached_tokens_are_billed_at_the_fraction(self) -> None:
        """1,000 tokens of which 800 cached at 0.1 cost 80 + 200 = 280 units."""
        assert estimated_cost(1_000, 800, 0.1) == pytest.approx(280)

    def test_the_fraction_bounds_give_full_price_and_uncached_only(self) -> None:
        """At 1.0 every token costs one unit; at 0.0 only uncached tokens cost."""
        assert estimated_cost(1_000, 800, 1.0) == 1_000
        assert estimated_cost(1_000, 800, 0.0) == 200

    def test_a_run_sums_its_calls_and_reports_the_multiplier(self) -> None:
        """Two calls of (100, 0) and (200, 100) at 0.5 cost 100 + 150 = 250, a multiplier of
        250/300."""
        run = StrategyRun(
            "x",
            "ours",
            tokens=[100, 200],
            cached_tokens=[0, 100],
            reuse=[0.0, 0.5],
            seconds=[0.0, 0.0],
            degenerate=[False, False],
        )
        summary = run.summary(0.5, price_per_mtok=2.0)
        assert summary["cost_units"] == pytest.approx(250)
        assert summary["price_multiplier"] == pytest.approx(250 / 300)
        assert summary["cost_dollars"] == pytest.approx(250 * 2.0 / 1e6)
        assert summary["cache_reuse"] == pytest.approx(
            0.25
        )  # the mean of the per-call reuse (0.0 + 0.5) / 2


class TestIsDegenerate:
    def test_only_system_messages_is_degenerate(self) -> None:
        """A prompt trimmed down to its system message, or to nothing, is degenerate."""
        before = conversation("task")
        assert is_degenerate(before, before[:1])
        assert is_degenerate(before, [])

    def test_losing_the_last_user_message_is_degenerate(self) -> None:
        """Dropping the newest user message or the task (the first one) is degenerate; dropping one
        in between is not."""
        before = conversation("task", "harness: no tool calls found", "follow-up")
        assert is_degenerate(before, [before[0], before[1], before[2]])
        assert is_degenerate(before, [before[0], before[3]])
        assert not is_degenerate(before, [before[0], before[1], before[3]])

    def test_a_recreated_user_message_with_another_id_still_counts(self) -> None:
        """A copy of the last user message with a new id keeps the prompt sound."""
        before = conversation("task")
        assert not is_degenerate(before, [before[0], HumanMessage("task", id="other")])

    def test_a_strategy_notice_is_not_a_user_message(self) -> None:
        """A notice marked by a strategy is neither required nor enough to keep the prompt sound."""
        notice = mark(HumanMessage("note"), "inbox_delivery", notice=True)
        before = [*conversation("task"), notice]
        assert not is_degenerate(before, before)
        assert is_degenerate(before, [before[0], notice])


class NeedsModel(PromptStrategy):
    """A built-in stand-in that cannot be built from settings alone (like ``summary``)."""

    strategy_name = "needs_model"

    def __init__(
        self, settings: Settings | None = None, *, model: object, **overrides: Any
    ) -> None:
        super().__init__(settings, **overrides)
        self.model = model

    def compact(
        self, messages: Sequence[BaseMessage], *, save_file: str | os.PathLike[str] | None = None
    ) -> Compacted:
        return Compacted(list(messages), make_report(self.strategy_name, messages, messages))


class Ladder(PromptStrategy):
    """A token-target stand-in: keeps the newest messages under ``max_tokens`` characters."""

    strategy_name = "ladder_probe"

    def __init__(
        self, settings: Settings | None = None, *, max_tokens: int, **overrides: Any
    ) -> None:
        super().__init__(settings, **overrides)
        self.max_tokens = max_tokens

    def compact(
        self, messages: Sequence[BaseMessage], *, save_file: str | os.PathLike[str] | None = None
    ) -> Compacted:
        return Compacted(list(messages), make_report(self.strategy_name, messages, messages))


@pytest.fixture
def ladder_registered() -> Iterator[str]:
    """The Ladder stand-in registered as ``ladder_probe`` for the duration of a test."""
    register_strategy("ladder_probe", Ladder)
    yield "ladder_probe"
    unregister_strategy("ladder_probe")


class TestBuildStrategy:
    def test_a_strategy_taking_max_tokens_gets_the_target(self, ladder_registered: str) -> None:
        """A constructor with max_tokens is built with the replay's target, and says so."""
        strategy, options = build_strategy(ladder_registered, max_tokens=1234)
        assert isinstance(strategy, Ladder) and strategy.max_tokens == 1234
        assert options == {"max_tokens": 1234}

    def test_a_strategy_without_max_tokens_is_built_from_settings(self) -> None:
        """shorten_tools takes no target: it is built as get_strategy builds it, with no options."""
        strategy, options = build_strategy("shorten_tools", max_tokens=1234)
        assert strategy.strategy_name == "shorten_tools"
        assert options == {}

    def test_unknown_names_raise_the_registry_error(self) -> None:
        """An unknown name raises UnknownStrategyError listing the known ones."""
        with pytest.raises(UnknownStrategyError, match="known: .*none"):
            build_strategy("no_such_strategy")


class TestDefaultStrategyNames:
    def test_none_comes_first_and_every_name_is_available(self) -> None:
        """The default list starts with none and names only installed strategies; a replay adds the
        default list as one pipeline row."""
        names = default_strategy_names()
        assert names[0] == "none"
        assert "shorten_tools" in names
        assert set(names) <= set(available_strategies()) and len(set(names)) == len(names)
        assert default_rows() == [*names, "dedupe_outputs,shorten_tools_epoch_stable"]

    def test_strategies_using_the_save_file_are_left_out(self) -> None:
        """The inbox would only repeat none in a replay without an inbox, so it is not a default."""
        assert "inbox" not in default_strategy_names()

    def test_a_built_in_needing_more_than_settings_is_left_out(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A built-in whose constructor needs a model is skipped, not an error."""
        monkeypatch.setitem(BUILTIN_STRATEGIES, "needs_model", f"{__name__}:NeedsModel")
        assert "needs_model" in available_strategies()
        assert "needs_model" not in default_strategy_names()


class TestSimulate:
    def test_none_grows_and_keeps_the_cache(self, compared: SimulationResult) -> None:
        """The append-only none strategy sends ever larger prompts that mostly repeat the previous
        one."""
        none = compared.run("none")
        assert none.tokens == sorted(none.tokens)
        assert none.mean_reuse > 0.9
        assert none.reuse[0] == 0.0

    def test_shorten_tools_sends_fewer_tokens_than_none(self, compared: SimulationResult) -> None:
        """On a 150-call run shorten_tools sends fewer tokens in total and at peak than none."""
        assert compared.run("shorten_tools").total_tokens < compared.run("none").total_tokens
        assert compared.run("shorten_tools").peak_tokens < compared.run("none").peak_tokens

    def test_peers_run_on_the_same_calls_with_their_target(
        self, compared: SimulationResult
    ) -> None:
        """Both peers replay every call, and trim_messages never exceeds its target."""
        for name in (PEER_TRIM_MESSAGES, PEER_CLEAR_TOOL_USES):
            run = compared.run(name)
            assert run.kind == "peer"
            assert run.calls == compared.model_calls == compared.run("none").calls
            assert run.total_tokens < compared.run("none").total_tokens
            assert len(run.seconds) == len(run.reuse) == len(run.degenerate) == run.calls
        assert compared.run(PEER_TRIM_MESSAGES).peak_tokens <= 20_000
        assert compared.run(PEER_CLEAR_TOOL_USES).options["trigger"] == 20_000

    def test_trim_messages_degenerates_in_a_single_task_run(self) -> None:
        """Without user turns, trim_messages(start_on="human") ends up sending the system message
        alone."""
        result = simulate(
            ["none"],
            n_tool_calls=60,
            peers=True,
            max_tokens=5_000,
            progress=False,
            run_options={"user_turn_every": None},
        )
        assert result.run(PEER_TRIM_MESSAGES).degenerate_calls > 0
        assert result.run("none").degenerate_calls == 0

    def test_the_peers_leave_the_replayed_prompts_untouched(self) -> None:
        """The middleware edits a copy: the prompts given to the replay serialise the same
        afterwards."""
        prompts = list(iter_agent_run(40, seed=3))
        before = [[canonical_message(m) for m in p] for p in prompts]
        simulate([], prompts=prompts, peers=True, max_tokens=3_000, progress=False)
        assert [[canonical_message(m) for m in p] for p in prompts] == before

    def test_objects_callables_and_pipelines_are_replayed_under_their_names(self) -> None:
        """A PromptStrategy, a plain callable and a comma-joined pipeline each get a labelled
        run."""

        def keep_last_two(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
            return list(messages[-2:])

        result = simulate(
            [NeedsModel(model=None), keep_last_two, "shorten_tools,none", "none", "none"],
            n_tool_calls=10,
            progress=False,
        )
        assert [r.name for r in result.runs] == [
            "needs_model",
            "keep_last_two",
            "shorten_tools,none",
            "none",
            "none#2",
        ]
        assert result.run("keep_last_two").kind == "custom"

    def test_the_token_counter_is_injected_everywhere(self) -> None:
        """An injected counter decides every figure, including the peers' (the schemas, text not
        messages, at 4 characters a token)."""
        result = simulate(
            ["none"],
            n_tool_calls=10,
            token_counter=chars,
            peers=True,
            max_tokens=10**9,
            progress=False,
        )
        prompts = list(iter_agent_run(10))
        schemas = tool_schema_tokens(AGENT_RUN_TOOLS, chars)
        assert result.run("none").tokens == [chars(p) + schemas for p in prompts]
        assert result.run(PEER_TRIM_MESSAGES).tokens == result.run("none").tokens
        assert result.exact_tokens is None and result.token_counter == "chars"

    def test_without_langchain_the_middleware_peer_is_left_out_with_a_note(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """When langchain's agent middleware cannot be imported, the other peers still run and a
        note says why."""
        monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)
        result = simulate([], n_tool_calls=5, peers=True, progress=False)
        assert [r.name for r in result.runs] == [
            PEER_TRIM_MESSAGES,
            "LastNObservations(n=10)",
            "LastNObservations(n=10,polling=5)",
        ]
        assert any(install_hint("agents") in note for note in result.notes)
        assert "note: ClearToolUsesEdit left out" in format_table(result)

    def test_invalid_arguments_raise_config_errors(self) -> None:
        """A cached fraction outside [0, 1] or a non-positive target is refused with a
        ConfigError."""
        with pytest.raises(ConfigError, match="cached_fraction"):
            simulate(["none"], n_tool_calls=1, cached_fraction=1.5)
        with pytest.raises(ConfigError, match="max_tokens"):
            simulate(["none"], n_tool_calls=1, max_tokens=0)


class TestToolSchemas:
    """The bound tools' schemas are part of every request: the simulation counts them on every
    call."""

    COUNT = TokenCounter("cl100k_base")

    def test_every_call_of_a_simulated_run_matches_a_schema(self) -> None:
        """The simulated agent calls only tools of AGENT_RUN_TOOLS, with arguments their schemas
        declare and require."""
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in AGENT_RUN_TOOLS}
        calls = [
            c
            for m in list(iter_agent_run(600, seed=5))[-1]
            if isinstance(m, AIMessage)
            for c in m.tool_calls
        ]
        assert {c["name"] for c in calls} == set(schemas)
        for c in calls:
            params = schemas[c["name"]]
            assert set(params["required"]) <= set(c["args"]) <= set(params["properties"])

    def test_a_simulated_run_counts_the_schemas_in_every_prompt_and_caches_them(self) -> None:
        """tokens = messages (ids included) + the eight schemas; from the second call the schemas
        are part of the cached prefix."""
        result = simulate(["none"], n_tool_calls=20, token_counter=self.COUNT, progress=False)
        schemas = tool_schema_tokens(AGENT_RUN_TOOLS, self.COUNT)
        prompts = list(iter_agent_run(20))
        run = result.run("none")
        assert schemas > 1_000 and result.tool_schemas == [(8, schemas)]
        assert run.tokens == [self.COUNT(p) + schemas for p in prompts]
        assert run.cached_tokens == [0] + [self.COUNT(p) + schemas for p in prompts[:-1]]
        assert "the 8 tool schemas (" in format_table(
            result
        ) and "call ids included" in format_table(result)

    def test_no_tools_counts_the_messages_alone(self) -> None:
        """tools=[] leaves the schemas out; replayed prompts have none unless given."""
        prompts = list(iter_agent_run(10))
        plain = simulate(
            ["none"], n_tool_calls=10, token_counter=self.COUNT, tools=[], progress=False
        ).run("none")
        replayed = simulate(["none"], prompts=prompts, token_counter=self.COUNT, progress=False)
        assert plain.tokens == replayed.run("none").tokens == [self.COUNT(p) for p in prompts]
        assert replayed.tool_schemas == [(0, 0)] and "no tool schemas" in format_table(replayed)

    def test_the_bounded_default_counts_the_schemas_against_its_ceiling(self) -> None:
        """Given the tools as the middleware gives them, the default's prompt plus the schemas stays
        under the ceiling; without them it would not."""
        options: dict[str, Any] = {
            "n_tool_calls": 150,
            "token_counter": self.COUNT,
            "max_tokens": 12_000,
            "progress": False,
        }
        given = simulate(["shorten_tools_epoch_stable"], **options).run(
            "shorten_tools_epoch_stable"
        )
        unaware = simulate(["shorten_tools_epoch_stable"], tools=[], **options).run(
            "shorten_tools_epoch_stable"
        )
        schemas = tool_schema_tokens(AGENT_RUN_TOOLS, self.COUNT)
        assert given.peak_tokens <= 12_000 < max(unaware.tokens) + schemas

    def test_provider_rules_see_the_schemas_first(self) -> None:
        """Under the OpenAI rule a call whose messages share nothing with the previous prompt still
        reads the schemas."""

        def first_changes(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
            # a system prompt of its own, so the prompt floor has nothing to restore
            return [SystemMessage(f"turn {len(messages)}"), *messages[1:]]

        result = simulate(
            [first_changes],
            n_tool_calls=10,
            token_counter=self.COUNT,
            cache="openai",
            progress=False,
        )
        run = result.runs[0]
        schemas = tool_schema_tokens(AGENT_RUN_TOOLS, self.COUNT)
        assert run.provider_cached_tokens[0] == 0
        assert all(
            r == 1024 + 128 * ((schemas - 1024) // 128) for r in run.provider_cached_tokens[1:]
        )
        assert run.cached_tokens[1:] == [schemas] * (run.calls - 1)

    def test_the_json_records_the_schemas(self) -> None:
        """result_to_json writes the tools and tokens of the schemas; result_from_json reads them
        back."""
        result = simulate(["none"], n_tool_calls=5, token_counter=self.COUNT, progress=False)
        data = json.loads(json.dumps(result_to_json(result)))
        assert data["tool_schemas"] == [
            {"tools": 8, "tokens": tool_schema_tokens(AGENT_RUN_TOOLS, self.COUNT)}
        ]
        assert result_from_json(data).tool_schemas == result.tool_schemas


class TestProgress:
    def test_a_hook_is_called_after_every_prompt_of_every_run(self) -> None:
        """A callable progress hook sees (label, done, total) once per prompt per strategy."""
        seen = []
        result = simulate(
            ["none", "shorten_tools"], n_tool_calls=10, progress=lambda *a: seen.append(a)
        )
        assert len(seen) == 2 * result.model_calls
        assert seen[-1] == ("shorten_tools", result.model_calls, result.model_calls)

    def test_progress_true_draws_a_bar_on_stderr(self, capsys: pytest.CaptureFixture[str]) -> None:
        """progress=True draws the tqdm bar on stderr even when it is not a terminal, and nothing on
        stdout."""
        simulate(["none"], n_tool_calls=10, progress=True)
        captured = capsys.readouterr()
        assert "call" in captured.err and captured.out == ""

    def test_nothing_is_drawn_when_stderr_is_not_a_terminal(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The default bar stays quiet when stderr is captured."""
        simulate(["none"], n_tool_calls=10)
        assert capsys.readouterr().err == ""


class TestJson:
    def test_the_json_round_trips(self, compared: SimulationResult) -> None:
        """result_from_json(json of result_to_json(result)) equals the result."""
        data = json.loads(json.dumps(result_to_json(compared)))
        assert result_from_json(data) == compared

    def test_the_json_carries_summaries_and_per_call_figures(
        self, compared: SimulationResult
    ) -> None:
        """Each strategy has its summary figures and one per-call entry per model call."""
        data = result_to_json(compared)
        assert data["baseline"] == "none"
        assert [entry["name"] for entry in data["strategies"]] == [
            run.name for run in compared.runs
        ]
        assert len(data["strategies"]) == 6  # none, shorten_tools and the four peer rows
        for entry in data["strategies"]:
            assert {
                "tokens_sent",
                "peak_tokens",
                "cache_reuse",
                "cost_units",
                "strategy_seconds",
                "degenerate_calls",
            } <= set(entry["summary"])
            assert all(len(v) == data["model_calls"] for v in entry["per_call"].values())

    def test_foreign_json_is_refused(self) -> None:
        """Data that result_to_json did not write raises a ConfigError."""
        with pytest.raises(ConfigError, match="result_to_json"):
            result_from_json({"strategies": []})


class TestUnresolvedReferences:
    def test_the_default_list_leaves_none_where_its_two_strategies_alone_leave_some(self) -> None:
        """Each call counts references whose lines are not where they say: none via the apply path.

        The same two strategies applied one after the other outside the apply path leave
        references to outputs they shortened or dropped: the column counts what
        unresolved_references counts, so it would show them.
        """
        prompts = list(iter_agent_run(CALLS, seed=2))
        default_list = "dedupe_outputs,shorten_tools_epoch_stable"
        result = simulate([default_list], prompts=prompts, max_tokens=12_000, progress=False)
        run = result.runs[0]
        assert run.unresolved == [0] * len(prompts)
        data = result_to_json(result)["strategies"][0]
        assert data["summary"]["unresolved_references"] == 0
        assert data["per_call"]["unresolved"] == run.unresolved
        table = format_table(result).splitlines()
        assert "unresolved refs" in next(line for line in table if line.startswith("strategy "))
        dedupe, bounded = DedupeOutputs(), ShortenToolsEpochStable(max_tokens=12_000)
        alone = [bounded.compact(dedupe.compact(p).messages).messages for p in prompts]
        left = [unresolved_references(p, sent) for p, sent in zip(prompts, alone, strict=False)]
        assert sum(left) > 0


class TestFormatTable:
    def test_every_run_has_a_row_and_peers_are_marked(self, compared: SimulationResult) -> None:
        """The table names each strategy, marks peers, and compares with none."""
        table = format_table(compared)
        for line_start in (
            "none ",
            "shorten_tools ",
            "trim_messages (peer)",
            "ClearToolUsesEdit (peer)",
        ):
            assert any(line.startswith(line_start) for line in table.splitlines())
        assert "cost/none" in table and "1.00x" in table
        assert (
            "Ceiling 20,000 tokens (--max-tokens) for the strategies that take one and the peers."
            in table
        )

    def test_a_price_adds_a_dollar_column(self) -> None:
        """With price_per_mtok the table shows the cost in dollars."""
        result = simulate(["none"], n_tool_calls=5, price_per_mtok=3.0, progress=False)
        assert "cost ($)" in format_table(result)
        assert "cost/none" not in format_table(result)


class TestPlot:
    def test_plot_writes_a_png(self, compared: SimulationResult, tmp_path: Path) -> None:
        """plot writes a non-empty PNG file."""
        path = tmp_path / "sim.png"
        plot(compared, path)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 10_000

    def test_the_frontier_labels_overlap_nothing_on_a_real_transcript(self, tmp_path: Path) -> None:
        """On a real replay, where several strategies score alike, every point's number is readable:
        no label covers another label or a point, none leaves the panel."""
        files = sorted(realruns_dir("converted").glob("*.jsonl"))
        chosen = [f for f in files if "django-15252" in f.name] or files[
            :1
        ]  # five strategies tie at 100% recall there
        result = simulate_files(chosen, None, peers=True, progress=False)
        assert_readable(plot(result, tmp_path / "real.png"), result)

    def test_the_frontier_labels_overlap_nothing_on_the_seeded_run(self, tmp_path: Path) -> None:
        """The seeded run's prompts, replayed so recall is measured, crowd a dozen points near cost
        0.8: each number still finds a free place."""
        result = simulate(
            None, prompts=list(iter_agent_run(CALLS, seed=0)), peers=True, progress=False
        )
        assert_readable(plot(result, tmp_path / "seeded.svg"), result)

    def test_the_key_of_a_simulated_run_sits_outside_the_panels(
        self, compared: SimulationResult, tmp_path: Path
    ) -> None:
        """Without recall there is no frontier; the key still sits under the panels, so no strategy
        name covers a line."""
        fig = plot(compared, tmp_path / "sim.png")
        key = fig.legends[0]
        assert [t.get_text() for t in key.get_texts()][: len(compared.runs)] == [
            f"{r.name} (peer)" if r.kind == "peer" else r.name for r in compared.runs
        ]
        assert not any(key.get_window_extent().overlaps(ax.get_window_extent()) for ax in fig.axes)

    def test_missing_matplotlib_names_the_plot_extra(
        self, compared: SimulationResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without matplotlib, plot raises a ConfigError telling how to install the plot extra."""
        monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
        with pytest.raises(ConfigError, match=re.escape(install_hint("plot"))):
            plot(compared, tmp_path / "x.png")


def assert_readable(fig: Figure, result: SimulationResult) -> None:
    """Assert the frontier panel numbers every strategy once, with labels that overlap no label, no
    point and stay in the panel, and a key outside the panels."""
    frontier = next(ax for ax in fig.axes if ax.get_xlabel().startswith("cost"))
    panel = frontier.get_window_extent()
    labels = [(t.get_text(), t.get_window_extent()) for t in frontier.texts]
    numbers = sorted(int(n) for text, _ in labels for n in text.split(","))
    assert numbers == list(range(1, len(result.runs) + 1))
    for i, (text, box) in enumerate(labels):
        assert (
            panel.x0 <= box.x0 and box.x1 <= panel.x1 and panel.y0 <= box.y0 and box.y1 <= panel.y1
        ), f"{text} leaves the panel"
        for other, other_box in labels[i + 1 :]:
            assert not box.overlaps(other_box), f"labels {text} and {other} overlap"
        for collection in frontier.collections:
            for x, y in collection.get_offset_transform().transform(collection.get_offsets()):
                assert not box.contains(x, y), f"label {text} covers a point's centre"
    key = fig.legends[0]
    assert [t.get_text() for t in key.get_texts()][: len(result.runs)] == [
        f"{i}  {r.name} (peer)" if r.kind == "peer" else f"{i}  {r.name}"
        for i, r in enumerate(result.runs, 1)
    ]
    assert not any(key.get_window_extent().overlaps(ax.get_window_extent()) for ax in fig.axes)


class TestCompareScript:
    def test_one_table_per_seed(self, capsys: pytest.CaptureFixture[str]) -> None:
        """benchmarks/compare.py prints a table with both peers for each seed."""
        path = Path(__file__).resolve().parents[1] / "benchmarks" / "compare.py"
        spec = importlib.util.spec_from_file_location("promptstrat_compare", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert (
            module.main(
                ["--calls", "20", "--seeds", "0", "1", "--strategies", "none shorten_tools"]
            )
            == 0
        )
        out = capsys.readouterr().out
        assert out.count("trim_messages (peer)") == 2 and out.count("ClearToolUsesEdit (peer)") == 2
        assert "seed 0." in out and "seed 1." in out
