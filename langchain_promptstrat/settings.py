"""Every option, declared once: its name, type, default, doc, bounds and environment variable.

An option is a field of one small dataclass of options (``StableOptions`` for
``shorten_tools_epoch_stable``, ``DedupeOptions``, ... and ``SharedOptions`` for what the front
ends read). Its one name is its keyword, its key in :class:`Settings` and, in capitals, its
environment variable: ``stable_epoch_size``, ``STABLE_EPOCH_SIZE``. From these declarations come

* :class:`Settings`, the bag of every option that one object passes to many strategies: it
  inherits the options classes and declares nothing of its own;
* each strategy's typed keywords: a strategy class inherits its options class, and
  :class:`~langchain_promptstrat.strategy.PromptStrategy` is a ``dataclass_transform`` base, so
  mypy and pyright read the constructor from these fields;
* the checks (:func:`_validate`: one message for every value refused), the ``Args:`` text of
  each constructor (:func:`describe_setting`), the settings page's table
  (:mod:`~langchain_promptstrat.docs_tables`) and ``promptstrat settings``.

Each key is read from ``PROMPTSTRAT_<NAME>``, then ``<NAME>``, the variable Scout-AI reads (the
agent system whose compaction the ``shorten_tools`` family reimplements; the prefixed name is
unambiguously this package's, so it wins). Precedence is explicit argument, environment,
default; the environment is read whenever a strategy is built, never frozen for the process.
The spellings this package used before one name per option (``epoch_size=`` for
``stable_epoch_size``, ``max_context_tokens``, ``LADDER_MAX_TOKENS``...) still work for one
release, with a ``DeprecationWarning``.
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
from typing import Any, ClassVar

from langchain_promptstrat.defaults import DEFAULT_STRATEGIES
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.errors import warn_renamed as _warn_renamed

ENV_PREFIX = "PROMPTSTRAT_"
"""Every setting's environment variable is also read with this prefix; the prefixed one wins."""

MaxTokens = int | tuple[str, float] | None
"""A ceiling as users give it: tokens, ``("fraction", share)`` of the model's window, or None (find
one)."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def option(
    default: Any,
    doc: str,
    *,
    minimum: float | None = 0,
    maximum: float | None = None,
    below: float | None = None,
    env: str | None = None,
    shown: str | None = None,
    reader: tuple[str, str] | None = None,
) -> Any:
    """Return the field of one option.

    ``minimum`` and ``maximum`` are the values it may take at both ends, ``below`` a value it
    must stay under: the one place its bounds are checked, so every value refused gets the
    same message. ``env`` defaults to the name in capitals; ``shown`` is the default as the docs
    show it when it is not the value; ``reader`` is (who reads it, what sets it, or "") for an
    option of :class:`SharedOptions`, which no strategy takes under its name.
    """
    bounds = {"minimum": minimum, "maximum": maximum, "below": below}
    described = {"doc": doc, "env": env, "shown": shown, "reader": reader}
    return field(default=default, metadata={**described, **bounds})


def check_max_tokens(value: Any, name: str = "max_tokens") -> MaxTokens:
    """Return ``value`` if it is a valid ceiling form, else raise :class:`ConfigError` naming it."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise ConfigError(f"{name}={value!r} must be a positive number of tokens")
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2 and value[0] == "fraction":
        share = value[1]
        if isinstance(share, (int, float)) and not isinstance(share, bool) and 0 < share <= 1:
            return ("fraction", float(share))
    raise ConfigError(
        f"{name}={value!r} is not a ceiling: give a number of tokens (e.g. 100_000) or "
        "('fraction', 0.8) for that share of the model's input window"
    )


# ---- the options, one class each for a strategy (or a family) and one for the front ends -------


