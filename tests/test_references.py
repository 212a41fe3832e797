"""Specification of references: every "[N lines as in the output of X above]" a prompt holds is
true, or names a handle (issue 43)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from conversations import MIRRORS, ai_step
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from realruns import realruns_dir

from langchain_promptstrat import check_tool_pairs, prepare_prompt, read_back
from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.messages import (
    index_tool_calls,
    shorten_lines,
    shorten_tool_output,
    with_handle,
)
from langchain_promptstrat.messages.references import (
    not_shown_text,
    reference_text,
    references,
    resolve_references,
    unresolved_references,
)
from langchain_promptstrat.replay import transcript_prompts
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.dedupe_outputs import DedupeOutputs
from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.testing import iter_agent_run
from langchain_promptstrat.tokens import TokenCounter

COUNT = TokenCounter("cl100k_base")
FILE = [f"    value_{i} = compute(parameter={i}, factor={i * 7})" for i in range(40)]
"""Lines a file would hold, each longer than dedupe's 20-character minimum."""
EARLY = Settings(
    dedupe_tool_call_threshold=0,
    stable_tool_call_threshold=6,
    stable_full_tool_calls=2,
    stable_epoch_size=3,
    stable_max_compacted_tool_calls=6,
    stable_front_drop_chunk=2,
)
"""Dedupe from the first output; the default shortens from the seventh call and drops from the
thirteenth."""


def run(*outputs: str, mirror: str = "plain") -> list[BaseMessage]:
    """Return a conversation whose calls (one a step, ``call_0``...) printed ``outputs``."""
    messages: list[BaseMessage] = [SystemMessage("You fix bugs."), HumanMessage("Fix the bug.")]
    for i, output in enumerate(outputs):
        messages += [
            ai_step([("bash", {"command": f"step {i}"})], i, mirror=mirror),
            ToolMessage(output, tool_call_id=f"call_{i}"),
        ]
    return messages


def tokens(text: str) -> int:
    return COUNT([ToolMessage(text, tool_call_id="x")])


def lines(*numbers: int) -> str:
    return "\n".join(FILE[n] for n in numbers)


def raw_default_list(
    history: list[BaseMessage], settings: Settings = EARLY, ceiling: int | None = None
) -> list[BaseMessage]:
    """Return what the default list's two strategies send one after the other, without the apply
    path."""
    deduped = DedupeOutputs(settings).compact(history).messages
    return (
        ShortenToolsEpochStable(settings, max_tokens=ceiling, token_counter=COUNT)
        .compact(deduped)
        .messages
    )


def default_list(
    settings: Settings = EARLY, ceiling: int | None = None
) -> list[DedupeOutputs | ShortenToolsEpochStable]:
    return [
        DedupeOutputs(settings),
        ShortenToolsEpochStable(settings, max_tokens=ceiling, token_counter=COUNT),
    ]


def check_every_reference(history: Sequence[BaseMessage], prompt: Sequence[BaseMessage]) -> int:
    """Assert that each reference of ``prompt`` resolves, or names a handle whose stored output
    holds its lines; return how many name one."""
    assert unresolved_references(history, prompt) == 0
    stored = {m.tool_call_id: m for m in history if isinstance(m, ToolMessage)}
    numbers = {r.id: r.number + 1 for r in index_tool_calls(history).calls}
    handles = 0
    for message in prompt:
        if not isinstance(message, ToolMessage) or not isinstance(message.content, str):
            continue
        own = numbers[message.tool_call_id]
        for ref in references(message.content, str(stored[message.tool_call_id].content)):
            if ref.shown or not ref.names:  # read_back_handles off: said not shown, no handle
                continue
            handles += 1
            whole = str(
                read_back(history, int(ref.names), limit=10_000, page_chars=10_000_000)
            ).split("\n")
            if ref.lines is None:  # lines no walk reaches: its own output holds them
                assert int(ref.names) == own
            else:
                assert all(line in whole for line in ref.lines), (ref, message.content)
    return handles


