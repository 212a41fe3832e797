"""Specification of the settings object: names, environment variables, precedence, validation."""

from __future__ import annotations

import dataclasses

import pytest

from langchain_promptstrat import ConfigError, Settings, ShortenTools
from langchain_promptstrat.settings import environment_variables, setting_keys

REFERENCE_DEFAULTS = {
    "full_tool_calls": ("FULL_TOOL_CALLS", 0),
    "full_tool_outputs": ("FULL_TOOL_OUTPUTS", 10),
    "max_tool_calls": ("MAX_TOOL_CALLS", 40),
    "max_tool_outputs": ("MAX_TOOL_OUTPUTS", 40),
    "max_tool_chars": ("MAX_TOOL_CHARS", 100_000),
    "epoch_tool_call_threshold": ("EPOCH_TOOL_CALL_THRESHOLD", 50),
    "epoch_full_tool_calls": ("EPOCH_FULL_TOOL_CALLS", 20),
    "epoch_compacted_tool_calls": ("EPOCH_COMPACTED_TOOL_CALLS", 80),
    "epoch_size": ("EPOCH_SIZE", 20),
    "epoch_increment_epochs_per_increase": ("EPOCH_INCREMENT_EPOCHS_PER_INCREASE", 3),
    "epoch_increment_size_increase": ("EPOCH_INCREMENT_SIZE_INCREASE", 10),
    "epoch_increment_repeat_increase": ("EPOCH_INCREMENT_REPEAT_INCREASE", 10),
    "epoch_increment_max_size": ("EPOCH_INCREMENT_MAX_SIZE", 60),
    "epoch_increment_compacted_growth_ratio": ("EPOCH_INCREMENT_COMPACTED_GROWTH_RATIO", 2.0),
    "epoch_increment_max_compacted_tool_calls": ("EPOCH_INCREMENT_MAX_COMPACTED_TOOL_CALLS", 160),
    "prompt_strategy": ("PROMPT_STRATEGY", None),
}


@pytest.fixture
def clean_env(monkeypatch):
    """An environment with none of the settings' variables set."""
    for key in setting_keys():
        for env in environment_variables(key):
            monkeypatch.delenv(env, raising=False)
    return monkeypatch


class TestReferenceNames:
    @pytest.mark.parametrize("key", sorted(REFERENCE_DEFAULTS))
    def test_every_reference_key_has_its_variable_and_default(self, key, clean_env):
        """Each threshold of the reference exists under its key, environment variable and
        default."""
        env, default = REFERENCE_DEFAULTS[key]
        assert setting_keys()[key] == env
        assert getattr(Settings.load(), key) == default


class TestPrecedence:
    def test_environment_overrides_the_default(self, clean_env):
        """A variable in the environment replaces the default."""
        clean_env.setenv("MAX_TOOL_CHARS", "123")
        assert Settings.load().max_tool_chars == 123

    def test_explicit_argument_overrides_the_environment(self, clean_env):
        """An explicit argument wins over the environment."""
        clean_env.setenv("MAX_TOOL_CHARS", "123")
        assert Settings.load(max_tool_chars=7).max_tool_chars == 7

    def test_values_are_read_when_a_strategy_is_built_not_frozen(self, clean_env):
        """A long-running process picks up a changed variable for the next strategy it builds."""
        clean_env.setenv("FULL_TOOL_OUTPUTS", "3")
        first = ShortenTools()
        clean_env.setenv("FULL_TOOL_OUTPUTS", "5")
        second = ShortenTools()
        assert (first.settings.full_tool_outputs, second.settings.full_tool_outputs) == (3, 5)

    def test_max_tool_outputs_follows_max_tool_calls_unless_set(self, clean_env):
        """max_tool_outputs defaults to max_tool_calls, as in the reference."""
        clean_env.setenv("MAX_TOOL_CALLS", "30")
        assert Settings.load().max_tool_outputs == 30
        assert Settings.load(max_tool_outputs=12).max_tool_outputs == 12

    def test_a_resolved_base_is_not_reread_from_the_environment(self, clean_env):
        """Passing a Settings object applies only the explicit overrides on top of it."""
        base = Settings(max_tool_chars=5)
        clean_env.setenv("MAX_TOOL_CHARS", "999")
        assert Settings.load(base, full_tool_calls=2) == dataclasses.replace(
            base, full_tool_calls=2
        )

    @pytest.mark.parametrize(
        ("text", "value"),
        [
            ("yes", True),
            ("TRUE", True),
            (" 1 ", True),
            ("on", True),
            ("no", False),
            ("False", False),
            ("0", False),
            ("off", False),
            ("", False),
        ],
    )
    def test_booleans_read_common_spellings(self, clean_env, text, value):
        """PROTECT_CURRENT_TURN reads yes/true/1/on and no/false/0/off (any case, spaces ignored) as
        booleans."""
        clean_env.setenv("PROTECT_CURRENT_TURN", text)
        assert Settings.load().protect_current_turn is value
        # the default is False, so a false spelling shows that it parses (no ConfigError); an
        # explicit argument still wins
        assert Settings.load(protect_current_turn=True).protect_current_turn is True