@dataclass(kw_only=True, eq=False)
class DedupeOptions:
    """The options of ``dedupe_outputs``."""

    renamed_from: ClassVar[str] = "dedupe_"

    dedupe_tool_call_threshold: int = option(
        5,
        "The first this many tool outputs stay as they are, so a short conversation is never "
        "touched; later ones point repeated lines back.",
    )
    dedupe_min_line_chars: int = option(
        20,
        "Lines of at most this many characters are never pointed back (a brace or a blank line "
        "repeats without meaning anything).",
    )


@dataclass(kw_only=True, eq=False)
class ShortenToolsOptions:
    """The options of ``shorten_tools``, under the names Scout-AI reads."""

    renamed_from: ClassVar[str] = ""

    full_tool_calls: int = option(0, "The newest tool calls (by position) kept whole.")
    full_tool_outputs: int = option(10, "The newest tool outputs kept whole.")
    max_tool_calls: int = option(40, "Tool calls older than this position are dropped.")
    max_tool_outputs: int | None = option(
        None, "Tool outputs older than this position are dropped.", shown="``max_tool_calls``"
    )
    max_tool_chars: int = option(
        100_000,
        "Tool content stays whole while the content kept so far is under this many characters, "
        "so a short conversation is never touched.",
    )
    protect_current_turn: bool = option(
        False,
        "Keep every tool message of the newest user turn whole (see ``shorten_tools`` for why it "
        "is off).",
        minimum=None,
    )


@dataclass(kw_only=True, eq=False)
class EpochOptions:
    """The options of ``shorten_tools_epoch``, Scout-AI's ``epoch_*`` settings."""

    renamed_from: ClassVar[str] = "epoch_"

    epoch_tool_call_threshold: int = option(50, "No compaction at or below this many tool calls.")
    epoch_full_tool_calls: int = option(20, "The most recent tool calls kept whole.")
    epoch_compacted_tool_calls: int = option(
        80,
        "Tool calls shortened before the whole ones (at the first epoch size, when the epoch "
        "grows); older ones are dropped.",
    )
    epoch_size: int = option(
        20, "New tool calls before the boundary advances (the initial size, when the epoch grows)."
    )


@dataclass(kw_only=True, eq=False)
class EpochIncrementOptions(EpochOptions):
    """The options of ``shorten_tools_epoch_increment``: the epoch's and the growth's."""

    renamed_from: ClassVar[str] = "epoch_increment_"

    epoch_increment_epochs_per_increase: int = option(
        3, "Completed epochs before the epoch grows (0: never)."
    )
    epoch_increment_size_increase: int = option(
        10, "Calls added to the epoch at each periodic increase."
    )
    epoch_increment_repeat_increase: int = option(
        10, "Calls added to the epoch for each epoch that held a repeated call."
    )
    epoch_increment_max_size: int = option(60, "Upper bound of the epoch's growth.")
    epoch_increment_compacted_growth_ratio: float = option(
        2.0, "Extra shortened calls kept per extra epoch call."
    )
    epoch_increment_max_compacted_tool_calls: int = option(
        160, "Upper bound of the grown shortened window."
    )


