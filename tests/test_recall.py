"""Specification of next-action recall: what a prompt still holds of what the agent used next.

The definition lives in ``langchain_promptstrat.simulate.recall``; these tests pin it: ``none``
scores exactly 1.0, a prompt that drops an output loses exactly that output's references, text a
strategy wrote itself (a list of bare names) recalls nothing, and a simulated run reports no
recall instead of a number.
"""

from __future__ import annotations

import importlib.util
import json
import string
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from realruns import realruns_dir

from langchain_promptstrat.messages import check_tool_pairs
from langchain_promptstrat.replay import simulate_files
from langchain_promptstrat.simulate import (
    OLD_AFTER,
    CallTargets,
    answers_in_prompts,
    code_references,
    format_table,
    observation_masking,
    recall_counts,
    result_from_json,
    result_to_json,
    simulate,
    terms,
)
from langchain_promptstrat.simulate.recall import TermIndex

_spec = importlib.util.spec_from_file_location(
    "recall_losses", Path(__file__).resolve().parents[1] / "benchmarks" / "recall_losses.py"
)
assert _spec is not None and _spec.loader is not None
recall_losses = importlib.util.module_from_spec(_spec)
sys.modules["recall_losses"] = recall_losses  # its dataclass looks its module up there
_spec.loader.exec_module(
    recall_losses
)  # where the losses are told apart: only that benchmark reads them


def step(i: int, command: str, output: str) -> list[BaseMessage]:
    """Return one agent step: an assistant message calling ``bash`` and the tool's output."""
    call = {"name": "bash", "args": {"command": command}, "id": f"call_{i}", "type": "tool_call"}
    return [AIMessage("", tool_calls=[call]), ToolMessage(output, tool_call_id=f"call_{i}")]


def answer(text: str) -> AIMessage:
    return AIMessage(text)


def conversation(
    *outputs: str, system: str = "You are a coding agent.", task: str = "Fix the bug."
) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage(system), HumanMessage(task)]
    for i, output in enumerate(outputs):
        messages += step(i, f"cmd {i}", output)
    return messages


def targets_and_counts(
    history: list[BaseMessage], next_action: BaseMessage, sent: list[BaseMessage]
):
    index = TermIndex()
    targets = CallTargets.of(history, next_action, index)
    return targets, recall_counts(targets, history, sent, index)


class TestTheReferences:
    def test_code_like_words_are_references_and_plain_words_are_not(self):
        """Paths, identifiers, dotted names, camelCase, numbers of three digits or more count; prose
        does not."""
        text = (
            "Look at django/db/models/query.py line 1234: QuerySet.filter calls "
            "_filter_or_exclude, see getValue and py3 but not the Model or it"
        )
        assert code_references(text) == [
            "django/db/models/query.py",
            "1234",
            "QuerySet.filter",
            "_filter_or_exclude",
            "getValue",
            "py3",
        ]

    def test_a_path_holds_its_trailing_parts_and_a_word_does_not_hold_a_longer_one(self):
        """``query.py`` is found in ``models/query.py``; ``query`` is not found in ``queryset``."""
        held = terms("open django/db/models/query.py now")
        assert {
            "django/db/models/query.py",
            "models/query.py",
            "query.py",
            "query",
            "db/models",
        } <= held
        assert "query" not in terms("queryset_factory")
        assert "queryset_factory" in terms("(queryset_factory)")

    def test_words_of_the_system_prompt_and_of_the_task_are_left_out(self):
        """What the model was told is not something it found in an output."""
        history = conversation(
            "def told_in_task(): pass\ndef found_later(): pass",
            system="Use run_tests.sh",
            task="Fix told_in_task",
        )
        targets, _ = targets_and_counts(
            history, answer("call told_in_task, found_later and run_tests.sh"), history
        )
        assert targets.references == ("found_later",)

    def test_a_reference_counts_only_when_an_earlier_tool_output_holds_it(self):
        """A word the agent invents (a new file name) was not lost by anybody."""
        history = conversation("existing_name = 1")
        targets, _ = targets_and_counts(
            history, answer("edit existing_name and create brand_new_file.py"), history
        )
        assert targets.references == ("existing_name",)

    def test_old_means_at_least_ten_outputs_came_after_the_newest_holder(self):
        """Exactly what observation masking with n=10 hides is old."""
        outputs = ["early_name here"] + [f"filler {i}" for i in range(OLD_AFTER)]
        history = conversation(*outputs)
        targets, _ = targets_and_counts(history, answer("use early_name"), history)
        assert targets.old == {"early_name"} and targets.outputs_only == {"early_name"}
        younger = conversation(*outputs[:-1])
        targets, _ = targets_and_counts(younger, answer("use early_name"), younger)
        assert targets.references == ("early_name",) and not targets.old

    def test_outputs_only_excludes_what_the_models_own_messages_repeat(self):
        """A reference the model wrote itself after seeing it stays in the prompt with every
        strategy."""
        history = conversation("early_name here", *[f"filler {i}" for i in range(OLD_AFTER)])
        history.insert(4, AIMessage("I saw early_name"))
        targets, _ = targets_and_counts(history, answer("use early_name"), history)
        assert targets.old == {"early_name"} and not targets.outputs_only


