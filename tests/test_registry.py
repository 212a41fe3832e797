"""Specification of the registry and the prepare_prompt dispatcher."""

from __future__ import annotations

import warnings
from importlib.metadata import EntryPoint

import pytest
from conversations import ai_step
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat import (
    DEFAULT_STRATEGIES,
    NoStrategy,
    PromptStrategy,
    ShortenTools,
    UnknownStrategyError,
    available_strategies,
    get_strategy,
    prepare_prompt,
    register_strategy,
    registry,
    unregister_strategy,
)
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.registry import BUILTIN_STRATEGIES
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.strategy import PromptRequest
from langchain_promptstrat.testing import build_agent_run, iter_agent_run


class RecordingSaveFile(PromptStrategy):
    """A strategy written against ``compact(messages, *, save_file=None)``, as a third party's is,
    that records the save file it received."""

    strategy_name = "recording_save_file"
    seen: list = []

    def compact(self, messages, *, save_file=None):
        RecordingSaveFile.seen.append(save_file)
        return Compacted(list(messages), make_report(self.strategy_name, messages, messages))


@pytest.fixture
def conversation():
    """A short conversation with one tool call."""
    return [
        SystemMessage("sys"),
        HumanMessage("task"),
        ai_step([("f", {"q": "x"})], 0, mirror="plain"),
        ToolMessage("out", tool_call_id="call_0"),
    ]


@pytest.fixture
def registered():
    """Registers names for one test and removes them afterwards."""
    names: list[str] = []

    def add(name, factory):
        register_strategy(name, factory)
        names.append(name)

    yield add
    for name in names:
        try:
            unregister_strategy(name)
        except UnknownStrategyError:
            pass


def add_marker(messages):
    return messages + [HumanMessage("marked")]


class TestInputForms:
    def test_callable_is_called_with_the_messages(self, conversation):
        """A callable as the strategy spec is the whole hook."""
        assert prepare_prompt(conversation, add_marker)[-1].content == "marked"

    def test_comma_separated_string_applies_each_in_sequence(self, conversation, registered):
        """'a,b' applies a then b, each receiving the previous output."""
        registered("mark", add_marker)
        out = prepare_prompt(conversation, "mark, mark")
        assert [m.content for m in out[-2:]] == ["marked", "marked"]

    def test_list_mixes_names_instances_and_callables(self, conversation, registered):
        """A list may hold names, PromptStrategy instances and callables."""
        registered("mark", add_marker)
        out = prepare_prompt(conversation, ["mark", NoStrategy(), add_marker])
        assert len(out) == len(conversation) + 2

    def test_none_name_is_a_no_op(self, conversation):
        """'none' returns the messages unchanged."""
        assert prepare_prompt(conversation, "none") == conversation

    def test_none_spec_reads_prompt_strategy_from_the_environment(
        self, conversation, registered, monkeypatch
    ):
        """Without a spec, PROMPT_STRATEGY names the list."""
        registered("mark", add_marker)
        monkeypatch.setenv("PROMPT_STRATEGY", "mark")
        assert prepare_prompt(conversation)[-1].content == "marked"

    def test_none_spec_without_environment_uses_the_default_list(self, conversation, monkeypatch):
        """Without a spec or PROMPT_STRATEGY, DEFAULT_STRATEGIES applies: a no-op for a short
        conversation, repeats pointed back then the stable epochs' compaction for a long one."""
        monkeypatch.delenv("PROMPT_STRATEGY", raising=False)
        assert DEFAULT_STRATEGIES == ("dedupe_outputs", "shorten_tools_epoch_stable", "inbox")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert prepare_prompt(conversation) == conversation
            long_run = build_agent_run(
                200, user_turn_every=None
            )  # past the stable threshold of 120 calls
            # the list named in full, applied at once (chained as Runnables each applies the path
            # itself)
            compacted = prepare_prompt(long_run, ["dedupe_outputs", "shorten_tools_epoch_stable"])
            assert compacted != long_run and prepare_prompt(long_run) == compacted

    def test_input_is_never_mutated_by_the_dispatcher(self, conversation, registered):
        """prepare_prompt returns a new list and leaves the caller's list alone, even when a
        callable edits the list it gets."""
        before = list(conversation)
        out = prepare_prompt(conversation, add_marker)
        assert conversation == before and out is not conversation
        assert prepare_prompt(conversation, "none") is not conversation
        appended = prepare_prompt(
            conversation, lambda messages: messages.append(HumanMessage("in place")) or messages
        )
        assert conversation == before and appended[-1].content == "in place"


