"""Anthropic cache breakpoints: where they go, how many, and that they cost nothing to other
providers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.runtime import Runtime

from langchain_promptstrat.adapters.langgraph import pre_model_hook
from langchain_promptstrat.adapters.middleware import CompactionMiddleware
from langchain_promptstrat.cache_rules import has_cache_control
from langchain_promptstrat.messages import check_tool_pairs
from langchain_promptstrat.registry import get_strategy
from langchain_promptstrat.simulate import canonical_message, simulate, with_cache_breakpoints
from langchain_promptstrat.strategies.cache_breakpoints import (
    CacheBreakpoints,
    compaction_edge_ids,
    mark_breakpoints,
)
from langchain_promptstrat.testing import ScriptedChatModel, build_agent_run
from langchain_promptstrat.tokens import TokenCounter, tool_schema_tokens


def marked(messages):
    return [i for i, m in enumerate(messages) if has_cache_control(m)]


def canonical(messages):
    return [canonical_message(m) for m in messages]


RUN = build_agent_run(260, seed=1)


class TestEdges:
    def test_edges_are_the_tool_outputs_at_the_reported_forward_positions(self):
        """The current edge is the compaction_edge-th output of the input, the previous one
        epoch_size earlier."""
        result = get_strategy("shorten_tools_epoch_stable").compact(RUN)
        details = result.report.details
        outputs = [m.tool_call_id for m in RUN if isinstance(m, ToolMessage)]
        previous, current = compaction_edge_ids(RUN, result.report)
        assert current == outputs[details["compaction_edge"] - 1]
        assert previous == outputs[details["compaction_edge"] - details["epoch_size"] - 1]

    def test_four_breakpoints_system_both_edges_and_tail_on_the_strategys_own_prompt(self):
        """CacheBreakpoints marks system, both edges and the tail; the prompt is otherwise the
        strategy's, pairs intact."""
        plain = get_strategy("shorten_tools_epoch_stable").compact(RUN)
        result = CacheBreakpoints().compact(RUN)
        ids = {
            m.tool_call_id: i for i, m in enumerate(result.messages) if isinstance(m, ToolMessage)
        }
        details = result.report.details
        assert marked(result.messages) == sorted(
            {
                0,
                ids[details["previous_edge_id"]],
                ids[details["current_edge_id"]],
                len(result.messages) - 1,
            }
        )
        assert canonical(result.messages) == canonical(plain.messages)
        assert check_tool_pairs(result.messages) == []

    def test_an_edge_in_a_parallel_step_is_marked_on_its_own_output_not_the_steps_last(self):
        """The edge breakpoint sits on the output at the edge even when later outputs of its step
        follow."""
        result = CacheBreakpoints().compact(RUN)
        current = result.report.details["current_edge_id"]
        index = next(
            i
            for i, m in enumerate(result.messages)
            if isinstance(m, ToolMessage) and m.tool_call_id == current
        )
        assert has_cache_control(result.messages[index])

    def test_after_an_advance_a_single_slot_goes_to_the_previous_edge(self):
        """With one breakpoint left, the call after an advance marks the previous edge, the others
        the current one."""
        prompt = [
            SystemMessage("s"),
            AIMessage(
                "",
                tool_calls=[
                    {"name": "f", "args": {}, "id": "a"},
                    {"name": "f", "args": {}, "id": "b"},
                ],
            ),
            ToolMessage("x", tool_call_id="a"),
            ToolMessage("y", tool_call_id="b"),
        ]
        first, at = mark_breakpoints(
            prompt,
            previous_edge="a",
            current_edge="b",
            system=False,
            tail=False,
            limit=1,
            advanced=True,
        )
        assert at == [2]
        _, at = mark_breakpoints(
            prompt, previous_edge="a", current_edge="b", system=False, tail=False, limit=1
        )
        assert at == [3]
        assert prompt[2].content == "x" and first[2].content[0]["cache_control"] == {
            "type": "ephemeral"
        }

    def test_a_message_without_content_passes_its_mark_to_the_message_before(self):
        """A tail holding only tool calls cannot carry cache_control; the breakpoint moves to the
        previous message."""
        prompt = [
            SystemMessage("s"),
            AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "a"}]),
        ]
        assert mark_breakpoints(prompt, system=False)[1] == [0]

    @hsettings(max_examples=15, deadline=None)
    @given(n=st.integers(min_value=1, max_value=420), limit=st.integers(min_value=0, max_value=4))
    def test_never_more_than_the_limit_and_never_anything_but_marks(self, n, limit):
        """For any run length and limit: at most ``limit`` marks, the same prompt otherwise, the
        input untouched."""
        run = build_agent_run(n, seed=n)
        before = canonical(run) + [json.dumps(m.content, default=str) for m in run]
        result = CacheBreakpoints(limit=limit).compact(run)
        plain = get_strategy("shorten_tools_epoch_stable").compact(run)
        assert len(marked(result.messages)) <= limit
        assert canonical(result.messages) == canonical(plain.messages)
        assert canonical(run) + [json.dumps(m.content, default=str) for m in run] == before


