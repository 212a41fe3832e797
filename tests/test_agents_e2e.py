"""End to end: real LangGraph agents, 160 scripted tool calls each, with the default strategies.

Both agent builders (``create_react_agent`` with the pre-model hook, ``create_agent`` with
the middleware) run against both checkpointers (in memory, SQLite in a real file), sync
and async. During each run a notice is posted to the thread's inbox and, later, an abort
file; the run interrupts, is resumed, and finishes. The assertions read what the scripted
model was sent and what the checkpointer kept.
"""

from __future__ import annotations

import asyncio
import re
import sys
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.prebuilt import create_react_agent as _create_react_agent
from langgraph.types import Command

from langchain_promptstrat import DEFAULT_STRATEGIES
from langchain_promptstrat.adapters.langgraph import pre_model_hook
from langchain_promptstrat.adapters.middleware import (
    CompactionMiddleware,
    PromptStrategyMiddleware,
)
from langchain_promptstrat.inbox.directory import post_to_inbox, request_abort
from langchain_promptstrat.inbox.paths import inbox_removed_dir, thread_save_file
from langchain_promptstrat.messages import check_tool_pairs
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.testing import ScriptedChatModel, make_sized_tool
from langchain_promptstrat.tokens import TokenCounter

N_TOOL_CALLS = 160
SYSTEM = "You are a careful research agent."
TASK = "Find out why the ingestion API returns 503 and fix it."
NOTICE = "Also check the retry budget of the uploader."
POST_AFTER_CALL = 60
ABORT_AFTER_CALL = 110
ABORT_REASON = "pause: the reviewer wants a look"
EPOCH = "shorten_tools_epoch_stable"  # the compacting strategy of the default list
assert EPOCH in DEFAULT_STRATEGIES
NO_EVENTS_BEFORE_311 = (
    "create_agent's async model call reaches the run's config, and so its callbacks, only through "
    "a context "
    "variable that Python 3.10 does not pass into async code: the middleware's reports are "
    "logged, not dispatched"
)


