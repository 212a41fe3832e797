"""Provider cache rules: the figures of the documented hand example, and the rules that make
them."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat.cache_rules import (
    AnthropicCache,
    OpenAICache,
    ToolSchemas,
    message_blocks,
    openai_cached_tokens,
)
from langchain_promptstrat.simulate import canonical_message, simulate


def hand_example() -> tuple[list[list], list[list[int]]]:
    """The module docstring's example: a 2,000-token system message then 100-token messages; two
    prompts."""
    system = SystemMessage("s")
    messages = [HumanMessage(f"m{i}") for i in range(12)]
    first = [system, *messages[:10]]
    second = [system, *messages]
    return [first, second], [[2000] + [100] * 10, [2000] + [100] * 12]


class TestOpenAI:
    def test_rounding_starts_at_1024_and_grows_in_128_token_steps(self):
        """A shared prefix under 1,024 tokens reads nothing; above, it is rounded down to 1024 + 128
        k."""
        assert [openai_cached_tokens(n) for n in (0, 1023, 1024, 1151, 1152, 3000)] == [
            0,
            0,
            1024,
            1024,
            1152,
            2944,
        ]

    def test_the_hand_example(self):
        """Prompt 2 shares 3,000 tokens with prompt 1 and reads 1024 + 128 * 15 = 2,944; nothing is
        written."""
        prompts, counts = hand_example()
        rule = OpenAICache(canonical_message)
        assert [rule.observe(p, c) for p, c in zip(prompts, counts, strict=False)] == [
            (0, 0),
            (2944, 0),
        ]

    def test_a_changed_message_ends_the_shared_prefix(self):
        """An edit at message 1 leaves only the system message shared: 2,000 tokens read as
        1,920."""
        prompts, counts = hand_example()
        edited = [prompts[1][0], HumanMessage("changed"), *prompts[1][2:]]
        rule = OpenAICache(canonical_message)
        rule.observe(prompts[0], counts[0])
        assert rule.observe(edited, counts[1]) == (1920, 0)


class TestToolSchemas:
    """The bound tools' schemas come first in both providers' caches: before the system message and
    every message."""

    TOOLS = ToolSchemas(tokens=1_100, blocks=3, key="three tools")

    def test_openai_reads_the_schemas_when_the_first_message_changed(self):
        """A prompt whose system message changed still shares the 1,100 schema tokens: 1,024 read;
        the first prompt reads 0."""
        rule = OpenAICache(canonical_message, tools=self.TOOLS)
        prompt = [SystemMessage("s"), HumanMessage("task")]
        assert rule.observe(prompt, [500, 100]) == (0, 0)
        assert rule.observe([SystemMessage("other"), HumanMessage("task")], [500, 100]) == (1024, 0)

    def test_openai_counts_the_schemas_in_the_shared_prefix(self):
        """The hand example with 1,100 tokens of schemas: the second prompt shares 4,100 tokens and
        reads 1024 + 128 * 24."""
        prompts, counts = hand_example()
        rule = OpenAICache(canonical_message, tools=self.TOOLS)
        assert [rule.observe(p, c) for p, c in zip(prompts, counts, strict=False)] == [
            (0, 0),
            (1024 + 128 * 24, 0),
        ]

    def test_anthropic_marks_the_last_tool_system_and_tail_and_writes_the_schemas(self):
        """Unmarked prompts get AnthropicPromptCachingMiddleware's three breakpoints; the first
        prompt writes schemas and messages."""
        prompts, counts = hand_example()
        rule = AnthropicCache(canonical_message, tools=self.TOOLS)
        assert rule.breakpoints(prompts[0]) == [-1, 0, 10]
        assert [rule.observe(p, c) for p, c in zip(prompts, counts, strict=False)] == [
            (0, 4100),
            (4100, 200),
        ]

    def test_anthropic_reads_the_tools_entry_when_everything_after_it_changed(self):
        """With 1,100 tokens of schemas (an entry of their own), a prompt whose system changed reads
        them and writes the rest."""
        rule = AnthropicCache(canonical_message, tools=self.TOOLS)
        rule.observe([SystemMessage("s"), HumanMessage("task")], [2000, 100])
        assert rule.observe([SystemMessage("other"), HumanMessage("task")], [2000, 100]) == (
            1100,
            2100,
        )

    def test_marked_prompts_need_no_tool_breakpoint(self):
        """With cache_control marks the marks alone are breakpoints; the system mark's entry covers
        the schemas before it."""
        marked = SystemMessage(
            [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]
        )
        rule = AnthropicCache(canonical_message, tools=self.TOOLS)
        prompt = [marked, HumanMessage("task")]
        assert rule.breakpoints(prompt) == [0]
        assert rule.observe(prompt, [500, 100]) == (0, 1600)
        assert rule.observe([marked, HumanMessage("other task")], [500, 100]) == (1600, 0)


class TestAnthropic:
    def test_the_hand_example(self):
        """Default breakpoints (system, tail): prompt 1 writes 3,000; prompt 2 reads 3,000 and
        writes 200."""
        prompts, counts = hand_example()
        rule = AnthropicCache(canonical_message)
        assert [rule.observe(p, c) for p, c in zip(prompts, counts, strict=False)] == [
            (0, 3000),
            (3000, 200),
        ]

    def test_the_tail_entry_is_out_of_reach_beyond_20_blocks(self):
        """A tail that moved 21 blocks on finds only the system entry (2,000) and writes the
        rest."""
        system = SystemMessage("s")
        messages = [HumanMessage(f"m{i}") for i in range(40)]
        rule = AnthropicCache(canonical_message)
        rule.observe([system, *messages[:10]], [2000] + [100] * 10)
        assert rule.observe([system, *messages[:31]], [2000] + [100] * 31) == (2000, 3100)
        rule2 = AnthropicCache(canonical_message)
        rule2.observe([system, *messages[:10]], [2000] + [100] * 10)
        assert rule2.observe([system, *messages[:30]], [2000] + [100] * 30)[0] == 3000

    def test_marked_breakpoints_replace_the_default_and_entries_need_1024_tokens(self):
        """With a cache_control mark only the marked message is a breakpoint; a prefix under 1,024
        tokens writes nothing."""
        marked = HumanMessage(
            [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]
        )
        prompt = [SystemMessage("s"), marked, HumanMessage("tail")]
        rule = AnthropicCache(canonical_message)
        assert rule.breakpoints(prompt) == [1]
        assert rule.observe(prompt, [500, 400, 5000]) == (0, 0)

    def test_blocks_count_tool_calls_and_content_blocks(self):
        """An assistant message is its text plus one block per call; a list content one block per
        item."""
        ai = AIMessage(
            "look",
            tool_calls=[{"name": "f", "args": {}, "id": "a"}, {"name": "f", "args": {}, "id": "b"}],
        )
        assert message_blocks(ai) == 3
        assert message_blocks(AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "a"}])) == 1
        assert (
            message_blocks(
                HumanMessage([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
            )
            == 2
        )
        assert message_blocks(ToolMessage("out", tool_call_id="a")) == 1


class TestSimulate:
    def test_provider_figures_sit_beside_the_upper_bound_and_never_exceed_it_for_openai(self):
        """--cache openai: per call, OpenAI's read is at most the whole-message prefix of the upper
        bound."""
        result = simulate(
            ["none", "shorten_tools_epoch_stable"], n_tool_calls=150, cache="openai", progress=False
        )
        for run in result.runs:
            assert len(run.provider_cached_tokens) == run.calls > 0
            assert all(
                p <= c for p, c in zip(run.provider_cached_tokens, run.cached_tokens, strict=False)
            )
            assert sum(run.provider_cached_tokens) > 0

    def test_anthropic_bills_writes_at_1_25(self):
        """--cache anthropic: the cost is reads at 0.1, writes at 1.25 and the rest at 1, per call
        summed."""
        result = simulate(["none"], n_tool_calls=60, cache="anthropic", progress=False)
        run = result.runs[0]
        expected = sum(
            r * 0.1 + w * 1.25 + (t - r - w)
            for t, r, w in zip(
                run.tokens, run.provider_cached_tokens, run.provider_written_tokens, strict=False
            )
        )
        assert run.provider_summary(0.1, result.write_multiplier)["cost_units"] == expected
        assert sum(run.provider_written_tokens) > 0
