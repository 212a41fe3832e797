"""Every setting, declared once in :class:`Settings`: its key, type, default, doc, lower bound and
environment variable.

A strategy takes some settings as options, in one ``TypedDict`` whose fields are
``Annotated[type | None, SettingKey(key)]``: its typed keywords (``**options: Unpack[...]``),
its ``Args:`` entries (:func:`document_options`) and the settings page's table
(:mod:`langchain_promptstrat.docs_tables`) come from that class and the keys' fields here;
:func:`settings_with_options` refuses an option the strategy does not take.

Each key is read from ``PROMPTSTRAT_<NAME>``, then ``<NAME>``, the variable Scout-AI reads (the
agent system whose compaction the ``shorten_tools`` family reimplements; the prefixed name is
unambiguously this package's, so it wins). Precedence is explicit argument, environment,
default; the environment is read whenever a strategy is built, never frozen for the process.
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

from langchain_promptstrat.defaults import DEFAULT_STRATEGIES
from langchain_promptstrat.errors import ConfigError

ENV_PREFIX = "PROMPTSTRAT_"
"""Every setting's environment variable is also read with this prefix; the prefixed one wins."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _setting(
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
    """Return a setting's field.

    ``minimum`` and ``maximum`` are the values it may take at both ends, ``below`` a value it
    must stay under: the one place its bounds are checked, so every value refused gets the
    same message. ``env`` defaults to the key in capitals; ``shown`` is the default as the docs
    show it when it is not the value; ``reader`` is (who reads it, the argument that sets it)
    for a setting that is no strategy's option.
    """
    bounds = {"minimum": minimum, "maximum": maximum, "below": below}
    described = {"doc": doc, "env": env, "shown": shown, "reader": reader}
    return field(default=default, metadata={**described, **bounds})


_AT_PICKUP = ("`inbox` (read at each pickup)", "—")


