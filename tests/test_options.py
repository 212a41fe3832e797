"""Specification of the strategies' typed options: names, docstrings, unknown options, precedence,
both environment spellings.

The strategies are found by walking the package, so a strategy added later is held to the
same rules without editing this file (a new one that needs constructor arguments fails
``test_every_strategy_builds_from_its_required_arguments`` until it is added to ``REQUIRED``).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import keyword
import pkgutil
import re
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

import langchain_promptstrat
from langchain_promptstrat import (
    ConfigError,
    Settings,
    ShortenTools,
    ShortenToolsEpochStable,
    docs_tables,
    get_strategy,
)
from langchain_promptstrat.registry import (
    BUILTIN_STRATEGIES,
    CallableStrategy,
    register_strategy,
    resolve_strategies,
    unregister_strategy,
)
from langchain_promptstrat.settings import (
    ENV_PREFIX,
    SettingKey,
    describe_setting,
    environment_variables,
    option_keys,
    setting_keys,
    settings_with_options,
    strategy_options,
)
from langchain_promptstrat.strategies.ladder import CompactionLadder
from langchain_promptstrat.strategies.summary import Summary
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
    ShortenToolsEpochStable: {
        "max_context_tokens"
    },  # the ceiling's fallback when max_tokens is not given
    CompactionLadder: {"ladder_low_ratio"},  # low_tokens' default share of max_tokens
}
"""Settings a strategy reads without an option of that key; their keys are accepted as keywords
too."""


def build(cls: type, **options: Any) -> Any:
    args, required = REQUIRED.get(cls, ((), {}))
    return cls(*args, **{**required, **options})


def accepted_keys(cls: type) -> set[str]:
    return set(option_keys(cls).values()) | EXTRA_READS.get(cls, set())


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
    def test_a_key_of_another_strategy_is_refused_with_the_options_shorten_tools_takes(self):
        """ShortenTools(stable_epoch_size=5) raises ConfigError naming the strategy, its options and
        where the key belongs."""
        with pytest.raises(ConfigError) as err:
            ShortenTools(stable_epoch_size=5)  # type: ignore[arg-type]
        assert str(err.value) == (
            "ShortenTools (shorten_tools) has no option 'stable_epoch_size'; its options: "
            "settings, full_tool_calls, "
            "full_tool_outputs, max_tool_calls, max_tool_outputs, max_tool_chars, "
            "protect_current_turn. "
            "stable_epoch_size is a setting this strategy does not read; to configure several "
            "strategies at once "
            "pass settings=Settings(stable_epoch_size=...) to each"
        )

    @pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
    @hypothesis_settings(max_examples=25, deadline=None)
    @given(name=identifiers)
    def test_an_option_a_strategy_does_not_take_raises_naming_it_and_its_options(self, cls, name):
        """Any keyword outside a strategy's signature and its settings keys raises ConfigError
        naming the strategy, the keyword and every option."""
        options = strategy_options(cls)
        if name in options or name in accepted_keys(cls):
            return
        with pytest.raises(ConfigError) as err:
            build(cls, **{name: 1})
        message = str(err.value)
        assert cls.__name__ in message and repr(name) in message
        assert message.split("its options: ")[1].startswith(", ".join(options))

    @pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
    def test_every_settings_key_the_strategy_does_not_read_is_refused(self, cls):
        """Passing another strategy's settings key as a keyword raises ConfigError that points to a
        shared Settings."""
        for key in sorted(set(setting_keys()) - accepted_keys(cls) - set(strategy_options(cls))):
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

    def test_a_type_checker_flags_an_option_a_strategy_does_not_take(self, tmp_path):
        """mypy accepts a strategy's own options and reports a keyword it does not take, before
        anything runs."""
        snippet = tmp_path / "options_snippet.py"
        snippet.write_text(
            "from langchain_promptstrat import ShortenTools, ShortenToolsEpochStable\n"
            "ShortenToolsEpochStable(max_tokens=64_000, epoch_size=40, low_ratio=0.8)\n"
            "ShortenTools(stable_epoch_size=5)\n"
        )
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--strict",
                "--cache-dir",
                str(tmp_path / "cache"),
                str(snippet),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        errors = [line for line in result.stdout.splitlines() if ": error:" in line]
        assert (
            len(errors) == 1
            and "options_snippet.py:3:" in errors[0]
            and '"stable_epoch_size"' in errors[0]
        ), result.stdout


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
        ("cls", "option", "key"),
        [(c, o, k) for c in STRATEGIES for o, k in option_keys(c).items()],
        ids=lambda v: v.__name__ if isinstance(v, type) else str(v),
    )
    @hypothesis_settings(max_examples=15, deadline=None)
    @given(data=st.data())
    def test_an_explicit_option_wins_over_a_passed_settings_and_sets_its_key(
        self, cls, option, key, data
    ):
        """An option lands on its settings key and wins over settings=; its key as a keyword does
        the same; both at once raise."""
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
        assert getattr(build(cls, settings=base, **{option: explicit}).settings, key) == explicit
        if key != option:
            assert getattr(build(cls, settings=base, **{key: explicit}).settings, key) == explicit
            with pytest.raises(ConfigError, match=f"{option} given twice"):
                build(cls, **{option: explicit, key: explicit})

    def test_an_option_left_at_none_comes_from_the_environment_when_no_settings_is_passed(
        self, monkeypatch
    ):
        """ShortenToolsEpochStable() reads STABLE_EPOCH_SIZE; an explicit epoch_size wins over
        it."""
        monkeypatch.delenv("PROMPTSTRAT_STABLE_EPOCH_SIZE", raising=False)
        monkeypatch.setenv("STABLE_EPOCH_SIZE", "33")
        assert ShortenToolsEpochStable().settings.stable_epoch_size == 33
        assert ShortenToolsEpochStable(epoch_size=12).settings.stable_epoch_size == 12

    def test_a_bad_option_value_names_the_key(self):
        """An option out of range raises the settings' ConfigError naming its key."""
        with pytest.raises(ConfigError, match="stable_epoch_size=-1 must be >= 0"):
            ShortenToolsEpochStable(epoch_size=-1)


