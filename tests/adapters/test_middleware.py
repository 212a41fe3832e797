"""Specification of PromptStrategyMiddleware in langchain's create_agent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime
from langgraph.types import Command

from langchain_promptstrat.adapters.langgraph import pre_model_hook
from langchain_promptstrat.adapters.middleware import (
    ABORT_KEY,
    PENDING_KEY,
    CompactionMiddleware,
    PromptStrategyMiddleware,
)
from langchain_promptstrat.errors import ConfigError, InboxAborted, InboxError, UnknownStrategyError
from langchain_promptstrat.inbox.directory import post_to_inbox, request_abort
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV
from langchain_promptstrat.messages import check_tool_pairs
from langchain_promptstrat.registry import (
    get_strategy,
    prompt_for_model,
    register_strategy,
    unregister_strategy,
)
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.shorten_tools import ShortenTools
from langchain_promptstrat.testing import ScriptedChatModel, make_sized_tool

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


def agent(
    model: ScriptedChatModel,
    middleware: PromptStrategyMiddleware | None,
    *,
    checkpointer: bool = True,
) -> Any:
    """Return a create_agent agent with one 2,000-character tool, a system prompt, and an
    InMemorySaver (or none)."""
    return create_agent(
        model,
        [make_sized_tool("fetch", sizes=2_000)],
        system_prompt="sys",
        middleware=[middleware] if middleware is not None else [],
        checkpointer=InMemorySaver() if checkpointer else None,
    )


def checkpoints_of_run(
    middleware: PromptStrategyMiddleware | None, model: ScriptedChatModel
) -> int:
    """Return how many checkpoints one run of ``model`` leaves behind."""
    app = agent(model, middleware)
    app.invoke(start(), CONFIG)
    return len(list(app.checkpointer.list(CONFIG)))


def contents(messages: list[BaseMessage]) -> list[Any]:
    return [m.content for m in messages]


def start(text: str = "task") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


@pytest.fixture
def root(tmp_path):
    """The inbox root: one <thread>.inbox per thread."""
    return tmp_path


class TestRequestRewrite:
    def test_the_request_is_compacted_and_the_state_is_not(self):
        """The model gets shortened outputs; the checkpointed messages keep every output whole."""
        model = ScriptedChatModel.long_run(12)
        out = agent(model, PromptStrategyMiddleware(settings=SMALL_EPOCHS)).invoke(start(), CONFIG)
        outputs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert len(outputs) == 12 and all(len(m.content) == 2_000 for m in outputs)
        assert any(len(m.content) < 2_000 for m in model.calls[-1] if isinstance(m, ToolMessage))
        assert all(check_tool_pairs(call) == [] for call in model.calls)

    def test_the_system_message_stays_first_and_outside_the_strategies(self):
        """request.messages excludes the system message: create_agent still sends it first, once."""
        seen: list[list[Any]] = []

        def recorder(messages):
            seen.append(contents(messages))
            return messages

        model = ScriptedChatModel.long_run(1)
        agent(model, CompactionMiddleware([recorder])).invoke(start(), CONFIG)
        assert (
            seen[0] == ["task"]
            and [contents(call)[:2] for call in model.calls] == [["sys", "task"]] * 2
        )

    def test_the_system_prompt_never_enters_the_state(self):
        """create_agent keeps the system prompt in request.system_message, so the checkpointed
        messages never hold it."""
        out = agent(ScriptedChatModel(["hi"]), PromptStrategyMiddleware()).invoke(start(), CONFIG)
        assert not any(isinstance(m, SystemMessage) for m in out["messages"])

    def test_async_agent_gives_the_same_model_inputs(self):
        """ainvoke goes through awrap_model_call and abefore_model with the same result as
        invoke."""
        # one id prefix: the two runs' prompts name the same tool-call ids, so they can be compared
        sync_model, async_model = (
            ScriptedChatModel.long_run(12, id_prefix="same"),
            ScriptedChatModel.long_run(12, id_prefix="same"),
        )
        agent(sync_model, PromptStrategyMiddleware(settings=SMALL_EPOCHS)).invoke(start(), CONFIG)
        asyncio.run(
            agent(async_model, PromptStrategyMiddleware(settings=SMALL_EPOCHS)).ainvoke(
                start(), CONFIG
            )
        )
        assert [contents(c) for c in async_model.calls] == [contents(c) for c in sync_model.calls]

    def test_a_request_rewritten_without_the_run_config_is_still_compacted(self):
        """Awaited outside any run, as an async model call is on Python 3.10, awrap_model_call still
        sends the compacted prompt."""
        messages = agent(ScriptedChatModel.long_run(12), None).invoke(start(), CONFIG)["messages"]
        middleware = CompactionMiddleware("shorten_tools_epoch_stable", settings=SMALL_EPOCHS)
        request = ModelRequest(
            model=ScriptedChatModel(["hi"]),
            messages=messages,
            state={"messages": messages},
            runtime=Runtime(),
        )
        sent: list[ModelRequest] = []

        async def handler(request: ModelRequest) -> ModelResponse:
            sent.append(request)
            return ModelResponse(result=[AIMessage("hi")])

        asyncio.run(middleware.awrap_model_call(request, handler))
        assert sent[0].messages == prompt_for_model(middleware.strategies, messages) != messages

    def test_a_degenerate_strategy_still_sends_the_task(self):
        """A strategy answering [] leaves the model with the system message and the task, not
        nothing."""
        model = ScriptedChatModel.long_run(2)
        agent(model, PromptStrategyMiddleware(lambda messages: [])).invoke(start(), CONFIG)
        assert [contents(call) for call in model.calls] == [["sys", "task"]] * 3

    def test_one_strategy_object_is_applied_alone(self):
        """PromptStrategyMiddleware(strategy), the documented spelling for one strategy, applies
        that very object alone."""
        strategy = get_strategy("shorten_tools")
        middleware = PromptStrategyMiddleware(strategy, on_abort="end")
        assert (
            middleware.strategies == [strategy]
            and middleware.strategies[0] is strategy
            and middleware.on_abort == "end"
        )


class TestBeforeModelNode:
    BEFORE_MODEL = "PromptStrategyMiddleware.before_model"

    def test_a_compaction_middleware_adds_no_before_model_node(self):
        """CompactionMiddleware, for a list without the inbox, is a PromptStrategyMiddleware with no
        node in the graph."""
        middleware = CompactionMiddleware("shorten_tools_epoch_stable")
        assert isinstance(middleware, PromptStrategyMiddleware)
        nodes = agent(ScriptedChatModel(["hi"]), middleware).get_graph().nodes
        assert not any(name.endswith(".before_model") for name in nodes)

    def test_without_an_inbox_a_run_checkpoints_as_often_as_without_the_middleware(self):
        """Twelve tool calls leave as many checkpoints as an agent without the middleware, and the
        requests are still compacted."""
        model = ScriptedChatModel.long_run(12)
        with_middleware = checkpoints_of_run(
            CompactionMiddleware("shorten_tools_epoch_stable", settings=SMALL_EPOCHS), model
        )
        assert with_middleware == checkpoints_of_run(None, ScriptedChatModel.long_run(12))
        assert any(len(m.content) < 2_000 for m in model.calls[-1] if isinstance(m, ToolMessage))

    def test_no_constructor_swaps_the_class(self):
        """A middleware is the class it was built as: PromptStrategyMiddleware keeps its node
        whatever its list holds, and warns when that node has no inbox to pick up."""
        with pytest.warns(RuntimeWarning, match="CompactionMiddleware applies the same"):
            full = PromptStrategyMiddleware("shorten_tools_epoch_stable")
        lean = CompactionMiddleware("shorten_tools_epoch_stable")
        assert type(full) is PromptStrategyMiddleware and type(lean) is CompactionMiddleware
        assert self.BEFORE_MODEL in agent(ScriptedChatModel(["hi"]), full).get_graph().nodes
        assert "__new__" not in vars(PromptStrategyMiddleware)

    def test_a_compaction_middleware_refuses_a_list_with_the_inbox(self):
        """The inbox's pickup needs the before_model node, so CompactionMiddleware with it in the
        list says to use PromptStrategyMiddleware rather than deliver no notice."""
        with pytest.raises(ConfigError, match="use PromptStrategyMiddleware"):
            CompactionMiddleware("shorten_tools_epoch_stable,inbox")

    def test_without_an_inbox_the_async_agent_gives_the_same_model_inputs(self):
        """ainvoke without a before_model node still compacts through awrap_model_call, as invoke
        does."""
        # one id prefix: the two runs' prompts name the same tool-call ids, so they can be compared
        sync_model, async_model = (
            ScriptedChatModel.long_run(12, id_prefix="same"),
            ScriptedChatModel.long_run(12, id_prefix="same"),
        )
        agent(
            sync_model,
            CompactionMiddleware("shorten_tools_epoch_stable", settings=SMALL_EPOCHS),
        ).invoke(start(), CONFIG)
        middleware = CompactionMiddleware("shorten_tools_epoch_stable", settings=SMALL_EPOCHS)
        asyncio.run(agent(async_model, middleware).ainvoke(start(), CONFIG))
        assert [contents(c) for c in async_model.calls] == [contents(c) for c in sync_model.calls]
        assert any(
            len(m.content) < 2_000 for m in async_model.calls[-1] if isinstance(m, ToolMessage)
        )

    def test_the_strategies_and_settings_given_are_the_ones_applied(self):
        """The constructor resolves the spec it receives, once, with the settings it receives: a
        named strategy's factory runs once and the middleware applies that object."""
        built: list[object] = []

        class Counted(ShortenTools):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                built.append(self)

        register_strategy("counted_for_middleware", Counted)
        try:
            middleware = CompactionMiddleware("counted_for_middleware", settings=SMALL_EPOCHS)
        finally:
            unregister_strategy("counted_for_middleware")
        assert len(built) == 1 and middleware.strategies == built
        assert middleware.strategies[0].settings == SMALL_EPOCHS

    def test_with_the_default_list_the_before_model_node_is_there(self):
        """The default list holds the inbox, so the middleware keeps its before_model node."""
        assert (
            self.BEFORE_MODEL
            in agent(ScriptedChatModel(["hi"]), PromptStrategyMiddleware()).get_graph().nodes
        )