class TestWhereALineIs:
    def test_a_reference_stands_for_the_stored_lines_at_its_place(self) -> None:
        """Walking an output's text beside its stored text gives each reference the lines it
        replaced."""
        stored = "\n".join(["header", *FILE[:5], "middle", *FILE[5:8], "end"])
        text = "\n".join(
            ["header", reference_text(5, "call_0", "bash"), "middle", not_shown_text(3, 1), "end"]
        )
        found = references(text, stored)
        assert [(r.count, r.names, r.shown, r.lines) for r in found] == [
            (5, "call_0 (bash)", True, tuple(FILE[:5])),
            (3, "1", False, tuple(FILE[5:8])),
        ]

    def test_a_reference_in_the_tail_of_a_shortened_output_is_walked_from_the_end(self) -> None:
        """A read cut in its middle keeps whole lines of its head and tail: the tail's references
        are found from the last line."""
        stored = "\n".join(
            [
                *(f"unique line number {i} of the file" for i in range(60)),
                *FILE[:6],
                "the last line",
            ]
        )
        deduped = ToolMessage(
            stored.replace("\n".join(FILE[:6]), reference_text(6, "call_0", "bash")),
            tool_call_id="call_1",
        )
        short = with_handle(deduped, shorten_lines, 600, 2, COUNT)
        assert short is not deduped and "<..." in str(short.content)
        found = references(str(short.content), stored)
        assert [r.lines for r in found] == [tuple(FILE[:6])]

    @pytest.mark.parametrize("cut_at", ["its start", "its end"])
    def test_a_reference_cut_by_a_stubs_marker_is_said_not_shown(self, cut_at: str) -> None:
        """A stub keeps the head and tail of an output's text around a marker: a reference the cut
        runs through still reads as one, so what is left of it is rewritten, with the stub's own
        handle."""
        run_of = "\n".join(FILE[:10])
        for filler in range(60, 260):
            pad = ("x" * filler, "y" * 300) if cut_at == "its start" else ("x" * 300, "y" * filler)
            stored = "\n".join([pad[0], run_of, pad[1]])
            deduped = ToolMessage(
                stored.replace(run_of, reference_text(10, "call_0", "bash")), tool_call_id="call_1"
            )
            stub = shorten_tool_output(deduped, COUNT, call=2)
            cut = str(stub.content)
            if "...>" not in cut:
                continue  # not shortened: the stub would cost more
            left = cut.split("<...")[0] if cut_at == "its start" else cut.split("...>")[1]
            if ("as in the output of" in left) != ("above]" in left):
                break
        history = run(lines(*range(10)), stored)
        prompt = [*history[:-1], stub]
        [found] = references(cut, stored)
        assert found.lines is None and unresolved_references(history, prompt) == 1
        out = str(resolve_references(history, prompt)[-1].content)
        assert "not shown: read_back(call=2)]" in out and " the output of " not in out
        assert unresolved_references(history, resolve_references(history, prompt)) == 0

    def test_words_the_stored_output_holds_are_held_not_walked(self) -> None:
        """A line the stored output prints itself is its text: it stands for no stored lines, and
        stays while what it names is sent as stored (here it names no call of the conversation)."""
        quoted = reference_text(2, "call_9", "bash")
        history = run(lines(0, 1, 2), "\n".join(["log:", quoted, lines(1, 2)]))
        deduped = DedupeOutputs(EARLY).compact(history).messages
        assert deduped[-1].content == "\n".join(
            ["log:", quoted, reference_text(2, "call_0", "bash")]
        )
        found = references(str(deduped[-1].content), str(history[-1].content))
        assert [(r.names, r.lines, r.held) for r in found] == [
            ("call_9 (bash)", None, True),
            ("call_0 (bash)", tuple(FILE[1:3]), False),
        ]
        assert resolve_references(history, deduped) == deduped
        assert unresolved_references(history, deduped) == 0

    def test_strategies_chained_as_runnables_keep_references_true(self) -> None:
        """``DedupeOutputs() | ShortenToolsEpochStable()`` in a chain: the second gets the first's
        answer as its conversation, where the references are held; one whose output it then
        shortens or drops names that output's handle."""
        others = [f"output {k}, a line long enough to count\n" * 3 for k in range(1, 15)]
        history = run(lines(*range(8)), *others, lines(*range(8)))  # the last repeats the first
        bounded = ShortenToolsEpochStable(EARLY, token_counter=COUNT)  # by count: call_0 is cut
        chained = (DedupeOutputs(EARLY) | bounded).invoke(history)
        assert chained[-1].content == not_shown_text(8, 1)
        assert check_every_reference(history, chained) == 1