class TestDocstrings:
    @pytest.mark.parametrize("cls", STRATEGIES, ids=lambda c: c.__name__)
    def test_the_args_section_documents_exactly_the_signature_in_order(self, cls):
        """Each strategy's constructor has a Google-style Args: entry for every parameter, in
        signature order, and no other."""
        documented = [name for name, _ in args_section(cls.__init__.__doc__)]
        assert documented == strategy_options(cls)

    @pytest.mark.parametrize(
        "cls", [c for c in STRATEGIES if option_keys(c)], ids=lambda c: c.__name__
    )
    def test_each_settings_option_names_its_key_and_default(self, cls):
        """The Args entry of an option that is a setting names the settings key and the key's real
        default."""
        entries = dict(args_section(cls.__init__.__doc__))
        defaults = Settings()
        for option, key in option_keys(cls).items():
            assert key in setting_keys(), f"{cls.__name__}.{option} maps to unknown setting {key}"
            text = entries[option]
            assert f"``{key}``" in text, f"{cls.__name__}.{option}: {text}"
            if key != "max_tool_outputs":  # its default follows max_tool_calls, and says so
                assert f"default {render_default(getattr(defaults, key))}." in text, (
                    f"{cls.__name__}.{option}: {text}"
                )


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
    """The settings page's options table has a row for every settings key with every variable that
    reads it."""
    rows = [
        line
        for line in (ROOT / docs_tables.DEFAULT_PAGE).read_text().splitlines()
        if line.startswith("| ")
    ]
    for key in setting_keys():
        row = next((r for r in rows if f"| `{key}` |" in r), None)
        assert row is not None, f"no settings-page row for {key}"
        for variable in environment_variables(key):
            assert f"`{variable}`" in row, f"{variable} missing from the settings-page row of {key}"


