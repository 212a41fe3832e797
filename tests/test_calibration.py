"""The ceiling holds on the provider's count: learned from the usage every answer reports, in every
front end."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)

from langchain_promptstrat import prepare_prompt
from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.strategy import PromptRequest
from langchain_promptstrat.testing import ScriptedChatModel, make_sized_tool
from langchain_promptstrat.tokens import TokenCounter
from langchain_promptstrat.tokens.usage import MATCHES, UPPER, Calibration, calibration_for

CEILING = 6_000
STRATEGY = "shorten_tools_epoch_stable"
count = TokenCounter()
tool = make_sized_tool("fetch", sizes=2_000)


def usage_times(factor: float) -> Callable[[list[BaseMessage]], Any]:
    """Return a scripted provider that bills ``factor`` x the package's count of the prompt it
    received."""
    return lambda prompt: {
        "input_tokens": int(factor * count(prompt)),
        "output_tokens": 1,
        "total_tokens": int(factor * count(prompt)) + 1,
    }


def scripted(
    usage: Callable[[list[BaseMessage]], Any] | None, calls: int = 30
) -> ScriptedChatModel:
    model = ScriptedChatModel.long_run(calls, id_prefix="")
    model.usage = usage
    return model


def run_loop(
    prepare: Callable[[list[BaseMessage]], list[BaseMessage]], model: ScriptedChatModel
) -> list[BaseMessage]:
    """Run an agent loop by hand (prompt, answer, tool outputs) and return the history;
    ``model.calls`` holds what was sent."""
    history: list[BaseMessage] = [HumanMessage("task")]
    while True:
        answer = model.invoke(prepare(history))
        history.append(answer)
        if not answer.tool_calls:
            return history
        history += [
            ToolMessage(tool.invoke(call["args"]), tool_call_id=call["id"])
            for call in answer.tool_calls
        ]


def largest_scripted_count(model: ScriptedChatModel, factor: float) -> int:
    return max(int(factor * count(call)) for call in model.calls)


def runnable_loop(model: ScriptedChatModel) -> list[BaseMessage]:
    strategy = ShortenToolsEpochStable(max_tokens=CEILING)
    return run_loop(strategy.invoke, model)


def prepare_loop(model: ScriptedChatModel) -> list[BaseMessage]:
    return run_loop(
        lambda history: prepare_prompt(history, strategies=STRATEGY, max_tokens=CEILING), model
    )


def middleware_loop(model: ScriptedChatModel) -> list[BaseMessage]:
    from langchain.agents import create_agent

    from langchain_promptstrat.adapters.middleware import CompactionMiddleware

    agent = create_agent(
        model, [tool], middleware=[CompactionMiddleware(STRATEGY, max_tokens=CEILING)]
    )
    return list(
        agent.invoke({"messages": [HumanMessage("task")]}, {"recursion_limit": 200})["messages"]
    )


def hook_loop(model: ScriptedChatModel) -> list[BaseMessage]:
    from langgraph.prebuilt import create_react_agent

    from langchain_promptstrat.adapters.langgraph import pre_model_hook

    agent = create_react_agent(
        model, [tool], pre_model_hook=pre_model_hook(STRATEGY, max_tokens=CEILING, tools=[tool])
    )
    return list(
        agent.invoke({"messages": [HumanMessage("task")]}, {"recursion_limit": 200})["messages"]
    )


FRONT_ENDS = {
    "runnable": runnable_loop,
    "prepare_prompt": prepare_loop,
    "middleware": middleware_loop,
    "hook": hook_loop,
}


class TestEveryFrontEnd:
    @pytest.mark.parametrize("front_end", FRONT_ENDS)
    def test_a_provider_billing_1_2x_the_package_count_is_kept_under_the_ceiling_on_its_own_count(
        self, front_end
    ):
        """The provider bills 1.2x what the package counts: every prompt is under the ceiling on the
        provider's count, where without usage the same run sends prompts the provider counts above
        it."""
        calibrated, blind = scripted(usage_times(1.2)), scripted(None)
        FRONT_ENDS[front_end](calibrated)
        FRONT_ENDS[front_end](blind)
        assert largest_scripted_count(blind, 1.2) > CEILING
        assert largest_scripted_count(calibrated, 1.2) <= CEILING

    @pytest.mark.parametrize("front_end", ["runnable", "middleware"])
    def test_honest_usage_changes_no_prompt(self, front_end):
        """A provider whose count matches the package's (within the margin) gets exactly the prompts
        it gets without usage."""
        honest, blind = scripted(usage_times(1.0)), scripted(None)
        FRONT_ENDS[front_end](honest)
        FRONT_ENDS[front_end](blind)
        assert [[m.content for m in call] for call in honest.calls] == [
            [m.content for m in call] for call in blind.calls
        ]

    @pytest.mark.parametrize("garbage", [-5, 0, "many", None])
    def test_garbage_usage_is_ignored_with_one_warning_and_never_raises(self, garbage, caplog):
        """Negative, zero, a string or a missing count is no figure: the prompts are today's, and
        one warning says so."""
        bad = scripted(
            lambda prompt: {"input_tokens": garbage, "output_tokens": 1, "total_tokens": 1},
            calls=12,
        )
        blind = scripted(None, calls=12)
        with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
            runnable_loop(bad)
        runnable_loop(blind)
        assert [[m.content for m in call] for call in bad.calls] == [
            [m.content for m in call] for call in blind.calls
        ]
        assert sum("no token count" in r.getMessage() for r in caplog.records) == 1

    def test_the_cli_applies_the_usage_a_file_carries_on_its_answers(self, tmp_path, capsys):
        """``promptstrat apply`` on a conversation whose answers carry usage_metadata keeps the
        ceiling on the provider's count."""
        from langchain_promptstrat.cli import main

        history = runnable_loop(scripted(usage_times(1.2)))[:-1]
        stripped = [
            m.model_copy(update={"usage_metadata": None}) if isinstance(m, AIMessage) else m
            for m in history
        ]
        sent = []
        for messages in (history, stripped):
            path = tmp_path / "run.json"
            path.write_text(json.dumps(messages_to_dict(messages)))
            assert (
                main(["apply", str(path), "--strategy", STRATEGY, "--max-tokens", str(CEILING)])
                == 0
            )
            sent.append(messages_from_dict(json.loads(capsys.readouterr().out)))
        calibrated, blind = sent
        assert 1.2 * count(calibrated) <= CEILING and calibrated != blind

    def test_stats_shows_the_default_factor_and_its_source(self, tmp_path, capsys):
        """``promptstrat stats`` says what the ceiling holds on: the factor learned from a file's
        usage, else 1.0."""
        from langchain_promptstrat.cli import main

        history = runnable_loop(scripted(usage_times(1.2), calls=8))
        lines = []
        for messages in (
            history,
            [
                m.model_copy(update={"usage_metadata": None}) if isinstance(m, AIMessage) else m
                for m in history
            ],
        ):
            path = tmp_path / "run.json"
            path.write_text(json.dumps(messages_to_dict(messages)))
            assert main(["stats", str(path), "--max-tokens", str(CEILING)]) == 0
            out = capsys.readouterr().out.replace("\n  ", " ")
            said = "apply keeps the ceiling on"
            lines.append(next(line for line in out.splitlines() if line.startswith(said)))
        assert lines[0].startswith(f"{said} the provider's count: 1.2")
        assert "(from the usage of 9 answers)" in lines[0]
        assert lines[1] == (
            f"{said} this package's count "
            "(the file's answers carry no usage to learn the provider's from)"
        )

    def test_stats_gives_the_providers_factor_against_the_whole_history_sent(
        self, tmp_path, capsys
    ):
        """A run recorded without a strategy was billed for the whole history before each answer:
        stats divides by that, so it finds the provider's 1.2 whether the usage is on the answers,
        in NAME.usage.json beside the file or in a usage file given, where the default's own
        estimate (against its shorter prompts) reads more."""
        from langchain_promptstrat.cli import main

        history = run_loop(lambda messages: messages, scripted(usage_times(1.2), calls=8))
        stripped = [
            m.model_copy(update={"usage_metadata": None}) if isinstance(m, AIMessage) else m
            for m in history
        ]
        sidecar = [
            {"prompt_tokens": m.usage_metadata["input_tokens"], "cached_tokens": None}
            for m in history
            if isinstance(m, AIMessage) and m.usage_metadata
        ]
        (tmp_path / "own").mkdir()
        (tmp_path / "own" / "run.json").write_text(json.dumps(messages_to_dict(history)))
        (tmp_path / "run.json").write_text(json.dumps(messages_to_dict(stripped)))
        (tmp_path / "run.usage.json").write_text(json.dumps(sidecar))
        (tmp_path / "elsewhere.json").write_text(json.dumps(sidecar))
        found = []
        for argv in (
            [str(tmp_path / "own" / "run.json")],
            [str(tmp_path / "run.json")],
            [str(tmp_path / "own" / "run.json"), "--usage", str(tmp_path / "elsewhere.json")],
        ):
            assert main(["stats", *argv, "--max-tokens", str(CEILING), "--json"]) == 0
            summary = json.loads(capsys.readouterr().out)
            found.append(summary["usage"][0])
            assert 1.15 < summary["usage"][0]["factor"] <= 1.2
        assert [u["source"] for u in found] == [
            "usage (9 answers) in its answers' usage_metadata",
            "usage (9 answers) in run.usage.json",
            "usage (9 answers) in elsewhere.json",
        ]
        default = next(r for r in summary["strategies"] if "usage_factors" in r)["usage_factors"][
            0
        ][0]
        assert default > found[0]["factor"] + 0.5

    def test_stats_refuses_a_usage_file_that_does_not_fit_in_one_line(self, tmp_path, capsys):
        """A usage file whose entries are not one per assistant message, or that does not exist: one
        error line, exit 2."""
        from langchain_promptstrat.cli import main

        history = run_loop(lambda messages: messages, scripted(None, calls=3))
        (tmp_path / "run.json").write_text(json.dumps(messages_to_dict(history)))
        (tmp_path / "short.json").write_text(
            json.dumps([{"prompt_tokens": 5, "cached_tokens": None}])
        )
        for usage, said in (
            ("short.json", "1 entries for 4 assistant messages"),
            ("missing.json", "no such file or folder"),
        ):
            assert (
                main(["stats", str(tmp_path / "run.json"), "--usage", str(tmp_path / usage)]) == 2
            )
            out, err = capsys.readouterr()
            assert out == "" and err.count("\n") == 1 and said in err

    def test_the_report_says_the_factor_and_where_it_came_from(self):
        """The report shows the factor learned and its source (usage with its count of answers, a
        prior); without either it is today's report, so a conversation without usage reports exactly
        what it did."""
        history = runnable_loop(scripted(usage_times(1.2), calls=6))
        strategy = ShortenToolsEpochStable(max_tokens=CEILING)
        report = strategy.compact(history).report.details
        assert (
            report["usage_factor_source"] == "usage (7 answers)"
            and 1.15 < report["usage_factor"] <= 1.2
        )
        plain = [
            m.model_copy(
                update={"usage_metadata": None, "response_metadata": {"model_name": "gemini-3-pro"}}
            )
            for m in history
        ]
        assert strategy.compact(plain).report.details["usage_factor_source"] == "prior:gemini"
        assert (
            "usage_factor"
            not in ShortenToolsEpochStable(max_tokens=CEILING)
            .compact([HumanMessage("task")])
            .report.details
        )


