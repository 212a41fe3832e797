"""Specification of the bounded default: shorten_tools_epoch_stable under a context ceiling (issue
12)."""

from __future__ import annotations

from typing import Any

import pytest
from conversations import ai_step, snapshot
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from realruns import REALRUNS

from langchain_promptstrat import (
    DEFAULT_MAX_TOKENS,
    ContextWindowError,
    check_tool_pairs,
    prepare_prompt,
)
from langchain_promptstrat.ceiling import resolve_ceiling
from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.messages import is_real_user_message, mark_of, task_index
from langchain_promptstrat.messages.history_memo import call_points
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.simulate import is_degenerate
from langchain_promptstrat.strategies.epoch_machinery.notice import is_compaction_notice
from langchain_promptstrat.strategies.epoch_stable import (
    ShortenToolsEpochStable,
    shorten_tools_epoch_stable,
)
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.strategy import PromptRequest
from langchain_promptstrat.testing import ScriptedChatModel, iter_agent_run
from langchain_promptstrat.tokens import TokenCounter, call_id_tokens, tool_schema_tokens

COUNT = TokenCounter("cl100k_base")
REAL_TRANSCRIPTS = REALRUNS / "converted"


def sent_tokens(prompt: list[BaseMessage]) -> int:
    """Return what the provider receives of ``prompt``: the messages and their call ids (the counter
    counts both)."""
    return COUNT(prompt)


def bounded(ceiling: int, **overrides: Any) -> ShortenToolsEpochStable:
    return ShortenToolsEpochStable(
        Settings.load(**overrides), max_tokens=ceiling, token_counter=COUNT
    )


class TestCeiling:
    @pytest.mark.parametrize("heavy", [False, True])
    def test_no_prompt_of_a_long_run_exceeds_the_ceiling(self, heavy: bool) -> None:
        """Every model call of a 250-call run (normal or 1.2-60 KB outputs) sends at most the
        ceiling, pairs intact, task kept."""
        strategy = bounded(15_000)
        events = 0
        for prompt in (
            iter_agent_run(250, seed=4, output_bytes=(1_200, 60_000))
            if heavy
            else iter_agent_run(250, seed=4)
        ):
            result = strategy.compact(prompt)
            assert sent_tokens(result.messages) <= 15_000
            assert result.report.details["tokens_after"] == sent_tokens(
                result.messages
            )  # ids counted once
            assert result.report.details["met"] is True
            assert not check_tool_pairs(result.messages) and not is_degenerate(
                prompt, result.messages
            )
            events += result.report.details["ceiling_event"]
        assert events >= 3  # the ceiling, not the call count, drove the compaction

    def test_a_counter_that_leaves_ids_out_gets_them_added_back_once(self) -> None:
        """With TokenCounter(call_ids=False) the ceiling adds the call ids back: its estimate is the
        count with ids, and prompts stay under it."""
        without = TokenCounter("cl100k_base", call_ids=False)
        strategy = ShortenToolsEpochStable(max_tokens=15_000, token_counter=without)
        for prompt in list(iter_agent_run(150, seed=4))[::7]:
            result = strategy.compact(prompt)
            ids = sum(call_id_tokens(m, without) for m in result.messages)
            assert (
                result.report.details["tokens_after"]
                == without(result.messages) + ids
                == sent_tokens(result.messages)
            )
            assert sent_tokens(result.messages) <= 15_000

    def test_system_and_tools_outside_the_messages_count_against_the_ceiling(self) -> None:
        """The bound tools' schemas and a system prompt sent beside the messages shrink the room for
        the messages."""

        @tool
        def lookup(query: str, page: int = 0) -> str:
            """Look something up in the knowledge base and return one page of results."""
            return query

        prompt = list(iter_agent_run(120, seed=2))[-1]
        strategy = bounded(12_000)
        system = [SystemMessage("Be terse. " * 300)]
        plain = strategy.apply(prompt).messages
        result = strategy.apply(prompt, PromptRequest(tools=[lookup], system=system))
        extra = tool_schema_tokens([lookup], COUNT) + COUNT(system)
        assert (
            tool_schema_tokens([lookup], COUNT) > 20
            and result.report.details["extra_tokens"] == extra
        )
        assert sent_tokens(result.messages) + extra <= 12_000
        assert sent_tokens(result.messages) < sent_tokens(plain)

    def test_system_prompt_and_task_over_the_ceiling_raise_naming_both_sizes(self) -> None:
        """When what may never be dropped is already too large, a ContextWindowError says how large
        each part is."""
        messages = [SystemMessage("rules " * 3_000), HumanMessage("task " * 2_000), AIMessage("ok")]
        with pytest.raises(
            ContextWindowError, match=r"system prompt \(\d[\d,]* tokens.*task \(\d[\d,]* tokens"
        ):
            bounded(2_000).compact(messages)

    def test_one_giant_output_among_the_newest_calls_still_fits(self) -> None:
        """A newest output larger than the ceiling is shortened as a last resort; the prompt fits
        and keeps its task."""
        messages = [
            SystemMessage("sys"),
            HumanMessage("the task"),
            ai_step([("read", {"p": "big"})], 0, mirror="plain"),
            ToolMessage("line of a huge log\n" * 4_000, tool_call_id="call_0"),
        ]
        result = bounded(3_000).compact(messages)
        assert (
            sent_tokens(result.messages) <= 3_000
            and "shortened_outputs" in result.report.details["fallback"]
        )
        assert not is_degenerate(messages, result.messages) and not check_tool_pairs(
            result.messages
        )

    def test_input_is_never_mutated(self) -> None:
        """The history the strategy reads is left exactly as it was."""
        prompt = list(iter_agent_run(150, seed=5))[-1]
        before = snapshot(prompt)
        bounded(10_000).compact(prompt)
        assert snapshot(prompt) == before


