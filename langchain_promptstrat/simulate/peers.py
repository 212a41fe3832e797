"""The peers a replay compares with: LangChain's ``trim_messages`` and ``ClearToolUsesEdit``, and SWE-agent's observation masking, set up as documented.

Each peer is built as a ``messages -> messages`` function with the replay's token counter
and target (the settings are in :mod:`langchain_promptstrat.simulate`). Observation
masking is SWE-agent's ``LastNObservations`` history processor, written here after its
documented rule (the setting of the paper "The Complexity Trap": ``n=10``): the
observations are the task (SWE-agent's instance template, never masked) and every tool
output in order; with ``k`` observations, those at positions ``1 .. (k // polling) *
polling - n - 1`` (0-based, the task being 0) have their content replaced by ``Old
environment output: (L lines omitted)``. It takes no token target.
``ClearToolUsesEdit`` needs the optional ``langchain`` package (the ``agents`` extra): it
is imported when the peers are built, and left out with a note when it is missing.

Must not count, time or score anything (``engine`` and ``figures`` do, the same way for
every row).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage, ToolMessage, trim_messages

from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.messages import content_text, task_index
from langchain_promptstrat.testing import ScriptedChatModel

__all__ = ["PEER_CLEAR_TOOL_USES", "PEER_OBSERVATION_MASKING", "PEER_TRIM_MESSAGES", "observation_masking"]

PEER_TRIM_MESSAGES = "trim_messages"
PEER_CLEAR_TOOL_USES = "ClearToolUsesEdit"
PEER_OBSERVATION_MASKING = "LastNObservations"
MASKING_SETTINGS: tuple[tuple[int, int], ...] = ((10, 1), (10, 5))
"""``(n, polling)`` of the masking rows: the paper's setting, and the same with SWE-agent's cache-friendlier polling."""

_Apply = Callable[[list[BaseMessage]], list[BaseMessage]]
"""A strategy as a replay applies it: the prompt before the model call in, the prompt sent out."""


def _trim_messages_peer(counter: Any, max_tokens: int) -> _Apply:
    def apply(prompt: list[BaseMessage]) -> list[BaseMessage]:
        return trim_messages(
            prompt,
            max_tokens=max_tokens,
            token_counter=counter,
            strategy="last",
            start_on="human",
            end_on=("human", "tool"),
            include_system=True,
            allow_partial=False,
        )

    return apply


def _clear_tool_uses_peer(counter: Any, max_tokens: int) -> _Apply:
    # Imported here, not at the top: langchain is an optional extra, and without it the peer is left out with a note.
    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, ModelRequest, ModelResponse

    middleware = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=max_tokens)], token_counter=counter)
    model = ScriptedChatModel()  # never called: the handler below answers in its place

    def apply(prompt: list[BaseMessage]) -> list[BaseMessage]:
        # create_agent keeps the system prompt out of request.messages
        system = prompt[0] if prompt and isinstance(prompt[0], SystemMessage) else None
        sent: list[list[BaseMessage]] = []

        def handler(request: ModelRequest) -> ModelResponse:
            sent.append(list(request.messages))
            return ModelResponse(result=[AIMessage("")])

        # the prompt holds the concrete message classes AnyMessage names, typed as BaseMessage
        messages = cast("list[AnyMessage]", list(prompt[1:] if system else prompt))
        request = ModelRequest(model=model, messages=messages, system_message=system)
        middleware.wrap_model_call(request, handler)
        return [system, *sent[0]] if system else sent[0]

    return apply


def observation_masking(n: int = 10, polling: int = 1) -> _Apply:
    """Return SWE-agent's ``LastNObservations(n, polling)`` as a ``messages -> messages`` function (the rule is in the module's docstring)."""
    if n < 1 or polling < 1:
        raise ValueError(f"observation masking needs n >= 1 and polling >= 1, got n={n}, polling={polling}")

    def apply(prompt: list[BaseMessage]) -> list[BaseMessage]:
        task = task_index(prompt)
        observations = ([task] if task is not None else []) + [i for i, m in enumerate(prompt) if isinstance(m, ToolMessage)]
        last_removed = max(0, (len(observations) // polling) * polling - n)
        masked = set(observations[1:last_removed])
        out: list[BaseMessage] = []
        for i, message in enumerate(prompt):
            if i in masked:
                lines = len(content_text(message.content).splitlines())
                message = message.model_copy(update={"content": f"Old environment output: ({lines} lines omitted)"})
            out.append(message)
        return out

    return apply


def _peers(counter: Any, max_tokens: int, notes: list[str]) -> list[tuple[str, str, _Apply, dict[str, Any]]]:
    peers = [
        (
            PEER_TRIM_MESSAGES,
            "peer",
            _trim_messages_peer(counter, max_tokens),
            {"max_tokens": max_tokens, "strategy": "last", "start_on": "human", "end_on": ["human", "tool"], "include_system": True},
        )
    ]
    try:
        clear_tool_uses = _clear_tool_uses_peer(counter, max_tokens)
    except ImportError as exc:
        notes.append(
            f"{PEER_CLEAR_TOOL_USES} left out: langchain>=1.0 with agent middleware is not installed ({exc}); "
            f"{install_hint('agents')}"
        )
    else:
        options: dict[str, object] = {"trigger": max_tokens, "keep": 3, "clear_at_least": 0, "clear_tool_inputs": False}
        peers.append((PEER_CLEAR_TOOL_USES, "peer", clear_tool_uses, options))
    for n, polling in MASKING_SETTINGS:
        label = f"{PEER_OBSERVATION_MASKING}(n={n})" if polling == 1 else f"{PEER_OBSERVATION_MASKING}(n={n},polling={polling})"
        peers.append((label, "peer", observation_masking(n, polling), {"n": n, "polling": polling}))
    return peers
