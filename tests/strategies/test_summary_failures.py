"""Summary failures are visible (a warning and the report, or raised), and a model string is built
lazily."""

from __future__ import annotations

import warnings

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat import ConfigError
from langchain_promptstrat.strategies.summary import Summary, SummaryFailedWarning, summary_message
from langchain_promptstrat.testing import ScriptedChatModel
from langchain_promptstrat.tokens import TokenCounter

COUNT = TokenCounter("cl100k_base")


def history() -> list:
    """The run's task, an earlier turn with two tool steps, then the current turn with one: a
    summary replaces the earlier turn."""
    msgs: list = [
        SystemMessage("You are an agent."),
        HumanMessage("the run's task"),
        HumanMessage("question 1"),
    ]
    for c in range(2):
        msgs += [
            AIMessage(
                "", tool_calls=[{"id": f"call_{c}", "name": "search", "args": {"q": f"q{c}"}}]
            ),
            ToolMessage(
                " ".join(f"r{c}x{i}" for i in range(50)), tool_call_id=f"call_{c}", name="search"
            ),
        ]
    msgs += [AIMessage("answer 1"), HumanMessage("current task")]
    msgs += [
        AIMessage("", tool_calls=[{"id": "call_9", "name": "search", "args": {"q": "q9"}}]),
        ToolMessage("r9", tool_call_id="call_9", name="search"),
    ]
    return msgs


def test_a_failing_model_warns_and_reports():
    """A model that raises (a bad key) gives a SummaryFailedWarning naming the error, and the
    report's reason."""
    with pytest.warns(SummaryFailedWarning, match="AuthenticationError: invalid x-api-key"):
        result = Summary(
            ScriptedChatModel([PermissionError("AuthenticationError: invalid x-api-key")]),
            max_tokens=0,
            token_counter=COUNT,
        ).compact(history())
    assert result.report.details["asked"][0]["reason"].startswith("model failed: PermissionError")


def test_on_error_raise_raises_the_model_s_exception():
    """on_error="raise" lets the model's own exception through, so the caller can stop on a bad
    key."""
    summary = Summary(
        ScriptedChatModel([PermissionError("invalid x-api-key")]),
        max_tokens=0,
        token_counter=COUNT,
        on_error="raise",
    )
    with pytest.raises(PermissionError, match="invalid x-api-key"):
        summary.compact(history())


def test_on_error_takes_warn_or_raise_only():
    """Any other on_error is a ConfigError at construction."""
    with pytest.raises(ConfigError, match="on_error"):
        Summary(ScriptedChatModel([]), on_error="ignore")


def test_a_model_string_is_built_by_init_chat_model_at_the_first_summary(monkeypatch):
    """Summary("provider:model") builds nothing at construction; the first summary calls
    init_chat_model once."""
    import langchain.chat_models

    built: list[str] = []
    model = ScriptedChatModel(["the earlier turn searched q0 and q1"])

    def init_chat_model(spec: str) -> ScriptedChatModel:
        built.append(spec)
        return model

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", init_chat_model)
    summary = Summary("anthropic:claude-sonnet-4-5", max_tokens=0, token_counter=COUNT)
    assert (
        built == [] and repr(summary) == "Summary(init_chat_model('anthropic:claude-sonnet-4-5'))"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = summary.compact(history())
    assert built == ["anthropic:claude-sonnet-4-5"] and len(model.calls) == 1
    assert "the earlier turn searched q0 and q1" in str(
        result.messages[2].content
    )  # after the system block and the run's task


def test_a_summary_exactly_as_large_as_its_stretch_is_refused():
    """A summary costing as many tokens as the stretch saves nothing: it is refused, not only a
    larger one."""
    chars = lambda msgs: sum(len(str(m.content)) for m in msgs)  # noqa: E731
    msgs = history()
    stretch = msgs[
        2:8
    ]  # the earlier turn: the question, two steps, the answer (the run's task before it stays)

    def summary(text: str) -> HumanMessage:  # it names the turn's calls, 1-2
        return summary_message(text, messages=len(stretch), tier="turns", calls=[1, 2])

    answer = "s" * (chars(stretch) - chars([summary("")]))
    assert chars([summary(answer)]) == chars(stretch)
    result = Summary(ScriptedChatModel([answer]), max_tokens=0, token_counter=chars).compact(msgs)
    assert result.messages == msgs
    assert (
        result.report.details["asked"][0]["reason"]
        == f"summary no smaller ({chars(stretch)} >= {chars(stretch)} tokens)"
    )


def test_the_failure_warning_is_importable_from_the_package():
    """`warnings.filterwarnings("error", category=langchain_promptstrat.SummaryFailedWarning)` works
    without a deep import."""
    import langchain_promptstrat
    from langchain_promptstrat.strategies.summary import SummaryFailedWarning

    assert langchain_promptstrat.SummaryFailedWarning is SummaryFailedWarning
    assert "SummaryFailedWarning" in langchain_promptstrat.__all__
