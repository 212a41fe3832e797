"""Nothing the strategies take away is gone: every shortened output names its handle, and read_back
answers it from the stored conversation."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import create_react_agent

from langchain_promptstrat import (
    CompactionMiddleware,
    PromptStrategyMiddleware,
    pre_model_hook,
    prepare_prompt,
    read_back,
    read_back_tool,
)
from langchain_promptstrat.messages import (
    PAGE_CHARS,
    check_tool_pairs,
    edit_ai_message,
    handle_text,
    shorten_text,
    shorten_tool_output,
)
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.strategies.sliding_window import SlidingWindow
from langchain_promptstrat.strategies.tool_results import ToolResults
from langchain_promptstrat.testing import ScriptedChatModel
from langchain_promptstrat.tokens import TokenCounter

HANDLE = re.compile(r"read_back\(call=(\d+)\)")


def _output(i: int, lines: int = 80) -> str:
    return "\n".join(
        f"{i}:{j} def function_{i}_{j}(argument): return argument * {j}" for j in range(lines)
    )


def _run(n: int, content: Any = None) -> list[BaseMessage]:
    """Return a conversation of ``n`` bash calls, each output 80 distinct lines (or ``content``)."""
    messages: list[BaseMessage] = [SystemMessage("You are an agent."), HumanMessage("Fix the bug.")]
    for i in range(n):
        messages.append(
            AIMessage(
                "",
                tool_calls=[{"id": f"c{i}", "name": "bash", "args": {"command": f"cat f{i}.py"}}],
            )
        )
        messages.append(
            ToolMessage(content if content is not None else _output(i), tool_call_id=f"c{i}")
        )
    return messages


def test_every_shortened_output_of_the_default_names_the_handle_of_its_own_call() -> None:
    """An agent can get back whatever the prompt cut: the stub says which call to read."""
    messages = _run(60)
    prompt = prepare_prompt(messages, max_tokens=16_000)
    stubs = [
        m
        for m in prompt
        if isinstance(m, ToolMessage) and m.content != _output(int(m.tool_call_id[1:]))
    ]
    assert stubs
    for stub in stubs:
        found = HANDLE.findall(str(stub.content))
        assert found == [str(int(stub.tool_call_id[1:]) + 1)]


def test_the_notice_names_the_dropped_calls_as_one_range_and_the_tool() -> None:
    """Hundreds of dropped calls are named compactly, with the way to read any of them back."""
    prompt = prepare_prompt(_run(150), max_tokens=16_000)
    notice = next(
        m for m in prompt if isinstance(m, HumanMessage) and "[Context compacted]" in str(m.content)
    )
    assert re.search(r"removed from calls \d+-\d+", str(notice.content)), notice.content
    assert "read_back(call=N)" in str(notice.content)


def test_an_output_barely_longer_than_the_stub_stays_whole() -> None:
    """The issue's case (130 -> 132 tokens): an output just over the stub's 400 characters, whose
    stub has more tokens, is sent whole, handle or not."""
    count = TokenCounter()
    barely = ToolMessage("word " * 90, tool_call_id="c0")  # 450 characters, 97 tokens
    for call, room in ((1, len(handle_text(1)) + 1), (None, 0)):
        stub = shorten_text(barely, 400 - room)
        stub = (
            stub.model_copy(update={"content": f"{stub.content}\n{handle_text(call)}"})
            if call is not None
            else stub
        )
        assert count([stub]) > count([barely])  # 103 and 98 tokens: shortening would grow it
        assert shorten_tool_output(barely, count, call=call) is barely
    long = ToolMessage(_output(0), tool_call_id="c0")
    short = shorten_tool_output(long, count, call=1)
    assert str(short.content).endswith(handle_text(1))
    assert count([short]) < count([long])


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(min_size=300, max_size=900),
    call=st.sampled_from([1, 250, "toolu_01", None]),
    size=st.integers(50, 700),
)
def test_the_form_sent_for_any_output_has_no_more_tokens_than_the_whole(
    text: str, call: int | str | None, size: int
) -> None:
    """Whatever the text (dense in tokens or not) and wherever the stub is cut, a shortened output
    never costs more than the output."""
    count = TokenCounter()
    whole = ToolMessage(text, tool_call_id="c0")
    sent = shorten_tool_output(whole, count, size, call)
    assert count([sent]) <= count([whole])
    assert sent is whole or count([sent]) < count([whole])


@settings(max_examples=40, deadline=None)
@given(value=st.text(min_size=150, max_size=600), number=st.integers(1, 999))
def test_shortened_arguments_never_cost_more_than_the_whole_call_in_any_representation(
    value: str, number: int
) -> None:
    """A call's arguments are shortened only when that leaves the message smaller, in every place
    the call is recorded."""
    count = TokenCounter()
    for message in _call_in_every_representation(value):
        sent = edit_ai_message(message, shorten=["c0"], count=count, handles={"c0": number})
        assert sent is not None
        assert count([sent]) <= count([message])
        if sent is not message:
            assert handle_text(number, arguments=True) in json.dumps(
                [sent.content, sent.tool_calls, sent.additional_kwargs]
            )


def _call_in_every_representation(value: str) -> list[AIMessage]:
    """Return one call ``c0`` with ``value`` as its argument: in ``tool_calls``, mirrored in OpenAI
    ``additional_kwargs``, as an Anthropic block."""
    args = {"command": value}
    openai = {
        "tool_calls": [
            {
                "id": "c0",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps(args)},
            }
        ]
    }
    return [
        AIMessage("", tool_calls=[{"id": "c0", "name": "bash", "args": args}]),
        AIMessage(
            "", tool_calls=[{"id": "c0", "name": "bash", "args": args}], additional_kwargs=openai
        ),
        AIMessage(
            [{"type": "tool_use", "id": "c0", "name": "bash", "input": args}],
            tool_calls=[{"id": "c0", "name": "bash", "args": args}],
        ),
    ]


def test_a_shortened_call_names_the_handle_of_its_arguments_and_it_never_changes() -> None:
    """A long command cut in the prompt says how to get it back, and its stub is the same bytes at
    every later call (the cached front holds)."""
    messages = _run(140)
    long_command = (
        "python - <<'EOF'\n"
        + "\n".join(f"print('line {j} of a long script')" for j in range(40))
        + "\nEOF"
    )
    messages[2] = AIMessage(
        "", tool_calls=[{"id": "c0", "name": "bash", "args": {"command": long_command}}]
    )
    stubs = []
    for end in range(len(messages) - 40, len(messages) + 1, 2):
        prompt = prepare_prompt(messages[:end], "shorten_tools_epoch_stable")
        assert check_tool_pairs(prompt) == []
        stubs.append(
            next(
                m
                for m in prompt
                if isinstance(m, AIMessage) and m.tool_calls and m.tool_calls[0]["id"] == "c0"
            )
        )
    command = stubs[0].tool_calls[0]["args"]["command"]
    assert command != long_command and command.endswith(handle_text(1, arguments=True))
    assert all(s.tool_calls == stubs[0].tool_calls for s in stubs)
    assert read_back(messages, 1, arguments=True) == json.dumps(
        {"command": long_command}, ensure_ascii=False
    )


@pytest.mark.parametrize(
    "strategies",
    ["dedupe_outputs,shorten_tools_epoch_stable", "shorten_tools", "shorten_tools_epoch"],
)
def test_with_read_back_handles_off_no_stub_or_notice_names_the_tool(strategies: str) -> None:
    """An agent without the read_back tool is never told to call it: stubs and notices keep their
    form without handles."""
    messages = _run(160)
    messages[2] = AIMessage(
        "", tool_calls=[{"id": "c0", "name": "bash", "args": {"command": "x" * 900}}]
    )
    on = prepare_prompt(messages, strategies, max_tokens=16_000)
    off = prepare_prompt(
        messages, strategies, max_tokens=16_000, settings=Settings(read_back_handles=False)
    )
    assert "read_back" in json.dumps([m.model_dump() for m in on], default=str)
    assert "read_back" not in json.dumps([m.model_dump() for m in off], default=str)
    assert check_tool_pairs(off) == []


def _ladder(settings: Settings | None = None) -> CompactionLadder:
    """Return a ladder of rung objects built with ``settings``, its target far under 160 calls."""
    return CompactionLadder([ToolResults(settings), SlidingWindow(settings)], max_tokens=12_000)


def test_with_read_back_handles_off_the_ladder_names_no_call_and_no_tool() -> None:
    """The ladder's placeholders and note name read_back only with handles on; off, they invite
    calling the tool again and say the messages cannot be recovered, as for an agent without it."""
    messages = _run(160)
    on = _ladder().invoke(messages)
    off = _ladder(Settings(read_back_handles=False)).invoke(messages)
    assert HANDLE.search(str(on)) and re.search(r"calls \d+-\d+", str(on))
    assert "read_back" not in json.dumps([m.model_dump() for m in off], default=str)
    assert "cannot be recovered" in str(off) and "again if you need it" in str(off)
    assert check_tool_pairs(off) == []


def test_the_middleware_without_the_tool_turns_the_ladder_s_rungs_handles_off_too() -> None:
    """A ladder of rung objects given to ``read_back=False``: its copy's rungs have handles off (the
    rungs write the placeholders and the note), it sends exactly what a ladder built with handles
    off sends, call after call, although the given ladder was used with handles on first (the copy
    remembers nothing of it); the given ladder is left as it was."""
    history = _run(160)
    given = _ladder()
    for n in range(100, len(history), 9):
        given.compact(history[:n])
    (copied,) = CompactionMiddleware([given], read_back=False).strategies
    assert isinstance(copied, CompactionLadder)
    assert not any(r.settings.read_back_handles for r in copied.rungs)
    assert all(r.settings.read_back_handles for r in given.rungs)
    fresh = _ladder(Settings(read_back_handles=False))
    for n in range(100, len(history), 5):
        sent, expected = copied.compact(history[:n]), fresh.compact(history[:n])
        assert sent.messages == expected.messages, n
        assert sent.report.as_dict() == expected.report.as_dict(), n
    prompt = copied.invoke(history)
    assert "read_back" not in json.dumps([m.model_dump() for m in prompt], default=str)
    assert "read_back" in json.dumps([m.model_dump() for m in given.invoke(history)], default=str)


def test_the_middleware_without_the_tool_turns_handles_off_for_the_strategies_it_applies() -> None:
    """``read_back=False`` adds no tool, so no prompt it sends may name one; a strategy object
    passed in is left as it was."""
    given = ShortenToolsEpochStable(max_tokens=16_000)
    middleware = CompactionMiddleware(["dedupe_outputs", given], read_back=False)
    assert middleware.tools == []
    assert all(not s.settings.read_back_handles for s in middleware.strategies)
    assert given.settings.read_back_handles
    prompt = prepare_prompt(_run(160), middleware.strategies)
    assert "read_back" not in json.dumps([m.model_dump() for m in prompt], default=str)
    assert "read_back" in json.dumps(
        [m.model_dump() for m in prepare_prompt(_run(160), ["dedupe_outputs", given])], default=str
    )


def test_a_copy_with_handles_off_remembers_nothing_computed_with_them_on() -> None:
    """A strategy object already used with handles on, given to ``read_back=False``: its copy sends
    exactly what a new object with handles off sends, prompt and report, call after call (the copy
    does not share the object's memos)."""
    history = _run(200)
    given = ShortenToolsEpochStable(max_tokens=12_000)
    for n in range(130, len(history), 7):
        given.compact(history[:n])
    (copied,) = CompactionMiddleware([given], read_back=False).strategies
    fresh = ShortenToolsEpochStable(max_tokens=12_000, settings=Settings(read_back_handles=False))
    for n in range(130, len(history), 5):
        sent, expected = copied.compact(history[:n]), fresh.compact(history[:n])
        assert (sent.messages, sent.report.as_dict()) == (
            expected.messages,
            expected.report.as_dict(),
        ), n


@pytest.mark.parametrize(
    "content",
    [
        "plain text\nwith lines",
        [{"type": "text", "text": "a block"}, {"type": "image", "url": "http://x/y.png"}],
    ],
    ids=["string", "blocks"],
)
def test_read_back_returns_the_stored_content_exactly(content: Any) -> None:
    """A read-back is the output as stored, not a copy that drifted: string or content blocks."""
    messages = _run(3, content)
    assert read_back(messages, 2) == content
    assert read_back(messages, "c1") == content


def test_read_back_reads_an_anthropic_tool_result_block() -> None:
    """A raw Anthropic transcript stores an output as a tool_result block in a user message."""
    messages: list[BaseMessage] = [
        HumanMessage("task"),
        AIMessage([{"type": "tool_use", "id": "tu1", "name": "bash", "input": {"command": "ls"}}]),
        HumanMessage([{"type": "tool_result", "tool_use_id": "tu1", "content": "a.py\nb.py"}]),
    ]
    assert read_back(messages, 1) == "a.py\nb.py"


@settings(max_examples=30, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="abc xyz", max_size=300), min_size=1, max_size=200),
    page_chars=st.integers(200, 3000),
)
def test_pages_hold_their_size_and_together_give_every_line_back(
    lines: list[str], page_chars: int
) -> None:
    """Paging through an output by the offsets it names gives back every line, each page within its
    bound."""
    text = "\n".join(lines)
    messages = _run(1, text)
    got: list[str] = []
    offset = 0
    while True:
        page = read_back(messages, 1, offset=offset, limit=50, page_chars=page_chars)
        assert isinstance(page, str)
        if page == text and offset == 0:
            return
        body, footer = page.rsplit("\n", 1)
        assert len(body) <= page_chars
        got.extend(body.split("\n"))
        more = re.search(r"offset=(\d+)\)\]$", footer)
        if more is None:
            break
        offset = int(more.group(1))
    assert [line[:page_chars] for line in lines] == got


