"""What a provider billed, read from the answers: LangChain's usage_metadata, the provider's own
usage dicts, usage files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from realruns import realruns_dir

from langchain_promptstrat.replay import USAGE_SUFFIX
from langchain_promptstrat.tokens.usage import BilledInput, billed_input, read_usage_file


def answer(**fields: Any) -> AIMessage:
    return AIMessage("done", **fields)


class TestBilledInput:
    def test_langchain_usage_metadata_gives_the_input_and_its_cached_part(self):
        """Every LangChain chat model reports input_tokens and input_token_details.cache_read on its
        answer."""
        usage = {
            "input_tokens": 1200,
            "output_tokens": 30,
            "total_tokens": 1230,
            "input_token_details": {"cache_read": 1024},
        }
        assert billed_input(answer(usage_metadata=usage)) == BilledInput(1200, 1024)

    def test_an_openai_usage_dict_in_response_metadata_is_read_too(self):
        """A file's answer may hold only OpenAI's own usage: prompt_tokens and
        prompt_tokens_details.cached_tokens."""
        usage = {
            "prompt_tokens": 2703,
            "completion_tokens": 43,
            "prompt_tokens_details": {"cached_tokens": 1792},
        }
        assert billed_input(answer(response_metadata={"token_usage": usage})) == BilledInput(
            2703, 1792
        )

    def test_anthropic_usage_counts_cache_reads_and_writes_as_input(self):
        """Anthropic bills input_tokens apart from cache reads and writes: the request's input is
        their sum."""
        usage = {
            "input_tokens": 10,
            "cache_read_input_tokens": 900,
            "cache_creation_input_tokens": 90,
            "output_tokens": 5,
        }
        assert billed_input(answer(response_metadata={"usage": usage})) == BilledInput(1000, 900)

    def test_a_message_that_is_not_an_answer_or_reports_nothing_has_no_figure(self):
        """A user message, an answer without usage, and an answer whose usage says 0 input tokens
        give None."""
        zero = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        assert [
            billed_input(m) for m in (HumanMessage("hi"), answer(), answer(usage_metadata=zero))
        ] == [None, None, None]

    def test_a_role_dict_file_carries_usage_as_a_key_of_its_assistant_message(self):
        """A role-style file's usage_metadata (or OpenAI's usage) key lands in additional_kwargs,
        where it is read too."""
        from langchain_core.messages import convert_to_messages

        usage = {
            "input_tokens": 900,
            "output_tokens": 3,
            "total_tokens": 903,
            "input_token_details": {"cache_read": 512},
        }
        read = convert_to_messages(
            [
                {"role": "assistant", "content": "x", "usage_metadata": usage},
                {"role": "assistant", "content": "y", "usage": {"prompt_tokens": 700}},
            ]
        )
        assert [billed_input(m) for m in read] == [BilledInput(900, 512), BilledInput(700)]

    @given(
        st.dictionaries(
            st.sampled_from(
                [
                    "prompt_tokens",
                    "input_tokens",
                    "cache_read_input_tokens",
                    "prompt_tokens_details",
                    "cached_tokens",
                ]
            ),
            st.one_of(
                st.none(),
                st.booleans(),
                st.integers(-10, 10**7),
                st.floats(allow_nan=True),
                st.text(max_size=5),
                st.dictionaries(
                    st.sampled_from(["cached_tokens", "cache_read"]),
                    st.one_of(st.integers(-5, 10**8), st.text(max_size=3)),
                ),
            ),
        )
    )
    def test_garbage_usage_never_raises_and_never_gives_a_count_that_is_not_one(self, usage):
        """Negative, zero, float, boolean, string or missing fields are no figure: None, or counts
        that are whole and sane."""
        for where in ("token_usage", "usage"):
            found = billed_input(answer(response_metadata={where: usage}))
            if found is not None:
                assert type(found.tokens) is int and found.tokens > 0
                assert found.cached is None or (
                    type(found.cached) is int and 0 <= found.cached <= found.tokens
                )


class TestUsageFiles:
    def test_a_usage_file_gives_one_entry_per_answer_none_where_unreported(self, tmp_path: Path):
        """NAME.usage.json: one {prompt_tokens, cached_tokens} per assistant message, nulls where
        the provider said nothing."""
        path = tmp_path / ("run" + USAGE_SUFFIX)
        path.write_text(
            json.dumps(
                [
                    {"prompt_tokens": 1855, "cached_tokens": 0},
                    {"prompt_tokens": None, "cached_tokens": None},
                    None,
                    {"prompt_tokens": 2703, "cached_tokens": 1792},
                ]
            )
        )
        assert read_usage_file(path) == [BilledInput(1855, 0), None, None, BilledInput(2703, 1792)]

    def test_a_file_that_is_not_a_list_of_entries_is_refused_with_its_name(self, tmp_path: Path):
        """A usage file of another shape is a ValueError naming the file, not a silent
        misreading."""
        path = tmp_path / ("run" + USAGE_SUFFIX)
        path.write_text(json.dumps({"prompt_tokens": 3}))
        with pytest.raises(ValueError, match="run.usage.json: expected a JSON list"):
            read_usage_file(path)

    def test_every_shared_usage_file_reads_with_a_figure_for_most_answers(self):
        """The real runs' usage files read whole, and most answers carry the provider's figure."""
        files = sorted(realruns_dir("usage").glob("*" + USAGE_SUFFIX))
        entries = [entry for path in files for entry in read_usage_file(path)]
        assert files and sum(entry is not None for entry in entries) > 0.9 * len(entries)

    def test_a_replay_notes_the_providers_bill_beside_the_none_rows_count(self, tmp_path: Path):
        """simulate on a transcript with a usage file says what the provider billed and what the
        none row counts for the same calls; a usage file that cannot be read is a note, not a failed
        replay."""
        from langchain_promptstrat.replay import simulate_files

        conversation = [
            {"role": "user", "content": "fix the bug"},
            {"role": "assistant", "content": "looking"},
            {"role": "user", "content": "go on"},
            {"role": "assistant", "content": "done"},
        ]
        path = tmp_path / "run.jsonl"
        path.write_text("\n".join(map(json.dumps, conversation)))
        (tmp_path / ("run" + USAGE_SUFFIX)).write_text(
            json.dumps(
                [
                    {"prompt_tokens": 100, "cached_tokens": 0},
                    {"prompt_tokens": 300, "cached_tokens": 150},
                ]
            )
        )
        notes = simulate_files([path], ["none"]).notes
        assert any(
            "2 of 2 calls report usage): input 400 tokens, 37.5% cached; the none row counts" in n
            for n in notes
        )
        (tmp_path / ("run" + USAGE_SUFFIX)).write_text("{")
        assert any("usage file not read" in n for n in simulate_files([path], ["none"]).notes)
