"""The replay of a history's model calls through a rule, and the replay as a value a front end
carries between calls (:class:`CarriedReplay`).

A rule whose prompt depends on the history's earlier calls keeps a small state, advanced at each
model call (call point) by the calls added since: :func:`replay_history` replays them, resumed
from the replay of an earlier call when one describes the first messages of the history. Knows no
strategy: at each model call it asks the rule for its state there (:class:`AdvanceAt`, answered
by the strategy's module, so no call goes back up), and the state is a frozen dataclass of plain
values (ints, None, tuples of int pairs), so it travels as JSON.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar, cast

from langchain_core.messages import BaseMessage

from langchain_promptstrat.messages import (
    CountTokens,
    ToolIndex,
    leading_system_count,
    task_index,
)
from langchain_promptstrat.messages.history_memo import (
    EMPTY_HISTORY,
    HistoryKey,
    ReplayMemo,
    call_points,
    chain_digest,
    describes,
    history_key,
    is_call_point,
    memoized,
)
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.costs import Costs, StepCosts
from langchain_promptstrat.strategies.epoch_machinery.frozen_prompt import Regions
from langchain_promptstrat.strategies.epoch_machinery.frozen_region import previous_length
from langchain_promptstrat.strategies.epoch_machinery.shortened_form import ShortenedForm
from langchain_promptstrat.tokens import TokenCounter
from langchain_promptstrat.tokens.usage import Calibration


class RuleState(Regions, Protocol):
    """A rule's state: where its regions sit, and its ceiling events (a frozen dataclass of plain
    values)."""

    @property
    def prior_edge(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def event_here(self) -> bool: ...


State = TypeVar("State", bound=RuleState)


@dataclass
class AdvanceAt(Generic[State]):
    """A question to the rule: its state at the model call ``steps`` has just reached (under
    ``budget``), from ``edges`` at the previous one."""

    edges: State
    steps: StepCosts
    budget: int
    answer: State | None = None
    """The rule's answer, set by whoever runs the replay."""

    def answered(self) -> State:
        """Return the answer (asserting there is one)."""
        assert self.answer is not None, "a question of the replay went unanswered"
        return self.answer


# ---- the replay: the history's model calls, each through the rule --------------------------


@dataclass
class Replay(Generic[State]):
    """The rule's state after the call point ``len(history)``: its edges and what feeds them."""

    history: HistoryKey
    budget: int
    index: ToolIndex
    steps: StepCosts
    edges: State
    previous: tuple[State, int]
    """The edges and outputs counted at the previous model call (the history before the newest
    assistant message)."""
    digest: tuple[int, bytes] | None = None
    """``(length, chain_digest)`` of the first ``length`` messages, once a front end carried this
    replay."""
    calibration: Calibration = Calibration()
    """The provider's count over the estimate of each prompt sent, learned from the answers
    replayed: each call's budget is divided by it."""
    extra: int = 0
    sent: int = 0
    """The estimate of the prompt sent at the call point ``len(history)``, which the answer after it
    is read against."""