class TestAdapters:
    def request(self, model, **extra):
        messages = RUN[1:]
        return ModelRequest(
            model=model,
            messages=messages,
            system_message=RUN[0],
            state={"messages": messages},
            runtime=Runtime(),
            **extra,
        )

    def sent(self, middleware, request):
        out = []

        def handler(request):
            out.append(request)
            return ModelResponse(result=[AIMessage("ok")])

        middleware.wrap_model_call(request, handler)
        return out[0]

    def test_other_providers_requests_are_byte_identical(self):
        """With a non-Anthropic model, cache_breakpoints=True changes nothing in the request."""
        plain = self.sent(
            CompactionMiddleware("shorten_tools_epoch_stable"),
            self.request(ScriptedChatModel(["x"])),
        )
        marking = self.sent(
            CompactionMiddleware("shorten_tools_epoch_stable", cache_breakpoints=True),
            self.request(ScriptedChatModel(["x"])),
        )
        assert [m.model_dump() for m in marking.messages] == [
            m.model_dump() for m in plain.messages
        ]
        assert marking.system_message is plain.system_message

    def test_the_request_still_bounds_the_default_with_breakpoints_on(self):
        """With a ChatAnthropic model the wrapped default still gets the request: max_tokens, system
        prompt and tool schemas bound what is sent."""
        anthropic = pytest.importorskip("langchain_anthropic")
        model = anthropic.ChatAnthropic(model="claude-sonnet-4-5", api_key="not-used")

        @tool
        def bash(command: str) -> str:
            """Run a command."""
            return command

        count = TokenCounter("cl100k_base")
        middleware = CompactionMiddleware(
            "shorten_tools_epoch_stable", max_tokens=20_000, cache_breakpoints=True
        )
        sent = self.sent(middleware, self.request(model, tools=[bash]))
        assert count(RUN) > 3 * 20_000 and 1 <= len(marked(sent.messages)) <= 4
        assert (
            count([sent.system_message, *sent.messages]) + tool_schema_tokens([bash], count)
            <= 20_000
        )

    def test_the_hook_marks_the_model_input_only(self):
        """pre_model_hook(cache_breakpoints=True) marks up to 4 breakpoints in llm_input_messages,
        none in the state."""
        hook = pre_model_hook("shorten_tools_epoch_stable", cache_breakpoints=True)
        out = hook({"messages": RUN}, {"configurable": {}})
        assert 1 <= len(marked(out["llm_input_messages"])) <= 4
        assert marked(RUN) == []