class TestSaveFile:
    def test_a_strategy_written_against_compact_still_runs_and_gets_the_save_file(
        self, conversation
    ):
        """A subclass implementing today's documented ``compact(messages, *, save_file=None)``
        instead of ``apply`` runs in a list, given the request's save file (an adapter in the
        base class): third-party strategies keep working."""
        RecordingSaveFile.seen = []
        prepare_prompt(conversation, [RecordingSaveFile()], save_file="x/agent.chat")
        prepare_prompt(conversation, [RecordingSaveFile()])
        assert RecordingSaveFile.seen == ["x/agent.chat", None]

    def test_a_strategy_implementing_neither_apply_nor_compact_is_refused_when_defined(self):
        """A subclass must implement apply (or compact): the base's two methods serve each other,
        so a class with neither would recurse; it is refused where it is written."""
        with pytest.raises(TypeError, match="Empty must implement apply"):

            class Empty(PromptStrategy):
                strategy_name = "empty"

    def test_the_default_s_compact_for_request_still_works_and_warns(self):
        """ShortenToolsEpochStable.compact_for_request(messages, **fields), the request method found
        by getattr before the typed request, gives apply's result for a PromptRequest of those
        fields, with a DeprecationWarning (one release)."""
        history = build_agent_run(160)
        strategy = get_strategy("shorten_tools_epoch_stable", max_tokens=12_000)
        system = [SystemMessage("Be brief.")]
        with pytest.warns(DeprecationWarning, match="compact_for_request"):
            old = strategy.compact_for_request(history, system=system, max_tokens=9_000)
        new = strategy.apply(history, PromptRequest(system=system, max_tokens=9_000))
        assert old.messages == new.messages and old.report.as_dict() == new.report.as_dict()
        assert new.report.details["ceiling"] == 9_000

    def test_registered_callable_receives_the_messages_only(self, conversation, registered):
        """A registered plain callable is called with one argument, never the save file."""
        calls = []
        registered("spy", lambda messages: calls.append(len(messages)) or messages)
        prepare_prompt(conversation, "spy", save_file="x/agent.chat")
        assert calls == [len(conversation)]


class TestRegistry:
    def test_builtins_are_available(self):
        """Every built-in of the strategies page's table (docs/strategies.md) is importable and
        listed."""
        assert set(BUILTIN_STRATEGIES) == {
            "none",
            "dedupe_outputs",
            "shorten_tools",
            "shorten_tools_epoch",
            "shorten_tools_epoch_increment",
            "shorten_tools_epoch_stable",
            "inbox",
            "tool_results",
            "sliding_window",
            "summary",
        }
        assert set(BUILTIN_STRATEGIES) <= set(available_strategies())

    def test_register_get_and_unregister(self, registered):
        """A registered name resolves until it is unregistered."""
        register_strategy("temp", ShortenTools)
        assert "temp" in available_strategies()
        assert isinstance(get_strategy("temp", max_tool_calls=3), ShortenTools)
        unregister_strategy("temp")
        assert "temp" not in available_strategies()

    @pytest.mark.parametrize("name", ["a b", " temp", "temp\t", "a,b", ""])
    def test_a_name_with_a_space_or_a_comma_is_refused_as_its_message_says(self, registered, name):
        """A name a comma-separated list could not spell back (a comma, or whitespace anywhere in
        it) is a ConfigError, never registered."""
        with pytest.raises(ConfigError, match="without commas or spaces"):
            register_strategy(name, ShortenTools)
        assert name not in available_strategies()

    def test_get_strategy_passes_settings_to_classes(self):
        """get_strategy(name, **settings) builds the class with those settings."""
        assert get_strategy("shorten_tools", full_tool_outputs=4).settings.full_tool_outputs == 4

    def test_unknown_name_lists_the_known_names(self):
        """A misspelt name raises UnknownStrategyError naming it and every known name."""
        with pytest.raises(UnknownStrategyError) as err:
            get_strategy("shorten_tool")
        assert str(err.value).startswith("unknown strategy 'shorten_tool'; known: ")
        assert "shorten_tools" in str(err.value) and isinstance(err.value, LookupError)

    def test_unknown_name_a_caller_asked_for_fails_loudly(self, conversation):
        """prepare_prompt raises for an unknown name in an explicit list."""
        with pytest.raises(UnknownStrategyError):
            prepare_prompt(conversation, "none,not_a_strategy")

    def test_missing_default_entry_is_skipped_with_a_warning(self, conversation, monkeypatch):
        """An entry of the default list that is not installed never breaks
        prepare_prompt(messages)."""
        monkeypatch.delenv("PROMPT_STRATEGY", raising=False)
        monkeypatch.setattr(registry, "DEFAULT_STRATEGIES", ("not_built_yet", "none"))
        registry._warned_missing_defaults.discard("not_built_yet")
        with pytest.warns(RuntimeWarning, match="not_built_yet"):
            assert prepare_prompt(conversation) == conversation

    def test_entry_point_strategies_are_discovered(self, conversation, monkeypatch):
        """A third-party strategy in the entry-point group resolves by name."""
        ep = EntryPoint(
            name="append_note",
            value="plugin_strategies:append_note",
            group=registry.ENTRY_POINT_GROUP,
        )
        monkeypatch.setattr(
            registry,
            "entry_points",
            lambda group: [ep] if group == registry.ENTRY_POINT_GROUP else [],
        )
        assert "append_note" in available_strategies()
        assert prepare_prompt(conversation, "append_note") == [
            *conversation,
            HumanMessage("a note from the plugin"),
        ]

    def test_registration_shadows_a_builtin(self, conversation, registered):
        """A registered name wins over the built-in of the same name."""
        registered("shorten_tools", add_marker)
        assert prepare_prompt(conversation, "shorten_tools")[-1].content == "marked"


