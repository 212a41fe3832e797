"""Specification of dedupe_outputs: lines an output repeats from an earlier one become one pointer
to it."""

from __future__ import annotations

import gc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from realruns import realruns_dir

from langchain_promptstrat import Settings, check_tool_pairs
from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.messages.references import reference_text
from langchain_promptstrat.replay import transcript_prompts
from langchain_promptstrat.strategies.dedupe_outputs import DedupeOutputs, dedupe_outputs

FILE = [f"    line_{i} = compute_value({i}, factor={i * 7})" for i in range(12)]
"""Twelve lines a file would hold: each longer than the 20-character minimum."""


def run(*outputs: str, tool: str = "bash") -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("s"), HumanMessage("fix it")]
    for i, output in enumerate(outputs):
        call = {
            "name": tool,
            "args": {"command": f"step {i}"},
            "id": f"call_{i}",
            "type": "tool_call",
        }
        messages += [
            AIMessage("", tool_calls=[call]),
            ToolMessage(output, tool_call_id=f"call_{i}"),
        ]
    return messages


def filler(n: int) -> list[str]:
    return [f"ok {i}" for i in range(n)]


ACTIVE = Settings(dedupe_tool_call_threshold=0)


class TestTheRule:
    def test_a_file_read_twice_points_back_to_the_first_read(self):
        """The second read keeps its new lines and names the output that already shows the rest."""
        messages = run(
            "\n".join(FILE),
            "\n".join(["header of the second read", *FILE[2:10], "a line only here, long enough"]),
        )
        out = dedupe_outputs(messages, settings=ACTIVE).messages
        assert out[-1].content == "\n".join(
            [
                "header of the second read",
                reference_text(8, "call_0", "bash"),
                "a line only here, long enough",
            ]
        )
        assert out[:-1] == messages[:-1] and out[3] is messages[3]

    def test_the_first_copy_and_every_earlier_message_stay_byte_for_byte(self):
        """Only the newer copy changes, so the cached prefix before it is never rewritten."""
        messages = run("\n".join(FILE), *filler(3), "\n".join(FILE))
        out = dedupe_outputs(messages, settings=ACTIVE).messages
        assert all(a is b for a, b in zip(out[:-1], messages[:-1], strict=False))
        assert out[-1].content == reference_text(12, "call_0", "bash")

    def test_the_pointer_names_the_newest_output_that_holds_the_lines(self):
        """After two reads of a file, a third points to the second, the nearest copy."""
        messages = run("\n".join(FILE), "\n".join(["x" * 30, *FILE]), "\n".join(FILE))
        out = dedupe_outputs(messages, settings=ACTIVE).messages
        assert out[-1].content == reference_text(12, "call_1", "bash")

    def test_short_lines_and_runs_shorter_than_their_pointer_stay(self):
        """Braces and blank lines repeat without meaning anything; a pointer longer than its lines
        would cost more."""
        short = "\n".join(["}", "", "  return x", "}"])
        one_line = FILE[0]
        messages = run(short + "\n" + one_line, short, one_line)
        out = dedupe_outputs(messages, settings=ACTIVE).messages
        assert [m.content for m in out[-3::2]] == [short, one_line]

    def test_a_short_conversation_comes_back_as_it_was(self):
        """Under the default threshold (five outputs) nothing is edited, even a repeat."""
        messages = run("\n".join(FILE), "\n".join(FILE), *filler(3))
        result = DedupeOutputs().compact(messages)
        assert result.messages == messages and result.report.shortened == 0

    def test_outputs_after_the_threshold_are_deduplicated(self):
        """The sixth output on may point back, to any earlier output, including the first five."""
        messages = run("\n".join(FILE), *filler(4), "\n".join(FILE))
        result = DedupeOutputs().compact(messages)
        assert result.messages[-1].content == reference_text(12, "call_0", "bash")
        assert (
            result.report.details["outputs_edited"] == 1
            and result.report.details["lines_pointed_back"] == 12
        )

    def test_block_content_is_left_as_it_is(self):
        """Only string outputs are edited; a list of blocks keeps its shape."""
        messages = run("\n".join(FILE))
        messages += [
            AIMessage(
                "", tool_calls=[{"name": "bash", "args": {}, "id": "b", "type": "tool_call"}]
            ),
            ToolMessage([{"type": "text", "text": "\n".join(FILE)}], tool_call_id="b"),
        ]
        assert dedupe_outputs(messages, settings=ACTIVE).messages == messages


