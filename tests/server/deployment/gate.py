"""The scripted model and the one tool of the test deployment: a tool call the test holds open.

The model (:class:`~langchain_promptstrat.testing.ScriptedChatModel`, no network) calls ``gate``
three times, then answers ``done``. Each call writes ``<gates>/<thread>.<step>.<server
pid>.entered``; when the test has written ``<gates>/<thread>.hold``, the call then waits for
``<gates>/<thread>.<step>.go``. So "a notice posted while the run is in its first tool call" is a
state the test reaches for certain, not by sleeping. ``<gates>`` is ``$PROMPTSTRAT_TEST_GATES``;
without it the tool never waits.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

from langchain_promptstrat.testing import ScriptedChatModel

GATES_ENV = "PROMPTSTRAT_TEST_GATES"
STEPS = 3
HOLD_SECONDS = 120.0
"""A held call gives up after this long, so a test that failed half-way never leaves a run
hanging."""
FINAL_ANSWER = "done"


@tool
def gate(step: int, config: RunnableConfig) -> str:
    """Pass gate number ``step`` of this run."""
    thread = str((config.get("configurable") or {}).get("thread_id"))
    where = os.environ.get(GATES_ENV)
    if where:
        gates = Path(where)
        (gates / f"{thread}.{step}.{os.getpid()}.entered").write_text("")
        deadline = time.monotonic() + HOLD_SECONDS
        while (gates / f"{thread}.hold").exists() and not (gates / f"{thread}.{step}.go").exists():
            if time.monotonic() > deadline:
                return f"gate {step}: nobody opened it"
            time.sleep(0.02)
    return f"gate {step} passed"


def scripted_model() -> ScriptedChatModel:
    """Return the model: one ``gate`` call per step, then the final answer, for each thread."""
    script = [
        {"tool_calls": [{"name": "gate", "args": {"step": step}}]} for step in range(1, STEPS + 1)
    ]
    return ScriptedChatModel(script, final_answer=FINAL_ANSWER)
