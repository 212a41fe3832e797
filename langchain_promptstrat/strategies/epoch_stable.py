"""shorten_tools_epoch_stable: epochs that keep the front of the prompt byte-identical.

A provider's prefix cache re-sends everything after the first message that changed. The
reference epoch strategies change the *oldest* kept messages at every epoch advance (new
drops at the front, and the notice with its new counts right after the first kept step),
so every advance re-sends the whole prompt. This strategy keeps the epoch idea and orders
its changes by what they cost the cache. In forward positions (1 = oldest output; a call
shares its output's position), ``T`` outputs are split in three regions::

    1 .. drop_edge                    dropped     the front: changes only at a front drop
    drop_edge+1 .. compaction_edge    shortened   only ever appended to, at its end
    compaction_edge+1 .. T            whole       the newest full calls and the epoch's new calls

* The compaction edge is the reference's frozen edge with fixed epochs
  (``pinned_total - full``, see :func:`~langchain_promptstrat.strategies.epoch.epoch_boundary`):
  every ``stable_epoch_size`` calls, the calls that were whole become shortened. The prompt
  changes from where the shortened region ended, so the system block, the task and every
  call shortened before are still served from the cache.
* The drop edge is a coarse function of the compaction edge alone
  (:func:`front_drop_edge`): 0 while the shortened region holds at most
  ``stable_max_compacted_tool_calls`` calls, then the smallest multiple of
  ``stable_front_drop_chunk`` that brings it back under that bound. The front changes
  rarely, by a large chunk at once, and only together with an advance.
* The notice sits at the boundary, right after the step holding the last shortened call:
  it moves and its counts change only when the boundary moves, where the prompt changes
  anyway.
* The newest occurrence of a repeated call stays whole, as in the reference, but whether a
  frozen call is protected is decided against the history as it was when the call was
  frozen, or at the last front drop if that came later (:meth:`StableState.decided_at`).
  A newer occurrence takes the protection away at the next front drop, so repeated calls
  never change the front in between.

Everything is a pure function of the message list: the edges depend on ``T`` alone, the
protection on the repeat keys of calls no newer than the current epoch's pinned total.

**Under a context ceiling** (what :class:`ShortenToolsEpochStable` always applies, see
:mod:`langchain_promptstrat.ceiling`) the call count is not enough: a few large outputs fill
any window long before the threshold. The model calls of the history are replayed (the
ladder's :func:`~langchain_promptstrat.strategies.ladder.call_points`, memoised per
strategy object by the replay engine), and at each one the estimated prompt (prefix sums of
each call's cost whole and shortened) is compared with the ceiling. Crossing it is an *event*: the compaction edge
advances early to the end of the step before the newest one (only what follows the old edge
is re-sent), and if the prompt is still above ``stable_low_ratio`` of the ceiling steps are
dropped in one chunk down to ``stable_front_ratio``, so the front changes rarely.
The edges only ever move forward, so the prompt is still a function of the history alone.

A drop does not start at the oldest step. The first one fixes a *kept head*: the oldest
(shortened) steps that fit in ``stable_head_ratio`` of the ceiling. Every drop removes a
chunk right after the head, so the system block, the task and the head stay the cached
prefix of every later prompt; a drop re-sends only what follows the head, which is what
makes a low watermark of 60% affordable (with the whole prompt re-sent at each drop, 40%
was the most the price allowed). In forward positions, with a ceiling::

    1 .. head_edge                    shortened   the kept head: fixed at the first drop
    head_edge+1 .. drop_edge          dropped     grows at each drop, by a chunk
    drop_edge+1 .. compaction_edge    shortened
    compaction_edge+1 .. T            whole

A shortened call keeps a form fitted to its kind
(:mod:`~langchain_promptstrat.strategies.epoch_machinery.shortened_form`): a call that read a
file (``cat``, ``nl``, ``sed -n``, a ``read_file`` tool) keeps whole lines of its head and tail
within ``stable_read_output_chars``, since that is where an agent's later edits and calls come
from; any other output keeps the 400-character head and tail, and the narration of an
assistant message whose calls are all shortened keeps ``stable_narration_chars`` (400).

This module holds the strategy (:class:`ShortenToolsEpochStable`,
:func:`shorten_tools_epoch_stable`) and the ladder fallback; its rule is one module,
:mod:`~langchain_promptstrat.strategies.epoch_machinery.stable_rule` (the edges, how one
model call moves them, how many recent calls stay whole, each call's fate), fed by
``token_costs`` and ``bounded_replay`` (the history's model calls, resumed from the replay
engine's memo) and applied by ``stable_prompt``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from typing_extensions import Unpack

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from langchain_promptstrat.ceiling import Ceiling, MaxTokens, check_max_tokens, resolve_ceiling
from langchain_promptstrat.errors import ContextWindowError
from langchain_promptstrat.messages import ToolIndex, index_tool_calls, leading_system_count, shorten_tool_output, task_index
from langchain_promptstrat.report import Compacted, make_report
from langchain_promptstrat.settings import SettingKey, Settings, settings_with_options
from langchain_promptstrat.strategies.epoch_machinery.bounded_replay import BoundedMemo, memo_costs, previous_length, replay_history
from langchain_promptstrat.strategies.epoch_machinery.caches import Head
from langchain_promptstrat.strategies.epoch_machinery.decisions import previous_total
from langchain_promptstrat.strategies.epoch_machinery.notice import is_compaction_notice
from langchain_promptstrat.strategies.epoch_machinery.stable_prompt import STRATEGY_NAME, frozen_prompt
from langchain_promptstrat.strategies.epoch_machinery.stable_rule import Edges, StableState, count_edges, front_drop_edge, stable_boundary
from langchain_promptstrat.strategies.epoch_machinery.token_costs import Costs
from langchain_promptstrat.strategies.ladder_machinery.plan import run_plan
from langchain_promptstrat.strategies.ladder_machinery.rung import LadderPass, ladder_pass
from langchain_promptstrat.strategies.ladder_machinery.vocabulary import CountTokens
from langchain_promptstrat.strategies.sliding_window import SlidingWindow
from langchain_promptstrat.strategies.tool_results import ToolResults
from langchain_promptstrat.strategy import PromptStrategy
from langchain_promptstrat.tokens import as_token_counter, tool_schema_tokens

__all__ = [
    "STRATEGY_NAME",
    "ShortenToolsEpochStable",
    "ShortenToolsEpochStableOptions",
    "StableState",
    "front_drop_edge",
    "shorten_tools_epoch_stable",
    "stable_boundary",
]


def _floor_error(source: Sequence[BaseMessage], costs: Costs, budget: int, extra: int, ceiling: int) -> ContextWindowError:
    system = leading_system_count(source)
    task = task_index(source)
    system_tokens = costs(source[:system]) + extra
    task_tokens = costs([source[task]]) if task is not None else 0
    return ContextWindowError(
        f"the system prompt ({system_tokens:,} tokens, bound tools included) and the task ({task_tokens:,} tokens) "
        f"alone exceed the context ceiling of {ceiling:,} tokens ({budget + extra:,} after the counter's margin); "
        "raise max_tokens or shorten the system prompt"
    )


def _last_resort(prompt: list[BaseMessage], budget: int, costs: Costs) -> list[BaseMessage]:
    """Return ``prompt`` with the tool outputs still over budget shortened, largest first (one giant output)."""
    order = sorted((i for i, m in enumerate(prompt) if isinstance(m, ToolMessage)), key=lambda i: -costs.whole(prompt[i]))
    out = list(prompt)
    tokens = costs(out)
    for i in order:
        if tokens <= budget:
            break
        short = shorten_tool_output(out[i])  # type: ignore[arg-type]
        tokens += costs.whole(short) - costs.whole(out[i])
        out[i] = short
    return out


def _inactive_details() -> dict[str, Any]:
    return dict(
        epoch_index=None, pinned_total=None, new_calls=None, epoch_size=None, keep_full=None,
        compaction_edge=None, drop_edge=None, head_edge=None, front_total=None, repeats=None,
        boundary_moved=False, front_moved=False, prefix_change=None, prefix_change_reason=None, notice=False,
    )


def shorten_tools_epoch_stable(
    messages: Sequence[BaseMessage],
    /,
    *,
    settings: Settings,
    max_tokens: int | None = None,
    extra_tokens: int = 0,
    token_counter: Any = None,
    ceiling_source: str | None = None,
) -> Compacted:
    """Return ``messages`` compacted in front-stable epochs, and under ``max_tokens`` when a ceiling is given.

    Without a ceiling, the call-count design described in the module docstring. With
    ``max_tokens``, the prompt plus ``extra_tokens`` (what the provider also receives: the
    system prompt kept outside ``messages``, the bound tools' schemas) stays under the
    ceiling minus ``stable_token_margin`` for the counter's error. The model calls of the
    history are replayed (:func:`~langchain_promptstrat.strategies.ladder.call_points`); when a
    call's prompt would cross the ceiling, the compaction edge advances early, down to the
    newest calls that fit in ``stable_whole_ratio`` of the ceiling (at most
    ``stable_full_tool_calls``, always the newest step), and, if the prompt is still above
    ``stable_low_ratio`` of the ceiling, frozen steps are dropped in one chunk down to
    ``stable_front_ratio``: the steps right after the kept head (the oldest steps within
    ``stable_head_ratio`` of the ceiling, fixed at the first drop), so the head stays cached.
    Between these events the front of the prompt does not change.
    A dropped step takes its assistant message's narration with it; the run's task (the first
    real user message) and the newest user message are never dropped. Where the edges cannot
    fit (a giant output among the newest calls), the ladder's ``tool_results`` and
    ``sliding_window`` rungs run on the prompt, then the largest outputs are shortened;
    :class:`ContextWindowError` is raised when the system prompt and the task alone are over.

    The report adds ``epoch_index``, ``pinned_total``, ``new_calls``, ``epoch_size``,
    ``keep_full``, ``compaction_edge``, ``drop_edge``, ``head_edge`` (with a ceiling: the kept
    head's last forward position, 0 before the first drop), ``front_total`` (the pinned total since
    which the front is unchanged), ``repeats``, ``protected``, ``notice``, and, compared with
    the prompt of the previous model call, ``boundary_moved`` (compaction edge),
    ``front_moved`` (drop edge), ``prefix_change`` (None, ``front`` or ``middle``) and
    ``prefix_change_reason`` (None, ``compaction_started``, ``front_drop`` or ``advance``);
    with a ceiling also ``ceiling``, ``ceiling_source``, ``budget``, ``tokens_after``
    (estimated as sent, margin not included), ``met``, ``ceiling_events``, ``ceiling_event``
    (this call) and ``fallback``. Stateless: everything is computed from the history; the
    comparison with the previous model call's prompt is built from the replay's state for that
    call, not by running the strategy again.
    """
    return _compact(messages, settings, max_tokens, extra_tokens, as_token_counter(token_counter), ceiling_source, None)


def _compact(
    messages: Sequence[BaseMessage], settings: Settings, max_tokens: int | None, extra_tokens: int,
    counter: CountTokens, ceiling_source: str | None, memo: BoundedMemo | None,
) -> Compacted:
    """Return :func:`shorten_tools_epoch_stable` of ``messages``, resuming the replay from ``memo`` (a strategy object's) when given."""
    source = _without_notices(messages)
    budget = 1 << 62 if max_tokens is None else int(max_tokens * (1 - settings.stable_token_margin)) - extra_tokens
    costs = Costs(counter) if memo is None else memo_costs(memo, counter)
    if max_tokens is not None and budget <= 0:
        raise _floor_error(source, costs, max(budget, 0), extra_tokens, max_tokens)

    previous = previous_length(source)
    if max_tokens is None:  # by count alone
        index = index_tool_calls(source)
        total = index.total_outputs
        state = stable_boundary(total, settings)
        edges = count_edges(state)
        before_total = previous_total(source, total)
        before = stable_boundary(before_total, settings) if state is not None else None
        previous_edges = (before.compaction_edge, before.drop_edge) if before is not None else (0, 0)
        previous_state: tuple[Edges, int] | None = (count_edges(before), before_total)
    else:
        replay = replay_history(source, budget, settings, costs, memo)
        index, edges, total, previous_edges = replay.index, replay.edges, replay.steps.total, replay.previous_edges
        previous_state = replay.previous

    out, details, head = _edges_applied(source, index, edges, total, previous_edges, settings)
    if details["boundary_moved"] or details["front_moved"]:
        # edges that moved over calls whose fate stays the same change nothing: say so only when bytes changed
        before_history = source[:previous]
        if previous_state is None:  # the previous call's history is no call point of this one: replay it
            replay_before = replay_history(before_history, budget, settings, costs, memo)
            previous_state = replay_before.edges, replay_before.steps.total
        prompt_before, head_before = _edges_applied(before_history, index, *previous_state, (0, 0), settings)[::2]
        if max_tokens is not None:
            prompt_before = _under_ceiling(before_history, prompt_before, head_before, costs, budget, extra_tokens, max_tokens, settings)[0]
        if len(prompt_before) <= len(out) and all(a is b or a == b for a, b in zip(prompt_before, out)):
            details["prefix_change"] = details["prefix_change_reason"] = None
    ceiling_details: dict[str, Any] = {}
    if max_tokens is not None:
        out, tokens, fallback = _under_ceiling(source, out, head, costs, budget, extra_tokens, max_tokens, settings)
        ceiling_details = dict(
            previous_compaction_edge=edges.prior_edge,
            ceiling=max_tokens, ceiling_source=ceiling_source or "max_tokens argument", budget=budget + extra_tokens,
            extra_tokens=extra_tokens, tokens_after=tokens, met=tokens <= budget + extra_tokens,
            ceiling_events=edges.events, ceiling_event=edges.event_here, fallback=fallback,
        )
    return Compacted(out, make_report(STRATEGY_NAME, messages, out, **details, **ceiling_details))


def _edges_applied(
    source: list[BaseMessage], index: ToolIndex, edges: Edges, total: int, previous_edges: tuple[int, int], settings: Settings,
) -> tuple[list[BaseMessage], dict[str, Any], Head | None]:
    """Return the prompt with ``edges`` applied, the report's details and the compacted head (None while nothing is frozen)."""
    if edges.compaction_edge == 0 and edges.drop_edge == 0:
        return list(source), _inactive_details(), None
    return frozen_prompt(source, index, edges, total, previous_edges, settings)


def _under_ceiling(
    source: list[BaseMessage], prompt: list[BaseMessage], head: Head | None, costs: Costs, budget: int, extra: int, ceiling: int,
    settings: Settings,
) -> tuple[list[BaseMessage], int, str | None]:
    """Return ``prompt`` (brought under ``budget`` by the fallback if it is over), its tokens as sent, and how the fallback went."""
    if head is not None:  # the head's tokens are remembered with it: count only the messages after it
        tokens = head.tokens(costs, source) + sum(map(costs.whole, source[head.at:])) + extra
    else:
        tokens = costs(prompt) + extra
    if tokens - extra <= budget:
        return prompt, tokens, None
    prompt, how = _fallback(source, prompt, budget, costs, extra, ceiling, settings)
    return prompt, costs(prompt) + extra, how


def _without_notices(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return ``messages`` without the compaction notices of earlier calls (a new list).

    Only user messages can be notices, and a conversation holds few of them: their classes
    are found among the distinct message classes and their places by ``list.index``, in C,
    instead of testing every message in Python before every model call.
    """
    classes = list(map(type, messages))
    found: list[int] = []
    for cls in set(classes):
        if not issubclass(cls, HumanMessage):
            continue
        i = -1
        try:
            while True:
                i = classes.index(cls, i + 1)
                if is_compaction_notice(messages[i]):
                    found.append(i)
        except ValueError:
            pass
    if not found:
        return list(messages)
    gone = set(found)
    return [m for i, m in enumerate(messages) if i not in gone]


def _fallback(
    source: list[BaseMessage], prompt: list[BaseMessage], budget: int, costs: Costs, extra: int, ceiling: int, settings: Settings
) -> tuple[list[BaseMessage], str]:
    """Return ``prompt`` brought under ``budget`` by the ladder's rungs, then by shortening the largest outputs."""
    system = leading_system_count(source)
    task = task_index(source)
    floor = costs(source[:system]) + (costs([source[task]]) if task is not None else 0)
    if floor > budget:
        raise _floor_error(source, costs, budget, extra, ceiling)
    rungs = [ToolResults(settings), SlidingWindow(settings)]
    done_pass: LadderPass = run_plan(ladder_pass(prompt, rungs, target=budget, counter=costs))
    out, how = done_pass.messages, "+".join(t["strategy"] for t in done_pass.taken) or "none"
    if costs(out) > budget:
        out = _last_resort(out, budget, costs)
        how += "+shortened_outputs"
    return out, how


class ShortenToolsEpochStableOptions(TypedDict, total=False):
    """The options of :class:`ShortenToolsEpochStable` that are settings (``stable_*``)."""

    tool_call_threshold: Annotated[int | None, SettingKey("stable_tool_call_threshold")]
    full_tool_calls: Annotated[int | None, SettingKey("stable_full_tool_calls")]
    epoch_size: Annotated[int | None, SettingKey("stable_epoch_size")]
    max_compacted_tool_calls: Annotated[int | None, SettingKey("stable_max_compacted_tool_calls")]
    read_output_chars: Annotated[int | None, SettingKey("stable_read_output_chars")]
    narration_chars: Annotated[int | None, SettingKey("stable_narration_chars")]
    front_drop_chunk: Annotated[int | None, SettingKey("stable_front_drop_chunk")]
    token_margin: Annotated[float | None, SettingKey("stable_token_margin")]
    low_ratio: Annotated[float | None, SettingKey("stable_low_ratio")]
    front_ratio: Annotated[float | None, SettingKey("stable_front_ratio")]
    head_ratio: Annotated[float | None, SettingKey("stable_head_ratio")]
    whole_ratio: Annotated[float | None, SettingKey("stable_whole_ratio")]


class ShortenToolsEpochStable(PromptStrategy):
    """``shorten_tools_epoch_stable``: cache-first epochs that keep the front of the prompt unchanged, under a context ceiling.

    ``ShortenToolsEpochStable(max_tokens=100_000, epoch_size=40)``; ``max_tokens`` also
    takes ``("fraction", 0.8)`` of ``model``'s input window; without it the ceiling is the
    ``max_context_tokens`` setting (``PROMPTSTRAT_MAX_TOKENS``), else ``model``'s window from
    its profile minus room for the reply, else 111,616 tokens (see
    :mod:`langchain_promptstrat.ceiling`).

    The other options are settings (``stable_*``; environment variable
    ``STABLE_EPOCH_SIZE`` or ``PROMPTSTRAT_STABLE_EPOCH_SIZE``, ...): an option given here
    wins over ``settings``, which wins over the environment, which wins over the default.
    Stateless: one object serves any number of conversations at once (a small memo of
    recent replays only makes it faster).
    """

    strategy_name = STRATEGY_NAME
    options = ShortenToolsEpochStableOptions

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        max_tokens: MaxTokens = None,
        model: Any = None,
        tools: Sequence[Any] | None = None,
        token_counter: Any = None,
        **options: Unpack[ShortenToolsEpochStableOptions],
    ) -> None:
        """Build the strategy; a settings option left at None comes from ``settings``, else the environment, else its default.

        Args:
            settings: Thresholds shared with other strategies (default: read from the
                environment now); the options below win over it.
            max_tokens: The context ceiling in tokens, or ``("fraction", share)`` of
                ``model``'s input window. Default: setting ``max_context_tokens``
                (``PROMPTSTRAT_MAX_TOKENS``), else ``model``'s window, else 111,616.
            model: The chat model that answers, whose profile gives the window when no
                ceiling is set.
            tools: The tools bound to the model; their schemas count against the ceiling.
            token_counter: None (cl100k_base), a ``TokenCounter``, a chat model or any
                ``messages -> int`` callable.

        Raises:
            ConfigError: A value is out of range, or a keyword is not one of these options.
        """
        super().__init__(settings_with_options(type(self), settings, options, reads=("max_context_tokens",)))
        self.max_tokens = check_max_tokens(max_tokens)
        self.model = model
        self.tools = list(tools) if tools else []
        self.token_counter = as_token_counter(token_counter)
        self._memo = BoundedMemo()

    def ceiling(self, model: Any = None) -> Ceiling:
        """Return the ceiling for a call to ``model`` (default: this strategy's model) and where it came from."""
        return resolve_ceiling(self.max_tokens, model=model if model is not None else self.model, settings=self.settings)

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return :func:`shorten_tools_epoch_stable` of ``messages`` under this strategy's ceiling."""
        return self.compact_for_request(messages)

    def compact_for_request(
        self,
        messages: Sequence[BaseMessage],
        *,
        model: Any = None,
        tools: Sequence[Any] | None = None,
        system: Sequence[BaseMessage] = (),
        max_tokens: MaxTokens = None,
    ) -> Compacted:
        """Return ``messages`` compacted for one model request.

        ``max_tokens`` (the adapter's) wins over this strategy's; ``model`` decides the
        ceiling when neither is given; ``tools`` and ``system`` (sent outside ``messages``)
        count against it.
        """
        given = check_max_tokens(max_tokens) if max_tokens is not None else self.max_tokens
        ceiling = resolve_ceiling(given, model=model if model is not None else self.model, settings=self.settings)
        extra = tool_schema_tokens(tools if tools is not None else self.tools, self.token_counter)
        if system:
            extra += Costs(self.token_counter)(system)
        return _compact(messages, self.settings, ceiling.tokens, extra, self.token_counter, ceiling.source, self._memo)
