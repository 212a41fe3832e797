"""The settings object and what else is written from the option declarations.

Every option is declared once, in :mod:`langchain_promptstrat.options` (its one name is its
keyword, its key here and, in capitals, its environment variable). From those declarations come

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
from dataclasses import dataclass
from typing import Any

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.errors import warn_renamed as _warn_renamed
from langchain_promptstrat.options import (
    OPTIONS_CLASSES,
    DedupeOptions,
    EpochIncrementOptions,
    SharedOptions,
    ShortenToolsOptions,
    StableOptions,
    ToolResultsOptions,
    check_max_tokens,
)

ENV_PREFIX = "PROMPTSTRAT_"
"""Every setting's environment variable is also read with this prefix; the prefixed one wins."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


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