class TestOptionsWrittenOnce:
    def test_the_settings_page_options_table_is_the_one_the_options_write(self):
        """docs/settings.md's options table is exactly what the options classes and settings give: a
        new or renamed option fails until the table is rewritten."""
        page = (ROOT / docs_tables.DEFAULT_PAGE).read_text(encoding="utf-8")
        written = page.split(docs_tables.BEGIN)[1].split(docs_tables.END)[0].strip()
        assert written == docs_tables.options_table(), (
            "stale: run python -m langchain_promptstrat.docs_tables"
        )

    def test_a_setting_names_who_reads_it_exactly_when_no_built_in_strategy_takes_it_as_an_option(
        self,
    ):
        """A setting's field says who reads it only when no built-in takes it as an option: the
        table's row comes from one or the other, never a stale second account."""
        builtins = [
            getattr(importlib.import_module(m), a)
            for m, a in (v.split(":") for v in BUILTIN_STRATEGIES.values())
        ]
        options = {key for cls in builtins for key in option_keys(cls).values()}
        readers = {f.name for f in dataclasses.fields(Settings) if f.metadata["reader"] is not None}
        assert readers == set(setting_keys()) - options

    @pytest.mark.parametrize(
        "cls", [c for c in STRATEGIES if option_keys(c)], ids=lambda c: c.__name__
    )
    def test_an_option_is_typed_as_its_settings_key(self, cls):
        """Each option's type (what mypy and pyright check a keyword against) is its settings key's
        type, None meaning not given."""
        settings_types = typing.get_type_hints(Settings)
        option_types = typing.get_type_hints(cls.options)
        for option, key in option_keys(cls).items():
            assert option_types[option] == settings_types[key] | None, (
                f"{cls.__name__}.{option} ({key})"
            )

    def test_an_options_field_without_a_known_settings_key_is_refused_when_read(self):
        """A field that is not Annotated with the SettingKey of a real setting is a programming
        error, reported at once."""

        class Typo(typing.TypedDict, total=False):
            epoch_size: typing.Annotated[int | None, SettingKey("stable_epoch_sise")]

        class Bare(typing.TypedDict, total=False):
            epoch_size: int | None

        for options in (Typo, Bare):
            with pytest.raises(
                TypeError, match=r"must be Annotated\[<type>, SettingKey\(<a settings key>\)\]"
            ):
                option_keys(type("Probe", (), {"options": options}))

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

    @pytest.mark.parametrize(
        "cls", [c for c in STRATEGIES if option_keys(c)], ids=lambda c: c.__name__
    )
    def test_help_shows_each_option_with_the_doc_of_its_settings_key(self, cls):
        """The Args entry of an option is its settings key's doc, key and default, so help() and the
        README say the same."""
        entries = dict(args_section(cls.__init__.__doc__))
        for option, key in option_keys(cls).items():
            assert entries[option] == describe_setting(key), f"{cls.__name__}.{option}"

    def test_a_third_party_strategy_declares_its_options_the_same_way(self):
        """A strategy outside the package gets typed options on settings keys, their refusal and
        precedence; a docstring without Args: stays as written."""

        class MineOptions(typing.TypedDict, total=False):
            window: typing.Annotated[int | None, SettingKey("keep_steps")]

        class Mine(PromptStrategy):
            strategy_name = "mine"
            options = MineOptions

            def __init__(self, settings: Settings | None = None, **options: typing.Any) -> None:
                """Build it."""
                super().__init__(settings_with_options(type(self), settings, options))

            def compact(self, messages, *, save_file=None):
                raise NotImplementedError

        assert Mine.__init__.__doc__ == "Build it."
        assert (
            Mine(window=3).settings.keep_steps == 3
            and Mine(Settings(keep_steps=4)).settings.keep_steps == 4
        )
        assert Mine(keep_steps=5).settings.keep_steps == 5
        with pytest.raises(
            ConfigError,
            match=r"Mine \(mine\) has no option 'windows'; its options: settings, window",
        ):
            Mine(windows=3)
