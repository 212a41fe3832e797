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

A strategy names its own options (``ShortenToolsEpochStable(epoch_size=40)``) in one
``TypedDict`` whose fields are ``Annotated[type, SettingKey(key)]``; everything else about an
option (variable, default, validation, doc) is its key's, here. From that one class come the
constructor's keywords as type checkers see them (``**options: Unpack[...]``),
:func:`option_keys`, the ``Args:`` entries (:func:`document_options`) and the settings
page's options table (:mod:`langchain_promptstrat.docs_tables`). :func:`settings_with_options`
applies the options over a ``Settings`` and refuses an option the strategy does not take, so
a key meant for another strategy is never silently ignored.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import textwrap
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_promptstrat.errors import ConfigError

__all__ = [
    "ENV_PREFIX",
    "SettingKey",
    "Settings",
    "describe_setting",
    "document_options",
    "documented_default",
    "environment_variables",
    "option_keys",
    "setting_keys",
    "settings_with_options",
    "strategy_options",
]

ENV_PREFIX = "PROMPTSTRAT_"
"""Every setting's environment variable is also read with this prefix; the prefixed one wins."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _setting(default: Any, env: str, kind: type, *, doc: str, minimum: float | None = 0, shown: str | None = None) -> Any:
    """Return the field of one setting: its default, variable, type, lower bound, doc and default as documented."""
    return field(default=default, metadata={"env": env, "kind": kind, "minimum": minimum, "doc": doc, "shown": shown})


@dataclass(frozen=True)
class Settings:
    """Typed, validated thresholds; build with :meth:`Settings.load` to read the environment.

    ``Settings()`` gives the defaults without looking at the environment; ``Settings.load()``
    applies explicit arguments over environment variables (``PROMPTSTRAT_<NAME>``, then
    ``<NAME>``) over defaults. One object may hold the keys of every strategy and be passed
    to all of them: a strategy reads its own keys and is never checked against the others.
    """

    # shorten_tools (not in the default list)
    full_tool_calls: int = _setting(0, "FULL_TOOL_CALLS", int, doc="The newest tool calls (by position) kept whole.")
    full_tool_outputs: int = _setting(10, "FULL_TOOL_OUTPUTS", int, doc="The newest tool outputs kept whole.")
    max_tool_calls: int = _setting(40, "MAX_TOOL_CALLS", int, doc="Tool calls older than this position are dropped.")
    max_tool_outputs: int | None = _setting(
        None, "MAX_TOOL_OUTPUTS", int, doc="Tool outputs older than this position are dropped.", shown="``max_tool_calls``"
    )
    max_tool_chars: int = _setting(
        100_000, "MAX_TOOL_CHARS", int,
        doc="Tool content stays whole while the content kept so far is under this many characters, "
        "so a short conversation is never touched.",
    )
    protect_current_turn: bool = _setting(
        False, "PROTECT_CURRENT_TURN", bool, minimum=None,
        doc="Keep every tool message of the newest user turn whole (see ``shorten_tools`` for why it is off).",
    )
    # shorten_tools_epoch and shorten_tools_epoch_increment
    epoch_tool_call_threshold: int = _setting(50, "EPOCH_TOOL_CALL_THRESHOLD", int, doc="No compaction at or below this many tool calls.")
    epoch_full_tool_calls: int = _setting(20, "EPOCH_FULL_TOOL_CALLS", int, doc="The most recent tool calls kept whole.")
    epoch_compacted_tool_calls: int = _setting(
        80, "EPOCH_COMPACTED_TOOL_CALLS", int,
        doc="Tool calls shortened before the whole ones (at the first epoch size, when the epoch grows); older ones are dropped.",
    )
    epoch_size: int = _setting(
        20, "EPOCH_SIZE", int, doc="New tool calls before the boundary advances (the initial size, when the epoch grows)."
    )
    epoch_increment_epochs_per_increase: int = _setting(
        3, "EPOCH_INCREMENT_EPOCHS_PER_INCREASE", int, doc="Completed epochs before the epoch grows (0: never)."
    )
    epoch_increment_size_increase: int = _setting(
        10, "EPOCH_INCREMENT_SIZE_INCREASE", int, doc="Calls added to the epoch at each periodic increase."
    )
    epoch_increment_repeat_increase: int = _setting(
        10, "EPOCH_INCREMENT_REPEAT_INCREASE", int, doc="Calls added to the epoch for each epoch that held a repeated call."
    )
    epoch_increment_max_size: int = _setting(60, "EPOCH_INCREMENT_MAX_SIZE", int, doc="Upper bound of the epoch's growth.")
    epoch_increment_compacted_growth_ratio: float = _setting(
        2.0, "EPOCH_INCREMENT_COMPACTED_GROWTH_RATIO", float, doc="Extra shortened calls kept per extra epoch call."
    )
    epoch_increment_max_compacted_tool_calls: int = _setting(
        160, "EPOCH_INCREMENT_MAX_COMPACTED_TOOL_CALLS", int, doc="Upper bound of the grown shortened window."
    )
    # dispatcher
    prompt_strategy: str | None = _setting(
        None, "PROMPT_STRATEGY", str, minimum=None, doc="The comma-separated default strategy list.", shown="`DEFAULT_STRATEGIES`"
    )
    # token-target ladder: tool_results, sliding_window, summary, CompactionLadder
    tool_results_min_tokens: int = _setting(
        200, "TOOL_RESULTS_MIN_TOKENS", int, doc="Only tool outputs larger than this many tokens become placeholders."
    )
    keep_steps: int = _setting(1, "KEEP_STEPS", int, minimum=1, doc="The newest steps no token-target rung ever touches.")
    ladder_max_tokens: int = _setting(
        100_000, "LADDER_MAX_TOKENS", int, doc="The token target of a rung used on its own (a ladder uses its own)."
    )
    ladder_low_ratio: float = _setting(
        0.7, "LADDER_LOW_RATIO", float, doc="A CompactionLadder compacts down to this share of max_tokens (low_tokens)."
    )
    # dedupe_outputs (first in the default list)
    dedupe_tool_call_threshold: int = _setting(
        5, "DEDUPE_TOOL_CALL_THRESHOLD", int,
        doc="The first this many tool outputs stay as they are, so a short conversation is never touched; later ones point repeated lines back.",
    )
    dedupe_min_line_chars: int = _setting(
        20, "DEDUPE_MIN_LINE_CHARS", int,
        doc="Lines of at most this many characters are never pointed back (a brace or a blank line repeats without meaning anything).",
    )
    # shorten_tools_epoch_stable
    stable_tool_call_threshold: int = _setting(
        120, "STABLE_TOOL_CALL_THRESHOLD", int, doc="No compaction at or below this many tool calls."
    )
    stable_full_tool_calls: int = _setting(
        20, "STABLE_FULL_TOOL_CALLS", int,
        doc="At most this many tool calls beyond the epoch's new ones stay whole; under a ceiling, also at most "
        "stable_whole_ratio of it (at 0.0, the default, only the newest step stays whole).",
    )
    stable_epoch_size: int = _setting(
        80, "STABLE_EPOCH_SIZE", int, doc="New tool calls before the whole ones graduate to shortened."
    )
    stable_read_output_chars: int = _setting(
        1_200, "STABLE_READ_OUTPUT_CHARS", int,
        doc="A shortened call that reads a file (a read/view/open tool, or cat, nl, head, tail, sed -n...) keeps whole lines "
        "of its head and tail within this many characters; 0 shortens it like any other output (400 characters).",
    )
    stable_narration_chars: int = _setting(
        400, "STABLE_NARRATION_CHARS", int,
        doc="An assistant message whose tool calls are all shortened keeps this many characters of its text "
        "(hash-stamped head and tail, as a shortened output); 0 keeps its text whole.",
    )
    stable_max_compacted_tool_calls: int = _setting(
        240, "STABLE_MAX_COMPACTED_TOOL_CALLS", int, doc="The shortened region holds at most this many calls before a front drop."
    )
    # the context ceiling of the bounded default (shorten_tools_epoch_stable)
    max_context_tokens: int | None = _setting(
        None, "PROMPTSTRAT_MAX_TOKENS", int,
        doc="The context ceiling of the default strategy, in tokens.", shown="the model's window, else 111,616",
    )
    stable_token_margin: float = _setting(
        0.02, "STABLE_TOKEN_MARGIN", float, doc="Share of the ceiling kept free for the token counter's error."
    )
    stable_low_ratio: float = _setting(
        0.9, "STABLE_LOW_RATIO", float, doc="A ceiling-driven epoch advance aims at or below this share of the ceiling."
    )
    stable_front_ratio: float = _setting(
        0.6, "STABLE_FRONT_RATIO", float,
        doc="A ceiling-driven front drop removes steps after the kept head down to this share of the ceiling.",
    )
    stable_head_ratio: float = _setting(
        0.2, "STABLE_HEAD_RATIO", float,
        doc="A ceiling-driven front drop keeps the oldest steps within this share of the ceiling (the cached head).",
    )
    stable_whole_ratio: float = _setting(
        0.0, "STABLE_WHOLE_RATIO", float,
        doc="After a ceiling-driven advance the newest whole calls take at most this share of the ceiling "
        "(the newest step always stays whole).",
    )
    stable_front_drop_chunk: int = _setting(
        120, "STABLE_FRONT_DROP_CHUNK", int, minimum=1, doc="The oldest calls are dropped in multiples of this many at once."
    )

    # inbox
    inbox_quiet_seconds: float = _setting(
        1.0, "INBOX_QUIET_SECONDS", float,
        doc="A writable inbox file is picked up only once unchanged this long (an editor may still be writing it).",
    )
    inbox_lease_seconds: float = _setting(
        600.0, "INBOX_LEASE_SECONDS", float,
        doc="A claimed, unacknowledged notice of a live reader on another host is recovered after this long.",
    )
    inbox_max_notice_bytes: int = _setting(
        1_000_000, "INBOX_MAX_NOTICE_BYTES", int, minimum=1,
        doc="Larger inbox notices are left pending with a warning, never delivered.",
    )
    inbox_pickup_share: float = _setting(
        0.25, "INBOX_PICKUP_SHARE", float,
        doc="One pickup admits notices, in order, up to this share of the context ceiling (a byte counted as a token); "
        "the rest wait for the next model call.",
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
        known = _known_variables()
        present = tuple((name, value) for name, value in env.items() if name in known)
        if not explicit and cls is Settings:  # read at every call, built once per environment seen
            return _from_environment(present)
        return cls._build(dict(present), explicit)

    @classmethod
    def _build(cls, env: Mapping[str, str], explicit: Mapping[str, Any]) -> Settings:
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


@functools.lru_cache(maxsize=16)
def _from_environment(present: tuple[tuple[str, str], ...]) -> Settings:
    """Return the settings these environment variables give (a frozen value: the same variables, the same object)."""
    return Settings._build(dict(present), {})


@functools.cache
def _known_variables() -> frozenset[str]:
    return frozenset(name for env in setting_keys().values() for name in _variables(env))


def setting_keys() -> dict[str, str]:
    """Return ``{key: environment variable}`` for every setting (the reference's spelling)."""
    return {name: f.metadata["env"] for name, f in _fields().items()}


@functools.cache
def _fields() -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(Settings)}


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