class TestInbox:
    @pytest.mark.parametrize("front_end", ["middleware", "hook"])
    def test_a_pickup_admits_notices_up_to_a_share_of_the_front_ends_own_ceiling(
        self, root, front_end
    ):
        """max_tokens=4,000 with the 0.25 share admits 1,000 tokens a pickup: three notices of about
        600 tokens reach three model calls in posting order, one each, none lost, whatever the
        environment's ceiling says."""
        from langgraph.prebuilt import create_react_agent

        model = ScriptedChatModel.long_run(3)
        texts = [f"notice {i} " + "word " * 591 for i in range(3)]
        if front_end == "middleware":
            app = agent(model, PromptStrategyMiddleware(inbox_root=root, max_tokens=4_000))
        else:
            hook = pre_model_hook(inbox_root=root, max_tokens=4_000)
            app = create_react_agent(
                model,
                [make_sized_tool("fetch", sizes=200)],
                pre_model_hook=hook,
                checkpointer=InMemorySaver(),
            )
        for i, text in enumerate(texts):
            post_to_inbox(thread_id=THREAD, root=root, content=text, name=f"n{i}")
        app.invoke(start(), CONFIG)
        received = [[c for c in contents(call) if c in texts] for call in model.calls]
        assert [r[-1] for r in received[:3] if r] == texts and all(
            len(set(r) - set(p)) <= 1 for p, r in zip([[]] + received, received, strict=False)
        )

        """An unpersisted notice is in the next model request only, and the pending key is cleared
        after it."""
        model = ScriptedChatModel.long_run(3)
        app = agent(model, PromptStrategyMiddleware(inbox_root=root, persist_inbox=False))
        post_to_inbox(thread_id=THREAD, root=root, content="look at the logs")
        out = app.invoke(start(), CONFIG)
        assert [contents(call).count("look at the logs") for call in model.calls] == [1, 0, 0, 0]
        assert "look at the logs" not in contents(out["messages"])
        assert app.get_state(CONFIG).values.get(PENDING_KEY) is None

    def test_persist_inbox_adds_the_notice_to_messages(self, root):
        """By default (persist_inbox=True) the notice is stored, so every later request holds it
        once."""
        model = ScriptedChatModel.long_run(2)
        post_to_inbox(thread_id=THREAD, root=root, content="note")
        out = agent(model, PromptStrategyMiddleware(inbox_root=root)).invoke(start(), CONFIG)
        assert contents(out["messages"]).count("note") == 1
        assert [contents(call).count("note") for call in model.calls] == [1, 1, 1]

    def test_abort_interrupts_and_resume_continues(self, root):
        """on_abort='interrupt': __interrupt__ carries the reason, and Command(resume=...) runs to
        the end."""
        model = ScriptedChatModel.long_run(2)
        app = agent(model, PromptStrategyMiddleware(inbox_root=root, persist_inbox=False))
        post_to_inbox(thread_id=THREAD, root=root, content="before", name="0-before")
        request_abort(thread_id=THREAD, root=root, reason="stop")
        out = app.invoke(start(), CONFIG)
        assert out["__interrupt__"][0].value["reason"] == "stop" and model.calls == []
        out = app.invoke(Command(resume=True), CONFIG)
        assert out["messages"][-1].content == "done" and [
            contents(c).count("before") for c in model.calls
        ] == [1, 0, 0]

    def test_async_abort_interrupts_and_resumes(self, root):
        """The async agent interrupts and resumes the same way."""
        model = ScriptedChatModel.long_run(1)
        app = agent(model, PromptStrategyMiddleware(inbox_root=root, persist_inbox=False))
        request_abort(thread_id=THREAD, root=root, reason="pause")

        async def run():
            first = await app.ainvoke(start(), CONFIG)
            return first, await app.ainvoke(Command(resume="use the cache"), CONFIG)

        first, second = asyncio.run(run())
        assert first["__interrupt__"][0].value["reason"] == "pause"
        assert second["messages"][-1].content == "done" and [
            contents(c).count("use the cache") for c in model.calls
        ] == [1, 0]

    def test_abort_end_finishes_the_run_and_records_the_reason(self, root):
        """on_abort="end" ends the run before any model call, records the abort, and keeps its
        notices for the next run."""
        model = ScriptedChatModel.long_run(2)
        app = agent(
            model, PromptStrategyMiddleware(inbox_root=root, on_abort="end", persist_inbox=False)
        )
        post_to_inbox(thread_id=THREAD, root=root, content="kept for later", name="0-note")
        request_abort(thread_id=THREAD, root=root, reason="enough")
        out = app.invoke(start(), CONFIG)
        assert "__interrupt__" not in out and model.calls == []
        assert out[ABORT_KEY]["reason"] == "enough" and out[ABORT_KEY]["notices"] == ["0-note"]
        post_to_inbox(thread_id=THREAD, root=root, content="posted since")
        out = app.invoke(start("go on"), CONFIG)
        assert out.get(ABORT_KEY) is None and contents(model.calls[0]) == [
            "sys",
            "task",
            "go on",
            "kept for later",
            "posted since",
        ]

    def test_abort_raise_raises_inbox_aborted(self, root):
        """on_abort='raise' raises InboxAborted carrying the reason, even with a checkpointer."""
        app = agent(
            ScriptedChatModel.long_run(1),
            PromptStrategyMiddleware(inbox_root=root, on_abort="raise"),
        )
        request_abort(thread_id=THREAD, root=root, reason="halt")
        with pytest.raises(InboxAborted, match="halt"):
            app.invoke(start(), CONFIG)

    def test_interrupt_without_a_checkpointer_says_the_run_cannot_resume(self, root):
        """on_abort='interrupt' with no checkpointer raises InboxAborted at once, with a note naming
        the checkpointer."""
        app = agent(
            ScriptedChatModel.long_run(1),
            PromptStrategyMiddleware(inbox_root=root),
            checkpointer=False,
        )
        request_abort(thread_id=THREAD, root=root, reason="halt")
        with pytest.raises(InboxAborted) as caught:
            app.invoke(start(), CONFIG)
        assert "checkpointer" in " ".join(caught.value.__notes__)


