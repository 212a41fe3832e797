"""Every threshold of every strategy: key names, environment variables, defaults, validation.

Key names and environment variable names are the reference system's
(``max_tool_chars`` / ``MAX_TOOL_CHARS``, ``epoch_size`` / ``EPOCH_SIZE``, ...), so a
configuration written for it carries over. Each variable is also read with the
``PROMPTSTRAT_`` prefix (``PROMPTSTRAT_MAX_TOOL_CHARS``), which wins when both are set: the
prefixed name is unambiguously this package's, while a bare ``EPOCH_SIZE`` may be meant for
the reference system running beside it. Precedence is explicit argument, then the
environment, then the default. Values are read when :meth:`Settings.load` runs (that is,
when a strategy is built), never memoised for the life of the process: the reference froze
them on first use, which a long-running server cannot live with.

A strategy names its own options (``ShortenToolsEpochStable(epoch_size=40)``) and maps each
to its key here; :func:`settings_with_options` applies them over a ``Settings`` and refuses
an option the strategy does not take, so a key meant for another strategy is never silently
ignored.
"""

from __future__ import annotations

import dataclasses
import os
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_promptstrat.errors import ConfigError

__all__ = ["ENV_PREFIX", "Settings", "environment_variables", "setting_keys", "settings_with_options", "strategy_options"]