def test_a_pattern_searches_every_output_with_call_and_line_numbers() -> None:
    """A grep over everything earlier finds where a name was defined, wherever that output went."""
    answer = read_back(_run(20), pattern=r"function_7_3\b")
    assert answer.startswith("call 8 line 4: 7:3 def function_7_3")  # type: ignore[union-attr]


@pytest.mark.parametrize("call", [0, 999, "nope"])
def test_a_handle_the_conversation_does_not_hold_answers_a_sentence(call: int | str) -> None:
    """A stale or invented handle must not crash the agent's tool call."""
    answer = read_back(_run(3), call)
    assert isinstance(answer, str) and "is not in this conversation" in answer


def test_a_calls_shortened_arguments_are_read_back_whole() -> None:
    """A long command or file body cut in an old call is as recoverable as its output."""
    messages = _run(60)
    messages[2] = AIMessage(
        "",
        tool_calls=[
            {"id": "c0", "name": "bash", "args": {"command": "cat <<EOF\n" + _output(0) + "\nEOF"}}
        ],
    )
    prompt = prepare_prompt(messages, max_tokens=16_000)
    sent = next(
        m
        for m in prompt
        if isinstance(m, AIMessage) and m.tool_calls and m.tool_calls[0]["id"] == "c0"
    )
    assert sent.tool_calls[0]["args"] != messages[2].tool_calls[0]["args"]  # type: ignore[attr-defined]
    assert (
        json.loads(str(read_back(messages, 1, arguments=True, page_chars=100_000)))
        == messages[2].tool_calls[0]["args"]
    )  # type: ignore[attr-defined]