@dataclass(kw_only=True, eq=False)
class StableOptions:
    """The options of ``shorten_tools_epoch_stable``, the default."""

    renamed_from: ClassVar[str] = "stable_"

    stable_tool_call_threshold: int = option(120, "No compaction at or below this many tool calls.")
    stable_full_tool_calls: int = option(
        20,
        "By count, this many tool calls beyond the epoch's new ones stay whole; when a prompt "
        "would cross the ceiling the edge moves up to the newest step, keeping an older call "
        "whole only within this count and stable_whole_ratio of the ceiling (at 0.0, the "
        "default, none).",
    )
    stable_epoch_size: int = option(
        80, "New tool calls before the whole ones graduate to shortened."
    )
    stable_max_compacted_tool_calls: int = option(
        240, "The shortened region holds at most this many calls before a front drop."
    )
    stable_read_output_chars: int = option(
        1_200,
        "A shortened call that reads a file (a read/view/open tool, or cat, nl, head, tail, sed "
        "-n...) keeps whole lines of its head and tail within this many characters; 0 shortens "
        "it like any other output (400 characters).",
    )
    stable_narration_chars: int = option(
        400,
        "An assistant message whose tool calls are all shortened keeps this many characters of "
        "its text (hash-stamped head and tail, as a shortened output); 0 keeps its text whole.",
    )
    stable_front_drop_chunk: int = option(
        120, "The oldest calls are dropped in multiples of this many at once.", minimum=1
    )
    stable_token_margin: float = option(
        0.02, "Share of the ceiling kept free for the token counter's error.", below=1
    )
    stable_low_ratio: float = option(
        0.9, "A ceiling-driven epoch advance aims at or below this share of the ceiling."
    )
    stable_front_ratio: float = option(
        0.6,
        "A ceiling-driven front drop removes steps after the kept head down to this share of the "
        "ceiling.",
    )
    stable_head_ratio: float = option(
        0.2,
        "A ceiling-driven front drop keeps the oldest steps within this share of the ceiling (the "
        "cached head).",
    )
    stable_whole_ratio: float = option(
        0.0,
        "After a ceiling-driven advance the newest whole calls take at most this share of the "
        "ceiling (the newest step always stays whole).",
    )


@dataclass(kw_only=True, eq=False)
class RungOptions:
    """The options of every token-target rung: ``tool_results``, ``sliding_window``, ``summary``."""

    renamed_from: ClassVar[str] = ""

    keep_steps: int = option(1, "The newest steps no token-target rung ever touches.", minimum=1)


@dataclass(kw_only=True, eq=False)
class ToolResultsOptions(RungOptions):
    """The options of ``tool_results``: every rung's and the size an output must pass to be
    cleared."""

    renamed_from: ClassVar[str] = "tool_results_"

    tool_results_min_tokens: int = option(
        200, "Only tool outputs larger than this many tokens become placeholders."
    )


_AT_PICKUP = ("`inbox` (read at each pickup)", "")


@dataclass(kw_only=True, eq=False)
class SharedOptions:
    """What no strategy takes as a keyword of the same name: the ceiling (a strategy's own
    ``max_tokens`` wins over it), the front ends' list, the handles, the ladder's watermark and
    the inbox's limits (each says who reads it and what sets it)."""

    max_tokens: MaxTokens = option(
        None,
        'The most tokens a prompt may hold, or ``("fraction", share)`` of the model\'s input '
        "window: the ceiling of ``shorten_tools_epoch_stable`` and the target of a token-target "
        "rung used on its own (100,000 when unset), where their own ``max_tokens`` is not given.",
        minimum=1,
        env="PROMPTSTRAT_MAX_TOKENS",
        shown="the model's window, else 111,616",
        reader=(
            "`shorten_tools_epoch_stable`, `tool_results`, `sliding_window`, `summary`, when "
            "given no `max_tokens` of their own",
            "",
        ),
    )
    prompt_strategy: str | None = option(
        None,
        "The comma-separated default strategy list.",
        minimum=None,
        shown=f"`{','.join(DEFAULT_STRATEGIES)}`",
        reader=("`prepare_prompt`, hook, middleware", "`strategies`"),
    )
    read_back_handles: bool = option(
        True,
        "A shortened output or call ends with its handle, `[whole: read_back(call=N)]`, and the "
        "compaction notice names the dropped calls and the tool; so do a ladder's placeholders "
        "(their handle), window note and summaries (the calls they stand for); off, none names "
        "`read_back` (for an agent without the tool).",
        minimum=None,
        reader=(
            "`shorten_tools`, the epoch pair, `shorten_tools_epoch_stable`, `tool_results`, "
            "`sliding_window`, `summary`",
            "the middleware's `read_back=False` (off)",
        ),
    )
    ladder_low_ratio: float = option(
        0.7,
        "A CompactionLadder compacts down to this share of max_tokens (low_tokens); "
        "1 turns the watermark off.",
        maximum=1,
        reader=("`CompactionLadder`", "`low_tokens` (= ratio × `max_tokens`)"),
    )
    inbox_quiet_seconds: float = option(
        1.0,
        "A writable inbox file is picked up only once unchanged this long (an editor may still be "
        "writing it).",
        reader=_AT_PICKUP,
    )
    inbox_lease_seconds: float = option(
        600.0,
        "A claimed, unacknowledged notice of a live reader on another host is recovered after "
        "this long.",
        reader=_AT_PICKUP,
    )
    inbox_max_notice_bytes: int = option(
        1_000_000,
        "Larger inbox notices are left pending with a warning, never delivered.",
        minimum=1,
        reader=_AT_PICKUP,
    )
    inbox_pickup_share: float = option(
        0.25,
        "One pickup admits notices, in order, up to this share of the context ceiling, each "
        "counted with the prompt's token counter; the rest wait for the next model call.",
        reader=_AT_PICKUP,
    )


