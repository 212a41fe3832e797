"""Specification of the LangGraph pre-model hook and of the prompt floor every adapter keeps."""

from __future__ import annotations

import asyncio
import logging
import warnings
from typing import Any

import pytest
from conversations import agent_conversations
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import create_react_agent as _create_react_agent
from langgraph.types import Command

from langchain_promptstrat.adapters.langgraph import keep_prompt_floor, pre_model_hook
from langchain_promptstrat.errors import (
    InboxAborted,
    InboxError,
    InvalidMessagesError,
    UnknownStrategyError,
)
from langchain_promptstrat.inbox.directory import DirectoryInbox, post_to_inbox, request_abort
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV
from langchain_promptstrat.messages import (
    check_tool_pairs,
    is_real_user_message,
    leading_system_count,
)
from langchain_promptstrat.registry import get_strategy
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.inbox import Inbox
from langchain_promptstrat.testing import ScriptedChatModel, build_agent_run, make_sized_tool

THREAD = "run.1"
CONFIG = {"configurable": {"thread_id": THREAD}, "recursion_limit": 200}
SMALL_EPOCHS = Settings(
    epoch_tool_call_threshold=4,
    epoch_full_tool_calls=2,
    epoch_compacted_tool_calls=4,
    epoch_size=3,
    stable_tool_call_threshold=4,
    stable_full_tool_calls=2,
    stable_epoch_size=3,
    stable_max_compacted_tool_calls=4,
    stable_front_drop_chunk=2,
)
"""Compaction from the fifth tool call on, so a dozen calls show it."""


