"""Specification of how the default shortens an old call: a file read keeps whole lines of its head
and tail; old narration is stubbed.

An agent edits the lines it read, calls the functions they define and quotes their line
numbers; a program's log matters mostly by its last lines. So when
``shorten_tools_epoch_stable`` freezes a call that printed a file, the output keeps the whole
lines that fit in ``stable_read_output_chars`` (head and tail, one marker between), where any
other output keeps the usual 400-character stub; the narration of an assistant message whose
calls are all frozen keeps a 400-character stub too (``stable_narration_chars``).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat import Settings, check_tool_pairs
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.strategies.epoch_machinery.shortened_form import reads_a_file
from langchain_promptstrat.strategies.epoch_stable import (
    ShortenToolsEpochStable,
    shorten_tools_epoch_stable,
)
from langchain_promptstrat.testing import iter_agent_run
from langchain_promptstrat.tokens import TokenCounter
from langchain_promptstrat.truncation import shorten_by_lines

SMALL = Settings(
    stable_tool_call_threshold=10,
    stable_full_tool_calls=2,
    stable_epoch_size=5,
    stable_max_compacted_tool_calls=40,
    stable_front_drop_chunk=20,
)
"""Past 10 outputs, all but the newest few are shortened; nothing is dropped in these short runs."""

READ = "nl -ba src/app/models.py | sed -n '1,120p'"
RUN = "python -m pytest tests/test_models.py -x"


def file_view(k: int) -> str:
    return "\n".join(
        f"{n:6}\tdef handler_{k}_{n}(request, *, timeout=30):  # line {n}" for n in range(1, 121)
    )


def pytest_log(k: int) -> str:
    return "\n".join(
        f"tests/test_models.py::test_case_{k}_{n} PASSED                    [{n:3}%]"
        for n in range(1, 121)
    )


def bash_run(steps: int) -> list[BaseMessage]:
    """Return a run of ``steps`` shell calls alternating between reading a file and running the
    tests."""
    messages: list[BaseMessage] = [
        SystemMessage("You are a coding agent."),
        HumanMessage("Fix the handler timeouts."),
    ]
    for k in range(steps):
        command = READ if k % 2 == 0 else RUN
        messages.append(
            AIMessage(
                f"THOUGHT: step {k}",
                tool_calls=[{"name": "bash", "args": {"command": command}, "id": f"call_{k}"}],
            )
        )
        messages.append(
            ToolMessage(file_view(k) if k % 2 == 0 else pytest_log(k), tool_call_id=f"call_{k}")
        )
    return messages


def outputs(prompt: list[BaseMessage]) -> dict[str, str]:
    return {m.tool_call_id: str(m.content) for m in prompt if isinstance(m, ToolMessage)}


class TestWhichCallsReadAFile:
    @pytest.mark.parametrize(
        "command",
        [
            "cat setup.py",
            "nl -ba django/db/models/query.py | sed -n '300,360p'",
            "sed -n '40,80p' src/app.py",
            "head -50 README.rst",
            "tail -n 30 log.txt",
            "cd /testbed && cat pyproject.toml",
            "# look at the settings first\nnl -ba settings.py",
        ],
    )
    def test_a_shell_command_that_prints_a_file_reads(self, command: str) -> None:
        """The commands an agent reads code with (cat, nl, sed -n, head, tail), after a cd or a
        comment, read a file."""
        assert reads_a_file("bash", {"command": command})

    @pytest.mark.parametrize(
        "command",
        [
            "python -m pytest -x",
            "sed -i 's/timeout=30/timeout=60/' src/app.py",
            "grep -rn handler src/",
            "ls -la",
            "python reproduce.py | tail -20",
            "",
        ],
    )
    def test_a_command_that_runs_edits_or_searches_does_not(self, command: str) -> None:
        """A test run, an in-place edit, a search or a listing is not a file read (even piped into
        tail)."""
        assert not reads_a_file("bash", {"command": command})

    @pytest.mark.parametrize(
        "name", ["read_file", "view", "open_file", "str_replace_editor_view", "ReadFile"]
    )
    def test_a_tool_named_for_reading_reads_whatever_its_arguments(self, name: str) -> None:
        """Agents with a dedicated file tool (read_file, view, open) read through it: its name says
        so."""
        assert reads_a_file(name, {"path": "src/app.py"})

    def test_an_unbalanced_quote_is_read_plainly_instead_of_raising(self) -> None:
        """A command the shell would reject still gets an answer from its first word."""
        assert reads_a_file("bash", {"command": "cat 'broken"}) and not reads_a_file(
            "bash", "python -c 'oops"
        )


class TestShortenByLines:
    @settings(max_examples=200, deadline=None)
    @given(
        lines=st.lists(st.text(st.characters(blacklist_characters="\n"), max_size=90), max_size=60),
        size=st.integers(0, 2_000),
    )
    def test_every_kept_line_is_a_whole_line_of_the_head_or_the_tail(
        self, lines: list[str], size: int
    ) -> None:
        """Kept lines are a prefix and a suffix of the text's lines around one marker, within the
        size; a text that fits comes back as it is."""
        text = "\n".join(lines)
        short = shorten_by_lines(text, size)
        assert shorten_by_lines(text, size) == short  # the same bytes every time
        if len(text) <= size:
            assert short is text
            return
        if short == text or short.startswith(
            "Truncated ("
        ):  # no whole line fits: the character stub (or nothing shorter)
            return
        kept = short.split("\n")
        marker = next(
            i for i, line in enumerate(kept) if line.startswith("<...") and " chars - " in line
        )
        head, tail = kept[:marker], kept[marker + 1 :]
        assert lines[: len(head)] == head and (not tail or lines[-len(tail) :] == tail)
        assert len(head) + len(tail) < len(lines)
        assert len(short) - len(kept[marker]) <= size + 1
        assert f"of {len(text)} chars" in kept[marker]

    def test_one_giant_line_gets_the_character_stub(self) -> None:
        """A minified file or a one-line JSON dump has no whole line to keep: the head/tail stub of
        the size stands for it."""
        assert shorten_by_lines("x" * 5_000, 1_200).startswith("Truncated (5000): ")


class TestTheDefaultsShortenedForm:
    def test_an_old_file_read_keeps_its_first_and_last_lines_whole(self) -> None:
        """Past the threshold an old `nl -ba` output keeps whole lines (with their numbers) within
        1,200 characters, not a 400-character stub."""
        prompt = shorten_tools_epoch_stable(bash_run(16), settings=SMALL).messages
        sent, original = outputs(prompt)["call_0"], file_view(0)
        assert sent != original and not sent.startswith("Truncated (")
        lines = original.split("\n")
        kept = [line for line in sent.split("\n")[:-1] if not line.startswith("<...")]
        assert kept[0] == lines[0] and kept[-1] == lines[-1] and all(line in lines for line in kept)
        assert 400 < len(sent) <= 1_200 + 60 and sent.endswith("\n[whole: read_back(call=1)]")

    def test_an_old_test_run_keeps_the_usual_stub(self) -> None:
        """A program's log is shortened as before: the hash-stamped 400-character head and tail."""
        prompt = shorten_tools_epoch_stable(bash_run(16), settings=SMALL).messages
        assert (
            outputs(prompt)["call_1"].startswith("Truncated (")
            and len(outputs(prompt)["call_1"]) < 450
        )

    def test_zero_shortens_a_file_read_like_any_other_output(self) -> None:
        """read_output_chars=0 brings back the single stub for every kind of call."""
        prompt = shorten_tools_epoch_stable(
            bash_run(16), settings=SMALL.replace(stable_read_output_chars=0)
        ).messages
        assert outputs(prompt)["call_0"].startswith("Truncated (")

    def test_a_file_read_given_as_content_blocks_keeps_the_usual_stub(self) -> None:
        """Block content has no lines to keep whole: each text block is shortened as any other
        output's."""
        messages = bash_run(16)
        messages[3] = ToolMessage([{"type": "text", "text": file_view(0)}], tool_call_id="call_0")
        prompt = shorten_tools_epoch_stable(messages, settings=SMALL).messages
        sent = next(m for m in prompt if isinstance(m, ToolMessage) and m.tool_call_id == "call_0")
        assert isinstance(sent.content, list) and sent.content[0]["text"].startswith("Truncated (")  # type: ignore[index]

    def test_the_option_is_a_typed_setting(self) -> None:
        """ShortenToolsEpochStable(stable_read_output_chars=...) sets the setting of that name; a
        negative size is refused."""
        strategy = ShortenToolsEpochStable(stable_read_output_chars=2_000)
        assert strategy.settings.stable_read_output_chars == 2_000
        with pytest.raises(ConfigError):
            ShortenToolsEpochStable(stable_read_output_chars=-1)

    def test_the_report_counts_a_shortened_file_read_and_not_one_that_already_fits(self) -> None:
        """All 13 frozen calls count as shortened; a file read that fits in the read size is sent as
        it is and not counted."""
        report = shorten_tools_epoch_stable(bash_run(16), settings=SMALL).report
        assert report.shortened == report.details["compaction_edge"] == 13
        roomy = shorten_tools_epoch_stable(
            bash_run(16), settings=SMALL.replace(stable_read_output_chars=20_000)
        )
        assert roomy.report.shortened == 6  # the test runs only
        assert outputs(roomy.messages)["call_0"] == file_view(0)