def test_a_bad_pattern_answers_a_sentence() -> None:
    """The model writes regular expressions; a broken one is its mistake to fix, not an
    exception."""
    assert "not a regular expression" in str(read_back(_run(3), pattern="("))


def test_a_read_back_page_is_whole_in_its_step_fits_the_ceiling_and_keeps_pairs() -> None:
    """An answer cut or pointed back again would send the agent to read it again, forever; a whole
    page still fits a 16k prompt."""
    messages = _run(60)
    messages[9] = ToolMessage(_output(3, lines=600), tool_call_id="c3")
    whole = read_back(messages, 4)  # a full page: 12,000 characters
    messages.append(
        AIMessage("", tool_calls=[{"id": "rb", "name": "read_back", "args": {"call": 4}}])
    )
    messages.append(ToolMessage(whole, tool_call_id="rb", name="read_back"))
    prompt = prepare_prompt(messages, max_tokens=16_000)
    check_tool_pairs(prompt)
    assert prompt[-1].content == whole and len(str(whole)) > 11_000
    assert TokenCounter()(prompt) <= 16_000  # the page fits the smallest ceiling measured
    messages += [
        AIMessage("", tool_calls=[{"id": "z", "name": "bash", "args": {"command": "ls"}}]),
        ToolMessage("ok", tool_call_id="z"),
    ]
    later = prepare_prompt(messages, max_tokens=16_000)
    assert (
        next(m for m in later if getattr(m, "tool_call_id", None) == "rb").content != whole
    )  # later it ages