class TestRecalled:
    def test_the_history_sent_unchanged_recalls_everything(self):
        """``none`` scores exactly 1.0: every counted reference is in the prompt, in its original
        text."""
        history = conversation("alpha_one beta_two", "gamma_three")
        _, counts = targets_and_counts(
            history, answer("alpha_one gamma_three beta_two"), list(history)
        )
        assert counts.counted == counts.recalled == 3

    def test_a_prompt_that_drops_an_output_loses_exactly_its_references(self):
        """The references only the dropped output held are lost; those another message holds are
        not."""
        history = conversation("alpha_one shared_name", "gamma_three shared_name")
        dropped = [
            m
            if not (isinstance(m, ToolMessage) and m.tool_call_id == "call_0")
            else m.model_copy(update={"content": "[cleared]"})
            for m in history
        ]
        _, counts = targets_and_counts(
            history, answer("alpha_one gamma_three shared_name"), dropped
        )
        assert (counts.counted, counts.recalled) == (3, 2)

    def test_a_list_of_bare_names_recalls_nothing(self):
        """Text a strategy wrote itself does not count, so nobody can raise the figure by listing
        names."""
        history = conversation("def alpha_one(x):\n    return beta_two(x)\n")
        names = "\n".join(code_references(history[-1].content))  # type: ignore[arg-type]
        for written in (names, f"Names seen: {names.replace(chr(10), ', ')}"):
            listed = [*history[:-1], history[-1].model_copy(update={"content": written})]
            notice = [*listed, HumanMessage(written)]
            _, counts = targets_and_counts(history, answer("call alpha_one and beta_two"), notice)
            assert (counts.counted, counts.recalled) == (2, 0)

    def test_whole_lines_kept_of_a_shortened_output_still_count(self):
        """A head-and-tail shortening keeps what its kept lines hold, and loses the cut lines'
        references."""
        lines = [f"line_{i} = value_{i}" for i in range(20)]
        history = conversation("\n".join(lines))
        shortened = history[-1].model_copy(
            update={"content": "\n".join(lines[:3] + ["[... 14 lines omitted ...]"] + lines[-3:])}
        )
        _, counts = targets_and_counts(
            history,
            answer("compare value_1 with value_10 and value_19"),
            [*history[:-1], shortened],
        )
        assert (counts.counted, counts.recalled) == (3, 2)

    def test_a_copy_is_matched_to_its_own_original_not_to_another_message(self):
        """Lines moved from one output into another output's copy are written text, not original
        text."""
        history = conversation("alpha_one", "beta_two")
        swapped = [*history[:-1], history[-1].model_copy(update={"content": "alpha_one"})]
        cleared = [
            m.model_copy(update={"content": "[cleared]"}) if m is history[3] else m for m in swapped
        ]
        _, counts = targets_and_counts(history, answer("alpha_one beta_two"), cleared)
        assert (counts.counted, counts.recalled) == (2, 0)


WORDS = [f"name_{c}{d}" for c in string.ascii_lowercase[:6] for d in range(4)]