ENV_PREFIX = "PROMPTSTRAT_"
"""Every setting's environment variable is also read with this prefix; the prefixed one wins."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _setting(default: Any, env: str, kind: type, *, minimum: float | None = 0, doc: str = "") -> Any:
    return field(default=default, metadata={"env": env, "kind": kind, "minimum": minimum, "doc": doc})


@dataclass(frozen=True)
class Settings:
    """Typed, validated thresholds; build with :meth:`Settings.load` to read the environment.

    ``Settings()`` gives the defaults without looking at the environment; ``Settings.load()``
    applies explicit arguments over environment variables (``PROMPTSTRAT_<NAME>``, then
    ``<NAME>``) over defaults. One object may hold the keys of every strategy and be passed
    to all of them: a strategy reads its own keys and is never checked against the others.
    """

    # shorten_tools (not in the default list)
    full_tool_calls: int = _setting(0, "FULL_TOOL_CALLS", int, doc="recent tool calls kept whole")
    full_tool_outputs: int = _setting(10, "FULL_TOOL_OUTPUTS", int, doc="recent tool outputs kept whole")
    max_tool_calls: int = _setting(40, "MAX_TOOL_CALLS", int, doc="tool calls beyond this position are dropped")
    max_tool_outputs: int | None = _setting(
        None, "MAX_TOOL_OUTPUTS", int, doc="tool outputs beyond this position are dropped (default: max_tool_calls)"
    )
    max_tool_chars: int = _setting(100_000, "MAX_TOOL_CHARS", int, doc="tool content kept whole while under this budget")
    protect_current_turn: bool = _setting(
        False, "PROTECT_CURRENT_TURN", bool, minimum=None, doc="keep every tool message of the newest user turn whole"
    )
    # shorten_tools_epoch and shorten_tools_epoch_increment
    epoch_tool_call_threshold: int = _setting(50, "EPOCH_TOOL_CALL_THRESHOLD", int, doc="no compaction at or below this many tool calls")
    epoch_full_tool_calls: int = _setting(20, "EPOCH_FULL_TOOL_CALLS", int, doc="most recent tool calls kept whole")
    epoch_compacted_tool_calls: int = _setting(80, "EPOCH_COMPACTED_TOOL_CALLS", int, doc="tool calls shortened before the full ones")
    epoch_size: int = _setting(20, "EPOCH_SIZE", int, doc="new tool calls before the boundary advances (initial size)")
    epoch_increment_epochs_per_increase: int = _setting(
        3, "EPOCH_INCREMENT_EPOCHS_PER_INCREASE", int, doc="completed epochs before the epoch grows"
    )
    epoch_increment_size_increase: int = _setting(10, "EPOCH_INCREMENT_SIZE_INCREASE", int, doc="periodic epoch-size increase")
    epoch_increment_repeat_increase: int = _setting(
        10, "EPOCH_INCREMENT_REPEAT_INCREASE", int, doc="epoch-size increase for epochs with repeated calls"
    )
    epoch_increment_max_size: int = _setting(60, "EPOCH_INCREMENT_MAX_SIZE", int, doc="upper bound of epoch growth")
    epoch_increment_compacted_growth_ratio: float = _setting(
        2.0, "EPOCH_INCREMENT_COMPACTED_GROWTH_RATIO", float, doc="extra compacted calls per extra epoch call"
    )
    epoch_increment_max_compacted_tool_calls: int = _setting(
        160, "EPOCH_INCREMENT_MAX_COMPACTED_TOOL_CALLS", int, doc="upper bound of the grown compacted window"
    )
    # dispatcher
    prompt_strategy: str | None = _setting(
        None, "PROMPT_STRATEGY", str, minimum=None, doc="comma-separated default strategy list"
    )
    # token-target ladder: tool_results, sliding_window, summary, CompactionLadder
    tool_results_min_tokens: int = _setting(
        200, "TOOL_RESULTS_MIN_TOKENS", int, doc="tool outputs larger than this many tokens may become placeholders"
    )
    keep_steps: int = _setting(1, "KEEP_STEPS", int, minimum=1, doc="newest steps no token-target rung ever touches")
    ladder_max_tokens: int = _setting(
        100_000, "LADDER_MAX_TOKENS", int, doc="token target of a rung used on its own as a strategy"
    )
    ladder_low_ratio: float = _setting(
        0.7, "LADDER_LOW_RATIO", float, doc="CompactionLadder compacts down to this share of max_tokens (low_tokens)"
    )
    # shorten_tools_epoch_stable
    stable_tool_call_threshold: int = _setting(
        120, "STABLE_TOOL_CALL_THRESHOLD", int, doc="front-stable epochs: no compaction at or below this many tool calls"
    )
    stable_full_tool_calls: int = _setting(
        20, "STABLE_FULL_TOOL_CALLS", int, doc="front-stable epochs: most recent tool calls kept whole"
    )
    stable_epoch_size: int = _setting(
        80, "STABLE_EPOCH_SIZE", int, doc="front-stable epochs: new tool calls before whole calls graduate to shortened"
    )
    stable_max_compacted_tool_calls: int = _setting(
        240, "STABLE_MAX_COMPACTED_TOOL_CALLS", int,
        doc="front-stable epochs: the shortened region holds at most this many calls before a front drop",
    )
    # the context ceiling of the bounded default (shorten_tools_epoch_stable)
    max_context_tokens: int | None = _setting(
        None, "PROMPTSTRAT_MAX_TOKENS", int,
        doc="context ceiling of the default strategy, in tokens (default: the model's window, else 111,616)",
    )
    stable_token_margin: float = _setting(
        0.02, "STABLE_TOKEN_MARGIN", float,
        doc="share of the ceiling kept free for the token counter's error",
    )
    stable_low_ratio: float = _setting(
        0.9, "STABLE_LOW_RATIO", float,
        doc="a ceiling-driven epoch advance aims at or below this share of the ceiling",
    )
    stable_front_ratio: float = _setting(
        0.6, "STABLE_FRONT_RATIO", float,
        doc="a ceiling-driven front drop removes steps after the kept head down to this share of the ceiling",
    )
    stable_head_ratio: float = _setting(
        0.2, "STABLE_HEAD_RATIO", float,
        doc="a ceiling-driven front drop keeps the oldest steps within this share of the ceiling (the cached head)",
    )
    stable_whole_ratio: float = _setting(
        0.0, "STABLE_WHOLE_RATIO", float,
        doc="after a ceiling-driven advance the newest whole calls take at most this share of the ceiling",
    )
    stable_front_drop_chunk: int = _setting(
        120, "STABLE_FRONT_DROP_CHUNK", int, minimum=1,
        doc="front-stable epochs: the oldest calls are dropped in multiples of this many at once",
    )

    # inbox
    inbox_quiet_seconds: float = _setting(
        1.0, "INBOX_QUIET_SECONDS", float,
        doc="a writable inbox file is picked up only once unchanged this long (an editor may still be writing it)",
    )
    inbox_lease_seconds: float = _setting(
        600.0, "INBOX_LEASE_SECONDS", float,
        doc="a claimed, unacknowledged notice of a live reader on another host is recovered after this long",
    )
    inbox_max_notice_bytes: int = _setting(
        1_000_000, "INBOX_MAX_NOTICE_BYTES", int, minimum=1,
        doc="larger inbox notices are left pending with a warning, never delivered",
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _validate(f, getattr(self, f.name), source="argument"))
        if self.max_tool_outputs is None:
            object.__setattr__(self, "max_tool_outputs", self.max_tool_calls)

    @classmethod
    def load(cls, settings: Settings | None = None, /, *, environ: Mapping[str, str] | None = None, **explicit: Any) -> Settings:
        """Return settings from explicit arguments, then the environment, then the defaults.

        Each key's variable is read as ``PROMPTSTRAT_<NAME>`` first, then as the reference's
        ``<NAME>`` (see :func:`environment_variables`). ``settings``, when given, is an
        already-resolved base: the environment is not read again and only ``explicit``
        overrides apply. ``None`` as an explicit value means "not given".
        """
        _reject_unknown(explicit)
        explicit = {k: v for k, v in explicit.items() if v is not None}
        if settings is not None:
            return settings.replace(**explicit)
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name in explicit:
                values[f.name] = explicit[f.name]
                continue
            variable = next((name for name in _variables(f.metadata["env"]) if name in env), None)
            if variable is not None:
                values[f.name] = _validate(f, env[variable], source=variable)
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        """Return a copy with ``changes`` applied and validated."""
        _reject_unknown(changes)
        changes = {k: v for k, v in changes.items() if v is not None}
        if "max_tool_calls" in changes and "max_tool_outputs" not in changes and self.max_tool_outputs == self.max_tool_calls:
            changes["max_tool_outputs"] = None  # keep following max_tool_calls
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Return every key and its value, for reports and ``promptstrat`` output."""
        return dataclasses.asdict(self)


