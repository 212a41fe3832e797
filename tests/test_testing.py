"""Tests for langchain_promptstrat.testing: the scripted model, the sized tool and the run
builders."""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import warnings
from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)
from pydantic import BaseModel

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.testing import (
    ScriptedChatModel,
    build_agent_run,
    iter_agent_run,
    make_sized_tool,
)

# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _call_key(tc: dict) -> tuple[str, str]:
    return tc["name"], json.dumps(tc["args"], sort_keys=True)


def _tool_calls(messages: list[BaseMessage]) -> list[dict]:
    return [tc for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls]


def _assert_well_paired(messages: list[BaseMessage]) -> None:
    """Every AIMessage's calls are answered right after it, once each, in call order."""
    i = 0
    while i < len(messages):
        m = messages[i]
        if isinstance(m, ToolMessage):
            raise AssertionError(f"ToolMessage at {i} does not follow its AIMessage")
        i += 1
        if isinstance(m, AIMessage) and m.tool_calls:
            for tc in m.tool_calls:
                assert i < len(messages), "missing ToolMessage at end"
                out = messages[i]
                assert isinstance(out, ToolMessage), f"expected ToolMessage at {i}"
                assert out.tool_call_id == tc["id"]
                assert out.name == tc["name"]
                i += 1


def _run_react_agent(model: ScriptedChatModel, tools: list) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        agent = create_react_agent(model, tools)
    return agent.invoke({"messages": [HumanMessage("start")]}, {"recursion_limit": 500})


# --------------------------------------------------------------------------------------
# ScriptedChatModel
# --------------------------------------------------------------------------------------