OPTIONS_CLASSES: tuple[type, ...] = (
    DedupeOptions,
    ShortenToolsOptions,
    EpochOptions,
    EpochIncrementOptions,
    StableOptions,
    RungOptions,
    ToolResultsOptions,
    SharedOptions,
)
"""Every options class: a strategy class inherits one; :class:`Settings` inherits them all."""

RENAMED_KEYS = {"max_context_tokens": "max_tokens", "ladder_max_tokens": "max_tokens"}
"""Settings keys (and their variables) renamed for one spelling of the ceiling: old -> new."""


@dataclass(kw_only=True, unsafe_hash=True)
class Settings(
    SharedOptions,
    ToolResultsOptions,
    StableOptions,
    EpochIncrementOptions,
    ShortenToolsOptions,
    DedupeOptions,
):
    """Every option in one validated, immutable value; build with :meth:`Settings.load` to read the
    environment.

    ``Settings()`` is the defaults. One object may hold the options of every strategy and be
    passed to all of them: a strategy reads its own and is never checked against the others.
    """

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(
                self, f.name, _validate(f.name, getattr(self, f.name), source="argument")
            )
        if self.max_tool_outputs is None:
            object.__setattr__(self, "max_tool_outputs", self.max_tool_calls)
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_frozen" in vars(self):  # a value once built: replace() makes another
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    @classmethod
    def load(
        cls,
        settings: Settings | None = None,
        /,
        *,
        environ: Mapping[str, str] | None = None,
        **explicit: Any,
    ) -> Settings:
        """Return settings from explicit arguments, then the environment, then the defaults.

        ``settings``, when given, is an already-resolved base: the environment is not read
        again and only ``explicit`` applies over it. An explicit ``None`` means "not given".
        """
        explicit = _renamed(explicit)
        _reject_unknown(explicit)
        explicit = {k: v for k, v in explicit.items() if v is not None}
        if settings is not None:
            return settings.replace(**explicit)
        present = tuple(
            (name, value)
            for name, value in (os.environ if environ is None else environ).items()
            if name in _KNOWN
        )
        return _from_environment(present) if not explicit else _build(dict(present), explicit)

    def replace(self, **changes: Any) -> Settings:
        """Return a copy with ``changes`` applied and validated."""
        changes = _renamed(changes)
        _reject_unknown(changes)
        changes = {k: v for k, v in changes.items() if v is not None}
        if (
            "max_tool_calls" in changes
            and "max_tool_outputs" not in changes
            and self.max_tool_outputs == self.max_tool_calls
        ):
            changes["max_tool_outputs"] = None  # keep following max_tool_calls
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Return every key and its value, for reports and ``promptstrat`` output."""
        return dataclasses.asdict(self)


def _accepting_renamed_keys(init: Any) -> Any:
    """Return ``Settings.__init__`` taking a renamed key in its new one's place, with a warning."""

    @functools.wraps(init)
    def __init__(self: Settings, **values: Any) -> None:
        init(self, **_renamed(values))

    return __init__