@dataclass(frozen=True)
class Settings:
    """Typed, validated thresholds; build with :meth:`Settings.load` to read the environment.

    ``Settings()`` is the defaults. One object may hold the keys of every strategy and be
    passed to all of them: a strategy reads its own keys and is never checked against the others.
    """

    # shorten_tools (not in the default list)
    full_tool_calls: int = _setting(0, "The newest tool calls (by position) kept whole.")
    full_tool_outputs: int = _setting(10, "The newest tool outputs kept whole.")
    max_tool_calls: int = _setting(40, "Tool calls older than this position are dropped.")
    max_tool_outputs: int | None = _setting(
        None, "Tool outputs older than this position are dropped.", shown="``max_tool_calls``"
    )
    max_tool_chars: int = _setting(
        100_000,
        "Tool content stays whole while the content kept so far is under this many characters, "
        "so a short conversation is never touched.",
    )
    protect_current_turn: bool = _setting(
        False,
        "Keep every tool message of the newest user turn whole (see ``shorten_tools`` for why it "
        "is off).",
        minimum=None,
    )
    # shorten_tools_epoch and shorten_tools_epoch_increment
    epoch_tool_call_threshold: int = _setting(50, "No compaction at or below this many tool calls.")
    epoch_full_tool_calls: int = _setting(20, "The most recent tool calls kept whole.")
    epoch_compacted_tool_calls: int = _setting(
        80,
        "Tool calls shortened before the whole ones (at the first epoch size, when the epoch "
        "grows); older ones are dropped.",
    )
    epoch_size: int = _setting(
        20, "New tool calls before the boundary advances (the initial size, when the epoch grows)."
    )
    epoch_increment_epochs_per_increase: int = _setting(
        3, "Completed epochs before the epoch grows (0: never)."
    )
    epoch_increment_size_increase: int = _setting(
        10, "Calls added to the epoch at each periodic increase."
    )
    epoch_increment_repeat_increase: int = _setting(
        10, "Calls added to the epoch for each epoch that held a repeated call."
    )
    epoch_increment_max_size: int = _setting(60, "Upper bound of the epoch's growth.")
    epoch_increment_compacted_growth_ratio: float = _setting(
        2.0, "Extra shortened calls kept per extra epoch call."
    )
    epoch_increment_max_compacted_tool_calls: int = _setting(
        160, "Upper bound of the grown shortened window."
    )
    # the strategy list of prepare_prompt and the front ends
    prompt_strategy: str | None = _setting(
        None,
        "The comma-separated default strategy list.",
        minimum=None,
        shown=f"`{','.join(DEFAULT_STRATEGIES)}`",
        reader=("`prepare_prompt`, hook, middleware", "`strategies`"),
    )
    read_back_handles: bool = _setting(
        True,
        "A shortened output or call ends with its handle, `[whole: read_back(call=N)]`, and the "
        "compaction notice names the dropped calls and the tool; so do a ladder's placeholders "
        "(their handle), window note and summaries (the calls they stand for); off, none names "
        "`read_back` (for an agent without the tool).",
        minimum=None,
        reader=(
            "`shorten_tools`, the epoch pair, `shorten_tools_epoch_stable`, `tool_results`, "
            "`sliding_window`, `summary`",
            "— (the middleware's `read_back=False` turns it off)",
        ),
    )
    # token-target ladder: tool_results, sliding_window, summary, CompactionLadder
    tool_results_min_tokens: int = _setting(
        200, "Only tool outputs larger than this many tokens become placeholders."
    )
    keep_steps: int = _setting(1, "The newest steps no token-target rung ever touches.", minimum=1)
    ladder_max_tokens: int = _setting(
        100_000, "The token target of a rung used on its own (a ladder uses its own)."
    )
    ladder_low_ratio: float = _setting(
        0.7,
        "A CompactionLadder compacts down to this share of max_tokens (low_tokens); "
        "1 turns the watermark off.",
        maximum=1,
        reader=("`CompactionLadder`", "`low_tokens` (= ratio × `max_tokens`)"),
    )
    # dedupe_outputs (first in the default list)
    dedupe_tool_call_threshold: int = _setting(
        5,
        "The first this many tool outputs stay as they are, so a short conversation is never "
        "touched; "
        "later ones point repeated lines back.",
    )
    dedupe_min_line_chars: int = _setting(
        20,
        "Lines of at most this many characters are never pointed back (a brace or a blank line "
        "repeats without meaning anything).",
    )
    # shorten_tools_epoch_stable
    stable_tool_call_threshold: int = _setting(
        120, "No compaction at or below this many tool calls."
    )
    stable_full_tool_calls: int = _setting(
        20,
        "By count, this many tool calls beyond the epoch's new ones stay whole; when a prompt "
        "would cross the ceiling "
        "the edge moves up to the newest step, keeping an older call whole only within this count "
        "and stable_whole_ratio "
        "of the ceiling (at 0.0, the default, none).",
    )
    stable_epoch_size: int = _setting(
        80, "New tool calls before the whole ones graduate to shortened."
    )
    stable_read_output_chars: int = _setting(
        1_200,
        "A shortened call that reads a file (a read/view/open tool, or cat, nl, head, tail, sed "
        "-n...) keeps whole lines "
        "of its head and tail within this many characters; 0 shortens it like any other output "
        "(400 characters).",
    )
    stable_narration_chars: int = _setting(
        400,
        "An assistant message whose tool calls are all shortened keeps this many characters of "
        "its text "
        "(hash-stamped head and tail, as a shortened output); 0 keeps its text whole.",
    )
    stable_max_compacted_tool_calls: int = _setting(
        240, "The shortened region holds at most this many calls before a front drop."
    )
    max_context_tokens: int | None = _setting(
        None,
        "The context ceiling of the default strategy, in tokens.",
        minimum=1,
        env="PROMPTSTRAT_MAX_TOKENS",
        shown="the model's window, else 111,616",
        reader=(
            "`shorten_tools_epoch_stable`",
            "`max_tokens` (tokens, or a share of the model's window)",
        ),
    )
    stable_token_margin: float = _setting(
        0.02, "Share of the ceiling kept free for the token counter's error.", below=1
    )
    stable_low_ratio: float = _setting(
        0.9, "A ceiling-driven epoch advance aims at or below this share of the ceiling."
    )
    stable_front_ratio: float = _setting(
        0.6,
        "A ceiling-driven front drop removes steps after the kept head down to this share of the "
        "ceiling.",
    )
    stable_head_ratio: float = _setting(
        0.2,
        "A ceiling-driven front drop keeps the oldest steps within this share of the ceiling (the "
        "cached head).",
    )
    stable_whole_ratio: float = _setting(
        0.0,
        "After a ceiling-driven advance the newest whole calls take at most this share of the "
        "ceiling "
        "(the newest step always stays whole).",
    )
    stable_front_drop_chunk: int = _setting(
        120, "The oldest calls are dropped in multiples of this many at once.", minimum=1
    )
    # inbox
    inbox_quiet_seconds: float = _setting(
        1.0,
        "A writable inbox file is picked up only once unchanged this long (an editor may still be "
        "writing it).",
        reader=_AT_PICKUP,
    )
    inbox_lease_seconds: float = _setting(
        600.0,
        "A claimed, unacknowledged notice of a live reader on another host is recovered after "
        "this long.",
        reader=_AT_PICKUP,
    )
    inbox_max_notice_bytes: int = _setting(
        1_000_000,
        "Larger inbox notices are left pending with a warning, never delivered.",
        minimum=1,
        reader=_AT_PICKUP,
    )
    inbox_pickup_share: float = _setting(
        0.25,
        "One pickup admits notices, in order, up to this share of the context ceiling, each "
        "counted with the prompt's token counter; the rest wait for the next model call.",
        reader=_AT_PICKUP,
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(
                self, f.name, _validate(f.name, getattr(self, f.name), source="argument")
            )
        if self.max_tool_outputs is None:
            object.__setattr__(self, "max_tool_outputs", self.max_tool_calls)

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


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
_KIND = {
    key: next(t for t in typing.get_args(hint) or (hint,) if t is not type(None))
    for key, hint in typing.get_type_hints(Settings).items()
}
"""Each key's type without None: what a value given for it is converted to."""
_ENV = {key: f.metadata["env"] or key.upper() for key, f in _FIELDS.items()}
_VARIABLES = {
    key: (env,) if env.startswith(ENV_PREFIX) else (ENV_PREFIX + env, env)
    for key, env in _ENV.items()
}
"""Each key's environment variables, the one that wins first."""
_KNOWN = frozenset(variable for variables in _VARIABLES.values() for variable in variables)


def _build(env: Mapping[str, str], explicit: Mapping[str, Any]) -> Settings:
    """Return the settings of ``explicit`` over the variables in ``env`` (the prefixed spelling
    first) over the defaults."""
    values = dict(explicit)
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


@dataclass(frozen=True)
class SettingKey:
    """Marks a strategy option as setting ``key``: ``epoch_size: Annotated[int | None,
    SettingKey("stable_epoch_size")]``."""

    key: str


@functools.cache
def _keys_of(options: type) -> dict[str, str]:
    hints = typing.get_type_hints(options, include_extras=True)
    keys: dict[str, str] = {}
    for name in options.__annotations__:
        marks = [m for m in getattr(hints[name], "__metadata__", ()) if isinstance(m, SettingKey)]
        if len(marks) != 1 or marks[0].key not in _FIELDS:
            raise TypeError(
                f"{options.__name__}.{name} must be Annotated[<type>, SettingKey(<a settings key>)]"
            )
        keys[name] = marks[0].key
    return keys


def option_keys(strategy: type) -> dict[str, str]:
    """Return option name -> settings key for each field of ``strategy.options`` (none without one),
    in declaration order."""
    options = getattr(strategy, "options", None)
    return {} if options is None else dict(_keys_of(options))


def strategy_options(strategy: type) -> list[str]:
    """Return the option names ``strategy``'s constructor takes, in signature order (``settings``
    included, its ``options`` last)."""
    parameters = inspect.signature(strategy).parameters.values()  # the constructor's, without self
    skipped = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    names = [p.name for p in parameters if p.name != "self" and p.kind not in skipped]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        names += [name for name in option_keys(strategy) if name not in names]
    return names


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


def describe_setting(key: str) -> str:
    """Return the doc of setting ``key`` with its key and default: ``"... Setting ``epoch_size``,
    default 20."``."""
    return f"{_FIELDS[key].metadata['doc']} Setting ``{key}``, default {documented_default(key)}."


def document_options(doc: str | None, keys: Mapping[str, str]) -> str | None:
    """Return ``doc`` (a constructor's docstring) with an ``Args:`` entry, :func:`describe_setting`,
    for each option in ``keys``.

    The entries end the ``Args:`` section; a docstring without one is returned as it is.
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
    entries = [
        line
        for option, key in keys.items()
        for line in textwrap.wrap(
            f"{option}: {describe_setting(key)}",
            width=92,
            initial_indent=indent,
            subsequent_indent=indent + "    ",
            break_on_hyphens=False,
        )
    ]
    return "\n".join([*lines[:end], *entries, *lines[end:]])


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

    ``given`` holds the constructor's keywords outside its signature: each option of its
    ``options`` class lands on its settings key (None: not given). The settings key of one of
    its options, or one in ``reads`` (a key it reads without an option), is accepted in its
    place, so ``get_strategy(name, **keys)`` works. Anything else raises :class:`ConfigError`
    naming the strategy and its options: a key another strategy uses belongs in a shared
    ``Settings``, which is never checked against any one strategy.
    """
    keys = option_keys(strategy)
    option_of_key = {key: name for name, key in keys.items() if key not in keys}
    for name, value in given.items():
        option = option_of_key.get(name)
        if option is not None and value is not None and given.get(option) is not None:
            raise ConfigError(
                f"{_strategy_label(strategy)}: {option} given twice, as {option}= and as its "
                f"settings key {name}="
            )
    refused = [
        name
        for name in given
        if name not in keys and name not in option_of_key and name not in reads
    ]
    if refused:
        raise ConfigError(_refusal(strategy, refused))
    explicit: dict[str, Any] = {
        keys.get(name, name): value for name, value in given.items() if value is not None
    }
    return Settings.load(settings, **explicit)


def _strategy_label(strategy: type) -> str:
    name = getattr(strategy, "strategy_name", None)
    return (
        f"{strategy.__name__} ({name})"
        if isinstance(name, str) and name != strategy.__name__
        else strategy.__name__
    )


def _refusal(strategy: type, refused: list[str]) -> str:
    """Return the message for options ``strategy`` does not take, with a hint for settings keys of
    other strategies."""
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