class TestScriptedChatModel:
    def test_replays_tool_calls_then_final_text(self) -> None:
        """Steps come back in script order: a dict spec becomes tool calls, a str a final text."""
        model = ScriptedChatModel(
            [{"tool_calls": [{"name": "fetch", "args": {"query": "a"}}]}, "all good"]
        )
        first = model.invoke("hi")
        second = model.invoke("again")
        assert [(tc["name"], tc["args"]) for tc in first.tool_calls] == [("fetch", {"query": "a"})]
        assert second.content == "all good" and not second.tool_calls

    def test_exhausted_script_answers_final_answer(self) -> None:
        """Past the end of the script every call answers final_answer ("done" by default)."""
        model = ScriptedChatModel(["x"])
        model.invoke("1")
        assert model.exhausted
        assert model.invoke("2").content == "done"
        assert model.invoke("3").content == "done"
        assert ScriptedChatModel(final_answer="over").invoke("q").content == "over"

    def test_plain_ids_are_numbered_by_script_position(self) -> None:
        """With id_prefix="" missing tool-call ids are call_0001... by script position, answers
        ai_0001...: the same every run."""
        script = [
            {"tool_calls": [{"name": "a", "args": {}}, {"name": "b", "args": {}}]},
            AIMessage(content="", tool_calls=[{"name": "c", "args": {}, "id": None}]),
            {"tool_calls": [{"name": "d", "args": {}, "id": "mine"}]},
        ]
        model = ScriptedChatModel(script, id_prefix="")
        outs = [model.invoke("q") for _ in range(4)]
        assert [tc["id"] for o in outs[:3] for tc in o.tool_calls] == [
            "call_0001",
            "call_0002",
            "call_0003",
            "mine",
        ]
        assert [o.id for o in outs] == ["ai_0001", "ai_0002", "ai_0003", "ai_0004"]

    def test_aimessage_step_returned_as_a_copy(self) -> None:
        """An AIMessage step comes back equal but not identical, keeping its own id."""
        step = AIMessage(content="hello", id="given")
        model = ScriptedChatModel([step])
        out = model.invoke("q")
        assert out.content == "hello" and out.id == "given" and out is not step
        out.name = "mutated"
        model.reset()
        assert model.invoke("q").name is None

    def test_records_copies_of_the_lists_it_was_sent(self) -> None:
        """calls holds one new list per call with the messages received, in order."""
        model = ScriptedChatModel(["a", "b"])
        prompt = [SystemMessage("s"), HumanMessage("h")]
        model.invoke(prompt)
        prompt.append(HumanMessage("later"))
        model.invoke(prompt)
        assert [[m.content for m in call] for call in model.calls] == [
            ["s", "h"],
            ["s", "h", "later"],
        ]
        assert model.calls[0] is not prompt

    def test_bind_tools_shares_record_and_cursor(self) -> None:
        """A bind_tools binding advances the same cursor and records into the same calls list."""
        model = ScriptedChatModel(["one", "two", "three"])
        bound = model.bind_tools([make_sized_tool("fetch")], tool_choice="any")
        assert bound.invoke("a").content == "one"
        assert model.invoke("b").content == "two"
        assert bound.invoke("c").content == "three"
        assert len(model.calls) == 3 and model.cursor == 3
        kwargs = model.call_kwargs[0]
        assert kwargs["tool_choice"] == "any"
        assert [t["function"]["name"] for t in kwargs["tools"]] == ["fetch"]
        assert "tools" not in model.call_kwargs[1]

    def test_model_copy_shares_state(self) -> None:
        """A model_copy (what with_config and friends may make) continues the same script."""
        model = ScriptedChatModel(["one", "two"])
        model.invoke("a")
        assert model.model_copy().invoke("b").content == "two"
        assert len(model.calls) == 2

    def test_async_invoke_and_stream(self) -> None:
        """ainvoke and astream replay the script and record like the sync path."""
        model = ScriptedChatModel(
            [{"tool_calls": [{"name": "fetch", "args": {"query": "q"}}]}, "final"]
        )

        async def go() -> tuple:
            first = await model.bind_tools([make_sized_tool()]).ainvoke("a")
            chunks = [c async for c in model.astream("b")]
            return first, chunks

        first, chunks = asyncio.run(go())
        assert first.tool_calls[0]["id"] == f"call_{model.id_prefix}_0001"
        assert "".join(str(c.content) for c in chunks) == "final"
        assert len(model.calls) == 2

    def test_exception_step_is_raised(self) -> None:
        """An exception in the script is raised by that call and the script moves on."""
        model = ScriptedChatModel(["a", RuntimeError("boom"), "b"])
        model.invoke("1")
        with pytest.raises(RuntimeError, match="boom"):
            model.invoke("2")
        assert model.invoke("3").content == "b"

    def test_reset_rewinds_and_forgets(self) -> None:
        """reset() replays from the first step and clears the recorded calls."""
        model = ScriptedChatModel(["a", "b"])
        model.invoke("1")
        model.invoke("2")
        model.reset()
        assert model.calls == [] and model.invoke("3").content == "a"

    @pytest.mark.parametrize(
        "step",
        [42, {"tool_calls": [{"args": {}}]}, {"tool_calls": [], "bogus": 1}],
    )
    def test_invalid_steps_rejected(self, step: object) -> None:
        """A step that is not an AIMessage, str, valid dict spec or exception raises ConfigError."""
        with pytest.raises(ConfigError):
            ScriptedChatModel([step])

    def test_with_structured_output_via_scripted_tool_call(self) -> None:
        """with_structured_output parses a scripted tool call named after the schema."""

        class Answer(BaseModel):
            text: str
            n: int

        model = ScriptedChatModel(
            [{"tool_calls": [{"name": "Answer", "args": {"text": "x", "n": 2}}]}]
        )
        assert model.with_structured_output(Answer).invoke("q") == Answer(text="x", n=2)

    def test_long_run_script_shape(self) -> None:
        """long_run scripts n calls grouped `parallel` per answer, then the final answer."""
        model = ScriptedChatModel.long_run(25, parallel=4, seed=3, final_answer="fin")
        outs = [model.invoke("q") for _ in range(8)]
        # 25 = 6 * 4 + 1: six full answers, one with the remaining call, then the final answer
        assert [len(o.tool_calls) for o in outs] == [4, 4, 4, 4, 4, 4, 1, 0]
        assert outs[-1].content == "fin"
        ids = [tc["id"] for o in outs for tc in o.tool_calls]
        assert len(set(ids)) == 25
        assert all(set(tc["args"]) == {"query", "page"} for o in outs for tc in o.tool_calls)

    def test_long_run_repeats_and_determinism(self) -> None:
        """long_run repeats some earlier calls exactly and depends only on its seed."""

        def calls(seed: int) -> list[dict]:
            m = ScriptedChatModel.long_run(300, seed=seed, tool_name=["fetch", "search"])
            return [tc for _ in range(301) for tc in m.invoke("q").tool_calls]

        a = calls(0)
        keys = Counter(_call_key(tc) for tc in a)
        # the default repeat_rate 0.08 of 300 calls expects 24 repeats; the bounds only rule out
        # "none" and "far too many"
        assert 5 <= sum(v - 1 for v in keys.values()) <= 50
        assert {tc["name"] for tc in a} == {"fetch", "search"}
        assert [_call_key(tc) for tc in a] == [_call_key(tc) for tc in calls(0)]
        assert [_call_key(tc) for tc in a] != [_call_key(tc) for tc in calls(1)]

    def test_each_thread_plays_the_whole_script_from_its_start(self) -> None:
        """A server shares one graph, so one model, between threads: each thread must get the script
        from step one."""
        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver

        model = ScriptedChatModel.long_run(3, final_answer="finished")
        agent = create_agent(model, [make_sized_tool()], checkpointer=InMemorySaver())
        for thread in ("first", "second"):
            out = agent.invoke(
                {"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": thread}}
            )
            assert sum(isinstance(m, ToolMessage) for m in out["messages"]) == 3
            assert out["messages"][-1].content == "finished"
            assert model.position(thread) == 4
        assert model.position() == 0 and model.cursor == 8 and model.exhausted

    def test_threads_running_at_once_keep_their_own_positions(self) -> None:
        """Two runs interleaved on one event loop do not take each other's steps."""
        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver

        model = ScriptedChatModel.long_run(4)
        agent = create_agent(model, [make_sized_tool()], checkpointer=InMemorySaver())

        async def both() -> list[dict[str, Any]]:
            runs = (
                agent.ainvoke(
                    {"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": t}}
                )
                for t in "ab"
            )
            return list(await asyncio.gather(*runs))

        outs = asyncio.run(both())
        assert [sum(isinstance(m, ToolMessage) for m in out["messages"]) for out in outs] == [4, 4]
        assert [tc["args"] for tc in _tool_calls(outs[0]["messages"])] == [
            tc["args"] for tc in _tool_calls(outs[1]["messages"])
        ]

    def test_calls_outside_a_thread_share_one_position(self) -> None:
        """Without a thread id (a plain invoke) the model steps through its script as one
        sequence."""
        model = ScriptedChatModel(["a", "b"])
        assert [model.invoke("q").content for _ in range(3)] == ["a", "b", "done"]
        assert model.position() == 3 and model.position("other") == 0

    def test_two_instances_never_hand_out_the_same_id(self) -> None:
        """A model rebuilt after a server restart must not reuse an id, or add_messages replaces a
        stored answer."""
        from langgraph.graph.message import add_messages

        def answers(model: ScriptedChatModel) -> list[AIMessage]:
            return [model.invoke("q") for _ in range(5)]

        first, second = (
            answers(ScriptedChatModel.long_run(4)),
            answers(ScriptedChatModel.long_run(4)),
        )
        ids = [m.id for m in first + second]
        call_ids = [tc["id"] for m in first + second for tc in m.tool_calls]
        assert len(set(ids)) == len(ids) == 10 and len(set(call_ids)) == len(call_ids) == 8
        stored: list[Any] = list(first)  # langgraph's Messages: a list of message-likes
        merged = add_messages(stored, list[Any](second))
        assert isinstance(merged, list) and len(merged) == 10

    def test_a_given_id_prefix_makes_ids_repeatable(self) -> None:
        """Digests of prompts need the same ids in every run: a given id_prefix gives them."""

        def ids(model: ScriptedChatModel) -> list[str]:
            out = [model.invoke("q") for _ in range(3)]
            return [str(m.id) for m in out] + [str(tc["id"]) for m in out for tc in m.tool_calls]

        assert ids(ScriptedChatModel.long_run(2, id_prefix="bench")) == ids(
            ScriptedChatModel.long_run(2, id_prefix="bench")
        )
        assert ids(ScriptedChatModel.long_run(2, id_prefix="bench"))[0] == "ai_bench_0001"