LONG_THOUGHT = "THOUGHT: " + " ".join(
    f"the handler_{n} timeout should follow the request settings" for n in range(40)
)


def narrated_run(steps: int) -> list[BaseMessage]:
    """Return :func:`bash_run` with a long narration on every assistant message."""
    return [
        m.model_copy(update={"content": LONG_THOUGHT}) if isinstance(m, AIMessage) else m
        for m in bash_run(steps)
    ]


def narration(prompt: list[BaseMessage], call_id: str) -> str:
    return next(
        str(m.content)
        for m in prompt
        if isinstance(m, AIMessage) and any(c["id"] == call_id for c in m.tool_calls)
    )


class TestTheNarrationOfFrozenCalls:
    def test_the_narration_of_a_message_whose_calls_are_all_frozen_keeps_a_400_character_stub(
        self,
    ) -> None:
        """The agent's reasoning before a call it made long ago keeps its hash-stamped head and
        tail, as an old output does."""
        prompt = shorten_tools_epoch_stable(narrated_run(16), settings=SMALL).messages
        old, new = narration(prompt, "call_0"), narration(prompt, "call_15")
        assert old.startswith(f"Truncated ({len(LONG_THOUGHT)}): ") and len(old) < 450
        assert new == LONG_THOUGHT  # a whole call keeps its narration

    def test_zero_keeps_every_narration_whole(self) -> None:
        """narration_chars=0 shortens arguments and outputs only, as the reference strategies do."""
        prompt = shorten_tools_epoch_stable(
            narrated_run(16), settings=SMALL.replace(stable_narration_chars=0)
        ).messages
        assert narration(prompt, "call_0") == LONG_THOUGHT

    def test_the_message_of_a_protected_repeat_keeps_its_narration(self) -> None:
        """The newest occurrence of a repeated call stays whole among the frozen ones, and so does
        the reasoning that led to it."""
        messages: list[BaseMessage] = [
            SystemMessage("You are a coding agent."),
            HumanMessage("Fix it."),
        ]
        for k in range(16):
            command = "cat setup.cfg" if k in (3, 7) else f"python step_{k}.py"
            messages.append(
                AIMessage(
                    LONG_THOUGHT,
                    tool_calls=[{"name": "bash", "args": {"command": command}, "id": f"call_{k}"}],
                )
            )
            messages.append(ToolMessage(pytest_log(k), tool_call_id=f"call_{k}"))
        result = shorten_tools_epoch_stable(messages, settings=SMALL)
        assert result.report.protected == 1 and outputs(result.messages)["call_7"] == pytest_log(7)
        assert narration(result.messages, "call_7") == LONG_THOUGHT
        assert narration(result.messages, "call_3").startswith("Truncated (")

    def test_a_call_whose_only_change_is_its_narration_is_counted_and_announced(self) -> None:
        """Short outputs and arguments with a long narration: the notice still appears and counts
        the frozen calls, since bytes changed."""
        messages: list[BaseMessage] = [
            SystemMessage("You are a coding agent."),
            HumanMessage("Fix it."),
        ]
        for k in range(16):
            messages.append(
                AIMessage(
                    LONG_THOUGHT,
                    tool_calls=[{"name": "bash", "args": {"command": "ls"}, "id": f"call_{k}"}],
                )
            )
            messages.append(ToolMessage("ok", tool_call_id=f"call_{k}"))
        result = shorten_tools_epoch_stable(messages, settings=SMALL)
        assert result.report.shortened == 13 and result.report.details["notice"] is True
        quiet = shorten_tools_epoch_stable(
            messages, settings=SMALL.replace(stable_narration_chars=0)
        )
        assert quiet.report.shortened == 0 and quiet.report.details["notice"] is False