def replay_history(
    start: Replay[State] | None,
    source: list[BaseMessage],
    budget: int,
    settings: Settings,
    costs: Costs,
    calibration: Calibration = Calibration(),
    extra: int = 0,
    *,
    first: State,
    strategy: str,
) -> Generator[AdvanceAt[State], None, Replay[State]]:
    """Return the replay of ``source``'s call points under ``budget``, advanced from ``start``, the
    rule's state asked at each (:class:`AdvanceAt`): a pure function of the history.

    ``first`` is the rule's state before any call, ``strategy`` the name its notice carries (for
    the notice's reserve).

    ``start`` (the replay of an earlier call of the same conversation) is used only when it
    describes the first messages of ``source`` under the same budget, else the replay starts
    from the first message; a replay of a call point reads nothing after it, so resuming
    reaches what a replay from the first message would. Each call's budget is divided by the
    calibration learned from the answers before it (``extra`` tokens are sent beside the messages).
    """
    if start is not None and (start.budget, start.extra, start.calibration.prior) != (
        budget,
        extra,
        calibration.prior,
    ):
        start = None
    if start is not None and describes(start.history, source) is None:
        start = None
    if start is None:
        replay = Replay(
            EMPTY_HISTORY,
            budget,
            ToolIndex(),
            StepCosts(),
            first,
            (first, 0),
            calibration=calibration,
            extra=extra,
        )
    else:
        replay = replace(start, steps=start.steps.copy())
    done, start_index = replay.history.length, replay.index
    index = replay.index = start_index.extend(source)
    previous = previous_length(source)
    if (
        done == previous
    ):  # the start is the previous call; a start past it holds that call's edges already
        replay.previous = (replay.edges, replay.steps.total)
    task = task_index(source)
    system = leading_system_count(source)
    steps, edges = replay.steps, replay.edges
    form = ShortenedForm.of(settings, costs.counter)
    steps.notice = costs.notice(form.handles, strategy)
    calibration, sent = replay.calibration, replay.sent
    for point in call_points(source, after=done):
        if done:  # the answer to the previous call point
            calibration = calibration.observe(source[done], sent)
        if (
            done < previous < point
        ):  # two assistant messages in a row: the previous call's history ends inside this step
            before = steps.copy()
            before.add(
                source,
                done,
                previous,
                start_index.extend(source[:previous]),
                costs,
                task,
                system,
                form,
            )
            question = AdvanceAt(edges, before, calibration.budget(budget, extra))
            yield question
            replay.previous = (question.answered(), before.total)
        steps.add(source, done, point, index, costs, task, system, form)
        done = point
        question = AdvanceAt(edges, steps, calibration.budget(budget, extra))
        yield question
        edges = question.answered()
        if point == previous:
            replay.previous = edges, steps.total
        sent = steps.estimate(edges.compaction_edge, edges.drop_edge, edges.head) + extra
    replay.edges, replay.calibration, replay.sent = edges, calibration, sent
    replay.history = history_key(source, start.history if start is not None else None)
    return replay


def resume_replay(
    source: list[BaseMessage],
    budget: int,
    settings: Settings,
    costs: Costs,
    *,
    first: State,
    strategy: str,
    memo: ReplayMemo[Replay[State]] | None,
    calibration: Calibration,
    extra: int,
    carried: CarriedReplay | None = None,
) -> Generator[AdvanceAt[State], None, Replay[State]]:
    """Return :func:`replay_history` of ``source``, resumed from ``memo``'s replay of its longest
    call point, else from ``carried`` (which it then updates)."""
    start = memo.recall(source, budget) if memo is not None else None
    fingerprint = (
        _fingerprint(settings, costs.counter, (budget, extra, calibration.prior))
        if carried is not None
        else None
    )
    if start is None and carried is not None and fingerprint is not None:
        start = _resumed(carried.value, source, budget, fingerprint, calibration, extra, first)
    replay = yield from replay_history(
        start, source, budget, settings, costs, calibration, extra, first=first, strategy=strategy
    )
    if memo is not None:
        memo.remember(replay, budget=budget)
    if carried is not None and fingerprint is not None:
        carried.value = _carried_value(replay, source, fingerprint)
    return replay


# ---- the replay as a value a front end carries -----------------------------------------------


@dataclass
class CarriedReplay:
    """A conversation's replay as a front end carries it between model calls: in the graph state,
    checkpointed with it.

    ``value`` (plain JSON; None when nothing is carried) is read before a call and set after it. It
    is resumed from only when it describes the history given: the same messages by a digest that
    holds across processes (:func:`~langchain_promptstrat.messages.history_memo.chain_digest`), the
    same budget, settings, token counter and package version, and an intact checksum; anything else
    is replayed from the first message, never trusted.
    """

    value: dict[str, Any] | None = None


CARRY_FORMAT = 3
_CHECKED = (
    "format",
    "fingerprint",
    "length",
    "digest",
    "steps",
    "edges",
    "previous",
    "calibration",
)