@dataclass(frozen=True)
class SettingKey:
    """Marks a strategy option as setting ``key``: ``epoch_size: Annotated[int | None, SettingKey("stable_epoch_size")]``.

    A strategy's ``options`` class (a ``TypedDict`` with ``total=False``) holds one such
    field per option that is a setting; the constructor takes them as ``**options:
    Unpack[...]``, so mypy and pyright check each keyword and flag one it does not take.
    """

    key: str


@functools.cache
def _keys_of(options: type) -> dict[str, str]:
    hints = typing.get_type_hints(options, include_extras=True)
    keys: dict[str, str] = {}
    for name in options.__annotations__:
        marks = [m for m in getattr(hints[name], "__metadata__", ()) if isinstance(m, SettingKey)]
        if len(marks) != 1 or marks[0].key not in setting_keys():
            raise TypeError(f"{options.__name__}.{name} must be Annotated[<type>, SettingKey(<a settings key>)]")
        keys[name] = marks[0].key
    return keys


def option_keys(strategy: type) -> dict[str, str]:
    """Return option name -> settings key for each option of ``strategy`` that is a setting, in declaration order.

    They are the fields of the strategy's ``options`` class (none when it has none).
    """
    options = getattr(strategy, "options", None)
    return {} if options is None else dict(_keys_of(options))