class TestValidation:
    def test_non_integer_environment_value_names_key_variable_and_value(self, clean_env):
        """MAX_TOOL_CHARS=abc raises ConfigError naming the key, the variable and the value."""
        clean_env.setenv("MAX_TOOL_CHARS", "abc")
        with pytest.raises(ConfigError) as err:
            Settings.load()
        assert str(err.value) == (
            "MAX_TOOL_CHARS='abc' is not an integer (settings key max_tool_chars, environment "
            "variable MAX_TOOL_CHARS)"
        )

    def test_negative_count_is_refused(self, clean_env):
        """A negative count raises ConfigError, from an argument or from the environment."""
        with pytest.raises(ConfigError, match="epoch_size=-1 must be >= 0"):
            Settings.load(epoch_size=-1)
        clean_env.setenv("EPOCH_SIZE", "-3")
        with pytest.raises(ConfigError, match="EPOCH_SIZE='-3'"):
            Settings.load()

    def test_unknown_key_is_refused_with_the_known_ones(self, clean_env):
        """A misspelt key raises ConfigError listing the valid keys."""
        with pytest.raises(
            ConfigError, match="unknown setting 'max_tool_char'; known: .*max_tool_chars"
        ):
            Settings.load(max_tool_char=3)

    def test_config_error_is_a_value_error(self):
        """Callers catching ValueError also catch ConfigError."""
        assert issubclass(ConfigError, ValueError)

    def test_bad_boolean_is_refused(self, clean_env):
        """A boolean variable with an unreadable value raises ConfigError."""
        clean_env.setenv("PROTECT_CURRENT_TURN", "maybe")
        with pytest.raises(ConfigError, match="not a boolean"):
            Settings.load()

    def test_growth_ratio_accepts_floats(self, clean_env):
        """The compacted growth ratio is a float setting."""
        clean_env.setenv("EPOCH_INCREMENT_COMPACTED_GROWTH_RATIO", "1.5")
        assert Settings.load().epoch_increment_compacted_growth_ratio == 1.5


def _bounded_settings() -> list[tuple[str, float]]:
    """Return ``(key, value)`` for each numeric setting at each end of its declared bounds (just
    under a ``below``)."""
    cases = []
    for f in dataclasses.fields(Settings):
        minimum, maximum, below = (f.metadata.get(name) for name in ("minimum", "maximum", "below"))
        cases += [(f.name, minimum)] if minimum is not None else []
        cases += [(f.name, maximum)] if maximum is not None else []
        cases += [(f.name, below - 0.01)] if below is not None else []
    return cases


