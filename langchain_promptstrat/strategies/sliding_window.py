"""sliding_window: when shortening tool output was not enough, whole stretches of the conversation
go.

Never given up: the leading system block, the run's task (the first real user message;
harnesses also speak as the user) and the anchor (the newest real user message). The oldest
whole turns go first, then the task's oldest steps, never its newest ``keep_steps``. One
marked note stands where they were (after the system block, or after the anchor once steps
went), naming the calls that went as a range ``read_back`` reads (the ``read_back_handles``
setting). Turns and steps go whole, so no tool pair splits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_promptstrat.messages import (
    CountTokens,
    is_real_user_message,
    leading_system_count,
    mark,
    task_index,
)
from langchain_promptstrat.strategies.ladder_machinery.rungs import (
    NOTE_KIND,
    SUMMARY_KIND,
    Plan,
    Rewrite,
    Rung,
    call_span,
    done,
    kind_of,
    read_back_range,
    represented,
)
from langchain_promptstrat.tokens import message_counter

NOTE_TEXT = (
    "[compacted:sliding_window] {n} earlier {messages} of this conversation {were} removed to stay "
    "within the context budget and cannot be recovered. Continue from what is still visible; "
    "repeat earlier work only if you need its result now."
)
CALLS_NOTE_TEXT = (
    "[compacted:sliding_window] {n} earlier {messages} of this conversation {were} removed to stay "
    "within the context budget, {calls}."
)
"""The note naming the calls that went (``calls``: :func:`.ladder.read_back_range`).