def strategy_options(strategy: type) -> list[str]:
    """Return the option names ``strategy``'s constructor takes, in signature order (``settings`` included).

    The options that are settings (its ``options`` class, taken as ``**options``) come last.
    """
    parameters = inspect.signature(strategy).parameters.values()  # the constructor's, without self
    skipped = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    names = [p.name for p in parameters if p.name != "self" and p.kind not in skipped]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        names += [name for name in option_keys(strategy) if name not in names]
    return names


def documented_default(key: str) -> str:
    """Return setting ``key``'s default as the docs show it: ``100,000``, ``0.02``, ``False``, or what it follows."""
    f = _fields()[key]
    if f.metadata["shown"] is not None:
        return str(f.metadata["shown"])
    value = f.default
    if isinstance(value, bool) or not isinstance(value, int):
        return str(value)
    return f"{value:,}"


def describe_setting(key: str) -> str:
    """Return the doc of setting ``key`` with its key and default: ``"... Setting ``epoch_size``, default 20."``."""
    return f"{_fields()[key].metadata['doc']} Setting ``{key}``, default {documented_default(key)}."


def document_options(doc: str | None, keys: Mapping[str, str]) -> str | None:
    """Return ``doc`` (a constructor's docstring) with an ``Args:`` entry for each option in ``keys`` ending its Args section.

    Each entry is :func:`describe_setting` of the option's key, so the text ``help()`` shows
    is written once, with the key, in :class:`Settings`. A docstring without an ``Args:``
    section is returned as it is.
    """
    if not doc or not keys:
        return doc
    lines = doc.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Args:"), None)
    if start is None:  # a third party's docstring in another style is left as written
        return doc
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())] + "    "
    end = start + 1
    while end < len(lines) and lines[end].startswith(indent):
        end += 1
    entries: list[str] = []
    for option, key in keys.items():
        entries += textwrap.wrap(
            f"{option}: {describe_setting(key)}", width=92, initial_indent=indent, subsequent_indent=indent + "    ",
            break_on_hyphens=False,
        )
    return "\n".join([*lines[:end], *entries, *lines[end:]])