class TestTheRule:
    def test_a_reference_to_an_output_shown_whole_stays_as_it_is(self) -> None:
        """The named output shows every line: nothing to rewrite, the same objects come back."""
        history = run(lines(*range(8)), "ok, nothing here of any length at all", lines(*range(8)))
        deduped = DedupeOutputs(EARLY).compact(history).messages
        assert deduped[-1].content == reference_text(8, "call_0", "bash")
        assert (
            resolve_references(history, deduped) == deduped
            and resolve_references(history, deduped)[-1] is deduped[-1]
        )

    def test_a_reference_to_a_dropped_output_names_its_handle_and_says_the_lines_are_not_shown(
        self,
    ) -> None:
        """The model is never told lines are above when the output that held them is gone."""
        history = run(lines(*range(8)), "ok, nothing here of any length at all", lines(*range(8)))
        deduped = DedupeOutputs(EARLY).compact(history).messages
        without_first = [
            m
            for m in deduped
            if getattr(m, "tool_call_id", None) != "call_0"
            and not (m.type == "ai" and m.tool_calls and m.tool_calls[0]["id"] == "call_0")
        ]
        out = resolve_references(history, without_first)
        assert out[-1].content == not_shown_text(8, 1)
        assert check_every_reference(history, out) == 1

    def test_a_reference_through_a_chain_names_the_output_that_shows_the_lines(self) -> None:
        """dedupe credits a line to the newest output holding it, which may show it only as a
        reference: the rewrite names the one that shows it."""
        history = run(
            lines(*range(8)),
            "\n".join(["a new first line, long enough", *FILE[:8]]),
            lines(*range(8)),
        )
        deduped = DedupeOutputs(EARLY).compact(history).messages
        assert deduped[-1].content == reference_text(
            8, "call_1", "bash"
        )  # call_1 shows them only as a reference
        assert unresolved_references(history, deduped) == 1
        out = resolve_references(history, deduped)
        assert out[-1].content == reference_text(8, "call_0", "bash")
        assert unresolved_references(history, out) == 0

    def test_a_reference_in_a_text_block_marked_for_the_cache_is_rewritten_in_its_block(
        self,
    ) -> None:
        """A strategy that marks an output for Anthropic's cache turns its string into a text block:
        the reference in it is kept true there, the mark kept."""
        history = run(lines(*range(8)), "ok, nothing here of any length at all", lines(*range(8)))
        deduped = DedupeOutputs(EARLY).compact(history).messages
        control = {"type": "ephemeral"}
        marked = deduped[-1].model_copy(
            update={
                "content": [{"type": "text", "text": deduped[-1].content, "cache_control": control}]
            }
        )
        prompt = [*deduped[:2], *deduped[4:-1], marked]  # call_0 and its output dropped
        out = resolve_references(history, prompt)
        assert out[-1].content == [
            {"type": "text", "text": not_shown_text(8, 1), "cache_control": control}
        ]
        assert (
            unresolved_references(history, prompt) == 1 and unresolved_references(history, out) == 0
        )

    def test_lines_no_single_output_shows_are_not_shown_and_named_by_the_handle_of_their_own_output(
        self,
    ) -> None:
        """A run whose lines two outputs show between them: no one output to name, so the output's
        own stored text is read back."""
        history = run(
            lines(0, 1, 2, 3),
            lines(4, 5, 6, 7),
            "separator line, long enough to count",
            lines(*range(8)),
        )
        deduped = DedupeOutputs(EARLY).compact(history).messages
        assert deduped[-1].content == reference_text(
            8, "call_0", "bash"
        )  # the holder of its first line: lines 0-3 only
        out = resolve_references(history, deduped)
        assert out[-1].content == not_shown_text(8, 4)
        assert check_every_reference(history, out) == 1

    def test_with_read_back_handles_off_lines_not_shown_are_said_so_without_a_handle(self) -> None:
        """The read_back_handles setting off means no text names read_back: a rewrite says only that
        the lines are not shown."""
        off = Settings.load(
            read_back_handles=False,
            **{k: v for k, v in EARLY.as_dict().items() if k.startswith(("dedupe", "stable"))},
        )
        history = run(*(lines(*range(k, k + 8)) for k in range(0, 30, 2)))
        prompt = prepare_prompt(history, default_list(off, ceiling=1_500))
        said = [
            m for m in prompt if isinstance(m, ToolMessage) and "lines not shown]" in str(m.content)
        ]
        assert said and not any("read_back" in str(m.content) for m in prompt)
        assert unresolved_references(history, prompt) == 0

    def test_saying_lines_are_not_shown_costs_less_than_the_reference_it_replaces(self) -> None:
        """The strategies counted the prompt with the references in it: a rewrite must not push it
        over their ceiling."""
        for call_id, tool, number in (
            ("call_0012", "bash", 1_234),
            ("call_OGSMOPk6DRXfV7yVPGNGPC98", "bash", 9_999),
            ("c1", "t", 99),
        ):
            reference, rewritten = reference_text(8, call_id, tool), not_shown_text(8, number)
            assert tokens(rewritten) <= tokens(reference) and len(rewritten) <= len(reference), (
                reference,
                rewritten,
            )


