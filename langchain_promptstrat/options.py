"""Every option, declared once: its name, type, default, doc, bounds and environment variable.

An option is a field of one small dataclass of options (``StableOptions`` for
``shorten_tools_epoch_stable``, ``DedupeOptions``, ... and ``SharedOptions`` for what the front
ends read), made by :func:`option`. Its one name is its keyword, its key in
:class:`~langchain_promptstrat.settings.Settings` and, in capitals, its environment variable:
``stable_epoch_size``, ``STABLE_EPOCH_SIZE``. A strategy class inherits its options class;
``Settings`` inherits them all. What is written from these declarations (the settings object,
the checks, the constructors, the ``Args:`` text, the docs table, ``promptstrat settings``) is
listed in :mod:`langchain_promptstrat.settings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain_promptstrat.defaults import DEFAULT_STRATEGIES
from langchain_promptstrat.errors import ConfigError

MaxTokens = int | tuple[str, float] | None
"""A ceiling as users give it: tokens, ``("fraction", share)`` of the model's window, or None (find
one)."""


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