def setting_keys() -> dict[str, str]:
    """Return ``{key: environment variable}`` for every setting (the reference's spelling)."""
    return {f.name: f.metadata["env"] for f in dataclasses.fields(Settings)}


def environment_variables(key: str) -> tuple[str, ...]:
    """Return the environment variables read for setting ``key``, the one that wins first.

    ``("PROMPTSTRAT_MAX_TOOL_CHARS", "MAX_TOOL_CHARS")`` for ``max_tool_chars``; a variable
    that already carries the prefix (``PROMPTSTRAT_MAX_TOKENS``) is its own only spelling.
    """
    keys = setting_keys()
    if key not in keys:
        _reject_unknown({key: None})
    return _variables(keys[key])


def _variables(env: str) -> tuple[str, ...]:
    return (env,) if env.startswith(ENV_PREFIX) else (ENV_PREFIX + env, env)


def strategy_options(strategy: type) -> list[str]:
    """Return the option names ``strategy``'s constructor takes, in signature order (``settings`` included)."""
    parameters = inspect.signature(strategy).parameters.values()  # the constructor's, without self
    skipped = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return [p.name for p in parameters if p.name != "self" and p.kind not in skipped]


def settings_with_options(
    strategy: type,
    settings: Settings | None,
    keys: Mapping[str, str],
    unknown: Mapping[str, Any],
    /,
    *,
    reads: Iterable[str] = (),
    **options: Any,
) -> Settings:
    """Return the settings a strategy runs with: its explicit options over ``settings`` (or the environment).

    ``options`` are the strategy's typed keyword arguments that are settings, each mapped by
    ``keys`` (option name -> settings key); None means "not given", so the value comes from
    ``settings`` when one is passed, else the environment, else the default. An explicit
    option always wins, as a keyword argument wins over a default in any Python call.

    ``unknown`` holds the keyword arguments outside the constructor's signature. The settings
    key of one of the strategy's options (``stable_epoch_size`` for ``epoch_size``), or a key
    in ``reads`` that it reads without an option of its own, is accepted in its place, so a
    configuration written with settings keys (``get_strategy(name, **keys)``) keeps working.
    Anything else raises :class:`ConfigError` naming the strategy and the options it takes:
    a key another strategy uses belongs in a ``Settings`` shared by the strategies, which
    is never checked against any one of them.
    """
    explicit = {keys[name]: value for name, value in options.items() if value is not None}
    option_of_key = {key: name for name, key in keys.items()}
    accepted = set(option_of_key) | set(reads)
    refused: list[str] = []
    for name, value in unknown.items():
        if name not in accepted:
            refused.append(name)
            continue
        option = option_of_key.get(name)
        if option is not None and options.get(option) is not None and value is not None:
            raise ConfigError(f"{_strategy_label(strategy)}: {option} given twice, as {option}= and as its settings key {name}=")
        if value is not None:
            explicit[name] = value
    if refused:
        raise ConfigError(_refusal(strategy, refused))
    return Settings.load(settings, **explicit)