@settings(max_examples=60, deadline=None)
@given(
    outputs=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=1, max_size=14
    ),
    used=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
    masked=st.sets(st.integers(min_value=0, max_value=13)),
)
def test_recall_counts_exactly_the_references_an_unmasked_message_still_holds(
    outputs, used, masked
):
    """For any history and any set of outputs a strategy clears, the recalled references are those
    another message still holds."""
    history = conversation(*[" ".join(words) for words in outputs])
    sent = [
        m.model_copy(update={"content": "[cleared]"})
        if isinstance(m, ToolMessage) and int(m.tool_call_id[5:]) in masked
        else m
        for m in history
    ]
    targets, counts = targets_and_counts(history, answer(" ".join(used)), sent)
    counted = [w for w in dict.fromkeys(used) if any(w in words for words in outputs)]
    kept = [
        w for w in counted if any(w in words for i, words in enumerate(outputs) if i not in masked)
    ]
    assert list(targets.references) == counted
    assert (counts.counted, counts.recalled) == (len(counted), len(kept))
    assert check_tool_pairs(sent) == []


class TestLostReferences:
    def test_each_lost_outputs_only_reference_says_whether_its_holders_were_dropped_or_shortened(
        self,
    ):
        """What a strategy lost is told apart by what became of the outputs that held it: gone,
        still there without it, or some of each."""
        outputs = [
            "alpha_one",
            "beta_two",
            "gamma_three beta_two",
            *(f"filler {i}" for i in range(10)),
        ]
        history = conversation(*outputs)
        gone = {"call_0", "call_1"}  # alpha_one's only holder and one of beta_two's two
        cut = {"call_2"}  # beta_two's other holder and gamma_three's only one
        sent = [
            m.model_copy(update={"content": "[shortened]"})
            if isinstance(m, ToolMessage) and m.tool_call_id in cut
            else m
            for m in history
            if not (isinstance(m, ToolMessage) and m.tool_call_id in gone)
        ]
        sent = [
            m
            for m in sent
            if not (isinstance(m, AIMessage) and any(c["id"] in gone for c in m.tool_calls))
        ]
        index = TermIndex()
        targets = CallTargets.of(history, answer("use alpha_one, beta_two and gamma_three"), index)
        assert targets.outputs_only == {"alpha_one", "beta_two", "gamma_three"}
        lost = {
            r.reference: (r.cause, r.dropped, r.shortened, r.age)
            for r in recall_losses.lost_references(targets, history, sent, index)
        }
        assert lost == {
            "alpha_one": ("dropped", 1, 0, 12),
            "beta_two": ("both", 1, 1, 10),
            "gamma_three": ("shortened", 0, 1, 10),
        }
        assert recall_losses.lost_references(targets, history, list(history), index) == []

    def test_the_losses_script_counts_what_the_recall_benchmark_counts(self):
        """benchmarks/recall_losses.py replays the real transcripts as simulate does: the same
        outputs-only references, the same recalled."""
        folder = realruns_dir("converted")
        file = sorted(folder.iterdir())[0]
        causes, ages, files, counted, recalled = recall_losses.losses(
            [str(file)], ["dedupe_outputs", "shorten_tools_epoch_stable"], 16_000
        )
        figures = (
            simulate_files(
                [file],
                ["dedupe_outputs,shorten_tools_epoch_stable"],
                max_tokens=16_000,
                progress=False,
            )
            .runs[0]
            .recall_summary()
        )
        assert figures is not None and files == 1
        assert counted == figures["outputs_only_references"] and recalled == round(
            figures["outputs_only_recall"] * counted
        )
        assert sum(causes.values()) == sum(ages.values()) == counted - recalled