class TestLadder:
    def test_the_token_ladder_holds_its_target_on_the_provider_count(self):
        """The ladder learns the same factor: its prompts stay under max_tokens on a 1.2x provider's
        count."""
        rungs = ["tool_results", "sliding_window"]
        calibrated, blind = scripted(usage_times(1.2)), scripted(None)
        run_loop(CompactionLadder(rungs, max_tokens=CEILING).invoke, calibrated)
        run_loop(CompactionLadder(rungs, max_tokens=CEILING).invoke, blind)
        assert (
            largest_scripted_count(blind, 1.2) > CEILING >= largest_scripted_count(calibrated, 1.2)
        )


def calibration(ratios: list[float]) -> Calibration:
    out = Calibration()
    for ratio in ratios:
        out = out.observe(
            AIMessage(
                "a",
                usage_metadata={
                    "input_tokens": round(ratio * 10_000),
                    "output_tokens": 0,
                    "total_tokens": 0,
                },
            ),
            10_000,
        )
    return out


ratios = st.lists(st.floats(0.01, 50.0), min_size=0, max_size=20)


class TestEstimator:
    @given(ratios)
    def test_the_factor_is_bounded_and_never_below_one(self, values):
        """Whatever the answers report, the budget is never looser than today's and never shrinks
        past 1/UPPER."""
        assert 1.0 <= calibration(values).factor <= UPPER

    @given(st.lists(st.floats(0.5, 2.0), min_size=2, max_size=7), st.floats(0.0001, 1_000.0))
    def test_one_odd_answer_cannot_move_the_factor_past_the_others(self, values, odd):
        """A cached replay billed at a fraction, or one absurd figure: the factor stays within the
        other answers' range."""
        factor = calibration([*values, odd]).factor
        assert factor <= max(max(values), 1.0) + 1e-3
        assert factor >= min(min(values), UPPER) - 1e-3 or factor == 1.0

    @given(st.lists(st.floats(0.5, 1.0 + MATCHES), max_size=20))
    def test_a_count_that_matches_gives_factor_one(self, values):
        """Usage within the margin of the package's count changes nothing: the factor is exactly
        1.0."""
        assert calibration(values).factor == 1.0

    @given(ratios, st.integers(1_000, 400_000), st.integers(0, 900), st.floats(0.0, 0.2))
    def test_the_budget_keeps_the_margin_on_the_provider_count(
        self, values, ceiling, extra, margin
    ):
        """A factor of 1.0 gives exactly today's budget; a larger one divides it, so the margin,
        kept for the ratio's move from one answer to the next, stays free on the provider's count
        too."""
        today = int(ceiling * (1 - margin)) - extra
        learned = calibration(values)
        budget = learned.budget(today, extra)
        if learned.factor == 1.0:
            assert budget == today
        else:
            assert learned.factor * (budget + extra) <= ceiling * (1 - margin)
            assert budget > (today + extra) / learned.factor - extra - 1

    def test_the_default_keeps_its_margin_under_a_learned_factor(self):
        """On a provider billing 1.2x, the default's budget is its usual one (the ceiling less 2%)
        over the factor."""
        report = (
            ShortenToolsEpochStable(max_tokens=CEILING)
            .compact(runnable_loop(scripted(usage_times(1.2))))
            .report.details
        )
        factor = report["usage_factor"]
        assert factor == pytest.approx(1.2, abs=0.05) and report["extra_tokens"] == 0
        assert CEILING * 0.98 / factor - 2 <= report["budget"] <= CEILING * 0.98 / factor + 1

    def test_a_prior_applies_only_to_a_known_family_before_any_usage(self):
        """Gemini's measured prior before usage; an unknown model keeps today's margin; usage
        replaces the prior."""
        assert calibration_for("gemini-3-pro-preview", []).factor > 1.0
        assert calibration_for("some-model", []).factor == 1.0
        learned = calibration_for("gemini-3-pro", []).observe(
            AIMessage(
                "a", usage_metadata={"input_tokens": 1000, "output_tokens": 0, "total_tokens": 0}
            ),
            1000,
        )
        assert learned.factor == 1.0 and learned.source == "usage (1 answers)"


