"""What each front end costs per model call, as a ratio to ``trim_messages`` measured in the same
run.

The seeded agent run (``iter_agent_run``) is grown call by call to ``--calls`` tool calls
(150 and 1,000 by default) under a ``--ceiling`` (32,000 tokens); every row applies the
default list (``dedupe_outputs, shorten_tools_epoch_stable, inbox``) with that ceiling, and
the peer is ``trim_messages`` with the same token counter and ceiling:

* ``warm objects``: one set of strategy objects called before every model call (an agent
  loop holding its strategies), mean of the last 50 calls;
* ``prepare_prompt loop``: ``prepare_prompt(history, max_tokens=...)`` before every model
  call, as the README's first example and a custom loop call it, mean of the last 50 calls;
* ``cold``: the final history deserialized (``messages_from_dict(messages_to_dict(...))``,
  new message objects, as a checkpoint gives them back; not timed) on new strategy objects,
  as a new server worker meets a thread: median of ``--repeat`` processes;
* ``middleware after restart``: a ``create_agent`` agent with ``PromptStrategyMiddleware`` on
  a file-backed SQLite checkpointer holding the final history; the process's agent, saver
  and middleware are built again (a restart) and the next model call is made; the figure is
  the middleware's own time in that call (its wrap minus the model), median of ``--repeat``;
* ``... with the carried replay``: the same, the checkpoint also holding the replay the
  middleware's previous model call left in the state (computed on that call's history, the
  messages before the newest assistant message, as a thread it served holds it), so the call
  resumes from it instead of replaying the history.

Each figure, ours and the peer's alike, is measured in a fresh interpreter (a cold row's in
``--repeat`` of them, the median shown), so neither finds what the other or an earlier
measurement left in a cache (the token counter's included: both pay for counting texts they
have not seen). The peer's figure for a loop row is its mean over the same calls; for a cold
row its time on the same deserialized final history. The tokenizer is loaded before any timing.

    python benchmarks/front_ends.py
    python benchmarks/front_ends.py --calls 300 --ceiling 32000 --repeat 5
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict, trim_messages

from langchain_promptstrat import prepare_prompt
from langchain_promptstrat.registry import apply_strategies, resolve_strategies
from langchain_promptstrat.testing import iter_agent_run
from langchain_promptstrat.tokens import TokenCounter

LAST = 50
"""Loop rows average the last this many calls: the long end of the run, where the work is."""


def reloaded(history: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return ``history`` as a checkpoint gives it back: equal messages, new objects."""
    return messages_from_dict(messages_to_dict(list(history)))