# --------------------------------------------------------------------------------------
# make_sized_tool
# --------------------------------------------------------------------------------------


class TestSizedTool:
    def test_output_size_in_range_and_heavy_tailed(self) -> None:
        """Outputs fall in the size range, most far below the maximum, some near it."""
        tool = make_sized_tool("fetch", sizes=(200, 20_000))
        sizes = [len(tool.invoke({"query": f"q{i}", "page": i % 3})) for i in range(600)]
        assert min(sizes) >= 200 and max(sizes) <= 20_000
        assert statistics.median(sizes) < 2_000
        assert max(sizes) > 10_000

    def test_output_deterministic_from_args(self) -> None:
        """The same args give the same output, across tool instances; other args differ."""
        a = make_sized_tool("fetch").invoke({"query": "x", "page": 1})
        assert a == make_sized_tool("fetch").invoke({"query": "x", "page": 1})
        assert a != make_sized_tool("fetch").invoke({"query": "x", "page": 2})
        assert a != make_sized_tool("fetch", seed=1).invoke({"query": "x", "page": 1})

    def test_fixed_size_and_async(self) -> None:
        """An int size gives exactly that many characters, sync and async alike."""
        tool = make_sized_tool("grab", sizes=1234)
        sync = tool.invoke({"query": "hello"})
        assert len(sync) == 1234 and sync.isascii()
        assert asyncio.run(tool.ainvoke({"query": "hello"})) == sync

    def test_bad_sizes_rejected(self) -> None:
        """A range with max below min raises ConfigError."""
        with pytest.raises(ConfigError):
            make_sized_tool(sizes=(500, 100))