Settings.__init__ = _accepting_renamed_keys(Settings.__init__)  # type: ignore[method-assign]

_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
_KIND = {
    key: next(t for t in typing.get_args(hint) or (hint,) if t is not type(None))
    for key, hint in typing.get_type_hints(Settings).items()
    if key in _FIELDS
}
"""Each key's type without None (int for the ceiling, which also takes a fraction): what a value
given for it is converted to."""
_ENV = {key: f.metadata["env"] or key.upper() for key, f in _FIELDS.items()}
_VARIABLES = {
    key: (env,) if env.startswith(ENV_PREFIX) else (ENV_PREFIX + env, env)
    for key, env in _ENV.items()
}
"""Each key's environment variables, the one that wins first."""
_RENAMED_VARIABLES = {
    variable: new
    for old, new in RENAMED_KEYS.items()
    for variable in (ENV_PREFIX + old.upper(), old.upper())
    if variable not in _VARIABLES[new]
}
"""The variables of renamed keys that are no longer read under their new name -> the new key."""
_KNOWN = frozenset(
    [
        *(variable for variables in _VARIABLES.values() for variable in variables),
        *_RENAMED_VARIABLES,
    ]
)


def _renamed(values: dict[str, Any]) -> dict[str, Any]:
    """Return ``values`` with each renamed key under its new name, warning once per call that uses
    one."""
    old = [key for key in values if key in RENAMED_KEYS]
    if not old:
        return values
    renamed = dict(values)
    for key in old:
        new = RENAMED_KEYS[key]
        _warn_renamed(f"the setting {key}", new)
        if renamed.get(new) is not None and renamed[key] is not None:
            raise ConfigError(f"{new} given twice, as {new}= and as its old name {key}=")
        value = renamed.pop(key)
        renamed[new] = value if renamed.get(new) is None else renamed[new]
    return renamed


def _build(env: Mapping[str, str], explicit: Mapping[str, Any]) -> Settings:
    """Return the settings of ``explicit`` over the variables in ``env`` (the prefixed spelling
    first) over the defaults."""
    values = dict(explicit)
    for old, key in _RENAMED_VARIABLES.items():
        if old in env and key not in values and variable_read(key, env) is None:
            _warn_renamed(f"the variable {old}", _VARIABLES[key][0])
            values[key] = _validate(key, env[old], source=old)
    for key in _FIELDS:
        variable = variable_read(key, env)
        if key not in values and variable is not None:
            values[key] = _validate(key, env[variable], source=variable)
    return Settings(**values)