def _fingerprint(
    settings: Settings, counter: CountTokens, budget: tuple[int, int, float]
) -> str | None:
    """Return what a carried replay was computed with, or None when it cannot be said (a counter
    that is not a :class:`TokenCounter`)."""
    return (
        _fingerprint_of(settings, repr(counter), counter.exact, budget)
        if isinstance(counter, TokenCounter)
        else None
    )


@memoized(64)
def _fingerprint_of(
    settings: Settings, counter: str, exact: bool, budget: tuple[int, int, float]
) -> str:
    try:
        version = importlib.metadata.version("langchain-promptstrat")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    what = [CARRY_FORMAT, version, counter, exact, budget, sorted(settings.as_dict().items())]
    return hashlib.blake2b(json.dumps(what, default=repr).encode(), digest_size=16).hexdigest()


def _check(value: dict[str, Any]) -> str:
    """Return the checksum of a carried value's fields: a value spoiled in storage is replayed, not
    trusted."""
    return hashlib.blake2b(
        json.dumps([value[k] for k in _CHECKED], separators=(",", ":")).encode(), digest_size=16
    ).hexdigest()


def _carried_value(
    replay: Replay[State], source: Sequence[BaseMessage], fingerprint: str
) -> dict[str, Any]:
    """Return ``replay`` as the plain value a front end carries (:class:`CarriedReplay`)."""
    length = replay.history.length
    done, digest = (
        replay.digest if replay.digest is not None and replay.digest[0] <= length else (0, b"")
    )
    replay.digest = (length, chain_digest(digest, source[done:length]))
    s, c = replay.steps, replay.calibration
    value: dict[str, Any] = {
        "format": CARRY_FORMAT,
        "fingerprint": fingerprint,
        "length": length,
        "digest": replay.digest[1].hex(),
        "steps": [s.fixed, s.whole, s.short, s.loose_before, s.loose_after, s.ends, s.last_ai],
        "edges": _state_value(replay.edges),
        "previous": [_state_value(replay.previous[0]), replay.previous[1]],
        "calibration": [list(c.ratios), c.answers, c.ignored, replay.sent],
    }
    value["check"] = _check(value)
    return value


def _state_value(state: object) -> list[Any]:
    """Return a rule's state as a plain list: its fields in order."""
    return list(vars(state).values())


def _state_from(value: list[Any], start: State) -> State:
    """Return the state of ``start``'s type that ``value`` (:func:`_state_value`, through JSON)
    holds: each list a tuple of tuples again."""
    fields = [
        tuple(tuple(item) for item in field) if isinstance(field, list) else field
        for field in value
    ]
    return cast(State, cast(Any, type(start))(*fields))


def _resumed(
    value: Any,
    source: list[BaseMessage],
    budget: int,
    fingerprint: str,
    prior: Calibration,
    extra: int,
    first: State,
) -> Replay[State] | None:
    """Return the replay ``value`` carries when it describes the first messages of ``source``, else
    None (never raises).

    Its checksum stands for its types: a value that went through storage intact is as it was
    written.
    """
    try:
        if (
            value["format"] != CARRY_FORMAT
            or value["fingerprint"] != fingerprint
            or value["check"] != _check(value)
        ):
            return None
        length = value["length"]
        if not 0 < length <= len(source) or not is_call_point(source, length):
            # a replay resumes only at a call point: one ending before a call's outputs would skip
            # them
            return None
        digest = chain_digest(b"", source[:length])
        if digest.hex() != value["digest"]:
            return None
        fixed, whole, short, loose_before, loose_after, ends, last_ai = value["steps"]
        index = ToolIndex().extend(source[:length])
        keys = {record.key for record in index.completed[: len(whole) - 1]}
        ratios, answers, ignored, sent = value["calibration"]
        previous, total = value["previous"]
        steps = StepCosts(fixed, whole, short, loose_before, loose_after, ends, keys, last_ai)
        return Replay(
            history_key(source[:length]),
            budget,
            index,
            steps,
            _state_from(value["edges"], first),
            (_state_from(previous, first), total),
            digest=(length, digest),
            extra=extra,
            sent=sent,
            calibration=replace(prior, ratios=tuple(ratios), answers=answers, ignored=ignored),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
