"""LangGraph front ends: the pre-model hook, the inbox node and the ``read_back`` tool.

The hook, like the middleware, picks up the inbox (:mod:`~langchain_promptstrat.inbox.delivery`) and
hands the conversation to :func:`~langchain_promptstrat.registry.prompt_for_model`, the one apply
path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Any, Protocol

from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import InjectedState

from langchain_promptstrat.adapters.inbox_source import InboxSource
from langchain_promptstrat.ceiling import MaxTokens, check_max_tokens
from langchain_promptstrat.errors import InvalidMessagesError
from langchain_promptstrat.inbox.delivery import acknowledgement, deliver_inbox
from langchain_promptstrat.inbox.locate import InboxBackendSpec, check_backend, inbox_for_config
from langchain_promptstrat.messages import (
    PAGE_CHARS,
    PAGE_LINES,
    READ_BACK_TOOL,
    keep_prompt_floor,
    read_back,
)  # keep_prompt_floor: re-exported
from langchain_promptstrat.registry import StrategySpec, prompt_for_model, resolve_strategies
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.cache_breakpoints import wrap_for_breakpoints
from langchain_promptstrat.strategy import PromptRequest

__all__ = [
    "GraphHook",
    "keep_prompt_floor",
    "make_inbox_node",
    "pre_model_hook",
    "read_back_tool",
    "state_messages",
]


def state_messages(state: Any, who: str) -> list[BaseMessage]:
    """Return the graph state's ``messages``; a state without them raises a clear
    :class:`InvalidMessagesError`."""
    messages = (
        state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    )
    if messages is None:
        keys = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise InvalidMessagesError(
            f"{who} needs the graph state's 'messages' (a list of chat messages), got a state "
            "without them "
            f"({keys}); use MessagesState or declare messages: Annotated[list[AnyMessage], "
            "add_messages]"
        )
    return list(messages)


class GraphHook(Protocol):
    """A hook or node ``(state, config) -> update``, ``config`` by position or by name as LangGraph
    passes it (a ``Callable`` type cannot say so)."""

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, Any]: ...


def pre_model_hook(
    strategies: StrategySpec | Sequence[StrategySpec] | None = None,
    *,
    inbox_root: str | os.PathLike[str] | None = None,
    persist_inbox: bool = True,
    settings: Settings | None = None,
    backend: InboxBackendSpec = None,
    max_tokens: MaxTokens = None,
    model: Any = None,
    tools: Sequence[Any] | None = None,
    system_prompt: str | BaseMessage | None = None,
    cache_breakpoints: bool = False,
) -> GraphHook:
    """Return a pre-model hook ``(state, config) -> {"llm_input_messages": prompt}`` applying
    ``strategies``.

    For ``create_react_agent(pre_model_hook=...)`` or a ``StateGraph`` node; ``messages`` keeps full
    fidelity. The prompt is returned on every call, never empty: LangGraph would send the full
    history for an empty ``llm_input_messages``, and reuse a stale one. The inbox: docs/inbox.md.

    Args:
        strategies: names, instances or callables, resolved now; default ``PROMPT_STRATEGY``, else
            the default list.
        inbox_root: the inbox is ``<inbox_root>/<thread_id>.inbox`` (default
            ``$PROMPTSTRAT_INBOX_ROOT``), or the run's ``save_file``'s.
        persist_inbox: notices join ``messages`` (acknowledged once a stored checkpoint holds them),
            else one model call.
        settings: the settings the strategies are built with.
        backend: where inboxes live (``PostgresInboxes(dsn)``); default the ``Inbox`` strategy's.
        max_tokens: the context ceiling, tokens or ``("fraction", 0.8)`` of ``model``'s window
            (docs/default.md).
        model: the chat model, whose profile gives the window when ``max_tokens`` does not.
        tools: the agent's tools, whose schemas count against the ceiling.
        system_prompt: the agent's prompt, which ``create_react_agent`` adds after the hook.
        cache_breakpoints: mark up to four Anthropic ``cache_control`` breakpoints (with an
            Anthropic model only).
    """
    resolved = resolve_strategies(strategies, settings=settings)
    ceiling = check_max_tokens(max_tokens)
    inbox = InboxSource(resolved, inbox_root, backend, ceiling)
    system = (
        [system_prompt if isinstance(system_prompt, BaseMessage) else SystemMessage(system_prompt)]
        if system_prompt is not None
        else []
    )
    request = PromptRequest(model=model, tools=list(tools or []), system=system, max_tokens=ceiling)
    if cache_breakpoints:
        resolved = wrap_for_breakpoints(resolved)

    def promptstrat_pre_model_hook(state: Any, config: RunnableConfig) -> dict[str, Any]:
        messages = state_messages(state, "pre_model_hook")
        save_file, delivery = inbox.deliver(
            config, **acknowledgement(config, persist_inbox, lambda: messages)
        )
        call = replace(request, notices=delivery.notices, save_file=save_file, config=config)
        prompt = prompt_for_model(resolved, messages, call)
        if persist_inbox and delivery.notices:
            return {"messages": delivery.notices, "llm_input_messages": prompt}
        return {"llm_input_messages": prompt}

    return promptstrat_pre_model_hook


def make_inbox_node(
    *,
    root: str | os.PathLike[str] | None = None,
    persist: bool = True,
    backend: InboxBackendSpec = None,
    allow_save_file: bool = False,
    include_paths: bool = False,
) -> GraphHook:
    """Return a node ``(state, config) -> update`` that delivers the thread's inbox notices (no
    update without an inbox).

    An ``abort`` interrupts the graph (without a checkpointer: :class:`InboxAborted`);
    ``Command(resume=value)`` continues, the notices consumed before it returned once, a
    non-empty string ``value`` as a user message (docs/inbox.md).

    Args:
        root: the inbox is ``<root>/<thread_id>.inbox`` (default ``$PROMPTSTRAT_INBOX_ROOT``, read
            on each call).
        persist: return ``{"messages": notices}``; ``False``: ``{"llm_input_messages": messages +
            notices}``, as a hook.
        backend: where inboxes live (``PostgresInboxes(dsn)``); ``root`` goes with the directory
            only.
        allow_save_file: let a run config's ``save_file`` win over ``root``.
        include_paths: add the server paths ``path`` and ``inbox`` to the interrupt payload.
    """
    check_backend(backend, root)

    def inbox_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        store = inbox_for_config(
            config, backend=backend, root=root, allow_save_file=allow_save_file
        )
        options = acknowledgement(config, persist, lambda: state_messages(state, "inbox node"))
        notices = (
            deliver_inbox(store, config, include_paths=include_paths, **options).notices
            if store is not None
            else []
        )
        if persist:
            return {"messages": notices} if notices else {}
        return {"llm_input_messages": [*state_messages(state, "inbox node"), *notices]}

    return inbox_node


def read_back_tool(page_chars: int = PAGE_CHARS) -> BaseTool:
    """Return the ``read_back`` tool: a tool output of the graph state's ``messages`` as stored, a
    page of at most ``page_chars`` characters, or searched.

    Give it to the agent beside the hook (the middleware adds it itself): the shortened outputs'
    handles name it.
    """

    def read_back_(
        messages: Annotated[list[AnyMessage], InjectedState("messages")],
        call: int | str | None = None,
        offset: int = 0,
        limit: int = PAGE_LINES,
        pattern: str | None = None,
        arguments: bool = False,
    ) -> str | list[str | dict[str, Any]]:
        return read_back(
            messages,
            call,
            offset=offset,
            limit=limit,
            pattern=pattern,
            page_chars=page_chars,
            arguments=arguments,
        )

    return StructuredTool.from_function(
        read_back_,
        name=READ_BACK_TOOL,
        description=(
            "Read back a tool output of this conversation as it was stored (never runs the tool "
            "again): "
            "call = the N of a [whole: read_back(call=N)] handle (calls count from 1) or a tool "
            "call id; "
            "offset = first line (0-based), limit = most lines; pattern = a regular expression: "
            "the matching "
            "lines of that output, or of every output when call is not given; arguments = true: "
            "the call's "
            "arguments instead of its output."
        ),
    )