class ReportRecorder(BaseCallbackHandler):
    """Collects the ``promptstrat`` events of a run, in order."""

    run_inline = True  # keep the events in call order in async runs too

    def __init__(self) -> None:
        self.reports: list[dict[str, Any]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == "promptstrat":
            self.reports.append(data)


@dataclass(repr=False)  # asyncio.run reprs its result: keep 160 prompts out of it
class AgentRun:
    """What one end-to-end run left behind: the model inputs, the reports, the checkpointed
    state."""

    builder: str
    calls: list[list[BaseMessage]]
    reports: list[dict[str, Any]]
    state: dict[str, Any]
    interrupts: list[Any] = field(default_factory=list)
    removed_dir: Any = None
    mode: str = "sync"

    @property
    def epoch_reports(self) -> list[dict[str, Any]]:
        return [r for r in self.reports if r["strategy"] == EPOCH]


def create_react_agent(*args: Any, **kwargs: Any) -> Any:
    """``langgraph.prebuilt.create_react_agent``, deprecated for create_agent but still widely
    used."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return _create_react_agent(*args, **kwargs)


def build_agent(builder: str, model: ScriptedChatModel, checkpointer: Any, root: Any) -> Any:
    """Return a react agent with the pre-model hook, or a create_agent agent with the middleware."""
    tools = [make_sized_tool("fetch")]
    if builder == "react":
        return create_react_agent(
            model,
            tools,
            prompt=SYSTEM,
            pre_model_hook=pre_model_hook(inbox_root=root),
            checkpointer=checkpointer,
        )
    return create_agent(
        model,
        tools,
        system_prompt=SYSTEM,
        middleware=[PromptStrategyMiddleware(inbox_root=root)],
        checkpointer=checkpointer,
    )


class Steering:
    """Posts the notice, then the abort file, once the model has been called often enough."""

    def __init__(self, model: ScriptedChatModel, thread: str, root: Any) -> None:
        self.model, self.thread, self.root = model, thread, root
        self.posted = self.aborted = False

    def after_step(self) -> None:
        if not self.posted and len(self.model.calls) >= POST_AFTER_CALL:
            post_to_inbox(thread_id=self.thread, root=self.root, content=NOTICE)
            self.posted = True
        if not self.aborted and len(self.model.calls) >= ABORT_AFTER_CALL:
            request_abort(thread_id=self.thread, root=self.root, reason=ABORT_REASON)
            self.aborted = True


def run_sync(builder: str, checkpointer: Any, root: Any, thread: str) -> AgentRun:
    model = ScriptedChatModel.long_run(N_TOOL_CALLS)
    agent = build_agent(builder, model, checkpointer, root)
    recorder = ReportRecorder()
    config = {
        "configurable": {"thread_id": thread},
        "recursion_limit": 4 * N_TOOL_CALLS + 20,
        "callbacks": [recorder],
    }
    steering, interrupts = Steering(model, thread, root), []
    next_input: Any = {"messages": [HumanMessage(TASK)]}
    while next_input is not None:
        resume, next_input = next_input, None
        for update in agent.stream(resume, config, stream_mode="updates"):
            steering.after_step()
            if "__interrupt__" in update:
                interrupts.extend(update["__interrupt__"])
                next_input = Command(resume=True)
    state = agent.get_state(config).values
    return AgentRun(
        builder,
        model.calls,
        recorder.reports,
        state,
        interrupts,
        inbox_removed_dir(thread_save_file(thread, root)),
    )


async def run_async(builder: str, checkpointer: Any, root: Any, thread: str) -> AgentRun:
    model = ScriptedChatModel.long_run(N_TOOL_CALLS)
    agent = build_agent(builder, model, checkpointer, root)
    recorder = ReportRecorder()
    config = {
        "configurable": {"thread_id": thread},
        "recursion_limit": 4 * N_TOOL_CALLS + 20,
        "callbacks": [recorder],
    }
    steering, interrupts = Steering(model, thread, root), []
    async for update in agent.astream(
        {"messages": [HumanMessage(TASK)]}, config, stream_mode="updates"
    ):
        steering.after_step()
        interrupts.extend(update.get("__interrupt__", ()))
    assert interrupts, "the abort file did not interrupt the async run"
    await agent.ainvoke(Command(resume=True), config)
    state = (await agent.aget_state(config)).values
    return AgentRun(
        builder,
        model.calls,
        recorder.reports,
        state,
        interrupts,
        inbox_removed_dir(thread_save_file(thread, root)),
        "async",
    )


def run_agent(builder: str, backend: str, mode: str, tmp: Any) -> AgentRun:
    """Run one agent end to end on ``backend`` (memory or sqlite) in ``mode`` (sync or async)."""
    root, thread = tmp / "inboxes", f"{builder}-{backend}-{mode}"
    db = str(tmp / "checkpoints.sqlite")
    if mode == "sync":
        if backend == "memory":
            return run_sync(builder, InMemorySaver(), root, thread)
        with SqliteSaver.from_conn_string(db) as saver:
            return run_sync(builder, saver, root, thread)

    async def main() -> AgentRun:
        if backend == "memory":
            return await run_async(builder, InMemorySaver(), root, thread)
        async with AsyncSqliteSaver.from_conn_string(db) as saver:
            return await run_async(builder, saver, root, thread)

    return asyncio.run(main())


CASES = [
    (b, backend, mode)
    for b in ("react", "create_agent")
    for backend, mode in (
        ("memory", "sync"),
        ("sqlite", "sync"),
        ("memory", "async"),
        ("sqlite", "async"),
    )
]


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c) for c in CASES])
def agent_run(request, tmp_path_factory) -> AgentRun:
    """One finished run per (builder, checkpointer, sync/async), shared by the assertions below."""
    builder, backend, mode = request.param
    return run_agent(builder, backend, mode, tmp_path_factory.mktemp("-".join(request.param)))


def fingerprint(message: BaseMessage) -> tuple:
    """What a provider would see of a message: role, content, tool calls, answered call."""
    calls = tuple(
        (c["name"], repr(c["args"]), c["id"]) for c in getattr(message, "tool_calls", None) or ()
    )
    return (message.type, repr(message.content), calls, getattr(message, "tool_call_id", None))


def skip_without_reports(agent_run: AgentRun) -> None:
    """Skip the rest of a test that reads the reports of a run which could not dispatch them."""
    if (
        agent_run.builder == "create_agent"
        and agent_run.mode == "async"
        and sys.version_info < (3, 11)
    ):
        pytest.skip(NO_EVENTS_BEFORE_311)


def has_notice(prompt: list[BaseMessage]) -> bool:
    return any(isinstance(m, HumanMessage) and m.content == NOTICE for m in prompt)


class TestAgentRun:
    def test_the_run_finishes_after_every_scripted_call(self, agent_run):
        """The resumed run makes all 160 tool calls and ends with the final answer, with one model
        call each."""
        messages = agent_run.state["messages"]
        assert sum(isinstance(m, ToolMessage) for m in messages) == N_TOOL_CALLS
        assert isinstance(messages[-1], AIMessage) and messages[-1].content == "done"
        assert len(agent_run.calls) == N_TOOL_CALLS + 1

    def test_a_every_model_input_keeps_pairs_and_the_floor(self, agent_run):
        """(a) Every model input passes check_tool_pairs and starts with the system prompt and the
        task."""
        for prompt in agent_run.calls:
            assert check_tool_pairs(prompt) == []
            assert isinstance(prompt[0], SystemMessage) and prompt[0].content == SYSTEM
            assert isinstance(prompt[1], HumanMessage) and prompt[1].content == TASK

    def test_b_the_checkpoint_keeps_every_tool_output_at_full_length(self, agent_run):
        """(b) Every ToolMessage in the checkpointed state is exactly what the tool returned,
        although the model saw shortened ones."""
        tool = make_sized_tool("fetch")
        args = {
            c["id"]: c["args"]
            for m in agent_run.state["messages"]
            if isinstance(m, AIMessage)
            for c in m.tool_calls
        }
        outputs = [m for m in agent_run.state["messages"] if isinstance(m, ToolMessage)]
        assert all(m.content == tool.invoke(args[m.tool_call_id]) for m in outputs)
        last_chars = sum(
            len(str(m.content)) for m in agent_run.calls[-1] if isinstance(m, ToolMessage)
        )
        assert last_chars < sum(len(m.content) for m in outputs)
        skip_without_reports(agent_run)
        assert sum(r["shortened"] for r in agent_run.epoch_reports) > 0

    def test_c_consecutive_inputs_within_an_epoch_share_their_prefix(self, agent_run):
        """(c) Each model input begins with the whole previous input unless the report announced a
        prefix change (or a notice left)."""
        skip_without_reports(agent_run)
        reports, calls = agent_run.epoch_reports, agent_run.calls
        assert len(reports) == len(calls)
        announced = [i for i, r in enumerate(reports) if r["prefix_change"]]
        assert announced, "the run never compacted: the prefix property was not exercised"
        checked = 0
        for i in range(len(calls) - 1):
            if reports[i + 1]["prefix_change"] or (
                has_notice(calls[i]) and not has_notice(calls[i + 1])
            ):
                continue
            previous = [fingerprint(m) for m in calls[i]]
            assert [fingerprint(m) for m in calls[i + 1][: len(previous)]] == previous, (
                f"call {i + 2}"
            )
            checked += 1
        assert checked >= 0.9 * len(calls)

    def test_d_a_notice_posted_mid_run_stays_said(self, agent_run):
        """(d) The notice posted after call 60 reaches a later model input, stays in every one
        after, and is stored once."""
        seen = [i for i, prompt in enumerate(agent_run.calls) if has_notice(prompt)]
        assert (
            seen
            and seen[0] >= POST_AFTER_CALL
            and seen == list(range(seen[0], len(agent_run.calls)))
        )
        assert all(
            sum(isinstance(m, HumanMessage) and m.content == NOTICE for m in agent_run.calls[i])
            == 1
            for i in seen
        )
        assert [m.content for m in agent_run.state["messages"]].count(NOTICE) == 1

    def test_e_an_abort_file_interrupts_and_resume_continues(self, agent_run):
        """(e) The abort file surfaces once as __interrupt__ with its reason, and
        Command(resume=...) runs on to the end."""
        (interrupt,) = agent_run.interrupts
        assert (
            interrupt.value["type"] == "inbox_abort" and interrupt.value["reason"] == ABORT_REASON
        )
        assert (agent_run.removed_dir / "abort").read_text() == ABORT_REASON
        assert (
            len(agent_run.calls) == N_TOOL_CALLS + 1
        )  # the resumed step called the model once, not twice


class TestEvents:
    @pytest.mark.parametrize(
        "builder",
        [
            "react",
            pytest.param(
                "create_agent",
                marks=pytest.mark.skipif(sys.version_info < (3, 11), reason=NO_EVENTS_BEFORE_311),
            ),
        ],
    )
    def test_every_report_reaches_astream_events_during_the_run(self, builder, tmp_path):
        """Each model call's strategy reports stream out of astream_events as promptstrat events,
        live."""
        n_calls = (
            130  # past the default strategy's threshold (120), so compaction shows in the events
        )
        model = ScriptedChatModel.long_run(n_calls)
        agent = build_agent(builder, model, InMemorySaver(), tmp_path)
        config = {"configurable": {"thread_id": "events"}, "recursion_limit": 4 * n_calls + 20}

        async def collect() -> list[tuple[str, Any]]:
            seen = []
            async for event in agent.astream_events(
                {"messages": [HumanMessage(TASK)]}, config, version="v2"
            ):
                if event["event"] == "on_custom_event" and event["name"] == "promptstrat":
                    seen.append((event["data"]["strategy"], event["data"]))
                elif event["event"] == "on_chat_model_start":
                    seen.append(("model call", None))
            return seen

        seen = asyncio.run(collect())
        assert [name for name, _ in seen] == [*DEFAULT_STRATEGIES, "model call"] * (n_calls + 1)
        assert any(data["shortened"] for name, data in seen if name == EPOCH)


class TestCheckpointGrowth:
    def test_llm_input_messages_stores_a_second_compacted_copy_per_call(self, tmp_path):
        """The hook's llm_input_messages is a checkpointed channel: measured, it adds at most one
        prompt copy per checkpoint."""
        sizes = {}
        for label, hook in (("no hook", None), ("hook", pre_model_hook(inbox_root=tmp_path))):
            saver = InMemorySaver()
            agent = create_react_agent(
                ScriptedChatModel.long_run(80),
                [make_sized_tool("fetch")],
                pre_model_hook=hook,
                checkpointer=saver,
            )
            config = {"configurable": {"thread_id": "growth"}, "recursion_limit": 400}
            agent.invoke({"messages": [HumanMessage(TASK)]}, config)
            per_channel: Counter[str] = Counter()
            for (_, _, channel, _), (_, blob) in saver.blobs.items():
                per_channel[channel] += len(blob)
            latest = saver.get_tuple(config).checkpoint["channel_values"]
            sizes[label] = (
                per_channel,
                {k: len(saver.serde.dumps_typed(v)[1]) for k, v in latest.items()},
            )
        (plain, _), (hooked, latest) = sizes["no hook"], sizes["hook"]
        print(
            f"\nblobs by channel, no hook: {dict(plain)}\nblobs by channel, hook: "
            f"{dict(hooked)}\nlatest checkpoint, hook: {latest}"
        )
        assert plain["llm_input_messages"] == 0 and hooked["messages"] == plain["messages"]
        assert 0 < hooked["llm_input_messages"] <= hooked["messages"]
        assert 0 < latest["llm_input_messages"] <= latest["messages"]


class TestBoundedDefault:
    CEILING = 6_000

    @pytest.mark.parametrize("builder", ["react", "create_agent"])
    def test_the_default_never_sends_more_than_a_small_ceiling(self, builder):
        """A 60-call agent run with the default list and a 6,000-token ceiling: every model input,
        tool schemas included, fits."""
        from langchain_promptstrat.tokens import TokenCounter, tool_schema_tokens

        count = TokenCounter("cl100k_base")
        model = ScriptedChatModel.long_run(60)
        tools = [make_sized_tool("fetch")]
        if builder == "react":
            hook = pre_model_hook(max_tokens=self.CEILING, tools=tools, system_prompt=SYSTEM)
            agent = create_react_agent(model, tools, prompt=SYSTEM, pre_model_hook=hook)
        else:
            agent = create_agent(
                model,
                tools,
                system_prompt=SYSTEM,
                middleware=[PromptStrategyMiddleware(max_tokens=self.CEILING)],
            )
        state = agent.invoke({"messages": [HumanMessage(TASK)]}, {"recursion_limit": 300})
        sent = [
            count(c) + tool_schema_tokens(tools, count) for c in model.calls
        ]  # the counter counts call ids
        full = count(state["messages"])
        assert (
            len(model.calls) == 61 and full > 4 * self.CEILING
        )  # the history really outgrew the ceiling
        assert max(sent) <= self.CEILING
        assert all(
            any(isinstance(m, HumanMessage) and m.content == TASK for m in c) for c in model.calls
        )
        assert all(not check_tool_pairs(c) for c in model.calls)

    def test_the_middleware_takes_the_ceiling_from_the_model_profile(self):
        """With no max_tokens, create_agent's request.model profile (max_input_tokens 8,000) sets a
        6,000-token ceiling."""
        from langchain_promptstrat.tokens import TokenCounter, tool_schema_tokens

        count = TokenCounter("cl100k_base")
        model = ScriptedChatModel.long_run(60)
        model.profile = {"max_input_tokens": 8_000}
        tools = [make_sized_tool("fetch")]
        recorder = ReportRecorder()
        agent = create_agent(
            model, tools, system_prompt=SYSTEM, middleware=[PromptStrategyMiddleware()]
        )
        agent.invoke(
            {"messages": [HumanMessage(TASK)]}, {"recursion_limit": 300, "callbacks": [recorder]}
        )
        sent = [
            count(c) + tool_schema_tokens(tools, count) for c in model.calls
        ]  # the counter counts call ids
        assert max(sent) <= 6_000 < count(model.calls[-1]) + 10 * 6_000
        ceilings = {
            (r["ceiling"], r["ceiling_source"]) for r in recorder.reports if r["strategy"] == EPOCH
        }
        if sys.version_info >= (3, 11):
            assert ceilings == {
                (6_000, "ScriptedChatModel's max_input_tokens 8,000 minus 2,000 for the reply")
            }


class TestLadderReadBack:
    TARGET = 4_000
    HANDLE = re.compile(r"read_back\(call=(\d+)\)")
    RANGE = re.compile(r"calls (\d+)-(\d+)")

    def test_the_agent_reads_back_a_placeholder_s_handle_and_a_call_the_window_note_names(self):
        """What a CompactionLadder of tool_results and sliding_window takes away is not lost: a
        create_agent agent reads a call back through a placeholder's handle and through the window
        note's range, gets the output the tool returned, and the next prompt carries it, while
        every prompt stays under the ladder's small target."""
        tool = make_sized_tool("fetch", sizes=1_600)  # about 400 tokens an output: over 200
        asked: dict[str, tuple[int, BaseMessage]] = {}  # read_back call id -> call number, namer

        def read_back_named(key: str, pattern: re.Pattern[str], kind: str) -> Callable[..., Any]:
            def answer(prompt: list[BaseMessage]) -> dict[str, Any]:
                found = [
                    (m, pattern.search(str(m.content)))
                    for m in prompt
                    if str(m.content).startswith(f"[compacted:{kind}]")
                ]
                namer, match = next(((m, found) for m, found in found if found), (None, None))
                assert namer is not None and match is not None, f"no {kind} message names a call"
                number = int(match.group(1))
                asked[key] = (number, namer)
                return {"tool_calls": [{"name": "read_back", "args": {"call": number}, "id": key}]}

            return answer

        fetches = [
            {"tool_calls": [{"name": "fetch", "args": {"query": f"upload log {i}"}}]}
            for i in range(80)
        ]
        model = ScriptedChatModel(
            [
                *fetches[:20],
                read_back_named("rb_placeholder", self.HANDLE, "tool_results"),
                *fetches[20:],
                read_back_named("rb_note", self.RANGE, "sliding_window"),
                "done",
            ]
        )
        ladder = CompactionLadder(["tool_results", "sliding_window"], max_tokens=self.TARGET)
        middleware = [CompactionMiddleware([ladder])]
        agent = create_agent(model, [tool], system_prompt=SYSTEM, middleware=middleware)
        state = agent.invoke({"messages": [HumanMessage(TASK)]}, {"recursion_limit": 400})
        stored = state["messages"]

        calls = [call for m in stored if isinstance(m, AIMessage) for call in m.tool_calls]
        outputs = {m.tool_call_id: m for m in stored if isinstance(m, ToolMessage)}
        (from_placeholder, placeholder), (from_note, _) = asked["rb_placeholder"], asked["rb_note"]
        assert calls[from_placeholder - 1]["id"] == placeholder.tool_call_id  # its own
        for key, number in (("rb_placeholder", from_placeholder), ("rb_note", from_note)):
            named = calls[number - 1]  # call N is the N-th call of the stored conversation
            assert named["name"] == "fetch" and outputs[key].content == tool.invoke(named["args"])
            asking = next(
                i
                for i, prompt in enumerate(model.calls)
                if any(getattr(m, "tool_call_id", None) == key for m in prompt)
            )
            assert model.calls[asking][-1].content == outputs[key].content  # carried whole
            if key == "rb_note":  # the call was dropped from the prompt it was asked from
                before = model.calls[asking - 1]
                assert all(getattr(m, "tool_call_id", None) != named["id"] for m in before)
        count = TokenCounter("cl100k_base")
        assert all(check_tool_pairs(prompt) == [] for prompt in model.calls)
        sent = [[m for m in prompt if not isinstance(m, SystemMessage)] for prompt in model.calls]
        assert max(map(count, sent)) <= self.TARGET  # the system prompt is not the ladder's