class TestComposition:
    def test_with_anthropic_prompt_caching_middleware_a_request_carries_at_most_four_breakpoints(
        self,
    ):
        """Outside ours, AnthropicPromptCachingMiddleware marks system, last tool and tail; ours
        adds one edge: 4 in the payload."""
        anthropic = pytest.importorskip("langchain_anthropic")
        from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware

        model = anthropic.ChatAnthropic(model="claude-sonnet-4-5", api_key="not-used")

        @tool
        def bash(command: str) -> str:
            """Run a command."""
            return command

        tools = [bash]
        ours = CompactionMiddleware("shorten_tools_epoch_stable", cache_breakpoints=True)
        payloads, alone = [], []

        def final(request):
            system = [request.system_message] if request.system_message is not None else []
            payload = model._get_request_payload(
                [*system, *request.messages], **request.model_settings
            )
            tagged = sum(1 for t in request.tools if (t.extras or {}).get("cache_control"))
            payloads.append((payload, tagged))
            return ModelResponse(result=[AIMessage("ok")])

        messages = RUN[1:]
        request = ModelRequest(
            model=model,
            messages=messages,
            system_message=RUN[0],
            tools=tools,
            state={"messages": messages},
            runtime=Runtime(),
        )
        AnthropicPromptCachingMiddleware().wrap_model_call(
            request, lambda r: ours.wrap_model_call(r, final)
        )
        ours.wrap_model_call(request, final)
        (composed, composed_tools), (alone, alone_tools) = payloads
        assert count_breakpoints(composed) + composed_tools == 4
        assert (composed_tools, "cache_control" in composed) == (1, True)
        assert count_breakpoints(alone) + alone_tools == 4
        assert (alone_tools, "cache_control" in alone) == (
            1,
            True,
        )  # alone, the same places that middleware marks

    def test_listed_before_anthropic_prompt_caching_middleware_a_request_still_carries_at_most_four(
        self,
    ):
        """In either order of the middleware list, the payload langchain-anthropic builds never
        holds more than 4 breakpoints."""
        anthropic = pytest.importorskip("langchain_anthropic")
        from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware

        model = anthropic.ChatAnthropic(model="claude-sonnet-4-5", api_key="not-used")

        @tool
        def bash(command: str) -> str:
            """Run a command."""
            return command

        ours = CompactionMiddleware("shorten_tools_epoch_stable", cache_breakpoints=True)
        counts = []

        def final(request):
            system = [request.system_message] if request.system_message is not None else []
            payload = model._get_request_payload(
                [*system, *request.messages], **request.model_settings
            )
            tagged = sum(1 for t in request.tools if (t.extras or {}).get("cache_control"))
            counts.append(count_breakpoints(payload) + tagged)
            return ModelResponse(result=[AIMessage("ok")])

        for tools in ([bash], []):
            for n in (60, 200, 260):
                run = build_agent_run(n, seed=1)
                messages = run[1:]
                request = ModelRequest(
                    model=model,
                    messages=messages,
                    system_message=run[0],
                    tools=tools,
                    state={"messages": messages},
                    runtime=Runtime(),
                )
                ours.wrap_model_call(
                    request, lambda r: AnthropicPromptCachingMiddleware().wrap_model_call(r, final)
                )
        assert counts and max(counts) <= 4
        assert max(counts) == 4


def count_breakpoints(payload) -> int:
    """Count cache_control marks in an Anthropic request payload: top level, system and message
    blocks."""
    text = json.dumps({k: v for k, v in payload.items() if k != "cache_control"}, default=str)
    return text.count('"cache_control"') + (1 if payload.get("cache_control") else 0)


class TestMeasured:
    def test_breakpoints_cut_the_anthropic_cost_of_the_default_and_the_ladder(self):
        """Under Anthropic rules, marking the edges costs less than system-and-tail for the default
        and for tool_results."""
        names = ["shorten_tools_epoch_stable", "tool_results"]
        result = simulate(
            [*names, *with_cache_breakpoints(names, max_tokens=60_000)],
            n_tool_calls=300,
            cache="anthropic",
            progress=False,
        )
        for name in names:
            before, after = result.run(name), result.run(f"{name}+breakpoints")
            assert after.tokens == before.tokens
            assert after.provider_cost(0.1, 1.25) < before.provider_cost(0.1, 1.25)