class TestPureFunctionOfTheHistory:
    def test_two_workers_and_a_resumed_thread_compute_the_same_bytes(self) -> None:
        """A strategy that saw every call, a fresh one (another worker) and the pure function agree
        on every prompt."""
        prompts = list(iter_agent_run(200, seed=6))
        warm = bounded(12_000)
        for k, prompt in enumerate(prompts):
            seen = warm.compact(prompt).messages
            if k % 17 == 0 or k == len(prompts) - 1:
                assert bounded(12_000).compact(prompt).messages == seen
                budget = int(12_000 * (1 - Settings().stable_token_margin))
                pure = shorten_tools_epoch_stable(
                    prompt, settings=Settings(), max_tokens=12_000, token_counter=COUNT
                ).messages
                assert pure == seen and budget > 0

    def test_a_conversation_branching_off_a_remembered_history_changes_no_byte(self) -> None:
        """An object whose memo resumes replays across a branch (same first messages, another
        continuation) sends what a fresh object or an unbranched one sends."""
        prompts = list(iter_agent_run(160, seed=9))
        fork = prompts[70]
        branch = [list(fork)]
        for j in range(
            6
            # short enough that the fork's replay is still remembered when the first continuation
            # resumes
        ):
            call_id = 5_000 + j
            branch.append(
                [
                    *branch[-1],
                    ai_step([("read", {"path": f"branch_{j}.py"})], call_id, mirror="plain"),
                    ToolMessage(f"branch output {j}\n" * 300, tool_call_id=f"call_{call_id}"),
                ]
            )
        branching, straight = bounded(12_000), bounded(12_000)
        for k, prompt in enumerate(prompts):
            expected = straight.compact(prompt).messages
            assert branching.compact(prompt).messages == expected
            if k == 70:  # the other continuation, then back to the first one
                assert straight.compact(prompt).report.details["compaction_edge"] > 0
                for step in branch:
                    seen = branching.compact(step).messages
                    assert seen == bounded(12_000).compact(step).messages and not check_tool_pairs(
                        seen
                    )

    def test_a_head_too_large_to_remember_is_rebuilt_with_the_same_bytes(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With no room to remember compacted heads, every prompt is rebuilt, byte for byte what the
        remembering run sends."""
        from langchain_promptstrat.messages import history_memo as caches

        caches.clear_caches()
        prompts = list(iter_agent_run(150, seed=10))
        remembering = bounded(12_000)
        expected = [remembering.compact(p).messages for p in prompts]
        assert caches._heads
        caches.clear_caches()
        monkeypatch.setattr(caches._heads, "max_size", -1)
        forgetting = bounded(12_000)
        assert [forgetting.compact(p).messages for p in prompts] == expected
        assert not caches._heads

    def test_between_events_each_prompt_starts_with_the_previous_one(self) -> None:
        """Unless a call reports a prefix change, the previous prompt is a prefix of the next: the
        cache keeps all of it."""
        strategy = bounded(12_000)
        previous: list[BaseMessage] | None = None
        changes = 0
        for prompt in iter_agent_run(200, seed=8):
            result = strategy.compact(prompt)
            if previous is not None and result.report.details["prefix_change"] is None:
                assert result.messages[: len(previous)] == previous
            changes += result.report.details["prefix_change"] is not None
            previous = result.messages
        assert 2 <= changes <= 40  # events are rare: a 200-call run makes about 130 model calls

    @pytest.mark.parametrize("narration", [0, 60])
    def test_after_a_text_only_answer_the_report_compares_with_the_previous_calls_prompt(
        self, narration: int
    ) -> None:
        """Where the previous call's history ends in two assistant messages, the report compares
        with that call.

        The model sometimes answers with text only and is called again, so the previous call's
        history is no call point of this one; the report must still describe the change a
        provider's cache sees: prefix_change is None exactly when that call's prompt opens this
        one, boundary_moved and front_moved say whether the edges differ from that call's, and a
        new object, which has seen nothing of the conversation, reports the same. Long text-only
        answers (``narration``) cross the ceiling by themselves, so edges move at those calls too.
        """
        history: list[BaseMessage] = []
        for m in list(iter_agent_run(200, seed=8))[-1]:
            if isinstance(m, AIMessage) and m.tool_calls:
                text = f"Next I look at step {len(history)}. " + "I weigh what I saw. " * narration
                history.append(AIMessage(text))
            history.append(m)
        points = [
            i for i, m in enumerate(history) if isinstance(m, AIMessage)
        ]  # before each assistant message: a model call
        strategy, sent, edges, compared = bounded(12_000), {}, {}, 0
        for before, at in zip(points, points[1:], strict=False):
            result = strategy.compact(history[:at])
            d = result.report.details
            sent[at], edges[at] = result.messages, (d["compaction_edge"] or 0, d["drop_edge"] or 0)
            if before in sent:
                previous = sent[before]
                assert (result.messages[: len(previous)] == previous) == (
                    d["prefix_change"] is None
                ), (at, d)
                moved = (edges[at][0] != edges[before][0], edges[at][1] != edges[before][1])
                assert (d["boundary_moved"], d["front_moved"]) == moved, (at, d)
                compared += isinstance(history[before - 1], AIMessage) and any(moved)
            fresh = bounded(12_000).compact(history[:at])  # has seen nothing of the conversation
            assert fresh.report.as_dict() == result.report.as_dict(), at
        assert compared >= 2  # edges moved at calls whose previous history is no call point


class TestKeptHead:
    def test_drops_after_the_first_remove_steps_behind_the_head_so_its_bytes_never_change(
        self,
    ) -> None:
        """From the first ceiling-driven drop on, the system block, the task and the oldest kept
        steps open every prompt unchanged, drop after drop."""
        strategy = bounded(12_000)
        first: list[BaseMessage] | None = None
        head = head_messages = drops = 0
        for prompt in iter_agent_run(200, seed=8):
            result = strategy.compact(prompt)
            details = result.report.details
            if first is None and details["head_edge"]:
                first, head = result.messages, details["head_edge"]
                outputs = [i for i, m in enumerate(first) if isinstance(m, ToolMessage)]
                head_messages = (
                    outputs[head - 1] + 1
                )  # the head ends with its newest output (one call per step here)
                assert (
                    head_messages < len(first)
                    and sum(isinstance(m, ToolMessage) for m in first[:head_messages]) == head
                )
            elif first is not None:
                assert details["head_edge"] == head
                assert result.messages[:head_messages] == first[:head_messages]
                drops += details["prefix_change_reason"] == "front_drop"
        assert first is not None and drops >= 1  # the head survived at least one later drop

    def test_the_head_holds_at_most_its_share_of_the_ceiling(self) -> None:
        """The kept head (its shortened steps, without the system block and the task) costs at most
        stable_head_ratio of the budget."""
        strategy = bounded(12_000)
        budget = int(12_000 * (1 - strategy.settings.stable_token_margin))
        for prompt in iter_agent_run(200, seed=8):
            result = strategy.compact(prompt)
            head = result.report.details["head_edge"]
            if head:
                outputs = [i for i, m in enumerate(result.messages) if isinstance(m, ToolMessage)]
                task = task_index(result.messages)
                assert task is not None
                steps = [m for m in result.messages[task + 1 : outputs[head - 1] + 1]]
                # the estimate splits assistant messages over their calls and counts call ids: allow
                # its 1% slack
                assert sent_tokens(steps) <= strategy.settings.stable_head_ratio * budget * 1.01
                return
        pytest.fail("no drop happened: the run is too short for the ceiling")


class TestTaskAndDebris:
    def harness_run(self) -> list[BaseMessage]:
        """A run whose harness speaks as the user after the task ("No tool calls found..."), with
        narrated steps."""
        msgs: list[BaseMessage] = [SystemMessage("sys"), HumanMessage("THE TASK: fix the parser")]
        for k in range(60):
            step = ai_step([("read", {"path": f"f{k}.py"})], k, mirror="plain")
            msgs += [
                step.model_copy(update={"content": f"Reading f{k}.py next."}),
                ToolMessage(f"contents of f{k} " * 120, tool_call_id=f"call_{k}"),
            ]
            if k % 9 == 4:
                msgs += [
                    AIMessage("I think I am done."),
                    HumanMessage(
                        "No tool calls found in the response. Every response MUST include a tool "
                        "call."
                    ),
                ]
        return msgs

    def test_the_task_and_the_newest_user_message_survive_a_deep_front_drop(self) -> None:
        """Harness messages are user-role: the first real user message (the task) and the newest
        both stay."""
        msgs = self.harness_run()
        out = bounded(4_000).compact(msgs).messages
        users = [str(m.content) for m in out if is_real_user_message(m)]
        assert users[0] == "THE TASK: fix the parser" and users[-1].startswith(
            "No tool calls found"
        )
        assert sent_tokens(out) <= 4_000

    def test_a_dropped_step_takes_its_narration_with_it(self) -> None:
        """No bare assistant line of a dropped step ("Reading f0.py next.") is left without its
        call."""
        out = bounded(4_000).compact(self.harness_run()).messages
        assert not [
            m
            for m in out
            if isinstance(m, AIMessage)
            and str(m.content).startswith("Reading")
            and not m.tool_calls
        ]
        assert bounded(4_000).compact(self.harness_run()).report.dropped > 0

    def test_the_notice_appears_only_when_something_really_changed(self) -> None:
        """Calls whose output and arguments are too short to shorten are not reported as shortened,
        and get no notice."""
        msgs: list[BaseMessage] = [SystemMessage("sys"), HumanMessage("task")]
        for k in range(140):
            msgs += [
                ai_step([("ping", {"n": k})], k, mirror="plain"),
                ToolMessage("ok", tool_call_id=f"call_{k}"),
            ]
        result = ShortenToolsEpochStable(max_tokens=100_000, token_counter=COUNT).compact(msgs)
        assert result.report.details["compaction_edge"] > 0  # the call count did freeze calls
        assert result.report.shortened == 0 and not any(
            is_compaction_notice(m) for m in result.messages
        )

    def test_edges_that_move_over_calls_no_form_changes_report_no_prefix_change(self) -> None:
        """The count rule moves the edge at the 121st call; over outputs too short to shorten no
        byte changes, so the report says the edge moved and the prefix did not change."""
        messages: list[BaseMessage] = [SystemMessage("sys"), HumanMessage("task")]
        strategy = ShortenToolsEpochStable(max_tokens=100_000, token_counter=COUNT)
        previous: list[BaseMessage] = []
        moved = 0
        for k in range(140):
            step = ai_step([("ping", {"n": k})], k, mirror="plain")
            messages += [step, ToolMessage("ok", tool_call_id=f"call_{k}")]
            result = strategy.compact(messages)
            if result.report.details["boundary_moved"]:
                moved += 1
                assert result.report.details["prefix_change"] is None
                assert result.messages[: len(previous)] == previous
            previous = result.messages
        assert moved >= 1

    def test_the_notice_counts_what_it_did(self) -> None:
        """When calls are shortened and dropped, the one notice's counts equal the report's."""
        result = bounded(4_000).compact(self.harness_run())
        notices = [m for m in result.messages if is_compaction_notice(m)]
        assert len(notices) == 1
        mark = mark_of(notices[0]) or {}
        assert (mark["shortened"], mark["dropped"]) == (
            result.report.shortened,
            result.report.dropped,
        )

    @pytest.mark.parametrize("handles", [True, False])
    def test_the_estimate_reserves_what_the_notice_costs(self, handles: bool) -> None:
        """The rule moves its edges on an estimate, which counts the notice the prompt carries.

        A reserve below the notice's cost lets a prompt the estimate puts just under the
        ceiling cross it once the notice is placed (notices cost 117 to 151 tokens on the real
        runs).
        """
        from replays import default_replay

        from langchain_promptstrat.strategies.epoch_machinery.costs import Costs

        settings, costs, carried = Settings.load(read_back_handles=handles), Costs(COUNT), 0
        strategy = ShortenToolsEpochStable(settings, max_tokens=9_000, token_counter=COUNT)
        for prompt in list(iter_agent_run(400, seed=6))[::15]:
            notices = [m for m in strategy.compact(prompt).messages if is_compaction_notice(m)]
            if not notices:
                continue
            steps = default_replay(None, prompt, 9_000, settings, costs).steps
            t = steps.total
            loose = steps.loose_before[t] + steps.loose_after
            without_notice = steps.fixed + loose + steps.short[1] + steps.whole[t] - steps.whole[1]
            assert steps.estimate(1, 0, 0) - without_notice >= costs.whole(notices[0])
            carried += 1
        assert carried >= 5


class TestCeilingResolution:
    def test_an_explicit_ceiling_wins(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """max_tokens given to the strategy is used as is, whatever the environment and the model
        say."""
        monkeypatch.setenv("PROMPTSTRAT_MAX_TOKENS", "5000")
        model = ScriptedChatModel([], profile={"max_input_tokens": 200_000})
        assert resolve_ceiling(42_000, model=model).tokens == 42_000

    def test_the_environment_comes_before_the_model(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """PROMPTSTRAT_MAX_TOKENS is the user's setting: it wins over the model's window."""
        monkeypatch.setenv("PROMPTSTRAT_MAX_TOKENS", "5000")
        ceiling = resolve_ceiling(
            None, model=ScriptedChatModel([], profile={"max_input_tokens": 200_000})
        )
        assert (ceiling.tokens, ceiling.source) == (5_000, "PROMPTSTRAT_MAX_TOKENS")

    def test_the_model_profile_minus_room_for_the_reply(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without a setting the model's max_input_tokens is used, less its reply room
        (max_output_tokens, capped)."""
        monkeypatch.delenv("PROMPTSTRAT_MAX_TOKENS", raising=False)
        model = ScriptedChatModel(
            [], profile={"max_input_tokens": 200_000, "max_output_tokens": 8_192}
        )
        assert resolve_ceiling(None, model=model, settings=Settings()).tokens == 200_000 - 8_192
        assert resolve_ceiling(("fraction", 0.8), model=model).tokens == 160_000

    def test_nothing_known_gives_the_documented_default(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No argument, no setting, no profile: 128,000 minus 16,384 for the reply."""
        monkeypatch.delenv("PROMPTSTRAT_MAX_TOKENS", raising=False)
        assert (
            resolve_ceiling(None, model=ScriptedChatModel([]), settings=Settings()).tokens
            == DEFAULT_MAX_TOKENS
            == 111_616
        )

    @pytest.mark.parametrize(
        "bad", [0, -5, ("fraction", 0), ("fraction", 1.5), ("share", 0.5), "lots", True]
    )
    def test_a_ceiling_in_no_known_form_is_a_config_error(self, bad: Any) -> None:
        """Anything but a positive token count or ("fraction", 0 < share <= 1) is rejected with the
        accepted forms."""
        with pytest.raises(ConfigError, match="max_tokens="):
            ShortenToolsEpochStable(max_tokens=bad)

    def test_a_bad_environment_ceiling_names_the_variable(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """PROMPTSTRAT_MAX_TOKENS=lots fails when the strategy is built, naming the variable."""
        monkeypatch.setenv("PROMPTSTRAT_MAX_TOKENS", "lots")
        with pytest.raises(ConfigError, match="PROMPTSTRAT_MAX_TOKENS='lots'"):
            ShortenToolsEpochStable()

    def test_prepare_prompt_takes_a_ceiling(self) -> None:
        """prepare_prompt(messages, max_tokens=N) bounds the default list."""
        prompt = list(iter_agent_run(150, seed=1))[-1]
        out = prepare_prompt(prompt, max_tokens=9_000)
        assert sent_tokens(out) <= 9_000 < sent_tokens(prompt)


@pytest.mark.skipif(
    not REAL_TRANSCRIPTS.is_dir(), reason=f"the real transcripts are not at {REAL_TRANSCRIPTS}"
)
class TestRealTranscripts:
    def conversations(self) -> list[list[BaseMessage]]:
        return [
            read_conversation(str(path)).messages
            for path in sorted(REAL_TRANSCRIPTS.glob("*.jsonl"))
        ]

    @pytest.mark.parametrize("ceiling", [16_000, 32_000])
    def test_no_bounded_strategy_loses_the_task_on_real_runs(self, ceiling: int) -> None:
        """On every model call of every real transcript, the bounded default and the ladder keep the
        task and the newest user message."""
        lost = 0
        for messages in self.conversations():
            default = bounded(ceiling)
            ladder = CompactionLadder(
                ["tool_results", "sliding_window"], max_tokens=ceiling, token_counter=COUNT
            )
            first = task_index(messages)
            for point in call_points(messages):
                if first is None or point <= first:
                    continue  # a model is never called on the system prompt alone
                prompt = messages[:point]
                try:
                    out = default.compact(prompt).messages
                except ContextWindowError:
                    continue  # a real system prompt + task over a tiny ceiling: said, not hidden
                lost += is_degenerate(prompt, out) + is_degenerate(
                    prompt, ladder.compact(prompt).messages
                )
        assert lost == 0