def _readers(key: str, settings: Settings) -> list[object]:
    """Return the strategies that read setting ``key``, built with ``settings`` (the inbox's keys
    are read at pickup: none)."""
    from langchain_promptstrat.registry import BUILTIN_STRATEGIES, get_strategy
    from langchain_promptstrat.settings import options_of
    from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
    from langchain_promptstrat.strategies.ladder import CompactionLadder

    built: list[object] = []
    for name in BUILTIN_STRATEGIES:
        if name not in ("summary", "inbox", "none"):
            strategy = get_strategy(name, settings)
            if key in options_of(type(strategy)) or key == "max_tokens":
                built.append(strategy)
    if key == "max_tokens":
        built.append(ShortenToolsEpochStable(settings))
    if key == "ladder_low_ratio":
        rungs = "tool_results,sliding_window"
        built.append(CompactionLadder(rungs, max_tokens=4_000, settings=settings))
    return built


@pytest.mark.parametrize(("key", "value"), _bounded_settings())
def test_a_value_at_a_declared_bound_is_accepted_by_every_strategy_that_reads_it(
    clean_env, key, value
):
    """One bound, one message: the bounds Settings declares are the ones the strategies keep, so a
    value Settings accepts is never refused later in other words (PROMPTSTRAT_MAX_TOKENS=0 passed
    Settings' '>= 0' and was then refused as 'not a positive number of tokens')."""
    from langchain_promptstrat.errors import ContextWindowError
    from langchain_promptstrat.testing import build_agent_run

    settings = Settings(**{key: int(value) if isinstance(getattr(Settings(), key), int) else value})
    run = build_agent_run(130)
    for strategy in _readers(key, settings):
        try:
            strategy.compact(run)  # type: ignore[attr-defined]
        except ContextWindowError:
            pass  # a ceiling of 1 token holds no prompt: said as such, not as a bad setting


@pytest.mark.parametrize("text", ["-3", "0"])
def test_a_ceiling_under_one_token_is_refused_with_one_message(clean_env, text):
    """PROMPTSTRAT_MAX_TOKENS=-3 and =0 are both refused when the settings are read, in the same
    words naming the one bound."""
    clean_env.setenv("PROMPTSTRAT_MAX_TOKENS", text)
    with pytest.raises(ConfigError) as err:
        Settings.load()
    assert str(err.value) == (
        f"PROMPTSTRAT_MAX_TOKENS='{text}' must be >= 1 "
        "(settings key max_tokens, environment variable PROMPTSTRAT_MAX_TOKENS)"
    )


@pytest.mark.parametrize(
    ("variable", "text", "bounds"),
    [
        ("LADDER_LOW_RATIO", "1.5", "between 0 and 1"),
        ("STABLE_TOKEN_MARGIN", "1", ">= 0 and below 1"),
    ],
)
def test_a_share_past_its_end_is_refused_by_settings_naming_both_ends(
    clean_env, variable, text, bounds
):
    """A share out of range is refused where every setting is checked, with both of its ends: not
    accepted there and refused later by one strategy (LADDER_LOW_RATIO=1.5) or taken for a ceiling
    the system prompt fills (a margin of 1)."""
    clean_env.setenv(variable, text)
    with pytest.raises(ConfigError, match=f"{variable}='{text}' must be {bounds} "):
        Settings.load()


def test_the_ceiling_setting_takes_a_share_of_the_window_as_the_argument_does():
    """Settings(max_tokens=("fraction", 0.5)) is the same ceiling as max_tokens=("fraction", 0.5)
    given to the strategy: one spelling, one set of forms."""
    from langchain_promptstrat.ceiling import resolve_ceiling

    share = ("fraction", 0.5)
    assert Settings(max_tokens=[*share]).max_tokens == share
    assert resolve_ceiling(settings=Settings(max_tokens=share)) == resolve_ceiling(share)
    with pytest.raises(ConfigError, match="is not a ceiling"):
        Settings(max_tokens=("fraction", 2))