class TestPureFunctionOfTheHistory:
    def test_one_strategy_object_gives_the_prompt_of_the_usage_the_history_carries(self):
        """The same conversation seen without usage, then loaded again with it: the replay memo does
        not resume the first for the second; each gets what a fresh strategy object gives it."""
        with_usage = runnable_loop(scripted(usage_times(1.2)))[:-1]
        loaded = [
            m.model_copy(update={"usage_metadata": None}) if isinstance(m, AIMessage) else m
            for m in with_usage
        ]
        strategy = ShortenToolsEpochStable(max_tokens=CEILING)
        for history in (loaded, [m.model_copy() for m in with_usage]):
            assert (
                strategy.compact(history).messages
                == ShortenToolsEpochStable(max_tokens=CEILING).compact(history).messages
            )

    def test_a_carried_replay_resumes_the_calibration_it_learned(self):
        """A process meeting the thread again resumes from the checkpointed replay: its factor, and
        so its prompt and report, are those of a replay from the first message, and the resumed
        value is used, not recomputed."""
        from langchain_promptstrat.strategies.epoch_stable import CarriedReplay

        history = runnable_loop(scripted(usage_times(1.2)))[:-1]
        carried = CarriedReplay()
        call = [i for i, m in enumerate(history) if isinstance(m, AIMessage)][
            15
        ]  # a model call's prompt, as a front end carries it
        ShortenToolsEpochStable(max_tokens=CEILING).apply(
            history[:call], PromptRequest(carried=carried)
        )
        stored = CarriedReplay(json.loads(json.dumps(carried.value)))
        resumed = ShortenToolsEpochStable(max_tokens=CEILING).apply(
            messages_from_dict(messages_to_dict(history)), PromptRequest(carried=stored)
        )
        full = ShortenToolsEpochStable(max_tokens=CEILING).compact(history)
        assert (
            resumed.messages == full.messages and resumed.report.as_dict() == full.report.as_dict()
        )
        assert full.report.details["usage_factor_source"].startswith("usage (")