def _strategy_label(strategy: type) -> str:
    name = getattr(strategy, "strategy_name", None)
    return f"{strategy.__name__} ({name})" if isinstance(name, str) and name != strategy.__name__ else strategy.__name__


def _refusal(strategy: type, refused: list[str]) -> str:
    """Return the message for options ``strategy`` does not take, with a hint for settings keys of other strategies."""
    names = ", ".join(repr(n) for n in refused)
    noun = "option" if len(refused) == 1 else "options"
    message = f"{_strategy_label(strategy)} has no {noun} {names}; its options: {', '.join(strategy_options(strategy))}"
    elsewhere = [n for n in refused if n in setting_keys()]
    if elsewhere:
        example = ", ".join(f"{n}=..." for n in elsewhere)
        message += (
            f". {', '.join(elsewhere)} {'is a setting' if len(elsewhere) == 1 else 'are settings'} this strategy does not read; "
            f"to configure several strategies at once pass settings=Settings({example}) to each"
        )
    return message


def _reject_unknown(values: Mapping[str, Any]) -> None:
    unknown = sorted(set(values) - set(setting_keys()))
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}; known: {', '.join(sorted(setting_keys()))}")


def _validate(f: dataclasses.Field[Any], value: Any, *, source: str) -> Any:
    """Return ``value`` converted to the field's type, or raise ConfigError naming key, variable and value.

    ``source`` is ``"argument"`` or the name of the environment variable the value was read from.
    """
    if value is None:
        return None
    kind, minimum = f.metadata["kind"], f.metadata["minimum"]
    env = f.metadata["env"] if source == "argument" else source
    where = f"{f.name}={value!r}" if source == "argument" else f"{env}={value!r}"
    hint = f"(settings key {f.name}, environment variable {env})"
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ConfigError(f"{where} is not a boolean (use true/false) {hint}")
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} is not a string {hint}")
        return value
    if isinstance(value, bool):
        raise ConfigError(f"{where} is not a number {hint}")
    try:
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            converted: float = int(value) if not isinstance(value, str) else int(value.strip())
        else:
            converted = float(value)
    except (TypeError, ValueError):
        noun = "an integer" if kind is int else "a number"
        raise ConfigError(f"{where} is not {noun} {hint}") from None
    if converted != converted or converted in (float("inf"), float("-inf")):
        raise ConfigError(f"{where} is not a finite number {hint}")
    if minimum is not None and converted < minimum:
        raise ConfigError(f"{where} must be >= {minimum:g} {hint}")
    return converted
