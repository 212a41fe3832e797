"""The last resort of a bounded prompt: where the edges cannot bring it under the budget (a giant
output among the newest calls), the ladder's ``tool_results`` and ``sliding_window`` rungs run on
it, then the largest outputs are shortened; the error when the system prompt and the task alone
are over.

Knows no strategy's rule: it reads the prompt, its compacted head and the budget.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, ToolMessage

from langchain_promptstrat.errors import ContextWindowError
from langchain_promptstrat.messages import leading_system_count, shorten_tool_output, task_index
from langchain_promptstrat.messages.history_memo import Head
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_machinery.costs import Costs
from langchain_promptstrat.strategies.ladder_machinery.rungs import (
    LadderPass,
    ladder_pass,
    run_plan,
)
from langchain_promptstrat.strategies.sliding_window import SlidingWindow
from langchain_promptstrat.strategies.tool_results import ToolResults


def under_ceiling(
    source: list[BaseMessage],
    prompt: list[BaseMessage],
    head: Head | None,
    costs: Costs,
    budget: int,
    extra: int,
    ceiling: int,
    settings: Settings,
) -> tuple[list[BaseMessage], int, str | None]:
    """Return ``prompt`` (brought under ``budget`` by the fallback if it is over), its tokens as
    sent, and how the fallback went."""
    if head is None:
        tokens = costs(prompt) + extra
    else:  # the head's tokens are remembered with it: count only the messages after it
        counted = head.counted
        if counted is None or counted[0]() is not costs:
            counted = head.counted = (
                weakref.ref(costs),
                costs(prompt[: len(head.picks) + (head.notice is not None)]),
            )
        tokens = counted[1] + sum(map(costs.whole, source[head.at :])) + extra
    if tokens - extra <= budget:
        return prompt, tokens, None
    system = leading_system_count(source)
    task = task_index(source)
    if costs(source[:system]) + (costs([source[task]]) if task is not None else 0) > budget:
        raise floor_error(source, costs, budget, extra, ceiling)
    done_pass: LadderPass = run_plan(
        ladder_pass(
            prompt, [ToolResults(settings), SlidingWindow(settings)], target=budget, counter=costs
        )
    )
    out, how = list(done_pass.messages), "+".join(t["strategy"] for t in done_pass.taken) or "none"
    if (
        costs(out) > budget
    ):  # one giant output: shorten the outputs still over budget, largest first
        tokens = costs(out)
        for i in sorted(
            (i for i, m in enumerate(out) if isinstance(m, ToolMessage)),
            key=lambda i: -costs.whole(out[i]),
        ):
            if tokens <= budget:
                break
            handle = out[i].tool_call_id if settings.read_back_handles else None  # type: ignore[attr-defined]
            short = shorten_tool_output(out[i], costs.counter, call=handle)  # type: ignore[arg-type]
            tokens += costs.whole(short) - costs.whole(out[i])
            out[i] = short
        how += "+shortened_outputs"
    return out, costs(out) + extra, how


def floor_error(
    source: Sequence[BaseMessage], costs: Costs, budget: int, extra: int, ceiling: int
) -> ContextWindowError:
    """Return the error for a ceiling that the system prompt and the task alone exceed."""
    task = task_index(source)
    system_tokens = costs(source[: leading_system_count(source)]) + extra
    task_tokens = costs([source[task]]) if task is not None else 0
    return ContextWindowError(
        f"the system prompt ({system_tokens:,} tokens, bound tools included) and the task "
        f"({task_tokens:,} tokens) "
        f"alone exceed the context ceiling of {ceiling:,} tokens ({budget + extra:,} after the "
        "counter's margin); "
        "raise max_tokens or shorten the system prompt"
    )
