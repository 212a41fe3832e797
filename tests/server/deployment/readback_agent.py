"""``create_agent`` with the middleware under a small ceiling, whose model reads a handle out of its
prompt and calls ``read_back``.

The model reads 40 files (``page``), then finds the first ``[whole: read_back(call=N)]`` in
the prompt it was sent and calls ``read_back`` with it: the server's checkpoint is the
conversation the tool reads.
"""

from __future__ import annotations

import re
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import tool

from langchain_promptstrat import PromptStrategyMiddleware
from langchain_promptstrat.testing import ScriptedChatModel

CALLS = 40
HANDLE = re.compile(r"read_back\(call=(\d+)\)")


def page_text(n: int) -> str:
    """Return what ``page(n)`` prints: 80 distinct lines."""
    return "\n".join(
        f"{n}:{j} def function_{n}_{j}(argument): return argument * {j}" for j in range(80)
    )


@tool
def page(n: int) -> str:
    """Print page ``n``."""
    return page_text(n)


def read_the_first_handle(prompt: list[BaseMessage]) -> dict[str, Any]:
    """Return the call of ``read_back`` on the first handle of ``prompt``."""
    number = next(
        m.group(1)
        for m in (HANDLE.search(str(x.content)) for x in prompt if isinstance(x, ToolMessage))
        if m
    )
    return {"tool_calls": [{"name": "read_back", "args": {"call": int(number)}}]}


script: list[Any] = [{"tool_calls": [{"name": "page", "args": {"n": n}}]} for n in range(CALLS)]
graph = create_agent(
    ScriptedChatModel([*script, read_the_first_handle]),
    [page],
    middleware=[PromptStrategyMiddleware(max_tokens=16_000)],
)