class TestEveryPrompt:
    @pytest.mark.parametrize("ceiling", [None, 6_000, 3_000])
    def test_the_default_list_leaves_no_reference_unresolved_on_the_synthetic_run(
        self, ceiling: int | None
    ) -> None:
        """Every model call of a 120-call agent run, through the front ends' apply path: no
        reference points at text the prompt lacks."""
        strategies = default_list(ceiling=ceiling)
        left = handles = 0
        for history in list(iter_agent_run(120, seed=3))[::3]:
            prompt = prepare_prompt(history, strategies)
            handles += check_every_reference(history, prompt)
            left += unresolved_references(history, raw_default_list(history, ceiling=ceiling))
            if ceiling is not None:
                assert COUNT(prompt) <= ceiling
        assert (
            left > 0 and handles > 0
        )  # the two strategies alone leave some; the apply path rewrites them

    def test_no_rewrite_changes_a_byte_before_the_first_change_the_strategies_made(self) -> None:
        """A reference is rewritten only when something before it changed: the prompt cache loses
        nothing more than it already did."""
        history_prompts = list(iter_agent_run(150, seed=5))
        dedupe, bounded = (
            DedupeOutputs(EARLY),
            ShortenToolsEpochStable(EARLY, max_tokens=5_000, token_counter=COUNT),
        )
        previous: tuple[list[BaseMessage], list[BaseMessage]] | None = None
        rewritten = 0
        for history in history_prompts:
            raw = bounded.compact(dedupe.compact(history).messages).messages
            sent = resolve_references(history, raw)
            rewritten += sum(a is not b for a, b in zip(raw, sent, strict=False))
            if previous is not None:
                assert first_difference(previous[1], sent) == first_difference(previous[0], raw)
            previous = (raw, sent)
        assert rewritten > 0


def first_difference(before: Sequence[BaseMessage], after: Sequence[BaseMessage]) -> int:
    """Return the index of the first message of ``after`` that is not byte-identical to
    ``before``'s."""
    return next(
        (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
        min(len(before), len(after)),
    )


FILE_LINES = st.sampled_from([*FILE[:16], "}", "", "a line that appears only sometimes"])


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    outputs=st.lists(
        st.lists(FILE_LINES, min_size=1, max_size=18).map("\n".join), min_size=2, max_size=24
    ),
    ceiling=st.sampled_from([None, 4_000, 1_500, 900]),
    mirror=st.sampled_from(MIRRORS),
)
def test_every_reference_in_every_prompt_resolves_or_names_a_handle(
    outputs: list[str], ceiling: int | None, mirror: str
) -> None:
    """For any history of repeated file lines and any ceiling: each reference of the default list's
    prompt shows its lines where it says, or names a handle whose stored output holds them; pairs
    intact in every representation, the ceiling held."""
    history = run(*outputs, mirror=mirror)
    prompt = prepare_prompt(history, default_list(ceiling=ceiling))
    check_every_reference(history, prompt)
    assert check_tool_pairs(prompt) == []
    if ceiling is not None:
        assert COUNT(prompt) <= ceiling


REAL_CEILINGS = [None, 32_000, 16_000]


@pytest.mark.parametrize("ceiling", REAL_CEILINGS)
def test_on_the_real_runs_every_reference_resolves_or_names_a_handle(ceiling: int | None) -> None:
    """Every fifth model call of every shared real run, the default list as prepare_prompt applies
    it: no reference points at text the prompt lacks."""
    handles = 0
    for path in sorted(realruns_dir("converted").glob("*.jsonl")):
        strategies = [
            DedupeOutputs(),
            ShortenToolsEpochStable(max_tokens=ceiling, token_counter=COUNT),
        ]
        for k, history in enumerate(transcript_prompts(read_conversation(str(path)).messages)):
            prompt = prepare_prompt(history, strategies)
            if k % 5 == 0:
                handles += check_every_reference(history, prompt)
                assert COUNT(prompt) <= (ceiling or 111_616)
    assert handles > 0
