"""What the default list costs per model call, side by side with ``trim_messages`` in one process.

The seeded agent run (``iter_agent_run``) is grown call by call to ``--calls`` tool calls (150
and 1,000 by default) under a ``--ceiling`` (32,000 tokens), once per seed (``--seeds``, five by
default). Every row applies the default list (``dedupe_outputs, shorten_tools_epoch_stable,
inbox``) with that ceiling; the peer is ``trim_messages`` (``strategy="last"``) with a
:class:`~langchain_promptstrat.tokens.TokenCounter` of the same encoding and the same ceiling.
Both sides of a row run in the same process on the same history, in alternating order (ours first
for even seeds, the peer first for odd ones), and each row shows the median over the seeds of
ours ÷ the peer's, with the smallest and largest ratio:

* ``never seen``: a conversation this process has never seen (the final history deserialized,
  ``messages_from_dict(messages_to_dict(...))``, as a checkpoint gives it back) on new strategy
  objects, every token cache of the package forgotten first; the peer with a new counter. What a
  server worker meets for a thread it has not served.
* ``warm call``: one set of strategy objects called before every model call of the run (an
  agent loop holding its strategies), mean of the last 50 calls; the peer in the same loop with a
  counter of its own.
* ``prepare_prompt loop``: ``prepare_prompt(history, max_tokens=...)`` before every model call,
  as the README's first example and a custom loop call it, mean of the last 50 calls.
* ``restart, carried state``: a ``create_agent`` agent with ``PromptStrategyMiddleware`` on a
  file-backed SQLite checkpointer holding the final history and the replay the middleware's
  previous model call left in the state, opened in a new process (a restarted server); the
  figure is the middleware's own time in the next model call (its wrap minus the model); the
  peer, in that same new process, on the same history with a new counter.

Then the memory each side retains after a loop over the whole run (``--memory-calls``, 1,000 by
default), measured with ``tracemalloc`` in a new process a side after a garbage collection: what
the loop left allocated beyond the history itself.

    python benchmarks/front_ends.py
    python benchmarks/front_ends.py --calls 300 --seeds 3
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
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
ROWS = ("never seen", "warm call", "prepare_prompt loop", "restart, carried state")
TARGETS = {"never seen": 1.0, "warm call": 0.5, "restart, carried state": 0.5}
"""The ratio each row is held to (issue 44, item 8)."""


def reloaded(history: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return ``history`` as a checkpoint gives it back: equal messages, new objects."""
    return messages_from_dict(messages_to_dict(list(history)))