NAMES = st.lists(st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True), min_size=1, max_size=6)
SPACES = st.sampled_from(["", " ", "  ", "\t"])


class TestStrategyLists:
    @given(names=NAMES, spaces=st.lists(SPACES, min_size=14, max_size=14))
    def test_a_comma_list_gives_its_names_in_order_whatever_the_spaces(self, names, spaces):
        """'a, b' and 'a,b' name the same strategies: spaces around a name are never part of it."""
        text = ",".join(f"{spaces[2 * k]}{name}{spaces[2 * k + 1]}" for k, name in enumerate(names))
        assert registry.split_strategy_names(text) == names

    @given(names=NAMES, data=st.data())
    def test_an_empty_name_anywhere_in_a_list_is_refused(self, names, data):
        """'shorten_tools,,inbox' (or a comma at either end) would silently leave a strategy out: it
        is a ConfigError."""
        at = data.draw(st.integers(0, len(names)), label="where the empty name goes")
        blank = data.draw(SPACES, label="the empty name")
        text = ",".join([*names[:at], blank, *names[at:]])
        with pytest.raises(ConfigError, match="has an empty name"):
            registry.split_strategy_names(text)

    @pytest.mark.parametrize(
        ("spec", "where"),
        [
            ("shorten_tools,,inbox", "between 'shorten_tools' and 'inbox'"),
            ("shorten_tools,", "after 'shorten_tools'"),
            (",inbox", "before 'inbox'"),
            ("none, ,none", "between 'none' and 'none'"),
        ],
    )
    def test_prepare_prompt_names_where_the_empty_name_is(self, conversation, spec, where):
        """The error quotes the list and says where the empty name stands, so the slip is found at a
        glance."""
        with pytest.raises(ConfigError) as err:
            prepare_prompt(conversation, spec)
        assert (
            str(err.value)
            == f"the strategy list {spec!r} has an empty name {where}; separate the names with "
            "single commas"
        )

    def test_an_empty_entry_of_a_list_is_refused(self, conversation):
        """["none", ""] is refused like "none,": an empty entry is never a strategy."""
        with pytest.raises(ConfigError, match="strategy 1 of the list is empty"):
            prepare_prompt(conversation, ["none", ""])

    def test_an_empty_name_in_prompt_strategy_is_refused_under_its_name(
        self, conversation, monkeypatch
    ):
        """PROMPT_STRATEGY goes through the same parser: the error names the variable the user
        set."""
        monkeypatch.setenv("PROMPT_STRATEGY", "shorten_tools,,inbox")
        with pytest.raises(
            ConfigError, match=r"^PROMPT_STRATEGY 'shorten_tools,,inbox' has an empty name between"
        ):
            prepare_prompt(conversation)

    def test_a_ladder_refuses_an_empty_rung_name(self):
        """CompactionLadder("tool_results,,sliding_window") is refused, not built with the rungs it
        could read."""
        with pytest.raises(
            ConfigError,
            match="the ladder's rung list 'tool_results,,sliding_window' has an empty name",
        ):
            CompactionLadder("tool_results,,sliding_window", max_tokens=1_000)