def create_react_agent(*args: Any, **kwargs: Any) -> Any:
    """``langgraph.prebuilt.create_react_agent``, deprecated for create_agent but still widely
    used."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return _create_react_agent(*args, **kwargs)


def react_agent(
    model: ScriptedChatModel, hook: Any, *, checkpointer: bool = True, **kwargs: Any
) -> Any:
    """Return a react agent with one 2,000-character tool, the hook, and an InMemorySaver (or
    none)."""
    tools = [make_sized_tool("fetch", sizes=2_000)]
    return create_react_agent(
        model,
        tools,
        pre_model_hook=hook,
        checkpointer=InMemorySaver() if checkpointer else None,
        **kwargs,
    )


def contents(messages: list[BaseMessage]) -> list[Any]:
    return [m.content for m in messages]


def floor_problems(source: list[BaseMessage], prompt: list[BaseMessage]) -> list[str]:
    """Return what ``prompt`` lacks of the floor ``source`` sets; empty when it holds."""
    problems = check_tool_pairs(prompt)
    if not prompt:
        return [*problems, "empty"]
    if leading_system_count(source) and not isinstance(prompt[0], SystemMessage):
        problems.append("system message not first")
    users = [m for m in source if is_real_user_message(m)]
    if users and not any(
        m.content == users[-1].content for m in prompt if isinstance(m, HumanMessage)
    ):
        problems.append("newest user message missing")
    return problems


@pytest.fixture
def root(tmp_path):
    """The inbox root: one <thread>.inbox per thread."""
    return tmp_path


@pytest.fixture
def agent_run():
    """A realistic 200-call agent conversation with a system message and one task (past every
    default threshold)."""
    return build_agent_run(200, user_turn_every=None)


class TestHookOutput:
    def test_returns_the_compacted_prompt_as_llm_input_messages_only(self, agent_run):
        """The update holds llm_input_messages alone, compacted; the state's messages are not
        touched."""
        before = list(agent_run)
        update = pre_model_hook()({"messages": agent_run}, {})
        assert list(update) == ["llm_input_messages"]
        assert agent_run == before and update["llm_input_messages"] != agent_run
        assert check_tool_pairs(update["llm_input_messages"]) == []

    def test_returns_llm_input_messages_even_when_nothing_changed(self, agent_run):
        """With the no-op strategy the hook still returns the prompt, so the model never reads a
        stale one."""
        update = pre_model_hook("none")({"messages": agent_run}, {})
        assert (
            update["llm_input_messages"] == agent_run
            and update["llm_input_messages"] is not agent_run
        )

    def test_never_returns_an_empty_llm_input_messages(self):
        """A strategy answering [] gets the system message and the task back, since an empty list
        means 'full history'."""
        state = {"messages": [SystemMessage("sys"), HumanMessage("task")]}
        update = pre_model_hook(lambda messages: [])(state, {})
        assert contents(update["llm_input_messages"]) == ["sys", "task"]

    def test_one_strategy_object_is_applied_alone(self, agent_run):
        """pre_model_hook(strategy), the documented spelling for one strategy, sends what that
        strategy alone makes."""
        strategy = get_strategy("shorten_tools", max_tool_calls=5)
        update = pre_model_hook(strategy)({"messages": agent_run}, {})
        assert update["llm_input_messages"] == strategy.invoke(agent_run) != agent_run


class TestHookInAgents:
    def test_react_agent_model_sees_the_compacted_prompt_and_state_keeps_everything(self):
        """In create_react_agent the model gets shortened outputs while the checkpoint keeps them
        whole."""
        model = ScriptedChatModel.long_run(12)
        agent = react_agent(model, pre_model_hook(settings=SMALL_EPOCHS))
        out = agent.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        outputs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert len(outputs) == 12 and all(len(m.content) == 2_000 for m in outputs)
        last_prompt = [m for m in model.calls[-1] if isinstance(m, ToolMessage)]
        assert any(len(m.content) < 2_000 for m in last_prompt)
        assert all(check_tool_pairs(call) == [] for call in model.calls)

    def test_async_react_agent_runs_the_same_hook(self):
        """ainvoke drives the same hook and gives the same model inputs as invoke."""
        # one id prefix: the two runs' prompts name the same tool-call ids, so they can be compared
        sync_model, async_model = (
            ScriptedChatModel.long_run(12, id_prefix="same"),
            ScriptedChatModel.long_run(12, id_prefix="same"),
        )
        react_agent(sync_model, pre_model_hook(settings=SMALL_EPOCHS)).invoke(
            {"messages": [HumanMessage("task")]}, CONFIG
        )
        agent = react_agent(async_model, pre_model_hook(settings=SMALL_EPOCHS))
        asyncio.run(agent.ainvoke({"messages": [HumanMessage("task")]}, CONFIG))
        assert [contents(c) for c in async_model.calls] == [contents(c) for c in sync_model.calls]

    def test_a_second_turn_reaches_the_model_instead_of_a_stale_prompt(self):
        """On the next invoke of a thread the hook returns a fresh prompt holding the new user
        message."""
        model = ScriptedChatModel(["first answer", "second answer"])
        agent = react_agent(model, pre_model_hook())
        agent.invoke({"messages": [HumanMessage("one")]}, CONFIG)
        agent.invoke({"messages": [HumanMessage("two")]}, CONFIG)
        assert contents(model.calls[1]) == ["one", "first answer", "two"]

    def test_works_as_a_node_of_a_hand_built_state_graph(self):
        """START -> hook -> model works in a StateGraph whose state declares llm_input_messages."""

        class State(MessagesState):
            llm_input_messages: list[AnyMessage]

        model = ScriptedChatModel(["hi"])
        graph = StateGraph(State)
        graph.add_node("hook", pre_model_hook(lambda messages: messages[-1:]))
        graph.add_node(
            "model", lambda state: {"messages": [model.invoke(state["llm_input_messages"])]}
        )
        graph.add_edge(START, "hook")
        graph.add_edge("hook", "model")
        graph.add_edge("model", END)
        out = graph.compile().invoke({"messages": [SystemMessage("sys"), HumanMessage("task")]})
        assert contents(model.calls[0]) == ["sys", "task"] and contents(out["messages"]) == [
            "sys",
            "task",
            "hi",
        ]


class TestHookInbox:
    def test_a_notice_reaches_one_model_call_and_not_the_state(self, root):
        """With persist_inbox=False a posted notice is in the next model input only; messages never
        hold it."""
        model = ScriptedChatModel.long_run(3)
        post_to_inbox(thread_id=THREAD, root=root, content="look at the logs")
        out = react_agent(model, pre_model_hook(inbox_root=root, persist_inbox=False)).invoke(
            {"messages": [HumanMessage("task")]}, CONFIG
        )
        # long_run(3): three calls then the final answer, four model calls; only the first sees the
        # notice
        assert [sum(m.content == "look at the logs" for m in call) for call in model.calls] == [
            1,
            0,
            0,
            0,
        ]
        assert "look at the logs" not in contents(out["messages"])

    def test_persist_inbox_also_stores_the_notice_in_messages(self, root):
        """By default (persist_inbox=True) the notice joins messages, so every later call sees it
        once."""
        model = ScriptedChatModel.long_run(2)
        post_to_inbox(thread_id=THREAD, root=root, content="note")
        out = react_agent(model, pre_model_hook(inbox_root=root)).invoke(
            {"messages": [HumanMessage("task")]}, CONFIG
        )
        assert contents(out["messages"]).count("note") == 1
        assert [contents(call).count("note") for call in model.calls] == [
            1,
            1,
            1,
        ]  # long_run(2): 2 calls + the answer

    def test_save_file_in_the_config_names_the_inbox(self, tmp_path):
        """configurable.save_file picks the inbox, with no root at all."""
        save_file = tmp_path / "x" / "agent.chat"
        post_to_inbox(save_file, "from the save file")
        update = pre_model_hook()(
            {"messages": [HumanMessage("task")]}, {"configurable": {"save_file": str(save_file)}}
        )
        assert contents(update["llm_input_messages"]) == ["task", "from the save file"]

    def test_notices_land_where_the_inbox_stands_in_the_list(self, root):
        """Inbox last: the strategies before it never see the notice; inbox first: they do."""
        seen: list[list[Any]] = []

        def recorder(messages):
            seen.append(contents(messages))
            return messages

        for order in (["inbox", recorder], [recorder, "inbox"]):
            post_to_inbox(thread_id=THREAD, root=root, content="notice")
            update = pre_model_hook(order, inbox_root=root)(
                {"messages": [HumanMessage("task")]}, CONFIG
            )
            assert contents(update["llm_input_messages"]) == ["task", "notice"]
        assert seen == [["task", "notice"], ["task"]]

    def test_the_inbox_strategy_backend_is_the_one_read(self, tmp_path, monkeypatch):
        """An Inbox strategy bound to one conversation's backend delivers from it, whatever the run
        config says."""
        monkeypatch.delenv(INBOX_ROOT_ENV, raising=False)
        store = DirectoryInbox.for_save_file(tmp_path / "shared.chat")
        store.post("from the bound inbox")
        update = pre_model_hook(["none", Inbox(backend=store)])(
            {"messages": [HumanMessage("task")]}, {}
        )
        assert contents(update["llm_input_messages"]) == ["task", "from the bound inbox"]

    def test_a_list_without_the_inbox_never_consumes_it(self, root):
        """Strategies that do not include inbox leave the posted files where they are."""
        path = post_to_inbox(thread_id=THREAD, root=root, content="wait")
        pre_model_hook("shorten_tools", inbox_root=root)(
            {"messages": [HumanMessage("task")]}, CONFIG
        )
        assert path.exists()

    def test_abort_interrupts_and_resume_continues_the_run(self, root):
        """An abort file surfaces as __interrupt__ with the reason; Command(resume=...) goes on to
        the end."""
        model = ScriptedChatModel.long_run(3)
        agent = react_agent(model, pre_model_hook(inbox_root=root))
        request_abort(thread_id=THREAD, root=root, reason="wrong direction")
        out = agent.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        assert out["__interrupt__"][0].value["reason"] == "wrong direction" and model.calls == []
        out = agent.invoke(Command(resume=True), CONFIG)
        assert (
            "__interrupt__" not in out
            and out["messages"][-1].content == "done"
            and len(model.calls) == 3 + 1
        )

    def test_a_string_resume_value_reaches_the_next_model_call_once(self, root):
        """Command(resume="...") with text is handed to the model like a notice: once, or kept when
        notices persist."""
        for persist, expected in ((False, [1, 0]), (True, [1, 1])):
            model = ScriptedChatModel.long_run(1)
            agent = react_agent(model, pre_model_hook(inbox_root=root, persist_inbox=persist))
            request_abort(thread_id=THREAD, root=root)
            config = {"configurable": {"thread_id": THREAD}}
            agent.invoke({"messages": [HumanMessage("task")]}, config)
            out = agent.invoke(Command(resume="try the other API"), config)
            assert [contents(call).count("try the other API") for call in model.calls] == expected
            assert contents(out["messages"]).count("try the other API") == int(persist)

    def test_abort_without_a_checkpointer_says_the_run_cannot_resume(self, root):
        """No checkpointer: InboxAborted is raised at the abort, with a note naming the missing
        checkpointer."""
        agent = react_agent(
            ScriptedChatModel.long_run(1), pre_model_hook(inbox_root=root), checkpointer=False
        )
        request_abort(thread_id=THREAD, root=root, reason="halt")
        with pytest.raises(InboxAborted) as caught:
            agent.invoke({"messages": [HumanMessage("task")]}, CONFIG)
        assert caught.value.reason == "halt" and "checkpointer" in " ".join(caught.value.__notes__)


class TestHookErrors:
    def test_an_unknown_strategy_fails_when_the_hook_is_built(self):
        """A misspelt name raises UnknownStrategyError listing the known names, before any graph
        runs."""
        with pytest.raises(
            UnknownStrategyError, match="unknown strategy 'shorten_tool'; known: .*shorten_tools"
        ):
            pre_model_hook("shorten_tool")

    def test_an_inbox_root_that_is_a_file_fails_when_the_hook_is_built(self, tmp_path):
        """inbox_root pointing at a file raises InboxError saying it is not a directory."""
        (tmp_path / "file").write_text("x")
        with pytest.raises(InboxError, match="not a directory"):
            pre_model_hook(inbox_root=tmp_path / "file")

    def test_a_state_without_messages_names_the_missing_key(self):
        """A state lacking 'messages' raises InvalidMessagesError naming the key and the keys it
        has."""
        with pytest.raises(InvalidMessagesError, match=r"'messages'.*\['history'\]"):
            pre_model_hook()({"history": []}, {})

    def test_a_missing_thread_id_skips_the_inbox_with_one_warning(self, root, monkeypatch):
        """With a root but no thread_id the inbox is skipped and a RuntimeWarning is given once per
        hook."""
        monkeypatch.setenv(INBOX_ROOT_ENV, str(root))
        path = post_to_inbox(thread_id=THREAD, content="pending")
        hook = pre_model_hook()
        with pytest.warns(RuntimeWarning, match="thread_id") as caught:
            for _ in range(3):
                assert contents(
                    hook({"messages": [HumanMessage("task")]}, {})["llm_input_messages"]
                ) == ["task"]
        assert len(caught) == 1 and path.exists()

    def test_no_root_and_no_thread_means_no_inbox_and_no_warning(self, monkeypatch):
        """Without any inbox root the inbox is simply off: no warning."""
        monkeypatch.delenv(INBOX_ROOT_ENV, raising=False)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            update = pre_model_hook()({"messages": [HumanMessage("task")]}, {})
        assert contents(update["llm_input_messages"]) == ["task"]


def dialogue() -> list[BaseMessage]:
    """System, task, two tool steps, a second user message, one more step."""
    return [
        SystemMessage("sys"),
        HumanMessage("task"),
        AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "a"}], id="ai-1"),
        ToolMessage("out a", tool_call_id="a", id="t-a"),
        AIMessage(
            "",
            tool_calls=[{"name": "f", "args": {}, "id": "b"}, {"name": "f", "args": {}, "id": "c"}],
            id="ai-2",
        ),
        ToolMessage("out b", tool_call_id="b", id="t-b"),
        ToolMessage("out c", tool_call_id="c", id="t-c"),
        HumanMessage("now the follow-up", id="h-2"),
        AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "d"}], id="ai-3"),
        ToolMessage("out d", tool_call_id="d", id="t-d"),
    ]


class TestPromptFloor:
    def test_a_valid_prompt_comes_back_unchanged_without_a_warning(self, caplog):
        """A prompt that holds the floor is returned as is and nothing is logged."""
        source = dialogue()
        with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
            assert keep_prompt_floor(source, source[:2] + source[7:]) == source[:2] + source[7:]
        assert caplog.records == []

    def test_an_empty_prompt_gets_the_system_message_and_newest_user_message(self, caplog):
        """[] becomes [system, newest user message] and a warning names both repairs."""
        with caplog.at_level(logging.WARNING, logger="langchain_promptstrat"):
            out = keep_prompt_floor(dialogue(), [])
        assert contents(out) == ["sys", "now the follow-up"]
        assert "system message" in caplog.text and "newest user message" in caplog.text

    def test_a_dropped_system_message_goes_back_in_front(self):
        """A prompt without the system block gets it back first, and a moved one is not kept
        twice."""
        source = dialogue()
        out = keep_prompt_floor(source, [*source[1:4], source[0], *source[4:]])
        assert out == source

    def test_broken_pairs_lose_the_unpaired_calls_and_outputs(self):
        """An orphan output is dropped and a call whose output went is removed from its message."""
        source = dialogue()
        out = keep_prompt_floor(
            source, [source[0], source[1], source[3], source[4], source[5], *source[7:]]
        )
        assert check_tool_pairs(out) == [] and contents(out) == [
            "sys",
            "task",
            "",
            "out b",
            "now the follow-up",
            "",
            "out d",
        ]
        assert [c["id"] for c in out[2].tool_calls] == ["b"]

    def test_a_dropped_user_message_returns_to_its_place_between_steps(self):
        """The newest user message goes back before the first kept message that followed it, never
        inside a step."""
        source = dialogue()
        out = keep_prompt_floor(source, [source[0], *source[2:7], *source[8:]])
        assert out == [source[0], *source[2:]]

    @hypothesis_settings(max_examples=60, deadline=None)
    @given(
        conversation=agent_conversations(min_calls=1, max_calls=25),
        keep=st.lists(st.booleans(), min_size=80, max_size=80),
    )
    def test_any_sublist_a_strategy_returns_is_restored_to_the_floor(self, conversation, keep):
        """Whatever subset of the conversation a broken strategy keeps, the result holds the
        floor."""
        prompt = [
            m for m, k in zip(conversation, keep + [True] * len(conversation), strict=False) if k
        ]
        logging.getLogger("langchain_promptstrat").disabled = True
        try:
            out = keep_prompt_floor(conversation, prompt)
        finally:
            logging.getLogger("langchain_promptstrat").disabled = False
        assert floor_problems(conversation, out) == []

    def test_a_peer_style_trim_never_reaches_the_model_degenerate(self):
        """trim_messages with a tight budget returns a lone system message; the model still gets the
        task."""

        trimmed: list[list[Any]] = []

        def trim(messages):
            kept = trim_messages(
                messages,
                max_tokens=40,
                token_counter=lambda ms: sum(len(str(m.content)) for m in ms),
                strategy="last",
                include_system=True,
                start_on="human",
            )
            trimmed.append(contents(kept))
            return kept

        model = ScriptedChatModel.long_run(6)
        react_agent(model, pre_model_hook(trim)).invoke(
            {"messages": [SystemMessage("sys"), HumanMessage("task")]}, CONFIG
        )
        assert len(model.calls) == 7 and trimmed[0] == [
            "sys",
            "task",
        ]  # six calls and the answer; the first prompt fits
        assert trimmed[1:] == [["sys"]] * 6
        for call in model.calls:
            assert contents(call[:2]) == ["sys", "task"] and check_tool_pairs(call) == []

    @pytest.mark.parametrize(
        "strategies, overrides",
        [
            ("shorten_tools", {"max_tool_calls": 0, "full_tool_outputs": 0, "max_tool_chars": 0}),
            (
                "shorten_tools_epoch_increment",
                {
                    "epoch_tool_call_threshold": 0,
                    "epoch_full_tool_calls": 0,
                    "epoch_compacted_tool_calls": 0,
                },
            ),
            (
                "shorten_tools_epoch",
                {
                    "epoch_tool_call_threshold": 0,
                    "epoch_full_tool_calls": 0,
                    "epoch_compacted_tool_calls": 1,
                    "epoch_size": 1,
                },
            ),
            ("sliding_window", {"max_tokens": 0, "keep_steps": 1}),
            ("tool_results", {"max_tokens": 0, "tool_results_min_tokens": 0}),
        ],
    )
    def test_extreme_settings_keep_the_floor_in_an_agent_run(self, strategies, overrides, root):
        """Every model input of a 20-call react run holds the floor, whatever the thresholds (a
        rung's target of 0 is its own max_tokens; the setting is a ceiling, at least 1)."""
        model = ScriptedChatModel.long_run(20, parallel=2)
        hook = pre_model_hook([get_strategy(strategies, **overrides), "inbox"], inbox_root=root)
        start = [SystemMessage("sys"), HumanMessage("task")]
        react_agent(model, hook).invoke({"messages": start}, CONFIG)
        assert (
            len(model.calls) == 20 // 2 + 1
        )  # ten answers of two parallel calls, then the final answer
        for call in model.calls:
            assert floor_problems(start, call) == []


def test_the_hook_checks_its_ceiling_once(monkeypatch):
    """pre_model_hook(max_tokens=...) checks the ceiling it was given once, and the inbox's pickup
    share and the strategies' request both use that checked value."""
    import langchain_promptstrat.adapters.langgraph as langgraph_adapter

    checked: list[Any] = []
    real = langgraph_adapter.check_max_tokens

    def counted(value: Any, *args: Any) -> Any:
        checked.append(value)
        return real(value, *args)

    monkeypatch.setattr(langgraph_adapter, "check_max_tokens", counted)
    hook = pre_model_hook(max_tokens=("fraction", 0.5))
    prompt = hook({"messages": [HumanMessage("task")]}, {})["llm_input_messages"]
    assert checked == [("fraction", 0.5)] and [m.content for m in prompt] == ["task"]