def ms(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return 1000 * (time.perf_counter() - started)


def trim_with(counter: TokenCounter, ceiling: int) -> Callable[[list[BaseMessage]], Any]:
    """Return the peer: ``trim_messages`` keeping the newest messages under ``ceiling``."""

    def trim(messages: list[BaseMessage]) -> Any:
        return trim_messages(
            messages,
            max_tokens=ceiling,
            token_counter=counter,
            strategy="last",
            start_on="human",
            end_on=("human", "tool"),
            include_system=True,
        )

    return trim


def forget_token_caches() -> None:
    """Forget what the package's process-wide token counter and head cache remember."""
    from langchain_promptstrat.messages.history_memo import clear_caches
    from langchain_promptstrat.tokens import counter

    counter._default_counter = None
    clear_caches()
    gc.collect()


def loop_mean(prompts: Sequence[Sequence[BaseMessage]], apply: Callable[[Any], Any]) -> float:
    """Return the mean milliseconds of ``apply`` over the last :data:`LAST` prompts of a loop
    over all of them."""
    times = [ms(lambda p=p: apply(list(p))) for p in prompts]
    return statistics.fmean(times[-LAST:])


def in_order(seed: int, ours: Callable[[], float], peer: Callable[[], float]) -> tuple[float, ...]:
    """Return ``(ours, peer)``, measured ours first for an even seed, the peer first for odd."""
    if seed % 2:
        peer_ms = peer()
        return ours(), peer_ms
    ours_ms = ours()
    return ours_ms, peer()


def measure_in_process(
    row: str, prompts: list[list[BaseMessage]], ceiling: int, seed: int
) -> tuple[float, ...]:
    """Return ``(ours, peer)`` milliseconds of a row measured here."""
    final = prompts[-1]
    if row == "never seen":

        def ours() -> float:
            forget_token_caches()
            history, fresh = reloaded(final), resolve_strategies(None)
            return ms(lambda: apply_strategies(history, fresh, max_tokens=ceiling))

        def peer() -> float:
            history, trim = reloaded(final), trim_with(TokenCounter(), ceiling)
            return ms(lambda: trim(history))

        return in_order(seed, ours, peer)

    def trim_loop() -> float:
        return loop_mean(prompts, trim_with(TokenCounter(), ceiling))

    if row == "warm call":
        warm = resolve_strategies(None)
        return in_order(
            seed,
            lambda: loop_mean(prompts, lambda p: apply_strategies(p, warm, max_tokens=ceiling)),
            trim_loop,
        )
    return in_order(
        seed, lambda: loop_mean(prompts, lambda p: prepare_prompt(p, max_tokens=ceiling)), trim_loop
    )


def stored_with_carried_state(history: list[BaseMessage], ceiling: int, path: Path) -> None:
    """Write a SQLite checkpoint of ``history`` minus its newest message, with the replay the
    middleware's previous model call left in the state (as a thread it served holds it)."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langchain_promptstrat import PromptStrategyMiddleware
    from langchain_promptstrat.adapters.middleware import REPLAY_KEY
    from langchain_promptstrat.registry import prompt_for_model
    from langchain_promptstrat.strategies.epoch_machinery.frozen_region import previous_length
    from langchain_promptstrat.strategies.epoch_stable import CarriedReplay
    from langchain_promptstrat.strategy import PromptRequest
    from langchain_promptstrat.testing import ScriptedChatModel

    served = PromptStrategyMiddleware(max_tokens=ceiling)
    replay = CarriedReplay()
    # the request the middleware's previous call made: the model, its read_back tool
    request = PromptRequest(
        model=ScriptedChatModel(["done"]),
        tools=served.tools,
        max_tokens=ceiling,
        carried=replay,
        notices=(),
    )
    prompt_for_model(served.strategies, history[: previous_length(history)], request)
    stored = {"messages": history[:-1], REPLAY_KEY: replay.value}
    config = {"configurable": {"thread_id": "t"}}
    with sqlite3.connect(path, check_same_thread=False) as conn:
        agent = create_agent(
            ScriptedChatModel(["done"]),
            [],
            checkpointer=SqliteSaver(conn),
            middleware=[PromptStrategyMiddleware()],
        )
        # as the model node: it writes private keys
        agent.update_state(config, stored, as_node="model")  # type: ignore[arg-type]


def restarted(history: list[BaseMessage], ceiling: int, path: Path, seed: int) -> tuple[float, ...]:
    """Return ``(ours, peer)`` in this (new) process: the middleware's time in its first model call
    on the stored thread, and the peer's on the same history."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langchain_promptstrat import PromptStrategyMiddleware
    from langchain_promptstrat.testing import ScriptedChatModel

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

    def ours() -> float:
        with sqlite3.connect(path, check_same_thread=False) as conn:
            agent = create_agent(
                ScriptedChatModel(["done"]),
                [],
                checkpointer=SqliteSaver(conn),
                middleware=[Timed(max_tokens=ceiling)],
            )
            config = {"configurable": {"thread_id": "t"}}
            agent.invoke({"messages": [history[-1]]}, config)  # type: ignore[arg-type]
        return spent[0]

    def peer() -> float:
        again, trim = reloaded(history), trim_with(TokenCounter(), ceiling)
        return ms(lambda: trim(again))

    return in_order(seed, ours, peer)


def retained_mib(side: str, prompts: list[list[BaseMessage]], ceiling: int) -> float:
    """Return the MiB a loop over ``prompts`` leaves allocated (the prompts themselves aside)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    if side == "ours":
        for prompt in prompts:
            prepare_prompt(prompt, max_tokens=ceiling)
    else:
        trim = trim_with(TokenCounter(), ceiling)
        for prompt in prompts:
            trim(list(prompt))
    kept: Any = trim if side != "ours" else None  # the peer's counter lives as long as its loop
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return (after - before) / 2**20


def in_new_process(*args: str) -> Any:
    """Return what ``--only ARGS`` prints, run in a new interpreter."""
    command = [sys.executable, __file__, "--only", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def only(what: str, calls: int, ceiling: int, seed: int, path: str) -> Any:
    """One measurement of a new process: ``restart`` or ``memory-ours``/``memory-peer``."""
    prompts = [list(p) for p in iter_agent_run(calls, seed=seed)]
    TokenCounter().encoding  # noqa: B018 -- load the tokenizer outside the timing
    if what == "restart":
        return restarted(prompts[-1], ceiling, Path(path), seed)
    return retained_mib(what.removeprefix("memory-"), prompts, ceiling)


def row_line(row: str, pairs: list[tuple[float, ...]]) -> str:
    ratios = sorted(ours / peer for ours, peer in pairs)
    mine, peer = (statistics.median(p[k] for p in pairs) for k in (0, 1))
    target = f"   (target ≤ {TARGETS[row]:.1f})" if row in TARGETS else ""
    return (
        f"  {row:<24} {mine:8.2f} ms   trim_messages {peer:7.2f} ms   "
        f"{statistics.median(ratios):5.2f}x  [{ratios[0]:.2f}-{ratios[-1]:.2f}]{target}"
    )


def measure(calls: int, ceiling: int, seeds: int) -> list[str]:
    lines = [f"{calls:,} tool calls, ceiling {ceiling:,}, median of {seeds} seeds:"]
    runs = {seed: [list(p) for p in iter_agent_run(calls, seed=seed)] for seed in range(seeds)}
    TokenCounter().encoding  # noqa: B018 -- load the tokenizer outside the timing
    for row in ROWS:
        pairs: list[tuple[float, ...]] = []
        for seed, prompts in runs.items():
            if row != "restart, carried state":
                pairs.append(measure_in_process(row, prompts, ceiling, seed))
                continue
            if importlib.util.find_spec("langchain") is None:
                break
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "checkpoints.sqlite"
                stored_with_carried_state(prompts[-1], ceiling, path)
                pair = in_new_process("restart", str(calls), str(ceiling), str(seed), str(path))
                pairs.append(tuple(pair))
        if pairs:
            lines.append(row_line(row, pairs))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls", type=int, nargs="+", default=[150, 1_000], help="tool calls of each run"
    )
    parser.add_argument("--ceiling", type=int, default=32_000, help="context ceiling in tokens")
    parser.add_argument("--seeds", type=int, default=5, help="runs of each length (seeds 0..)")
    parser.add_argument(
        "--memory-calls", type=int, default=1_000, help="the loop the memory figure is read after"
    )
    parser.add_argument("--only", nargs=5, help=argparse.SUPPRESS)  # a new process's measurement
    args = parser.parse_args(argv)
    if args.only:
        what, calls, ceiling, seed, path = args.only
        print(json.dumps(only(what, int(calls), int(ceiling), int(seed), path)))
        return 0
    for calls in args.calls:
        print("\n".join(measure(calls, args.ceiling, args.seeds)), flush=True)
    memory = {
        side: in_new_process(f"memory-{side}", str(args.memory_calls), str(args.ceiling), "0", "")
        for side in ("ours", "peer")
    }
    print(
        f"memory retained after a {args.memory_calls:,}-call prepare_prompt loop: "
        f"{memory['ours']:.1f} MiB, trim_messages {memory['peer']:.1f} MiB   (target ≤ 4 MiB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