class TestOneApplyPath:
    """prepare_prompt, the CLI and the graph front ends share one apply path, so they agree on what
    the model gets."""

    def test_prepare_prompt_keeps_the_prompt_floor_as_the_hook_does(self):
        """A strategy answering [] leaves prepare_prompt with the system message and the task,
        exactly what the hook sends."""
        from langchain_promptstrat.adapters.langgraph import pre_model_hook

        history = [SystemMessage("sys"), HumanMessage("task")]
        hook = pre_model_hook(lambda messages: [])({"messages": history}, {})
        assert prepare_prompt(history, lambda messages: []) == hook["llm_input_messages"] == history

    def test_prepare_prompt_restores_a_tool_output_a_strategy_orphaned(self):
        """A strategy that drops a call but keeps its output gets the pair back: no provider rejects
        prepare_prompt's result."""
        from langchain_promptstrat import check_tool_pairs

        call = AIMessage(
            "",
            tool_calls=[
                {"id": "c1", "name": "read", "args": {"path": "a.py"}, "type": "tool_call"}
            ],
        )
        history = [
            SystemMessage("sys"),
            HumanMessage("task"),
            call,
            ToolMessage("out", tool_call_id="c1"),
            HumanMessage("next"),
        ]

        def drop_calls(messages):
            return [m for m in messages if not getattr(m, "tool_calls", None)]

        assert check_tool_pairs(drop_calls(history)) != []
        assert check_tool_pairs(prepare_prompt(history, drop_calls)) == []


class TestStrategiesOfALoop:
    """prepare_prompt before every model call resumes from its previous call: the strategy objects a
    list of names resolves to are kept while the names, the settings and the registrations stay the
    same."""

    @pytest.fixture
    def built(self, registered):
        """The strategy objects built under the name ``counted``, in order."""
        made: list[PromptStrategy] = []

        class Counted(ShortenTools):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                made.append(self)

        registered("counted", Counted)
        return made

    def test_the_same_names_reuse_the_objects_built_for_them(self, conversation, built):
        """A loop of prepare_prompt builds the named strategy once, so its memo of the last call is
        there to resume from."""
        for _ in range(3):
            prepare_prompt(conversation, "counted")
        prepare_prompt(conversation, ["counted"])
        assert len(built) == 1

    def test_a_changed_environment_builds_them_again_with_its_settings(
        self, conversation, built, monkeypatch
    ):
        """Settings are read at every call: a variable set between two calls reaches the next
        one."""
        prepare_prompt(conversation, "counted")
        monkeypatch.setenv("PROMPTSTRAT_FULL_TOOL_OUTPUTS", "3")
        prepare_prompt(conversation, "counted")
        assert (
            len(built) == 2
            and built[1].settings.full_tool_outputs == 3 != built[0].settings.full_tool_outputs
        )

    def test_registering_a_name_again_takes_effect_at_the_next_call(
        self, conversation, built, registered
    ):
        """A name registered anew resolves to its new factory, never to an object kept from
        before."""
        prepare_prompt(conversation, "counted")
        registered("counted", add_marker)
        assert prepare_prompt(conversation, "counted")[-1].content == "marked" and len(built) == 1

    def test_reused_objects_send_what_fresh_ones_send(self):
        """Reusing the default list's objects along a growing run changes no prompt: each call
        equals a fresh list's."""
        prompts = list(iter_agent_run(150, seed=3))
        for prompt in prompts[::7]:
            reused = prepare_prompt(prompt, max_tokens=20_000)
            fresh = prepare_prompt(
                prompt, [get_strategy(n) for n in DEFAULT_STRATEGIES], max_tokens=20_000
            )
            assert reused == fresh