class TestErrors:
    def test_an_unknown_strategy_fails_when_the_middleware_is_built(self):
        """A misspelt name raises UnknownStrategyError listing the known names."""
        with pytest.raises(UnknownStrategyError, match="unknown strategy 'inbx'"):
            PromptStrategyMiddleware("shorten_tools_epoch_increment,inbx")

    def test_an_unknown_on_abort_is_a_config_error(self):
        """on_abort outside interrupt/end/raise raises ConfigError naming the choices."""
        with pytest.raises(ConfigError, match="'interrupt', 'end', 'raise'"):
            PromptStrategyMiddleware(on_abort="stop")

    def test_an_inbox_root_that_is_a_file_fails_when_the_middleware_is_built(self, tmp_path):
        """inbox_root pointing at a file raises InboxError."""
        (tmp_path / "file").write_text("x")
        with pytest.raises(InboxError, match="not a directory"):
            PromptStrategyMiddleware(inbox_root=tmp_path / "file")

    def test_the_inbox_without_the_run_config_is_a_clear_error_that_takes_nothing(self, root):
        """abefore_model handed no config where get_config() finds none (async code on Python 3.10)
        raises InboxError naming the fix, before any pickup."""
        path = post_to_inbox(thread_id=THREAD, root=root, content="kept")
        with pytest.raises(InboxError, match=r"invoke/stream, or use Python 3\.11\+"):
            asyncio.run(PromptStrategyMiddleware(inbox_root=root).abefore_model(start(), Runtime()))
        assert path.exists()

    def test_a_missing_thread_id_skips_the_inbox_with_one_warning(self, root, monkeypatch):
        """Without a checkpointer or thread_id the inbox is skipped with a single RuntimeWarning."""
        monkeypatch.setenv(INBOX_ROOT_ENV, str(root))
        path = post_to_inbox(thread_id=THREAD, content="pending")
        app = agent(ScriptedChatModel.long_run(3), PromptStrategyMiddleware(), checkpointer=False)
        with pytest.warns(RuntimeWarning, match="thread_id") as caught:
            out = app.invoke(start(), {"recursion_limit": 50})
        assert len(caught) == 1 and path.exists() and isinstance(out["messages"][-1], AIMessage)
