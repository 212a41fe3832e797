"""Specification of the strategies' options: one declaration, one name, typed keywords, docstrings,
unknown options, precedence, both environment spellings, and the old spellings for one release.

The strategies are found by walking the package, so a strategy added later is held to the
same rules without editing this file (a new one that needs constructor arguments fails
``test_every_strategy_builds_from_its_required_arguments`` until it is added to ``REQUIRED``).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import keyword
import os
import pkgutil
import re
import subprocess
import sys
import typing
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

import langchain_promptstrat
from langchain_promptstrat import (
    ConfigError,
    DedupeOutputs,
    Settings,
    ShortenTools,
    ShortenToolsEpoch,
    ShortenToolsEpochStable,
    docs_tables,
    get_strategy,
)
from langchain_promptstrat.options import OPTIONS_CLASSES, RungOptions
from langchain_promptstrat.registry import (
    BUILTIN_STRATEGIES,
    CallableStrategy,
    register_strategy,
    unregister_strategy,
)
from langchain_promptstrat.settings import (
    ENV_PREFIX,
    RENAMED_KEYS,
    describe_setting,
    environment_variables,
    options_of,
    renamed_option,
    setting_keys,
    strategy_options,
)
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.strategies.summary import Summary
from langchain_promptstrat.strategy import argument
from langchain_promptstrat.testing import ScriptedChatModel

ROOT = Path(__file__).resolve().parent.parent
PromptStrategy = langchain_promptstrat.PromptStrategy


def _public_strategies() -> list[type]:
    """Every concrete, public ``PromptStrategy`` subclass defined in the package."""
    for module in pkgutil.walk_packages(langchain_promptstrat.__path__, "langchain_promptstrat."):
        if not module.name.endswith(".__main__"):  # running a __main__ would start the program
            importlib.import_module(module.name)
    found: list[type] = []
    pending = list(PromptStrategy.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if (
            cls.__module__.startswith("langchain_promptstrat.")
            and not cls.__name__.startswith("_")
            and not inspect.isabstract(cls)
            and cls not in found
        ):
            found.append(cls)
    return sorted(found, key=lambda c: c.__name__)


STRATEGIES = _public_strategies()

REQUIRED: dict[type, tuple[tuple[Any, ...], dict[str, Any]]] = {
    Summary: ((ScriptedChatModel(["a summary"]),), {}),
    CompactionLadder: ((["sliding_window"],), {"max_tokens": 10}),
    CallableStrategy: ((list,), {}),
}
"""The arguments a strategy cannot be built without; every other strategy builds from nothing."""

EXTRA_READS: dict[type, set[str]] = {
    CompactionLadder: {"ladder_low_ratio"},  # low_tokens' default share of max_tokens
}
"""Settings a strategy reads without a keyword of that name; they are accepted as keywords too."""


def build(cls: type, **options: Any) -> Any:
    args, required = REQUIRED.get(cls, ((), {}))
    return cls(*args, **{**required, **options})


def accepted_keys(cls: type) -> set[str]:
    return set(options_of(cls)) | EXTRA_READS.get(cls, set())


def old_names(cls: type) -> dict[str, str]:
    """Return each old short spelling of ``cls``'s options -> the option (one release): the option's
    name without the prefix its options class dropped (``epoch_size`` for ``stable_epoch_size``)."""
    found = {}
    for group in OPTIONS_CLASSES:
        if issubclass(cls, group) and group.renamed_from:
            for key in vars(group)["__annotations__"]:
                short = key.removeprefix(group.renamed_from)
                if short != key and renamed_option(cls, short) == key:
                    found[short] = key
    return found


def kind_of(key: str) -> type:
    """Return the type a value of setting ``key`` is converted to: its annotation without None."""
    return next(
        t
        for t in typing.get_args(typing.get_type_hints(Settings)[key])
        or (typing.get_type_hints(Settings)[key],)
        if t is not type(None)
    )


def sample_value(key: str) -> Any:
    """Return a valid value of setting ``key`` that differs from its default."""
    default = getattr(Settings(), key)
    kind = kind_of(key)
    if kind is bool:
        return not default
    if kind is str:
        return "none"
    if kind is int:
        return 7 if default is None else default + 1
    return default / 2 if default else 0.5


def args_section(doc: str | None) -> list[tuple[str, str]]:
    """Return ``(name, text)`` of each entry of a Google-style ``Args:`` section."""
    lines = inspect.cleandoc(doc or "").splitlines()
    if "Args:" not in lines:
        return []
    entries: list[tuple[str, str]] = []
    for line in lines[lines.index("Args:") + 1 :]:
        if line and not line.startswith(" "):
            break  # the next section (Raises:, Returns:)
        entry = re.match(r"^    (\w+): (.*)$", line)
        if entry:
            entries.append((entry.group(1), entry.group(2)))
        elif entries and line.strip():
            entries[-1] = (entries[-1][0], f"{entries[-1][1]} {line.strip()}")
    return entries


def render_default(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return repr(value)


identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,24}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and s != "self"
)


class TestTheStrategiesFound:
    def test_the_walk_finds_every_exported_and_registered_strategy(self):
        """The package walk finds every strategy exported at top level and every built-in of the
        registry."""
        exported = {getattr(langchain_promptstrat, n) for n in langchain_promptstrat.__all__}
        exported = {c for c in exported if isinstance(c, type) and issubclass(c, PromptStrategy)}
        builtins = {
            getattr(importlib.import_module(m), a)
            for m, a in (v.split(":") for v in BUILTIN_STRATEGIES.values())
        }
        assert (exported - {PromptStrategy}) | builtins <= set(STRATEGIES)

    @pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
    def test_every_strategy_builds_from_its_required_arguments(self, cls):
        """Each strategy builds from its REQUIRED arguments alone (none for most)."""
        assert isinstance(build(cls), cls)


class TestUnknownOptions:
    def test_an_option_of_another_strategy_is_refused_with_the_options_shorten_tools_takes(self):
        """ShortenTools(stable_epoch_size=5) raises ConfigError naming the strategy, its options and
        where the option belongs."""
        with pytest.raises(ConfigError) as err:
            ShortenTools(stable_epoch_size=5)  # type: ignore[call-arg]
        assert str(err.value) == (
            "ShortenTools (shorten_tools) has no option 'stable_epoch_size'; its options: "
            "settings, full_tool_calls, full_tool_outputs, max_tool_calls, max_tool_outputs, "
            "max_tool_chars, protect_current_turn. stable_epoch_size is a setting this strategy "
            "does not read; to configure several strategies at once pass "
            "settings=Settings(stable_epoch_size=...) to each"
        )

    @pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
    @hypothesis_settings(max_examples=25, deadline=None)
    @given(name=identifiers)
    def test_an_option_a_strategy_does_not_take_raises_naming_it_and_its_options(self, cls, name):
        """Any keyword outside a strategy's signature raises ConfigError naming the strategy, the
        keyword and every option (an old spelling of one of its options is taken instead)."""
        options = strategy_options(cls)
        taken = {*options, *accepted_keys(cls), *old_names(cls), *RENAMED_KEYS}
        if name in taken:
            return
        with pytest.raises(ConfigError) as err:
            build(cls, **{name: 1})
        message = str(err.value)
        assert cls.__name__ in message and repr(name) in message
        assert message.split("its options: ")[1].startswith(", ".join(options))

    @pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
    def test_every_option_the_strategy_does_not_read_is_refused(self, cls):
        """Passing another strategy's option as a keyword raises ConfigError that points to a shared
        Settings."""
        foreign = set(setting_keys()) - accepted_keys(cls) - set(strategy_options(cls))
        for key in sorted(foreign - set(old_names(cls))):
            with pytest.raises(
                ConfigError, match=rf"has no option '{key}'.*settings=Settings\({key}=\.\.\.\)"
            ):
                build(cls, **{key: sample_value(key)})

    def test_get_strategy_refuses_options_for_a_ready_built_strategy_or_a_callable(self):
        """A name registered as a strategy object or a plain callable takes no options: get_strategy
        says so."""
        register_strategy("options_probe", ShortenTools())
        try:
            with pytest.raises(
                ConfigError,
                match="'options_probe' is a ready-built strategy and takes no options; got "
                "max_tool_calls",
            ):
                get_strategy("options_probe", max_tool_calls=3)
            register_strategy("options_probe", list)
            with pytest.raises(ConfigError, match="is a plain callable and takes no options"):
                get_strategy("options_probe", epoch_size=3)
            assert isinstance(get_strategy("options_probe"), CallableStrategy)
        finally:
            unregister_strategy("options_probe")


TYPED_SNIPPET = """\
from langchain_promptstrat import ShortenTools, ShortenToolsEpochStable, ToolResults
ShortenToolsEpochStable(max_tokens=("fraction", 0.8), stable_epoch_size=40, stable_low_ratio=0.8)
ToolResults(max_tokens=0, tool_results_min_tokens=1, keep_steps=2)
ShortenTools(stable_epoch_size=5)
ShortenToolsEpochStable(epoch_size="x")
ShortenToolsEpochStable(stable_epoch_size="x")
"""
"""Lines 2 and 3 are right; 4 names another strategy's option, 5 a short name, 6 a wrong type."""


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_a_type_checker_reads_each_strategy_s_options_from_their_declaration(checker, tmp_path):
    """mypy --strict and pyright accept a strategy's own options with their declared types and
    report a keyword it does not take and a value of the wrong type, before anything runs: the
    keywords come from the options classes, with no ``__init__`` written to type them."""
    snippet = tmp_path / "options_snippet.py"
    snippet.write_text(TYPED_SNIPPET, encoding="utf-8")
    command = {
        "mypy": [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "c")],
        "pyright": [sys.executable, "-m", "pyright", "--pythonpath", sys.executable, "--project"],
    }[checker]
    if checker == "pyright":
        command.append(str(ROOT))
    result = subprocess.run(
        [*command, str(snippet)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"},
    )
    errors = re.findall(r"options_snippet\.py:(\d+):\d*:? ?-? ?error", result.stdout)
    flagged = sorted({int(line) for line in errors})
    assert flagged == [4, 5, 6], result.stdout


class TestOneNamePerOption:
    def test_every_option_is_declared_once_in_one_options_class(self):
        """Each option of Settings is a field of exactly one options class, and Settings declares
        none of its own: the bag is made of the declarations, not written beside them."""
        declared = [
            key
            for group in OPTIONS_CLASSES
            for key in vars(group)["__annotations__"]
            if key != "renamed_from"
        ]
        assert sorted(declared) == sorted(setting_keys()) and len(declared) == len(set(declared))
        assert not {k for k in vars(Settings).get("__annotations__", {})}

    def test_no_strategy_module_types_its_options_a_second_time(self):
        """No strategy module declares a TypedDict of options or an ``__init__`` whose only work is
        typing them: the checkers read the options classes."""
        folder = ROOT / "langchain_promptstrat" / "strategies"
        typed_dicts = [
            f"{path.name}: {node.name}"
            for path in folder.rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ClassDef)
            and any(getattr(base, "id", "") == "TypedDict" for base in node.bases)
        ]
        assert typed_dicts == []
        for cls in (ShortenTools, ShortenToolsEpoch, ShortenToolsEpochStable):
            assert getattr(cls.__init__, "declared_by", None) is cls

    @pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
    def test_a_strategy_s_keyword_its_settings_key_and_its_variable_are_one_name(self, cls):
        """Every option a strategy takes is a keyword of that name, the key of that name in
        Settings, and read from that name in capitals: one name, whatever strategy takes it."""
        for key in options_of(cls):
            assert key in strategy_options(cls) and key in setting_keys()
            assert environment_variables(key)[-1] in (key.upper(), ENV_PREFIX + key.upper())

    def test_full_tool_calls_is_three_options_under_three_names(self):
        """The newest calls kept whole: shorten_tools' full_tool_calls (0), the epoch pair's
        epoch_full_tool_calls (20) and the default's stable_full_tool_calls (20, beyond the
        epoch's new calls) are three names, so no keyword means one thing here and another
        there."""
        takes = {
            cls.strategy_name: [k for k in options_of(cls) if k.endswith("full_tool_calls")]
            for cls in (ShortenTools, ShortenToolsEpoch, ShortenToolsEpochStable)
        }
        assert takes == {
            "shorten_tools": ["full_tool_calls"],
            "shorten_tools_epoch": ["epoch_full_tool_calls"],
            "shorten_tools_epoch_stable": ["stable_full_tool_calls"],
        }
        defaults = Settings()
        assert (
            defaults.full_tool_calls,
            defaults.epoch_full_tool_calls,
            defaults.stable_full_tool_calls,
        ) == (0, 20, 20)

    def test_no_public_signature_spells_the_ceiling_otherwise(self):
        """Every public function and every public method of a public class names a ceiling or
        token target max_tokens: none takes budget, target, ceiling, max_context_tokens or
        ladder_max_tokens (a rung's rewrite keeps target one release, deprecated)."""
        others = {"budget", "target", "ceiling", "max_context_tokens", "ladder_max_tokens"}
        deprecated = {("rewrite", "target")}
        found = []
        for name in langchain_promptstrat.__all__:
            value = getattr(langchain_promptstrat, name)
            members = [(name, value)] if callable(value) else []
            if isinstance(value, type):
                members += [
                    (m, getattr(value, m))
                    for m in dir(value)
                    if not m.startswith("_") and callable(getattr(value, m, None))
                ]
            for member, function in members:
                try:
                    parameters = inspect.signature(function).parameters
                except (TypeError, ValueError):
                    continue
                found += [
                    f"{name}.{member}({p})"
                    for p in parameters
                    if p in others and (member, p) not in deprecated
                ]
        assert found == []