# --------------------------------------------------------------------------------------
# real agent graphs, offline
# --------------------------------------------------------------------------------------


class TestAgentsEndToEnd:
    def test_create_react_agent_runs_to_completion(self) -> None:
        """A langgraph create_react_agent makes all 30 scripted tool calls and ends with the final
        answer."""
        model = ScriptedChatModel.long_run(30, parallel=2, seed=5)
        out = _run_react_agent(model, [make_sized_tool("fetch")])
        msgs = out["messages"]
        assert sum(isinstance(m, ToolMessage) for m in msgs) == 30
        assert msgs[-1].content == "done"
        assert (
            len(model.calls) == math.ceil(30 / 2) + 1
        )  # 15 answers of 2 parallel calls, then the final answer
        # the model saw the growing history, tool outputs included
        assert len(model.calls[-1]) == len(msgs) - 1
        assert [t["function"]["name"] for t in model.call_kwargs[0]["tools"]] == ["fetch"]
        _assert_well_paired(msgs)

    def test_create_agent_runs_to_completion(self) -> None:
        """A langchain create_agent agent makes all 30 tool calls; the model sees the system
        prompt."""
        from langchain.agents import create_agent

        model = ScriptedChatModel.long_run(30, seed=6)
        agent = create_agent(model, [make_sized_tool("fetch")], system_prompt="be brief")
        out = agent.invoke({"messages": [HumanMessage("start")]}, {"recursion_limit": 500})
        msgs = out["messages"]
        assert sum(isinstance(m, ToolMessage) for m in msgs) == 30
        assert msgs[-1].content == "done"
        assert len(model.calls) == 30 + 1  # one call per answer (parallel=1), then the final answer
        assert all(isinstance(c[0], SystemMessage) for c in model.calls)
        _assert_well_paired(msgs)

    def test_create_agent_async(self) -> None:
        """The same agent runs through ainvoke with parallel tool calls."""
        from langchain.agents import create_agent

        model = ScriptedChatModel.long_run(30, parallel=3, seed=7)
        agent = create_agent(model, [make_sized_tool("fetch")])
        out = asyncio.run(
            agent.ainvoke({"messages": [HumanMessage("start")]}, {"recursion_limit": 500})
        )
        assert sum(isinstance(m, ToolMessage) for m in out["messages"]) == 30
        assert (
            len(model.calls) == math.ceil(30 / 3) + 1
        )  # 10 answers of 3 parallel calls, then the final answer


# --------------------------------------------------------------------------------------
# build_agent_run / iter_agent_run
# --------------------------------------------------------------------------------------