COUNT = TokenCounter("cl100k_base")
PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class TestUnderACeiling:
    @PROPERTY
    @given(
        seed=st.integers(0, 10_000),
        ceiling=st.sampled_from([12_000, 20_000, 40_000]),
        read_chars=st.sampled_from([0, 600, 1_200, 4_000]),
        narration_chars=st.sampled_from([0, 100, 400]),
    )
    def test_the_shortened_forms_never_cross_the_ceiling_or_break_a_pair(
        self, seed: int, ceiling: int, read_chars: int, narration_chars: int
    ) -> None:
        """With any read and narration size, every prompt of a run with read_file calls is under the
        ceiling, pairs intact, and the same bytes from a fresh object."""
        options = {
            "stable_read_output_chars": read_chars,
            "stable_narration_chars": narration_chars,
        }
        strategy = ShortenToolsEpochStable(max_tokens=ceiling, token_counter=COUNT, **options)
        prompts = list(iter_agent_run(60, seed=seed))
        for n, prompt in enumerate(prompts):
            result = strategy.compact(list(prompt))
            assert COUNT(result.messages) <= ceiling
            assert not check_tool_pairs(result.messages)
            if n % 20 == 19:
                fresh = ShortenToolsEpochStable(max_tokens=ceiling, token_counter=COUNT, **options)
                assert fresh.compact(list(prompt)).messages == result.messages

    def test_the_prefix_is_stable_between_ceiling_events(self) -> None:
        """Between two ceiling events each prompt starts with the previous one: the longer file
        reads are decided once, at freezing."""
        strategy = ShortenToolsEpochStable(max_tokens=20_000, token_counter=COUNT)
        previous: list[BaseMessage] | None = None
        checked = 0
        for prompt in iter_agent_run(120, seed=5):
            result = strategy.compact(list(prompt))
            d: dict[str, Any] = result.report.details
            if previous is not None and d["prefix_change"] is None:
                assert result.messages[: len(previous)] == previous
                checked += 1
            previous = result.messages
        assert checked > 30