class TestInTheSimulation:
    def prompts(self) -> tuple[list[list[BaseMessage]], list[BaseMessage]]:
        full = conversation("alpha_one", *[f"filler_{i}" for i in range(12)])
        full += [AIMessage("use alpha_one and filler_11")]
        prompts = [full[:i] for i, m in enumerate(full) if i and isinstance(m, AIMessage)]
        return prompts, [m for i, m in enumerate(full) if i and isinstance(m, AIMessage)]

    def test_each_prompts_answer_is_read_from_the_next_prompt(self):
        """Given only prompts, a call's next action is the assistant message the next prompt adds;
        the last one is unknown."""
        prompts, answers = self.prompts()
        assert answers_in_prompts(prompts)[:-1] == answers[:-1]
        assert answers_in_prompts(prompts)[-1] is None

    def test_none_scores_one_and_masking_loses_the_old_output(self):
        """In one replay, ``none`` recalls everything and masking the last 10 outputs loses the old
        reference."""
        prompts, answers = self.prompts()
        result = simulate(
            ["none", observation_masking(10)], prompts=prompts, next_actions=answers, progress=False
        )
        none, masked = (run.recall_summary() for run in result.runs)
        assert none is not None and masked is not None
        assert none["recall"] == none["old_recall"] == none["outputs_only_recall"] == 1.0
        assert masked["outputs_only_references"] == 1 and masked["outputs_only_recall"] == 0.0
        assert masked["recall"] == pytest.approx(1 / 2)

    def test_the_table_and_the_json_carry_recall(self):
        """Recall is in the table's columns and survives the JSON round trip."""
        prompts, answers = self.prompts()
        result = simulate(["none"], prompts=prompts, next_actions=answers, progress=False)
        table = format_table(result)
        assert "outputs-only" in table and "1.000" in table
        again = result_from_json(json.loads(json.dumps(result_to_json(result))))
        assert (
            again.recall_measured
            and again.runs[0].recall_summary() == result.runs[0].recall_summary()
        )

    def test_a_simulated_run_says_it_measures_no_recall(self):
        """A seeded run's next actions are scripted, so the table says so instead of printing a
        number."""
        result = simulate(["none"], n_tool_calls=20, progress=False)
        assert not result.recall_measured and result.runs[0].recall_summary() is None
        assert "recall: not measured" in format_table(result)
        assert "recall" not in result_to_json(result)["strategies"][0]["per_call"]

    def test_next_actions_must_match_the_prompts(self):
        """One next action per prompt, or a clear error."""
        prompts, answers = self.prompts()
        with pytest.raises(ValueError, match="one per prompt"):
            simulate(["none"], prompts=prompts, next_actions=answers[:-1], progress=False)


class TestObservationMasking:
    def test_it_masks_all_but_the_last_n_outputs_and_never_the_task(self):
        """SWE-agent's rule: the task is observation 0 and is never masked; outputs before the last
        n are."""
        history = conversation(*[f"output {i}\nsecond line" for i in range(15)])
        sent = observation_masking(10)(history)
        masked = [
            m.tool_call_id
            for m in sent
            if isinstance(m, ToolMessage) and m.content.startswith("Old environment output")
        ]
        assert masked == [
            f"call_{i}" for i in range(5)
        ]  # 16 observations (task + 15): 1..5 masked, i.e. outputs 0..4
        assert sent[1] is history[1] and sent[-1] is history[-1]
        assert "(2 lines omitted)" in sent[3].content  # type: ignore[operator]
        assert check_tool_pairs(sent) == []

    def test_polling_changes_the_masked_set_only_every_polling_calls(self):
        """With ``polling=5`` the cut moves in steps of five observations, so the prefix stays put
        in between."""
        cuts = []
        for k in range(11, 21):
            sent = observation_masking(10, polling=5)(conversation(*[f"o{i}" for i in range(k)]))
            cuts.append(
                sum(1 for m in sent if isinstance(m, ToolMessage) and m.content.startswith("Old"))
            )
        assert cuts == [0, 0, 0, 4, 4, 4, 4, 4, 9, 9]


class TestOnRealTranscripts:
    def test_none_scores_exactly_one_on_every_real_transcript(self):
        """On real runs, sending the history unchanged recalls every counted reference, old and
        outputs-only too."""
        result = simulate_files([realruns_dir("converted")], ["none"], progress=False)
        figures = result.runs[0].recall_summary()
        assert (
            figures is not None
            and figures["references"] > 1000
            and figures["outputs_only_references"] > 50
        )
        assert figures["recall"] == figures["old_recall"] == figures["outputs_only_recall"] == 1.0
