"""The runtime never loads the evaluation tools: a model call pays for none of them.

What an agent runs before each model call (``prepare_prompt``, the pre-model hook, the
middleware, ``read_back``) must not import what measures strategies: the replay of runs and its
cost and recall (``simulate``, ``replay``), the plot, the synthetic conversations and scripted
model (``testing``), conversation files, text tables, the docs tables and the command line. They
are a layer above the runtime; importing one would make every agent process load it, and would
let a measuring change reach a model call.
"""

from __future__ import annotations

import json
import subprocess
import sys

EVALUATION = (
    "langchain_promptstrat.simulate",
    "langchain_promptstrat.replay",
    "langchain_promptstrat.testing",
    "langchain_promptstrat.conversation_file",
    "langchain_promptstrat.text_table",
    "langchain_promptstrat.docs_tables",
    "langchain_promptstrat.cli",
)
"""The evaluation tools (each a module or a package: its submodules count too)."""

RUNTIME_CALLS = """
import json, sys
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_promptstrat import (
    PromptStrategyMiddleware, pre_model_hook, prepare_prompt, read_back, read_back_tool,
)
history = [SystemMessage("You are an agent."), HumanMessage("Audit the repository.")]
for i in range(160):
    history.append(
        AIMessage("", tool_calls=[{"name": "read", "args": {"path": f"f{i}.py"}, "id": f"c{i}"}])
    )
    history.append(ToolMessage(f"# file {i}\\n" + "x = 1\\n" * 200, tool_call_id=f"c{i}"))
prompt = prepare_prompt(history, max_tokens=16_000)
assert len(prompt) < len(history)
PromptStrategyMiddleware()
pre_model_hook()({"messages": history}, {})
read_back(history, 3)
read_back_tool()
print(json.dumps(sorted(name for name in sys.modules if name.startswith("langchain_promptstrat"))))
"""


def loaded_by(code: str) -> list[str]:
    """Return the package's modules a fresh interpreter has loaded after running ``code``."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def evaluation_tools(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == t or m.startswith(t + ".") for t in EVALUATION)]


def test_the_runtime_calls_load_no_evaluation_tool() -> None:
    """Importing the package and calling ``prepare_prompt``, the hook, the middleware and
    ``read_back`` loads the strategies, messages, tokens and inbox modules, and none of the
    evaluation tools."""
    loaded = loaded_by(RUNTIME_CALLS)
    assert "langchain_promptstrat.strategies.epoch_stable" in loaded  # the calls really ran
    assert evaluation_tools(loaded) == []


def test_the_check_sees_an_evaluation_tool_a_runtime_module_would_load() -> None:
    """The check can fail: the same calls with the replay imported after them are caught."""
    code = RUNTIME_CALLS.replace(
        "read_back_tool()\n", "read_back_tool()\nimport langchain_promptstrat.replay\n"
    )
    assert "langchain_promptstrat.replay" in evaluation_tools(loaded_by(code))
