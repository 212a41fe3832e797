"""Every front end reaches the strategies through one function, ``strategy.apply_in_order`` (issue
32, item 6)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, messages_to_dict
from langgraph.prebuilt import create_react_agent

from langchain_promptstrat import (
    PromptStrategyMiddleware,
    ShortenTools,
    pre_model_hook,
    prepare_prompt,
    registry,
    strategy,
)
from langchain_promptstrat.cli import main
from langchain_promptstrat.testing import ScriptedChatModel, build_agent_run, make_sized_tool

HISTORY = build_agent_run(12, seed=3)
STRATEGIES = "shorten_tools_epoch_stable,dedupe_outputs"


def through_prepare_prompt(tmp_path: Path) -> None:
    prepare_prompt(HISTORY, STRATEGIES)


def through_the_runnable(tmp_path: Path) -> None:
    ShortenTools().invoke(HISTORY)


def through_the_hook(tmp_path: Path) -> None:
    agent = create_react_agent(
        ScriptedChatModel.long_run(2),
        [make_sized_tool("fetch", sizes=200)],
        pre_model_hook=pre_model_hook(STRATEGIES),
    )
    agent.invoke({"messages": [HumanMessage("task")]})


def through_the_middleware(tmp_path: Path) -> None:
    middleware = PromptStrategyMiddleware(STRATEGIES)
    create_agent(
        ScriptedChatModel.long_run(2),
        [make_sized_tool("fetch", sizes=200)],
        middleware=[middleware],
    ).invoke({"messages": [HumanMessage("task")]})


def through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(messages_to_dict(HISTORY)))
    assert main(["apply", str(path), "--strategy", STRATEGIES]) == 0


@pytest.mark.parametrize(
    "front_end",
    [
        through_prepare_prompt,
        through_the_runnable,
        through_the_hook,
        through_the_middleware,
        through_the_cli,
    ],
)
def test_every_front_end_applies_the_strategies_through_apply_in_order(
    front_end: Callable[[Path], None],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No front end has a path of its own, so the prompt floor, the notices' place and the reports
    are the same everywhere: every strategy call of each front end happens inside apply_in_order."""
    depth = [0]
    outside: list[str] = []
    inside: list[str] = []
    real = strategy.apply_in_order

    def recording(strategies: Any, source: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        try:
            return real(strategies, source, *args, **kwargs)
        finally:
            depth[0] -= 1

    def watched(cls: type, name: str) -> Callable[..., Any]:
        original = getattr(cls, name)

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            (inside if depth[0] else outside).append(f"{cls.__name__}.{name}")
            return original(self, *args, **kwargs)

        return call

    for cls in {type(s) for s in registry.resolve_strategies(STRATEGIES)} | {ShortenTools}:
        for name in ("apply", "compact"):
            if name in vars(cls):
                monkeypatch.setattr(cls, name, watched(cls, name))
    monkeypatch.setattr(strategy, "apply_in_order", recording)
    monkeypatch.setattr(registry, "apply_in_order", recording)
    front_end(tmp_path)
    assert inside and outside == []