LINES = st.sampled_from(
    [*FILE, "}", "", "a different line of some length", "another distinct line here!"]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    outputs=st.lists(st.lists(LINES, max_size=14).map("\n".join), min_size=1, max_size=10),
    threshold=st.integers(0, 6),
)
def test_every_line_removed_is_shown_whole_by_an_earlier_output(outputs, threshold):
    """For any history: pairs intact, input untouched, earlier messages the same objects, and every
    dropped line still in the prompt, in an earlier output."""
    messages = run(*outputs)
    before = [m.model_dump() for m in messages]
    out = dedupe_outputs(messages, settings=Settings(dedupe_tool_call_threshold=threshold)).messages
    assert [m.model_dump() for m in messages] == before
    assert check_tool_pairs(out) == [] and len(out) == len(messages)
    shown: set[str] = set()
    for k, (original, sent) in enumerate(zip(messages, out, strict=False)):
        if not isinstance(original, ToolMessage):
            assert sent is original
            continue
        kept = set(str(sent.content).split("\n"))
        for line in str(original.content).split("\n"):
            assert line in kept or line in shown, (k, line)
        shown |= set(str(original.content).split("\n"))


class TestTheObject:
    def test_the_next_call_returns_the_same_copies(self):
        """A growing conversation gets the same edited objects every call, so the strategy after it
        sees an unchanged prefix."""
        messages = run("\n".join(FILE), *filler(4), "\n".join(FILE), *filler(2))
        strategy = DedupeOutputs()
        first = strategy.compact(messages[:-2]).messages
        second = strategy.compact(messages).messages
        assert all(a is b for a, b in zip(first, second, strict=False))
        assert second == dedupe_outputs(messages, settings=strategy.settings).messages

    def test_a_conversation_loaded_again_resumes_with_the_same_copies(self):
        """New objects with the same content (a checkpoint read back) get the remembered copies, so
        the next strategy's memo still hits."""
        from langchain_core.messages import messages_from_dict, messages_to_dict

        messages = run("\n".join(FILE), *filler(4), "\n".join(FILE), *filler(2))
        strategy = DedupeOutputs()
        first = strategy.compact(messages).messages
        reloaded = messages_from_dict(messages_to_dict(messages))
        again = strategy.compact(reloaded).messages
        assert again == first and again[13] is first[13] and first[13] is not messages[13]
        changed = [*reloaded[:-1], reloaded[-1].model_copy(update={"content": "\n".join(FILE)})]
        assert (
            strategy.compact(changed).messages
            == dedupe_outputs(changed, settings=strategy.settings).messages
        )

    def test_two_conversations_forking_from_one_prefix_each_get_their_own_reading(self):
        """A reading is extended in place, so it is taken out of the memo: a branch never sees the
        lines of another branch from the same prefix."""
        prefix = run(*filler(6))
        text = "\n".join(f"a line only the branches print, number {i}" for i in range(5))

        def branch(*call_ids: str) -> list[BaseMessage]:
            messages = list(prefix)
            for call_id in call_ids:
                call = {
                    "name": "bash",
                    "args": {"command": call_id},
                    "id": call_id,
                    "type": "tool_call",
                }
                messages += [
                    AIMessage("", tool_calls=[call]),
                    ToolMessage(text, tool_call_id=call_id),
                ]
            return messages

        strategy = DedupeOutputs()
        strategy.compact(prefix)
        for messages in (branch("call_a"), branch("call_b", "call_c"), branch("call_a")):
            out = strategy.compact(messages).messages
            assert out == dedupe_outputs(messages, settings=strategy.settings).messages
            assert (
                out[len(prefix) + 1].content == text
            )  # the first showing in its own history: whole, no pointer to the other branch

    def test_its_reading_lives_in_the_replay_engines_memo(self):
        """One memo of earlier calls for every strategy that resumes from them: dedupe_outputs, the
        bounded default and the ladder."""
        from langchain_promptstrat.messages.history_memo import ReplayMemo
        from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
        from langchain_promptstrat.strategies.ladder import CompactionLadder

        for strategy in (
            DedupeOutputs(),
            ShortenToolsEpochStable(),
            CompactionLadder(["tool_results"], max_tokens=10_000),
        ):
            assert isinstance(strategy._memo, ReplayMemo), type(strategy).__name__

    def test_it_keeps_no_finished_conversation_alive(self):
        """The memo holds the caller's messages weakly: a dropped conversation can be collected."""
        strategy = DedupeOutputs()
        messages = run("\n".join(FILE), *filler(6), "\n".join(FILE))
        strategy.compact(messages)
        probe = messages[3]
        import weakref

        ref = weakref.ref(probe)
        del messages, probe
        gc.collect()
        assert ref() is None


def test_on_real_transcripts_every_prompt_is_a_pure_function_with_pairs_intact():
    """On real runs the object and the function agree call by call, pairs stay intact, and outputs
    do shrink."""
    folder = realruns_dir("converted")
    saved = 0
    for path in sorted(folder.glob("*.jsonl"))[:6]:
        conversation = read_conversation(str(path))
        strategy = DedupeOutputs()
        for prompt in transcript_prompts(conversation.messages)[::5]:
            sent = strategy.compact(prompt).messages
            assert sent == dedupe_outputs(prompt, settings=strategy.settings).messages
            assert check_tool_pairs(sent) == check_tool_pairs(prompt)
            saved += sum(
                len(str(a.content)) - len(str(b.content))
                for a, b in zip(prompt, sent, strict=False)
            )
    assert saved > 0