def variable_read(key: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Return the variable setting ``key`` is read from in ``environ`` (``os.environ``), or None.

    The prefixed one when both are set.
    """
    env = os.environ if environ is None else environ
    return next((name for name in _VARIABLES[key] if name in env), None)


@functools.lru_cache(maxsize=16)
def _from_environment(present: tuple[tuple[str, str], ...]) -> Settings:
    """Return the settings these environment variables give (a frozen value: the same variables, the
    same object)."""
    return _build(dict(present), {})


def setting_keys() -> dict[str, str]:
    """Return ``{key: environment variable}`` for every setting (Scout-AI's spelling)."""
    return dict(_ENV)


def environment_variables(key: str) -> tuple[str, ...]:
    """Return the variables read for setting ``key``, the one that wins first:
    ``("PROMPTSTRAT_MAX_TOOL_CHARS", "MAX_TOOL_CHARS")``."""
    _reject_unknown({key: None})
    return _VARIABLES[key]


def options_of(cls: type) -> list[str]:
    """Return the options a strategy class takes as keywords, in declaration order: the fields of
    the options classes it inherits (none for a class that inherits none)."""
    names: dict[str, None] = {}
    for group in reversed(cls.__mro__):
        if group in OPTIONS_CLASSES:
            names.update((f.name, None) for f in dataclasses.fields(group))
    return list(names)


def strategy_options(strategy: type) -> list[str]:
    """Return the names ``strategy``'s constructor takes, in signature order (``settings``
    included; the options of a constructor taking ``**options`` last)."""
    parameters = inspect.signature(strategy).parameters.values()  # the constructor's, without self
    skipped = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    names = [p.name for p in parameters if p.kind not in skipped]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        names += [name for name in options_of(strategy) if name not in names]
    return names


def renamed_option(cls: type, name: str) -> str | None:
    """Return the option ``name`` stood for before one name per option (``epoch_size`` for
    ``ShortenToolsEpochStable``: ``stable_epoch_size``), or None."""
    for group in cls.__mro__:
        prefix: str = getattr(group, "renamed_from", "") if group in OPTIONS_CLASSES else ""
        if prefix and prefix + name in vars(group).get("__annotations__", {}):
            return prefix + name
    return None


def documented_default(key: str) -> str:
    """Return setting ``key``'s default as the docs show it: ``100,000``, ``0.02``, ``False``, or
    what it follows."""
    f = _FIELDS[key]
    if f.metadata["shown"] is not None:
        return str(f.metadata["shown"])
    return (
        f"{f.default:,}"
        if isinstance(f.default, int) and not isinstance(f.default, bool)
        else str(f.default)
    )


def option_doc(key: str) -> str:
    """Return the doc declared for option ``key``."""
    return str(_FIELDS[key].metadata["doc"])


def describe_setting(key: str) -> str:
    """Return the doc of setting ``key`` with its default: ``"... Default 20."``."""
    return f"{option_doc(key)} Default {documented_default(key)}."


def document_options(doc: str | None, entries: Mapping[str, str]) -> str | None:
    """Return ``doc`` (a constructor's docstring) with an ``Args:`` entry ``name: text`` for each of
    ``entries``.

    The entries end the ``Args:`` section; a docstring without one is returned as it is.
    """
    if not doc or not entries:
        return doc
    lines = doc.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Args:"), None)
    if start is None:  # a third party's docstring in another style is left as written
        return doc
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())] + "    "
    end = start + 1
    while end < len(lines) and lines[end].startswith(indent):
        end += 1
    added = [
        line
        for name, text in entries.items()
        for line in textwrap.wrap(
            f"{name}: {text}",
            width=92,
            initial_indent=indent,
            subsequent_indent=indent + "    ",
            break_on_hyphens=False,
        )
    ]
    return "\n".join([*lines[:end], *added, *lines[end:]])


def settings_with_options(
    strategy: type,
    settings: Settings | None,
    given: Mapping[str, object],
    /,
    *,
    reads: Iterable[str] = (),
) -> Settings:
    """Return the settings a strategy runs with: its explicit options over ``settings`` (or the
    environment).

    ``given`` holds the constructor's keywords that are options (None: not given): those of the
    options classes ``strategy`` inherits, and the keys in ``reads`` (options it reads without
    a keyword of its own). An option's name from before one name per option is taken with a
    ``DeprecationWarning``. Anything else raises :class:`ConfigError` naming the strategy and
    its options: an option of another strategy belongs in a shared ``Settings``, which is never
    checked against any one strategy.
    """
    taken = set(options_of(strategy)) | set(reads)
    explicit: dict[str, Any] = {}
    refused = []
    for name, value in given.items():
        key = name if name in taken else renamed_option(strategy, name)
        if key is None and RENAMED_KEYS.get(name) in taken:
            key = RENAMED_KEYS[name]
        if key is None:
            refused.append(name)
            continue
        if key != name:
            _warn_renamed(f"{_strategy_label(strategy)}'s option {name}", key)
            if given.get(key) is not None and value is not None:
                raise ConfigError(
                    f"{_strategy_label(strategy)}: {key} given twice, as {key}= and as its old "
                    f"name {name}="
                )
        if value is not None:
            explicit[key] = value
    if refused:
        raise ConfigError(_refusal(strategy, refused))
    return Settings.load(settings, **explicit)


