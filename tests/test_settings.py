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
        """Each threshold of the reference exists under its key, environment variable and default."""
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
        assert Settings.load(base, full_tool_calls=2) == dataclasses.replace(base, full_tool_calls=2)

    @pytest.mark.parametrize(("text", "value"), [
        ("yes", True), ("TRUE", True), (" 1 ", True), ("on", True),
        ("no", False), ("False", False), ("0", False), ("off", False), ("", False),
    ])
    def test_booleans_read_common_spellings(self, clean_env, text, value):
        """PROTECT_CURRENT_TURN reads yes/true/1/on and no/false/0/off (any case, spaces ignored) as booleans."""
        clean_env.setenv("PROTECT_CURRENT_TURN", text)
        assert Settings.load().protect_current_turn is value
        # the default is False, so a false spelling shows that it parses (no ConfigError); an explicit argument still wins
        assert Settings.load(protect_current_turn=True).protect_current_turn is True


class TestValidation:
    def test_non_integer_environment_value_names_key_variable_and_value(self, clean_env):
        """MAX_TOOL_CHARS=abc raises ConfigError naming the key, the variable and the value."""
        clean_env.setenv("MAX_TOOL_CHARS", "abc")
        with pytest.raises(ConfigError) as err:
            Settings.load()
        assert str(err.value) == (
            "MAX_TOOL_CHARS='abc' is not an integer (settings key max_tool_chars, environment variable MAX_TOOL_CHARS)"
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
        with pytest.raises(ConfigError, match="unknown setting 'max_tool_char'; known: .*max_tool_chars"):
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