def ms(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return 1000 * (time.perf_counter() - started)


def loop_mean(
    prompts: Sequence[Sequence[BaseMessage]], apply: Callable[[list[BaseMessage]], Any]
) -> float:
    """Return the mean milliseconds of ``apply`` over the last :data:`LAST` prompts of a loop over
    all of them."""
    times = [ms(lambda p=p: apply(list(p))) for p in prompts]
    return statistics.fmean(times[-LAST:])


def middleware_after_restart(
    history: list[BaseMessage], ceiling: int, folder: Path, carried: bool
) -> float:
    """Return the middleware's milliseconds in the first model call after a restart, on a SQLite
    checkpointer.

    ``carried``: the checkpoint also holds the replay the middleware's previous model call
    left in the state (computed here by the middleware's own call path on that call's
    history, the messages before the newest assistant message), as a thread it has served
    holds it; else the history alone.
    """
    import sqlite3

    from langchain.agents import create_agent
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langchain_promptstrat import PromptStrategyMiddleware
    from langchain_promptstrat.adapters.middleware import REPLAY_KEY
    from langchain_promptstrat.registry import prompt_for_model
    from langchain_promptstrat.strategies.epoch_machinery.frozen_region import previous_length
    from langchain_promptstrat.strategies.epoch_stable import CarriedReplay
    from langchain_promptstrat.testing import ScriptedChatModel

    path, config = folder / "checkpoints.sqlite", {"configurable": {"thread_id": "t"}}
    stored: dict[str, Any] = {"messages": history[:-1]}
    if carried:
        replay, served = (
            CarriedReplay(),
            PromptStrategyMiddleware(max_tokens=ceiling),
        )  # its request: the model, its read_back tool
        request = {
            "max_tokens": ceiling,
            "model": ScriptedChatModel(["done"]),
            "tools": served.tools,
            "system": [],
            "carried": replay,
        }
        prompt_for_model(served.strategies, history[: previous_length(history)], request=request)
        stored[REPLAY_KEY] = replay.value
    with sqlite3.connect(
        path, check_same_thread=False
    ) as conn:  # the run so far, stored as the agent stores it
        agent = create_agent(
            ScriptedChatModel(["done"]),
            [],
            checkpointer=SqliteSaver(conn),
            middleware=[PromptStrategyMiddleware()],
        )
        agent.update_state(config, stored, as_node="model")  # type: ignore[arg-type]  # as the model node: it writes private keys
    spent: list[float] = []

    class Timed(PromptStrategyMiddleware):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            model_ms: list[float] = []

            def timed_handler(req: Any) -> Any:
                started = time.perf_counter()
                try:
                    return handler(req)
                finally:
                    model_ms.append(1000 * (time.perf_counter() - started))

            started = time.perf_counter()
            out = super().wrap_model_call(request, timed_handler)
            spent.append(1000 * (time.perf_counter() - started) - sum(model_ms))
            return out

    with sqlite3.connect(
        path, check_same_thread=False
    ) as conn:  # the restarted process: everything built again
        agent = create_agent(
            ScriptedChatModel(["done"]),
            [],
            checkpointer=SqliteSaver(conn),
            middleware=[Timed(max_tokens=ceiling)],
        )
        agent.invoke({"messages": [history[-1]]}, config)  # type: ignore[arg-type]
    path.unlink()
    return spent[0]


ROWS = (
    "warm objects",
    "prepare_prompt loop",
    "cold",
    "middleware after restart",
    "  ... with the carried replay",
)
RESTARTS = ("middleware after restart", "  ... with the carried replay")
LOOPS = ("warm objects", "prepare_prompt loop")


def measure_row(row: str, side: str, calls: int, ceiling: int) -> float:
    """Return the milliseconds of one row for ``side`` (``ours`` or ``trim_messages``), measured in
    this process."""
    prompts = list(iter_agent_run(calls, seed=0))
    counter = TokenCounter()
    counter.encoding  # noqa: B018 -- load the tokenizer outside the timing

    def trim(p: list[BaseMessage]) -> Any:
        return trim_messages(
            p,
            max_tokens=ceiling,
            token_counter=counter,
            strategy="last",
            start_on="human",
            end_on=("human", "tool"),
            include_system=True,
        )

    final = list(prompts[-1])
    if side == "trim_messages":
        if row in LOOPS:
            return loop_mean(prompts, trim)
        again = reloaded(final)
        return ms(lambda: trim(again))
    if row == "warm objects":
        warm = resolve_strategies(None)
        return loop_mean(prompts, lambda p: apply_strategies(p, warm, max_tokens=ceiling))
    if row == "prepare_prompt loop":
        return loop_mean(prompts, lambda p: prepare_prompt(p, max_tokens=ceiling))
    if row == "cold":
        history, fresh = reloaded(final), resolve_strategies(None)
        return ms(lambda: apply_strategies(history, fresh, max_tokens=ceiling))
    with tempfile.TemporaryDirectory() as folder:
        return middleware_after_restart(final, ceiling, Path(folder), carried=row != RESTARTS[0])


def in_fresh_process(row: str, side: str, calls: int, ceiling: int) -> float:
    """Return :func:`measure_row` run in a new interpreter: no cache another measurement filled is
    there to find."""
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--only",
            row,
            side,
            "--calls",
            str(calls),
            "--ceiling",
            str(ceiling),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.splitlines()[-1])


def measure(calls: int, ceiling: int, repeat: int) -> list[str]:
    """Return the table's lines for one run length: each loop in one process a side, each cold row
    in ``repeat``."""
    lines = [f"{calls:,} tool calls, ceiling {ceiling:,}:"]
    for row in ROWS:
        if row in RESTARTS and importlib.util.find_spec("langchain") is None:
            continue
        times = 1 if row in LOOPS else repeat
        mine, peer = (
            statistics.median(in_fresh_process(row, side, calls, ceiling) for _ in range(times))
            for side in ("ours", "trim_messages")
        )
        lines.append(
            f"  {row:<26} {mine:7.2f} ms   trim_messages {peer:6.2f} ms   {mine / peer:5.2f}x"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls",
        type=int,
        nargs="+",
        default=[150, 1_000],
        help="tool calls of each run (default %(default)s)",
    )
    parser.add_argument(
        "--ceiling",
        type=int,
        default=32_000,
        help="context ceiling in tokens (default %(default)s)",
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="processes for each cold row; the median is shown"
    )
    parser.add_argument(
        "--only", nargs=2, metavar=("ROW", "SIDE"), help=argparse.SUPPRESS
    )  # one measurement here
    args = parser.parse_args(argv)
    if args.only:
        print(measure_row(*args.only, args.calls[0], args.ceiling))
        return 0
    for calls in args.calls:
        print("\n".join(measure(calls, args.ceiling, args.repeat)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