def _strategy_label(strategy: type) -> str:
    name = getattr(strategy, "strategy_name", None)
    return (
        f"{strategy.__name__} ({name})"
        if isinstance(name, str) and name != strategy.__name__
        else strategy.__name__
    )


def _refusal(strategy: type, refused: list[str]) -> str:
    """Return the message for options ``strategy`` does not take, with a hint for options of other
    strategies."""
    noun = "option" if len(refused) == 1 else "options"
    names, options = ", ".join(map(repr, refused)), ", ".join(strategy_options(strategy))
    message = f"{_strategy_label(strategy)} has no {noun} {names}; its options: {options}"
    elsewhere = [n for n in refused if n in _FIELDS]
    if elsewhere:
        example = ", ".join(f"{n}=..." for n in elsewhere)
        message += (
            f". {', '.join(elsewhere)} "
            f"{'is a setting' if len(elsewhere) == 1 else 'are settings'} this strategy does not "
            "read; "
            f"to configure several strategies at once pass settings=Settings({example}) to each"
        )
    return message


def _reject_unknown(values: Mapping[str, Any]) -> None:
    unknown = sorted(values.keys() - _FIELDS.keys())
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}; known: {', '.join(sorted(_FIELDS))}")


def _validate(key: str, value: Any, *, source: str) -> Any:
    """Return ``value`` converted to setting ``key``'s type, or raise ConfigError naming the key,
    the variable and the value.

    ``source`` is ``"argument"`` or the environment variable the value was read from.
    """
    if value is None:
        return None
    if key == "max_tokens" and isinstance(value, (tuple, list)):
        return check_max_tokens(value)  # the ceiling also takes ("fraction", share)
    kind, metadata = _KIND[key], _FIELDS[key].metadata
    where = f"{key}={value!r}" if source == "argument" else f"{source}={value!r}"
    variable = _ENV[key] if source == "argument" else source
    hint = f"(settings key {key}, environment variable {variable})"
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text not in _TRUE | _FALSE:
            raise ConfigError(f"{where} is not a boolean (use true/false) {hint}")
        return text in _TRUE
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} is not a string {hint}")
        return value
    if isinstance(value, bool):
        raise ConfigError(f"{where} is not a number {hint}")
    try:
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError
        converted: float = (
            int(value.strip() if isinstance(value, str) else value) if kind is int else float(value)
        )
    except (TypeError, ValueError):
        raise ConfigError(
            f"{where} is not {'an integer' if kind is int else 'a number'} {hint}"
        ) from None
    if converted != converted or converted in (float("inf"), float("-inf")):
        raise ConfigError(f"{where} is not a finite number {hint}")
    minimum, maximum, below = metadata["minimum"], metadata["maximum"], metadata["below"]
    refused = (
        (minimum is not None and converted < minimum)
        or (maximum is not None and converted > maximum)
        or (below is not None and converted >= below)
    )
    if refused:
        raise ConfigError(f"{where} must be {_bounds_text(minimum, maximum, below)} {hint}")
    return converted


def _bounds_text(minimum: float | None, maximum: float | None, below: float | None) -> str:
    """Return a setting's bounds as a refusal says them: ``>= 0``, ``between 0 and 1``..."""
    if minimum is not None and maximum is not None:
        return f"between {minimum:g} and {maximum:g}"
    ends = [
        f">= {minimum:g}" if minimum is not None else "",
        f"<= {maximum:g}" if maximum is not None else "",
        f"below {below:g}" if below is not None else "",
    ]
    return " and ".join(end for end in ends if end)