def settings_with_options(
    strategy: type,
    settings: Settings | None,
    given: Mapping[str, object],
    /,
    *,
    reads: Iterable[str] = (),
) -> Settings:
    """Return the settings a strategy runs with: its explicit options over ``settings`` (or the environment).

    ``given`` holds the constructor's keyword arguments outside its signature: the options of
    its ``options`` class (:func:`option_keys`), each landing on its settings key, and
    anything else. None means "not given", so the value comes from ``settings`` when one is
    passed, else the environment, else the default. An explicit option always wins, as a
    keyword argument wins over a default in any Python call.

    The settings key of one of the strategy's options (``stable_epoch_size`` for
    ``epoch_size``), or a key in ``reads`` that it reads without an option of its own, is
    accepted in its place, so a configuration written with settings keys
    (``get_strategy(name, **keys)``) keeps working. Anything else raises
    :class:`ConfigError` naming the strategy and the options it takes: a key another
    strategy uses belongs in a ``Settings`` shared by the strategies, which is never checked
    against any one of them.
    """
    keys = option_keys(strategy)
    explicit: dict[str, Any] = {keys[name]: value for name, value in given.items() if name in keys and value is not None}
    option_of_key = {key: name for name, key in keys.items()}
    accepted = set(option_of_key) | set(reads)
    refused: list[str] = []
    for name, value in given.items():
        if name in keys:
            continue
        if name not in accepted:
            refused.append(name)
            continue
        option = option_of_key.get(name)
        if option is not None and given.get(option) is not None and value is not None:
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
