"""Replaying saved transcripts call by call: prompts, folders, aggregation and the CLI."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
    messages_to_dict,
)
from realruns import realruns_dir

from langchain_promptstrat.cli import main
from langchain_promptstrat.conversation_file import read_conversation
from langchain_promptstrat.replay import simulate_files, transcript_prompts, usage_of
from langchain_promptstrat.simulate import format_table
from langchain_promptstrat.tokens import tool_schema_tokens

CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
}
RUN = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "task"},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    {"role": "assistant", "content": "done"},
]


def chars(messages):
    """A counter a reader can follow: one token per character of content."""
    return sum(len(m.content) for m in messages)


class TestPrompts:
    def test_each_assistant_message_is_answered_from_the_history_before_it(self):
        """The prompts are messages[:i] for each AIMessage at i > 0, in order."""
        messages = [
            HumanMessage("t"),
            AIMessage("a"),
            ToolMessage("o", tool_call_id="x"),
            AIMessage("b"),
        ]
        assert transcript_prompts(messages) == [messages[:1], messages[:3]]

    def test_files_are_replayed_separately_and_summed(self, tmp_path):
        """Two files of 2 model calls give 4 calls; each file starts with an empty cache (its first
        call reuses 0)."""
        for name in ("a.jsonl", "b.json"):
            (tmp_path / name).write_text(
                "\n".join(json.dumps(m) for m in RUN) if name.endswith("l") else json.dumps(RUN)
            )
        result = simulate_files([tmp_path], ["none"], token_counter=chars, progress=False)
        run = result.run("none")
        assert (result.model_calls, run.tokens) == (4, [7, 11, 7, 11])
        assert run.cached_tokens == [0, 7, 0, 7]
        assert [p.rsplit("/", 1)[1] for p in result.files] == ["a.jsonl", "b.json"]


class TestToolSchemas:
    BASH = {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Execute a bash command",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }

    def test_a_body_with_tools_counts_their_schemas_in_every_prompt(self, tmp_path):
        """A request body's tools are counted in each of its prompts (and cached from its second); a
        bare list in the same folder has none."""
        (tmp_path / "a.json").write_text(
            json.dumps({"model": "m", "messages": RUN, "tools": [self.BASH]})
        )
        (tmp_path / "b.json").write_text(json.dumps(RUN))
        result = simulate_files([tmp_path], ["none"], token_counter=chars, progress=False)
        schemas = tool_schema_tokens([self.BASH], chars)
        assert result.run("none").tokens == [7 + schemas, 11 + schemas, 7, 11]
        assert result.run("none").cached_tokens == [0, 7 + schemas, 0, 7]
        assert result.tool_schemas == [(1, schemas), (0, 0)]
        assert (
            f"the tool schemas of the 1 of 2 files that saved them ({schemas:,} tokens)"
            in format_table(result)
        )

    def test_given_tools_replace_every_files_own(self, tmp_path):
        """simulate_files(tools=[]) counts no schemas even for a body that saved some."""
        (tmp_path / "a.json").write_text(
            json.dumps({"model": "m", "messages": RUN, "tools": [self.BASH]})
        )
        result = simulate_files([tmp_path], ["none"], token_counter=chars, tools=[], progress=False)
        assert result.run("none").tokens == [7, 11] and result.tool_schemas == [(0, 0)]


class TestCli:
    def test_a_folder_prints_the_table_and_skips_what_it_cannot_read_with_a_note(
        self, tmp_path, capsys
    ):
        """simulate FOLDER: exit 0, a table over the readable files, a note naming the skipped
        one."""
        (tmp_path / "run.json").write_text(json.dumps(RUN))
        (tmp_path / "broken.json").write_text("{oops")
        (tmp_path / "README.md").write_text("not a transcript")
        assert main(["simulate", str(tmp_path), "none", "--cache", "openai", "--no-progress"]) == 0
        out, err = capsys.readouterr()
        assert (
            f"Replayed {tmp_path / 'run.json'}: 2 model calls." in out.replace("\n  ", " ")
            and "openai reuse" in out
        )
        assert f"note: skipped {tmp_path / 'broken.json'}" in out and err == ""

    def test_a_usage_sidecar_in_a_folder_is_not_replayed_as_a_transcript(self, tmp_path, capsys):
        """A ``NAME.usage.json`` beside a transcript (the provider's billed tokens per answer, as in
        the shared real runs) is not a conversation: the folder replays one file, and the only note
        is the provider's bill."""
        (tmp_path / "run.jsonl").write_text("\n".join(json.dumps(m) for m in RUN))
        (tmp_path / "run.usage.json").write_text(
            json.dumps([{"prompt_tokens": 10, "cached_tokens": None}] * 2)
        )
        assert main(["simulate", str(tmp_path), "none", "--no-progress", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["files"] == [str(tmp_path / "run.jsonl")] and [
            n[:16] for n in data["notes"]
        ] == ["provider's bill "]

    def test_a_file_named_explicitly_that_cannot_be_read_is_an_error(self, tmp_path, capsys):
        """simulate FILE with a broken file: one error line, exit 2."""
        (tmp_path / "broken.json").write_text("{oops")
        assert main(["simulate", str(tmp_path / "broken.json"), "--no-progress"]) == 2
        assert capsys.readouterr().err.startswith(
            f"promptstrat: error: {tmp_path / 'broken.json'}: "
        )

    def test_the_real_transcripts_replay_with_no_error(self, capsys):
        """simulate on the real folders (raw trajectories and converted JSON lines): exit 0, one row
        per strategy."""
        raw, converted = realruns_dir("raw"), realruns_dir("converted")
        code = main(
            [
                "simulate",
                str(raw),
                str(converted),
                "none",
                "shorten_tools_epoch_stable",
                "--cache",
                "anthropic",
                "--no-progress",
                "--json",
            ]
        )
        out, err = capsys.readouterr()
        data = json.loads(out)
        assert code == 0 and "Traceback" not in err
        assert len(data["files"]) == len(list(raw.glob("*.json"))) + len(
            list(converted.glob("*.jsonl"))
        )
        assert [s["name"] for s in data["strategies"]] == ["none", "shorten_tools_epoch_stable"]
        assert all(s["provider_summary"]["cached_tokens"] > 0 for s in data["strategies"])


def write_run(folder, name="run", usage=None):
    """Write RUN as JSON lines in ``folder``, with ``usage`` (one entry per assistant message)
    beside it when given."""
    (folder / f"{name}.jsonl").write_text("\n".join(json.dumps(m) for m in RUN))
    if usage is not None:
        (folder / f"{name}.usage.json").write_text(json.dumps(usage))
    return folder / f"{name}.jsonl"


def last_only(messages):
    """A strategy whose prompt differs from none's: the last message alone."""
    return messages[-1:]


class TestProviderBill:
    entry = st.one_of(
        st.none(),
        st.builds(
            lambda t, share: {"prompt_tokens": t, "cached_tokens": int(t * share)},
            st.integers(1, 10_000),
            st.floats(0, 1),
        ),
    )

    @settings(max_examples=40, deadline=None)
    @given(
        usage=st.lists(entry, min_size=2, max_size=2).filter(any),
        cache=st.sampled_from(["prefix", "openai", "anthropic"]),
    )
    def test_every_row_is_scaled_by_each_calls_ratio_and_the_none_row_is_the_providers_bill(
        self, usage, cache
    ):
        """Per call with usage, ratio = billed / the none row's count: every row's tokens times it,
        the none row exactly the provider's input and cached tokens, a strategy's cached tokens its
        cache rule's times the ratio and the share of the rule's the provider served on the none
        row's prompt; a call without usage keeps the package's figures."""
        with tempfile.TemporaryDirectory() as folder:
            path = write_run(Path(folder), usage=usage)
            common = dict(token_counter=chars, cache=cache, progress=False)
            package = simulate_files([path], ["none", last_only], **common)
            provider = simulate_files([path], ["none", last_only], bill="provider", **common)
        none = package.run("none")
        for k, entry in enumerate(usage):
            ratio = entry["prompt_tokens"] / none.tokens[k] if entry else 1.0
            for before, after in zip(package.runs, provider.runs, strict=False):
                assert after.tokens[k] == round(before.tokens[k] * ratio)
                rule_lists = ["cached_tokens"] + (
                    ["provider_cached_tokens"] if cache != "prefix" else []
                )
                for figures in rule_lists:
                    rule_on_none = getattr(none, figures)[k]
                    served = (
                        entry["cached_tokens"] / (rule_on_none * ratio)
                        if entry and rule_on_none
                        else 1.0
                    )
                    if before.name == "none" and entry:
                        assert (after.tokens[k], getattr(after, figures)[k]) == (
                            entry["prompt_tokens"],
                            entry["cached_tokens"],
                        )
                    else:
                        assert getattr(after, figures)[k] == min(
                            after.tokens[k], round(getattr(before, figures)[k] * ratio * served)
                        )
                assert len(after.provider_written_tokens) == (0 if cache == "prefix" else 2)
        assert (
            provider.bill == "provider"
            and f"{usage.count(None)} of 2 calls report no usage" in provider.notes[-1]
        )

    @settings(max_examples=40, deadline=None)
    @given(
        usage=st.lists(entry, min_size=2, max_size=2).filter(any),
        cache=st.sampled_from(["prefix", "openai", "anthropic"]),
    )
    def test_a_strategy_that_sends_nones_prompts_is_billed_as_none_is(self, usage, cache):
        """The provider's cache misses on the none row hit a strategy's rows alike: a strategy whose
        prompts are none's own is billed the provider's input and cached tokens of every call, not
        its cache rule's optimistic share."""

        def same_as_none(messages):
            return list(messages)

        with tempfile.TemporaryDirectory() as folder:
            path = write_run(Path(folder), usage=usage)
            package = simulate_files(
                [path], ["none"], token_counter=chars, cache=cache, progress=False
            ).run("none")
            result = simulate_files(
                [path],
                ["none", same_as_none],
                bill="provider",
                token_counter=chars,
                cache=cache,
                progress=False,
            )
        none, same = result.runs
        assert same.tokens == none.tokens
        for figures in ["cached_tokens"] + (
            ["provider_cached_tokens"] if cache != "prefix" else []
        ):
            # where the rule caches nothing of none's prompt (a first call) there is no share to
            # carry over: the rule's 0 stays
            served = [
                k
                for k, entry in enumerate(usage)
                if entry is None or getattr(package, figures)[k] > 0
            ]
            assert [getattr(same, figures)[k] for k in served] == [
                getattr(none, figures)[k] for k in served
            ]

    @pytest.mark.parametrize(
        "style", ["langchain usage_metadata", "role usage_metadata", "role response_metadata"]
    )
    def test_usage_on_the_answers_bills_as_a_usage_file_does(self, tmp_path, style):
        """A conversation file carries usage on its answers (LangChain's usage_metadata in either
        dict style, or the provider's usage dict in response_metadata): the replay bills from it as
        from NAME.usage.json."""
        usage = [
            {"prompt_tokens": 30, "cached_tokens": 4},
            {"prompt_tokens": 50, "cached_tokens": 20},
        ]
        messages = convert_to_messages(RUN)
        answers = [m for m in messages if isinstance(m, AIMessage)]
        for answer, entry in zip(answers, usage, strict=False):
            if style == "role response_metadata":
                answer.response_metadata = {
                    "token_usage": {
                        "prompt_tokens": entry["prompt_tokens"],
                        "prompt_tokens_details": {"cached_tokens": entry["cached_tokens"]},
                    }
                }
            else:
                answer.usage_metadata = {
                    "input_tokens": entry["prompt_tokens"],
                    "output_tokens": 1,
                    "total_tokens": entry["prompt_tokens"] + 1,
                    "input_token_details": {"cache_read": entry["cached_tokens"]},
                }
        if style == "langchain usage_metadata":
            data = messages_to_dict(messages)
        else:
            data = convert_to_openai_messages(messages)
            for item, answer in zip(
                [d for d in data if d["role"] == "assistant"], answers, strict=False
            ):
                item.update(
                    {"usage_metadata": answer.usage_metadata}
                    if answer.usage_metadata
                    else {"response_metadata": answer.response_metadata}
                )
        (tmp_path / "own").mkdir()
        (tmp_path / "own" / "run.json").write_text(json.dumps(data))
        sidecar = write_run(tmp_path, usage=usage)
        own, beside = (
            simulate_files([p], ["none"], token_counter=chars, bill="provider", progress=False).run(
                "none"
            )
            for p in (tmp_path / "own" / "run.json", sidecar)
        )
        assert own.tokens == beside.tokens == [
            30,
            50,
        ] and own.cached_tokens == beside.cached_tokens == [4, 20]

    def test_a_strategy_list_without_none_gets_the_none_row_it_is_scaled_against(self, tmp_path):
        path = write_run(tmp_path, usage=[{"prompt_tokens": 14, "cached_tokens": 0}, None])
        result = simulate_files(
            [path], [last_only], token_counter=chars, bill="provider", progress=False
        )
        assert [r.name for r in result.runs][0] == "none" and result.run("none").tokens == [14, 11]

    def test_the_provider_bill_is_refused_in_one_line_where_nothing_reports_usage(
        self, tmp_path, capsys
    ):
        """--bill provider on files without usage, or on the simulated run: one error line, exit 2,
        nothing on stdout."""
        path = write_run(tmp_path)
        for argv, said in (
            ([str(path)], "cannot bill as the provider billed: no model call"),
            ([], "name a file or folder"),
        ):
            assert main(["simulate", *argv, "none", "--bill", "provider", "--no-progress"]) == 2
            out, err = capsys.readouterr()
            assert (
                out == ""
                and err.count("\n") == 1
                and err.startswith("promptstrat: error: ")
                and said in err
            )

    def test_a_replay_without_a_none_row_bills_by_the_package_and_adds_no_bill_note(self, tmp_path):
        """Usage beside a transcript, strategies without none and the package's bill: the rows are
        the package's count, no note."""
        path = write_run(
            tmp_path,
            usage=[
                {"prompt_tokens": 14, "cached_tokens": 0},
                {"prompt_tokens": 30, "cached_tokens": 7},
            ],
        )
        result = simulate_files([path], [last_only], token_counter=chars, progress=False)
        assert [r.name for r in result.runs] == ["last_only"] and not any(
            "provider's bill" in n for n in result.notes
        )

    def test_a_usage_file_that_does_not_match_the_answers_is_a_note_not_a_bill(self, tmp_path):
        path = write_run(tmp_path, usage=[{"prompt_tokens": 14, "cached_tokens": 0}])
        result = simulate_files([path], ["none"], token_counter=chars, progress=False)
        assert (
            result.run("none").tokens == [7, 11]
            and "1 entries for 2 assistant messages" in result.notes[0]
        )

    def test_the_none_rows_bill_and_cached_tokens_are_the_providers_on_the_shared_transcripts(self):
        """On the real runs, the none row's input is what the provider reported for each call within
        1%, and its cached tokens exactly the provider's; the note checks the openai rule against
        them."""
        converted = realruns_dir("converted")
        result = simulate_files(
            [converted], ["none"], bill="provider", cache="openai", progress=False
        )
        none, k = result.run("none"), 0
        for file in result.files:
            recorded = read_conversation(file).messages + read_conversation(file).pending
            found = usage_of(Path(file), recorded)
            answers = [i for i, m in enumerate(recorded) if isinstance(m, AIMessage)]
            for i, entry in zip(
                answers, found[0] if found else [None] * len(answers), strict=False
            ):
                if not i:
                    continue
                if entry is not None:
                    assert abs(none.tokens[k] - entry.tokens) <= 0.01 * entry.tokens
                    assert none.cached_tokens[k] == entry.cached or entry.cached is None
                k += 1
        assert k == result.model_calls and any("under the openai rule" in n for n in result.notes)