class TestBuildAgentRun:
    @pytest.mark.parametrize("n", [0, 1, 2, 7, 400])
    def test_exactly_n_tool_messages(self, n: int) -> None:
        """The run holds exactly n_tool_calls ToolMessages and ends with one (or the task for
        n=0)."""
        msgs = build_agent_run(n, seed=n)
        assert sum(isinstance(m, ToolMessage) for m in msgs) == n
        assert isinstance(msgs[-1], ToolMessage if n else HumanMessage)

    def test_calls_and_outputs_pair_up(self) -> None:
        """Each AIMessage's calls get one ToolMessage each right after it, none orphaned."""
        msgs = build_agent_run(600, seed=2, parallel_max=4)
        assert isinstance(msgs[0], SystemMessage) and isinstance(msgs[1], HumanMessage)
        _assert_well_paired(msgs)
        ids = [tc["id"] for tc in _tool_calls(msgs)]
        assert len(ids) == len(set(ids)) == 600
        assert max(len(m.tool_calls) for m in msgs if isinstance(m, AIMessage)) == 4

    def test_deterministic_for_a_seed(self) -> None:
        """The same seed gives identical messages, ids included."""
        a = messages_to_dict(build_agent_run(300, seed=11, mirror="mixed"))
        b = messages_to_dict(build_agent_run(300, seed=11, mirror="mixed"))
        assert a == b
        ids = [m["data"]["id"] for m in a]
        assert len(set(ids)) == len(ids) and None not in ids

    def test_different_seeds_differ(self) -> None:
        """Different seeds give different tool calls and outputs."""
        a, b = build_agent_run(100, seed=1), build_agent_run(100, seed=2)
        assert _tool_calls(a) != _tool_calls(b)
        assert [m.content for m in a if isinstance(m, ToolMessage)] != [
            m.content for m in b if isinstance(m, ToolMessage)
        ]

    def test_openai_mirror_matches_tool_calls(self) -> None:
        """mirror="openai" puts each call in additional_kwargs in OpenAI function format."""
        msgs = build_agent_run(200, seed=3, mirror="openai")
        for m in msgs:
            if isinstance(m, AIMessage):
                raw = m.additional_kwargs["tool_calls"]
                assert [r["type"] for r in raw] == ["function"] * len(m.tool_calls)
                assert [
                    (r["id"], r["function"]["name"], json.loads(r["function"]["arguments"]))
                    for r in raw
                ] == [(tc["id"], tc["name"], tc["args"]) for tc in m.tool_calls]
                assert isinstance(m.content, str)

    def test_anthropic_mirror_matches_tool_calls(self) -> None:
        """mirror="anthropic" makes content an optional text block plus one tool_use block per
        call."""
        msgs = build_agent_run(200, seed=3, mirror="anthropic")
        saw_text = False
        for m in msgs:
            if isinstance(m, AIMessage):
                assert isinstance(m.content, list)
                uses = [b for b in m.content if b["type"] == "tool_use"]
                texts = [b for b in m.content if b["type"] == "text"]
                assert len(uses) + len(texts) == len(m.content) and len(texts) <= 1
                if texts:
                    saw_text = True
                    assert m.content[0] is texts[0] and texts[0]["text"]
                assert [(b["id"], b["name"], b["input"]) for b in uses] == [
                    (tc["id"], tc["name"], tc["args"]) for tc in m.tool_calls
                ]
        assert saw_text

    def test_mixed_mirror_uses_all_styles_and_same_calls(self) -> None:
        """mirror="mixed" mixes plain, OpenAI and Anthropic steps; the tool calls stay those of
        mirror=None."""
        plain = build_agent_run(200, seed=4)
        mixed = build_agent_run(200, seed=4, mirror="mixed")
        styles = set()
        for m in mixed:
            if isinstance(m, AIMessage):
                if isinstance(m.content, list):
                    styles.add("anthropic")
                elif "tool_calls" in m.additional_kwargs:
                    styles.add("openai")
                else:
                    styles.add("plain")
        assert styles == {"plain", "openai", "anthropic"}
        assert _tool_calls(mixed) == _tool_calls(plain)

    def test_repeats_occur_at_about_the_rate(self) -> None:
        """About repeat_rate of the calls repeat an earlier call's name and args under a new id."""
        msgs = build_agent_run(2000, seed=5, repeat_rate=0.08)
        calls = _tool_calls(msgs)
        by_key: dict = {}
        for tc in calls:
            by_key.setdefault(_call_key(tc), []).append(tc["id"])
        repeats = sum(len(v) - 1 for v in by_key.values())
        assert 0.05 * 2000 <= repeats <= 0.11 * 2000
        assert all(len(set(v)) == len(v) for v in by_key.values())
        # a repeated call returns the identical output
        outputs = {m.tool_call_id: m.content for m in msgs if isinstance(m, ToolMessage)}
        dup_ids = next(v for v in by_key.values() if len(v) > 1)
        assert len({outputs[i] for i in dup_ids}) == 1

    def test_no_repeats_at_rate_zero(self) -> None:
        """With repeat_rate=0 no two calls share name and args (no accidental collisions)."""
        calls = _tool_calls(build_agent_run(3000, seed=6, repeat_rate=0.0))
        assert len({_call_key(tc) for tc in calls}) == 3000

    def test_user_turns_every_range(self) -> None:
        """New user messages arrive every 60..120 tool calls, never at the end; None disables
        them."""
        msgs = build_agent_run(1000, seed=7)
        positions, seen = [], 0
        for m in msgs[2:]:
            if isinstance(m, ToolMessage):
                seen += 1
            elif isinstance(m, HumanMessage):
                positions.append(seen)
        assert (
            len(positions) >= 8
        )  # 1,000 calls with gaps of at most 122 hold at least 1000 // 122 = 8 user turns
        gaps = [b - a for a, b in zip([0, *positions], positions, strict=False)]
        # a parallel step can overshoot the drawn threshold by up to parallel_max - 1
        assert all(60 <= g <= 122 for g in gaps)
        assert not any(
            isinstance(m, HumanMessage)
            for m in build_agent_run(1000, seed=7, user_turn_every=None)[2:]
        )

    def test_output_sizes_in_range_and_heavy_tailed(self) -> None:
        """Tool outputs are ASCII, within output_bytes, with the median far below the max."""
        msgs = build_agent_run(2000, seed=8)
        sizes = [len(m.content) for m in msgs if isinstance(m, ToolMessage)]
        assert all(200 <= s <= 20_000 for s in sizes)
        assert statistics.median(sizes) < 1_500
        assert sum(s > 10_000 for s in sizes) >= 20
        assert all(m.content.isascii() for m in msgs if isinstance(m, ToolMessage))
        small = build_agent_run(300, seed=8, output_bytes=(50, 100))
        assert all(50 <= len(m.content) <= 100 for m in small if isinstance(m, ToolMessage))

    def test_outputs_look_realistic(self) -> None:
        """Tool outputs are multi-line text with many distinct lines, not filler."""
        msgs = build_agent_run(200, seed=9)
        large = [m.content for m in msgs if isinstance(m, ToolMessage) and len(m.content) > 2_000]
        assert (
            len(large) >= 20
        )  # the heavy tail puts a good share of 200 outputs above 2,000 characters
        for content in large:
            lines = content.splitlines()
            assert len(lines) > 10 and len(set(lines)) > len(lines) // 2

    def test_args_mix_long_strings_and_structured_values(self) -> None:
        """Args carry long strings within arg_bytes plus ints, lists and nested dicts."""
        calls = _tool_calls(build_agent_run(500, seed=10, arg_bytes=(20, 600)))
        values = [v for tc in calls for v in tc["args"].values()]
        longest = [max(len(v) for v in tc["args"].values() if isinstance(v, str)) for tc in calls]
        assert max(longest) <= 600 and sum(n >= 200 for n in longest) >= 50
        assert any(isinstance(v, int) and not isinstance(v, bool) for v in values)
        assert any(isinstance(v, list) for v in values)
        assert any(
            isinstance(v, dict) and any(isinstance(x, dict) for x in v.values()) for v in values
        )
        assert len({tc["name"] for tc in calls}) >= 6

    def test_iter_yields_each_prompt_growing(self) -> None:
        """iter_agent_run yields the initial prompt, then one longer list per step, ending in the
        built run."""
        snaps = list(iter_agent_run(150, seed=12))
        assert [type(m) for m in snaps[0]] == [SystemMessage, HumanMessage]
        for prev, cur in zip(snaps, snaps[1:], strict=False):
            assert cur[: len(prev)] == prev and cur is not prev
            new = cur[len(prev) :]
            assert isinstance(new[0], AIMessage)
            assert sum(isinstance(m, ToolMessage) for m in new) == len(new[0].tool_calls)
            assert isinstance(cur[-1], (ToolMessage, HumanMessage))
        n_steps = sum(isinstance(m, AIMessage) for m in snaps[-1])
        assert len(snaps) == n_steps + 1
        assert messages_to_dict(snaps[-1]) == messages_to_dict(build_agent_run(150, seed=12))

    def test_system_can_be_omitted(self) -> None:
        """system=None starts the run with the task HumanMessage."""
        msgs = build_agent_run(5, seed=0, system=None, task="do it")
        assert isinstance(msgs[0], HumanMessage) and msgs[0].content == "do it"

    def test_builds_5000_calls(self) -> None:
        """A 5,000-call run builds with exactly 5,000 outputs (its speed is in
        benchmarks/bench_load.py)."""
        msgs = build_agent_run(5000, seed=13, mirror="mixed")
        assert sum(isinstance(m, ToolMessage) for m in msgs) == 5000

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"n_tool_calls": -1},
            {"parallel_max": 0},
            {"repeat_rate": 1.5},
            {"mirror": "gemini"},
            {"output_bytes": (500, 100)},
            {"user_turn_every": (0, 10)},
        ],
    )
    def test_invalid_arguments_rejected(self, kwargs: dict) -> None:
        """Out-of-range arguments raise ConfigError (a ValueError) before anything is built."""
        with pytest.raises(ConfigError):
            build_agent_run(**kwargs)