@pytest.mark.parametrize("front_end", ["middleware", "hook"])
def test_an_agent_reads_a_handle_out_of_its_prompt_and_gets_the_original_text(
    tmp_path: Any, front_end: str
) -> None:
    """End to end with a file-backed SQLite checkpointer (create_agent's middleware, or the hook
    with read_back_tool): the tool reads the state."""
    seen: dict[str, str] = {}

    def read_the_first_handle(prompt: list[BaseMessage]) -> dict[str, Any]:
        number = next(
            HANDLE.search(str(m.content)).group(1)
            for m in prompt
            if isinstance(m, ToolMessage) and HANDLE.search(str(m.content))
        )  # type: ignore[union-attr]
        seen["number"] = number
        return {"tool_calls": [{"name": "read_back", "args": {"call": int(number)}, "id": "rb1"}]}

    @tool
    def bash(command: str) -> str:
        """Run a shell command."""
        return _output(int(command.split()[1][1:-3]))

    script: list[Any] = [
        {"tool_calls": [{"name": "bash", "args": {"command": f"cat f{i}.py"}}]} for i in range(40)
    ]
    model = ScriptedChatModel([*script, read_the_first_handle, "done"])
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        if front_end == "middleware":
            agent = create_agent(
                model,
                [bash],
                middleware=[PromptStrategyMiddleware(max_tokens=16_000)],
                checkpointer=saver,
            )
        else:
            with (
                warnings.catch_warnings()
            ):  # create_react_agent is deprecated for create_agent, still widely used
                warnings.simplefilter("ignore", DeprecationWarning)
                tools = [bash, read_back_tool()]
                agent = create_react_agent(
                    model,
                    tools,
                    pre_model_hook=pre_model_hook(max_tokens=16_000, tools=tools),
                    checkpointer=saver,
                )
        state = agent.invoke(
            {"messages": [HumanMessage("Fix the bug.")]},
            {"configurable": {"thread_id": "t"}, "recursion_limit": 200},
        )
    answer = next(
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "rb1"
    )
    assert answer.content == _output(int(seen["number"]) - 1)
    assert model.calls[-1][-1].content == answer.content  # the model saw it whole
    assert any(t["function"]["name"] == "read_back" for t in model.call_kwargs[0]["tools"])


@pytest.mark.parametrize(
    "max_tokens, page", [(8_000, 6_400), (40_000, PAGE_CHARS), (None, PAGE_CHARS)]
)
def test_the_middlewares_read_back_pages_hold_a_fifth_of_its_ceiling(
    max_tokens: int | None, page: int
) -> None:
    """The middleware's tool answers at most a fifth of a ceiling given in tokens (4 characters a
    token), so a page kept whole in the newest step leaves the rest of the prompt room; without one,
    12,000 characters."""
    (tool,) = PromptStrategyMiddleware(max_tokens=max_tokens).tools
    history = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[{"name": "fetch", "args": {}, "id": "c1"}]),
        ToolMessage("x" * 90 + "\n" * 1 + ("y" * 99 + "\n") * 300, tool_call_id="c1", name="fetch"),
    ]
    answer = str(tool.func(messages=history, call=1))  # type: ignore[union-attr]
    lines, trailer = answer.rsplit("\n[call 1", 1)  # the page's lines, then where to read on
    assert page - 200 < len(lines) <= page and "offset=" in trailer