class TestOldSpellings:
    @pytest.mark.parametrize(
        ("cls", "old", "key"),
        [(c, old, key) for c in STRATEGIES for old, key in old_names(c).items()],
        ids=lambda v: v.__name__ if isinstance(v, type) else str(v),
    )
    def test_an_old_short_name_still_sets_its_option_and_warns(self, cls, old, key):
        """A keyword a strategy took before one name per option (``epoch_size`` for
        ShortenToolsEpochStable) sets the option it stood for, with a DeprecationWarning naming
        the new name; given beside the new name it is refused as given twice."""
        value = sample_value(key)
        with pytest.warns(DeprecationWarning, match=f"{old} is now {key}"):
            built = build(cls, **{old: value})
        assert getattr(built.settings, key) == value
        with pytest.raises(ConfigError, match=f"{key} given twice"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                build(cls, **{old: value, key: value})

    def test_the_short_names_of_the_default_are_the_documented_ones(self):
        """The old keywords of ShortenToolsEpochStable are its twelve options without
        ``stable_``, the spelling the docs showed (``epoch_size=40``, ``full_tool_calls``)."""
        assert old_names(ShortenToolsEpochStable) == {
            key.removeprefix("stable_"): key for key in options_of(ShortenToolsEpochStable)
        }
        assert {"epoch_size", "full_tool_calls", "low_ratio"} <= set(
            old_names(ShortenToolsEpochStable)
        )

    @pytest.mark.parametrize("old", sorted(RENAMED_KEYS))
    def test_an_old_name_of_the_ceiling_setting_still_sets_max_tokens_and_warns(
        self, old, monkeypatch
    ):
        """max_context_tokens and ladder_max_tokens, as a Settings key, through load, and as an
        environment variable, set max_tokens with a DeprecationWarning."""
        with pytest.warns(DeprecationWarning, match=f"{old} is now max_tokens"):
            assert Settings(**{old: 5_000}).max_tokens == 5_000
        with pytest.warns(DeprecationWarning, match=f"{old} is now max_tokens"):
            assert Settings.load(**{old: 6_000}).max_tokens == 6_000
        variable = old.upper()
        if variable not in environment_variables("max_tokens"):
            monkeypatch.delenv("PROMPTSTRAT_MAX_TOKENS", raising=False)
            monkeypatch.setenv(variable, "7000")
            with pytest.warns(DeprecationWarning, match=f"{variable} is now PROMPTSTRAT_MAX"):
                assert Settings.load().max_tokens == 7_000

    def test_a_strategy_given_an_old_name_of_its_ceiling_takes_it_as_max_tokens(self):
        """ShortenToolsEpochStable(max_context_tokens=...) and a rung's ladder_max_tokens= are its
        max_tokens argument, with a DeprecationWarning."""
        with pytest.warns(DeprecationWarning, match="max_context_tokens= is now max_tokens="):
            assert build(ShortenToolsEpochStable, max_context_tokens=9_000).max_tokens == 9_000
        with pytest.warns(DeprecationWarning, match="ladder_max_tokens= is now max_tokens="):
            assert get_strategy("tool_results", ladder_max_tokens=0).max_tokens == 0

    def test_the_old_names_of_the_default_ceiling_and_a_rung_s_target_still_work_and_warn(self):
        """DEFAULT_CEILING (the package's and its module's) is DEFAULT_MAX_TOKENS, and a rung's
        rewrite(target=) is rewrite(max_tokens=), each with a DeprecationWarning."""
        from langchain_promptstrat import ceiling

        with pytest.warns(DeprecationWarning, match="DEFAULT_CEILING is now DEFAULT_MAX_TOKENS"):
            assert langchain_promptstrat.DEFAULT_CEILING == ceiling.DEFAULT_MAX_TOKENS == 111_616
        with pytest.warns(DeprecationWarning, match="DEFAULT_CEILING is now DEFAULT_MAX_TOKENS"):
            assert ceiling.DEFAULT_CEILING == 111_616
        rung = get_strategy("sliding_window")
        history = [HumanMessage("task"), HumanMessage("x " * 300), HumanMessage("now")]
        with pytest.warns(DeprecationWarning, match="rewrite\\(target=\\) is now"):
            old = rung.rewrite(history, target=10)
        assert old == rung.rewrite(history, max_tokens=10)

    def test_simulate_s_old_token_target_name_still_works_and_warns(self):
        """simulate.DEFAULT_MAX_TOKENS (60,000, simulate's own target) is SIMULATED_MAX_TOKENS now:
        the name DEFAULT_MAX_TOKENS is the default ceiling's alone, the old one warns."""
        from langchain_promptstrat import simulate

        with pytest.warns(DeprecationWarning, match="DEFAULT_MAX_TOKENS is now SIMULATED_MAX"):
            assert simulate.DEFAULT_MAX_TOKENS == simulate.SIMULATED_MAX_TOKENS == 60_000

    @pytest.mark.parametrize(
        "use_old_name",
        [
            lambda: ShortenToolsEpochStable(epoch_size=40),
            lambda: ShortenToolsEpochStable(max_context_tokens=9_000),
            lambda: DedupeOutputs(tool_call_threshold=3),
            lambda: Settings(max_context_tokens=5_000),
            lambda: Settings.load(ladder_max_tokens=5_000),
            lambda: langchain_promptstrat.DEFAULT_CEILING,
        ],
        ids=["option", "argument", "option-2", "settings", "load", "constant"],
    )
    def test_a_deprecation_warning_points_at_the_line_that_used_the_old_name(self, use_old_name):
        """The warning names the caller's file and line, never a line of this package: that is the
        line a user has to change (``python -W error`` shows it)."""
        with pytest.warns(DeprecationWarning, match="is now") as caught:
            use_old_name()
        assert {w.filename for w in caught} == {__file__}


class TestSettingsAndPrecedence:
    @pytest.mark.parametrize(
        "cls",
        [c for c in STRATEGIES if "settings" in strategy_options(c)],
        ids=lambda c: c.__name__,
    )
    def test_a_shared_settings_with_every_key_configures_every_strategy(self, cls):
        """One Settings holding every key (most of them another strategy's) builds each strategy
        unchanged: a Settings is never checked."""
        shared = Settings(**{key: sample_value(key) for key in setting_keys()})
        assert build(cls, settings=shared).settings == shared

    @pytest.mark.parametrize(
        ("cls", "key"),
        [(c, k) for c in STRATEGIES for k in options_of(c)],
        ids=lambda v: v.__name__ if isinstance(v, type) else str(v),
    )
    @hypothesis_settings(max_examples=15, deadline=None)
    @given(data=st.data())
    def test_an_explicit_option_wins_over_a_passed_settings(self, cls, key, data):
        """An option given to the constructor wins over settings=, which wins over the default;
        the strategy's attribute of that name is the value it runs with."""
        kind = kind_of(key)
        # a share stays under its declared 'below' bound
        below = next(f.metadata["below"] for f in dataclasses.fields(Settings) if f.name == key)
        top, open_top = (1, False) if below is None else (below, True)
        values = {
            bool: st.booleans(),
            int: st.integers(1, 10_000),
            float: st.floats(0, top, allow_nan=False, exclude_max=open_top),
        }[kind]
        base_value, explicit = data.draw(values), data.draw(values)
        base = Settings(**{key: base_value})
        assert getattr(build(cls, settings=base).settings, key) == base_value
        built = build(cls, settings=base, **{key: explicit})
        assert getattr(built.settings, key) == getattr(built, key) == explicit

    def test_an_option_left_out_comes_from_the_environment_when_no_settings_is_passed(
        self, monkeypatch
    ):
        """ShortenToolsEpochStable() reads STABLE_EPOCH_SIZE; an explicit stable_epoch_size wins
        over it."""
        monkeypatch.delenv("PROMPTSTRAT_STABLE_EPOCH_SIZE", raising=False)
        monkeypatch.setenv("STABLE_EPOCH_SIZE", "33")
        assert ShortenToolsEpochStable().settings.stable_epoch_size == 33
        assert ShortenToolsEpochStable(stable_epoch_size=12).settings.stable_epoch_size == 12

    def test_a_bad_option_value_names_the_key(self):
        """An option out of range raises the settings' ConfigError naming its key."""
        with pytest.raises(ConfigError, match="stable_epoch_size=-1 must be >= 0"):
            ShortenToolsEpochStable(stable_epoch_size=-1)


class TestDocstrings:
    @pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
    def test_the_args_section_documents_exactly_the_signature_in_order(self, cls):
        """Each strategy's constructor has a Google-style Args: entry for every parameter, in
        signature order, and no other."""
        documented = [name for name, _ in args_section(cls.__init__.__doc__)]
        assert documented == strategy_options(cls)

    @pytest.mark.parametrize(
        "cls", [c for c in STRATEGIES if options_of(c)], ids=lambda c: c.__name__
    )
    def test_help_shows_each_option_with_its_declared_doc_and_default(self, cls):
        """The Args entry of an option is its declaration's doc and its real default, so help() and
        the settings page say the same."""
        entries = dict(args_section(cls.__init__.__doc__))
        defaults = Settings()
        for key in options_of(cls):
            assert entries[key] == describe_setting(key), f"{cls.__name__}.{key}"
            if key != "max_tool_outputs":  # its default follows max_tool_calls, and says so
                assert entries[key].endswith(f"Default {render_default(getattr(defaults, key))}.")


class TestEnvironmentSpellings:
    @pytest.fixture
    def clean_env(self, monkeypatch):
        for key in setting_keys():
            for variable in environment_variables(key):
                monkeypatch.delenv(variable, raising=False)
        return monkeypatch

    @pytest.mark.parametrize("key", sorted(setting_keys()))
    def test_both_spellings_are_read_and_the_prefixed_one_wins(self, key, clean_env):
        """Each setting reads its reference variable and the PROMPTSTRAT_ one; with both set, the
        prefixed one wins."""
        value = sample_value(key)
        text = str(value).lower() if isinstance(value, bool) else str(value)
        names = environment_variables(key)
        reference = setting_keys()[key]
        assert names[-1] == reference and all(n.startswith(ENV_PREFIX) for n in names[:-1])
        for variable in names:
            clean_env.setenv(variable, text)
            assert getattr(Settings.load(), key) == value, variable
            clean_env.delenv(variable)
        if len(names) == 2:
            clean_env.setenv(names[1], "not a value")
            clean_env.setenv(names[0], text)
            assert getattr(Settings.load(), key) == value

    def test_every_reference_variable_has_a_prefixed_spelling(self):
        """Every variable without the prefix is also read as PROMPTSTRAT_<name>."""
        for key, reference in setting_keys().items():
            expected = (
                (reference,)
                if reference.startswith(ENV_PREFIX)
                else (ENV_PREFIX + reference, reference)
            )
            assert environment_variables(key) == expected

    def test_a_bad_prefixed_value_names_the_prefixed_variable(self, clean_env):
        """A bad value read from PROMPTSTRAT_MAX_TOOL_CHARS names that variable, not the reference
        one."""
        clean_env.setenv("PROMPTSTRAT_MAX_TOOL_CHARS", "abc")
        with pytest.raises(ConfigError) as err:
            Settings.load()
        assert str(err.value) == (
            "PROMPTSTRAT_MAX_TOOL_CHARS='abc' is not an integer "
            "(settings key max_tool_chars, environment variable PROMPTSTRAT_MAX_TOOL_CHARS)"
        )

    def test_the_prefixed_strategy_list_reaches_prepare_prompt(self, clean_env):
        """PROMPTSTRAT_PROMPT_STRATEGY names the strategy list as PROMPT_STRATEGY does, and wins
        over it."""
        from langchain_promptstrat.registry import resolve_strategies

        clean_env.setenv("PROMPT_STRATEGY", "shorten_tools")
        clean_env.setenv("PROMPTSTRAT_PROMPT_STRATEGY", "none")
        assert [s.strategy_name for s in resolve_strategies()] == ["none"]

    def test_the_prefixed_variable_reaches_a_strategy_built_from_nothing(self, clean_env):
        """PROMPTSTRAT_STABLE_EPOCH_SIZE configures ShortenToolsEpochStable() over
        STABLE_EPOCH_SIZE."""
        clean_env.setenv("STABLE_EPOCH_SIZE", "50")
        clean_env.setenv("PROMPTSTRAT_STABLE_EPOCH_SIZE", "60")
        assert ShortenToolsEpochStable().settings.stable_epoch_size == 60


def test_the_settings_page_table_lists_every_setting_with_both_spellings():
    """The settings page's options table has a row for every option with every variable that reads
    it."""
    rows = [
        line
        for line in (ROOT / docs_tables.DEFAULT_PAGE).read_text().splitlines()
        if line.startswith("| ")
    ]
    for key in setting_keys():
        row = next((r for r in rows if r.startswith(f"| `{key}` |")), None)
        assert row is not None, f"no settings-page row for {key}"
        for variable in environment_variables(key):
            assert f"`{variable}`" in row, f"{variable} missing from the settings-page row of {key}"


class TestOptionsWrittenOnce:
    def test_the_settings_page_options_table_is_the_one_the_options_write(self):
        """docs/settings.md's options table is exactly what the declarations give: a new or renamed
        option fails until the table is rewritten."""
        page = (ROOT / docs_tables.DEFAULT_PAGE).read_text(encoding="utf-8")
        written = page.split(docs_tables.BEGIN)[1].split(docs_tables.END)[0].strip()
        assert written == docs_tables.options_table(), (
            "stale: run python -m langchain_promptstrat.docs_tables"
        )

    def test_an_option_names_who_reads_it_exactly_when_no_built_in_strategy_takes_it(self):
        """An option's field says who reads it only when no built-in takes it as a keyword: the
        table's row comes from one or the other, never a stale second account."""
        builtins = [
            getattr(importlib.import_module(m), a)
            for m, a in (v.split(":") for v in BUILTIN_STRATEGIES.values())
        ]
        options = {key for cls in builtins for key in options_of(cls)}
        readers = {f.name for f in dataclasses.fields(Settings) if f.metadata["reader"] is not None}
        assert readers == set(setting_keys()) - options

    def test_the_docs_tables_command_checks_then_rewrites_a_stale_table(self, tmp_path, capsys):
        """--check exits 1 on a stale table and writes nothing; without it the table is rewritten,
        after which --check passes."""
        readme = tmp_path / "README.md"
        stale = f"# x\n\n{docs_tables.BEGIN}\n| an old table |\n{docs_tables.END}\n\nafter\n"
        readme.write_text(stale, encoding="utf-8")
        assert (
            docs_tables.main([str(readme), "--check"]) == 1
            and readme.read_text(encoding="utf-8") == stale
        )
        assert docs_tables.main([str(readme)]) == 0
        assert (
            readme.read_text(encoding="utf-8")
            == f"# x\n\n{docs_tables.BEGIN}\n{docs_tables.options_table()}\n"
            f"{docs_tables.END}\n\nafter\n"
        )
        assert docs_tables.main([str(readme), "--check"]) == 0
        assert [p.name for p in tmp_path.iterdir()] == ["README.md"]

    def test_the_docs_tables_command_refuses_a_page_without_the_markers(self, tmp_path, capsys):
        """A page without the table's markers is left as it is, with one line naming them and exit
        2."""
        readme = tmp_path / "README.md"
        readme.write_text("# no table here\n", encoding="utf-8")
        assert docs_tables.main([str(readme)]) == 2
        assert readme.read_text(encoding="utf-8") == "# no table here\n"
        assert capsys.readouterr().err.startswith("docs_tables: the page must hold the lines")

    def test_a_third_party_strategy_declares_its_options_the_same_way(self):
        """A strategy outside the package inherits an options class and declares its own arguments:
        it gets their keywords, refusal, precedence and Args: text, with no __init__ written."""

        class Mine(PromptStrategy, RungOptions):
            strategy_name = "mine"
            label: str = argument(default="mine", doc="What to call it.")

            def compact(self, messages, *, save_file=None):
                raise NotImplementedError

        assert [name for name, _ in args_section(Mine.__init__.__doc__)] == [
            "settings",
            "label",
            "keep_steps",
        ]
        assert Mine(keep_steps=3).keep_steps == 3 and Mine(label="x").label == "x"
        assert Mine(Settings(keep_steps=4)).settings.keep_steps == 4
        with pytest.raises(
            ConfigError,
            match=r"Mine \(mine\) has no option 'windows'; its options: settings, label, "
            "keep_steps",
        ):
            Mine(windows=3)


def test_a_rung_written_against_plan_target_still_runs_in_a_ladder_and_warns():
    """A third party's rung implementing ``plan(messages, *, target, counter)`` is asked with
    ``target`` (deprecated): the ladder's pass takes its rewrite, with a DeprecationWarning."""
    from langchain_core.messages import AIMessage

    from langchain_promptstrat.strategies.ladder_machinery.rungs import Rewrite, Rung

    class Halves(Rung):
        strategy_name = "halves"

        def plan(self, messages, *, target, counter):  # type: ignore[no-untyped-def,override]
            yield from ()
            return Rewrite(list(messages[len(messages) // 2 :]), {"target": target})

    history = [HumanMessage("task"), AIMessage("a " * 200), HumanMessage("b " * 200)]
    ladder = CompactionLadder([Halves()], max_tokens=10, low_tokens=10)
    with pytest.warns(DeprecationWarning, match="Halves.plan\\(target=\\) is now"):
        result = ladder.compact(history)
    assert result.report.details["asked"][0]["target"] == 10
    assert result.report.details["asked"][0]["outcome"] == "taken"