How to read them back takes the room of the advice to go on without them: no more tokens."""


def note(dropped: int, calls: list[int] | None = None) -> HumanMessage:
    """Return the marked note standing for ``dropped`` removed messages (a user-role notice).

    With ``calls`` (``[first, last]``, numbers in the stored conversation) it names the calls
    that went and how to read them back, and its mark keeps them.
    """
    words = {"n": dropped, "messages": "messages", "were": "were"}
    if dropped == 1:
        words.update(messages="message", were="was")
    meta = {"strategy": "sliding_window", "dropped": dropped}
    if calls is None:
        return mark(HumanMessage(NOTE_TEXT.format(**words)), NOTE_KIND, notice=True, **meta)
    text = CALLS_NOTE_TEXT.format(**words, calls=read_back_range(calls))
    return mark(HumanMessage(text), NOTE_KIND, notice=True, **meta, calls=calls)


@dataclass(frozen=True)
class Layout:
    """The parts of a conversation the token rungs work with, as index ranges, oldest first.

    ``system``: the leading system block's length; ``anchor``: the newest real user message
    (None when none); ``run_task``: the run's task (first real user message) when before the
    anchor, kept too; ``history``: whole turns before the anchor; ``task``: whole steps after
    it up to ``protected_from``, where the newest ``keep_steps`` steps begin. A note or summary
    is a unit of its own.
    """

    system: int
    anchor: int | None
    run_task: int | None
    history: tuple[range, ...]
    task: tuple[range, ...]
    protected_from: int


def layout(messages: Sequence[BaseMessage], keep_steps: int, *, keep_task: bool = False) -> Layout:
    """Return the :class:`Layout` of ``messages`` with the newest ``keep_steps`` steps protected
    (and the run's task, with ``keep_task``)."""
    n = len(messages)
    system = leading_system_count(messages)
    anchor = next(
        (i for i in range(n - 1, system - 1, -1) if is_real_user_message(messages[i])), None
    )

    def units(start: int, stop: int, starts_unit: Callable[[int], bool]) -> list[range]:
        cuts = [start] + [i for i in range(start + 1, stop) if starts_unit(i)] + [stop]
        return [range(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]

    def after_standalone(i: int) -> bool:  # a note or summary is a unit of its own
        return any(kind_of(messages[j]) in (NOTE_KIND, SUMMARY_KIND) for j in (i, i - 1))

    history: list[range] = []
    task_start = system
    first = task_index(messages)
    run_task = (
        first if keep_task and first is not None and anchor is not None and first < anchor else None
    )
    if anchor is not None:

        def starts_turn(i: int) -> bool:
            return is_real_user_message(messages[i]) or after_standalone(i) or i - 1 == run_task

        if run_task is None:
            history = units(system, anchor, starts_turn)
        else:  # the task is a unit of its own that is never offered for dropping
            history = units(system, run_task, starts_turn) + units(
                run_task + 1, anchor, starts_turn
            )
        task_start = anchor + 1
    task = units(task_start, n, lambda i: isinstance(messages[i], AIMessage) or after_standalone(i))
    steps = [k for k, unit in enumerate(task) if isinstance(messages[unit.start], AIMessage)]
    first_kept = steps[-keep_steps] if len(steps) >= keep_steps else 0
    protected_from = task[first_kept].start if task else n
    return Layout(
        system, anchor, run_task, tuple(history), tuple(task[:first_kept]), protected_from
    )


def rewrite(
    messages: Sequence[BaseMessage],
    /,
    *,
    target: int,
    counter: CountTokens,
    keep_steps: int = 1,
    handles: bool = True,
) -> Rewrite:
    """Return ``messages`` with the fewest oldest turns, then task steps, dropped to fit ``target``.

    The note's own tokens are counted; when even the floor is over target the floor is
    returned. A dropped note or summary counts the messages and calls it stood for; with
    ``handles`` the note names the calls that went. Declines when under target, when nothing
    may go, or when all that would go is already a note.
    """
    messages = list(messages)
    count_one = message_counter(counter)
    tokens = counter(messages)
    if tokens <= target:
        return Rewrite(None, {"reason": "under target"})
    parts = layout(messages, keep_steps, keep_task=True)
    droppable = list(parts.history) + list(parts.task)
    if not droppable:
        return Rewrite(
            None, {"reason": "nothing but the system block, the anchor and the newest steps"}
        )

    sizes = [count_one(m) for m in messages]
    suffix = list(accumulate(reversed(sizes), initial=0))[
        ::-1
    ]  # suffix[i] = tokens of messages[i:]
    fixed = tokens - suffix[parts.system]  # the system block and any list overhead
    anchor_tokens = sizes[parts.anchor] if parts.anchor is not None else 0
    task_tokens = sizes[parts.run_task] if parts.run_task is not None else 0
    h = len(parts.history)
    forms: list[list[int] | None] = [None, [1, 1]] if handles else [None]
    # a number is at least one token
    smallest_note = min(count_one(note(n, calls)) for n in (1, 2) for calls in forms)
    dropped = 0
    calls: list[int] | None = None  # the first and last call of the units so far, with handles
    last = 0  # the last call before the unit (only the system block, task and anchor lie between)
    chosen = len(droppable)
    for k, unit in enumerate(droppable, start=1):
        dropped += sum(represented(messages[i]) for i in unit)
        for i in unit if handles else ():
            span = call_span(messages[i], last)
            if span:
                calls = [calls[0], max(calls[1], span[1])] if calls else list(span)
                last = max(last, span[1])
        rest = (
            fixed
            + suffix[unit.stop]
            + (anchor_tokens if k > h else 0)
            + (task_tokens if parts.run_task is not None and parts.run_task < unit.stop else 0)
        )
        if rest + smallest_note <= target and rest + count_one(note(dropped, calls)) <= target:
            chosen = k
            break

    gone = [i for unit in droppable[:chosen] for i in unit]
    if all(kind_of(messages[i]) == NOTE_KIND for i in gone):
        return Rewrite(None, {"reason": "everything it would drop is already a note"})
    count = sum(represented(messages[i]) for i in gone)
    cut = droppable[chosen - 1].stop
    head = messages[: parts.system]
    if parts.run_task is not None and parts.run_task < cut:
        head = [
            *head,
            messages[parts.run_task],
        ]  # the run's task stays, right after the instructions
    if chosen <= h or parts.anchor is None:
        out = [*head, note(count, calls), *messages[cut:]]
        where = "after_system"
    else:
        out = [*head, messages[parts.anchor], note(count, calls), *messages[cut:]]
        where = "after_anchor"
    return Rewrite(
        out, {"dropped": count, "turns": min(chosen, h), "steps": max(chosen - h, 0), "note": where}
    )


class SlidingWindow(Rung):
    """``sliding_window``: drop the oldest whole turns, then the task's oldest steps, to fit a token
    target.

    ``SlidingWindow(max_tokens=100_000, keep_steps=1)``; in a ladder, the ladder's target and
    counter.
    """

    strategy_name = "sliding_window"

    def plan(
        self, messages: Sequence[BaseMessage], *, max_tokens: int, counter: CountTokens
    ) -> Plan:
        """Return the plan of :func:`rewrite` (it needs no model call)."""
        settings = self.settings
        return done(
            rewrite(
                messages,
                target=max_tokens,
                counter=counter,
                keep_steps=settings.keep_steps,
                handles=settings.read_back_handles,
            )
        )
