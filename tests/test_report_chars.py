"""Specification of the report's character counts: remembered work never changes a figure."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat.messages import message_chars
from langchain_promptstrat.report import make_report
from langchain_promptstrat.testing import iter_agent_run


def plain(messages) -> int:
    return sum(message_chars(m) for m in messages)


def test_a_growing_conversation_reports_what_a_fresh_count_gives():
    """Each prompt of a run, measured after the previous ones (so its prefix is remembered), has the
    plain sum of its characters."""
    for prompt in iter_agent_run(40, seed=3):
        report = make_report("x", prompt, prompt[1:])
        assert (report.chars_before, report.chars_after) == (plain(prompt), plain(prompt[1:]))


def test_a_replaced_field_of_a_remembered_message_is_measured_again():
    """Replacing an old message's content or tool calls changes the figure, though the list extends
    one measured before."""
    tool = ToolMessage("x" * 50, tool_call_id="c1")
    ai = AIMessage("", tool_calls=[{"id": "c1", "name": "read", "args": {"path": "a.py"}}])
    messages = [SystemMessage("s"), HumanMessage("task"), ai, tool]
    make_report("x", messages, messages[:2])
    tool.content = "y" * 500
    ai.tool_calls = [
        {"id": "c1", "name": "read", "args": {"path": "a_much_longer_path.py"}, "type": "tool_call"}
    ]
    longer = [*messages, HumanMessage("next")]
    report = make_report("x", longer, longer[:2])
    assert report.chars_before == plain(longer) and report.chars_before > plain(messages[:2]) + 500


def test_a_conversation_loaded_again_reports_the_same_figures():
    """A history deserialized again (new, equal objects, as a checkpoint gives it back) reports
    exactly what the original did."""
    from langchain_core.messages import messages_from_dict, messages_to_dict

    prompt = list(iter_agent_run(60, seed=5))[-1]
    first = make_report("x", prompt, prompt[2:])
    again = messages_from_dict(messages_to_dict(prompt))
    second = make_report("x", again, again[2:])
    assert (
        (second.chars_before, second.chars_after)
        == (first.chars_before, first.chars_after)
        == (plain(prompt), plain(prompt[2:]))
    )


def test_an_equal_looking_message_with_other_content_under_the_same_id_is_measured_anew():
    """A message replaced by id (LangGraph's add_messages does that) with longer content is counted
    by what it holds now."""
    old = [HumanMessage("task", id="h1"), AIMessage("short", id="a1")]
    make_report("x", old, old)
    new = [HumanMessage("task", id="h1"), AIMessage("a much longer answer than before", id="a1")]
    assert make_report("x", new, new).chars_before == plain(new) > plain(old)
