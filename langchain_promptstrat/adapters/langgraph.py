"""LangGraph adapters: the pre-model hook and the inbox node.

Both, like the ``create_agent`` middleware, do the same three things before a model call:
pick up the thread's inbox (:mod:`langchain_promptstrat.inbox.graph_delivery`, a LangGraph
task, so a resumed step replays it instead of touching the inbox again), run the strategies
in order over the conversation (:func:`~langchain_promptstrat.registry.prompt_for_model`),
and check the result against the prompt floor
(:func:`~langchain_promptstrat.messages.keep_prompt_floor`, re-exported here with
``prompt_for_model``). The adapters only read their input and shape their output.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Annotated, Any, Protocol

from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import InjectedState

from langchain_promptstrat.ceiling import MaxTokens, check_max_tokens
from langchain_promptstrat.errors import InvalidMessagesError
from langchain_promptstrat.inbox.delivery import notice_ids
from langchain_promptstrat.inbox.graph_delivery import (
    InboxSource,
    StoredNoticeIds,
    deliver_inbox,
    has_checkpointer,
    stored_reader,
)
from langchain_promptstrat.inbox.locate import InboxBackendSpec, check_backend, inbox_for_config
from langchain_promptstrat.messages import PAGE_CHARS, PAGE_LINES, READ_BACK_TOOL, keep_prompt_floor, read_back  # keep_prompt_floor: re-exported
from langchain_promptstrat.registry import StrategySpec, prompt_for_model, resolve_strategies  # prompt_for_model: also re-exported
from langchain_promptstrat.settings import Settings

__all__ = ["GraphHook", "keep_prompt_floor", "make_inbox_node", "pre_model_hook", "prompt_for_model", "read_back_tool", "state_messages"]

# --------------------------------------------------------------------------- the state


def state_messages(state: Any, who: str) -> list[BaseMessage]:
    """Return the graph state's ``messages``; a state without them raises a clear :class:`InvalidMessagesError`."""
    messages = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    if messages is None:
        keys = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise InvalidMessagesError(
            f"{who} needs the graph state's 'messages' (a list of chat messages), got a state without them "
            f"({keys}); use MessagesState or declare messages: Annotated[list[AnyMessage], add_messages]"
        )
    return list(messages)


# --------------------------------------------------------------------------- the adapters


class GraphHook(Protocol):
    """A pre-model hook or node ``(state, config) -> update``; ``config`` by position or by name, as LangGraph passes it.

    A plain ``Callable[[Any, RunnableConfig], ...]`` would take ``config`` by position only,
    which ``create_react_agent(pre_model_hook=...)`` and ``StateGraph.add_node`` do not accept.
    """

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
    """Return a pre-model hook ``(state, config) -> {"llm_input_messages": prompt}`` applying ``strategies``.

    The default strategy keeps the prompt under a context ceiling: ``max_tokens`` (tokens,
    or ``("fraction", 0.8)`` of ``model``'s input window), else ``PROMPTSTRAT_MAX_TOKENS``,
    else ``model``'s window from its LangChain profile minus room for the reply, else
    111,616 tokens. Give the agent's ``tools`` and its ``system_prompt`` (``create_react_agent``
    adds the prompt after the hook) so they count against the ceiling too.

    Works as ``create_react_agent(..., pre_model_hook=...)`` (sync and async graphs) and as
    a node of a hand-built ``StateGraph`` whose state declares ``llm_input_messages``.
    Strategies are resolved now (an unknown name raises :class:`UnknownStrategyError` here);
    ``messages`` keeps full fidelity and only the model input is compacted.

    Traps of the installed langgraph, handled here: ``llm_input_messages`` is itself a
    checkpointed channel, so each checkpoint also stores the (compacted) prompt; an empty
    ``llm_input_messages`` silently falls back to the full history and a stale one would be
    reused, so the hook returns it on every call and never empty (see
    :func:`keep_prompt_floor`).

    The inbox (when in the list) is that of ``configurable.save_file``, else of
    ``<inbox_root>/<thread_id>.chat`` (default root ``$PROMPTSTRAT_INBOX_ROOT``). Its
    notices are added to ``messages`` (``persist_inbox=True``, the default), so later
    prompts and the stored transcript keep them; each carries a message id derived from
    its claim, and is acknowledged once the checkpointer has *stored* a checkpoint holding
    it, read back from the checkpointer in every durability mode (``"async"``, the default,
    writes it behind the run; ``"exit"`` when the run ends), by a background watcher or by
    a later pickup; a run's last notice is settled too, without waiting for the next run.
    A crash before that redelivers it under the same id, which ``add_messages`` replaces
    rather than duplicates. ``persist_inbox=False``
    shows a notice to one model call only and acknowledges it when handed over, as does
    a graph without a checkpointer: a model call that then fails does not get it again.
    An ``abort`` file interrupts the graph (``__interrupt__`` carries the
    reason, ``Command(resume=...)`` continues); without a checkpointer it raises
    :class:`InboxAborted` with a note saying the run cannot be resumed.

    ``backend`` says where inboxes live: ``PostgresInboxes(dsn)`` reads the thread's inbox
    from PostgreSQL (no root needed); default, the backend of the ``Inbox`` strategy in
    ``strategies``, else the directory.

    ``cache_breakpoints=True`` marks up to four Anthropic ``cache_control`` breakpoints on
    the prompt (system, the previous and current compaction edges, the last message of
    the conversation; see :mod:`~langchain_promptstrat.strategies.cache_breakpoints`). The
    hook does not see the model, so turn it on only with an Anthropic model.
    """
    resolved = resolve_strategies(strategies, settings=settings)
    inbox = InboxSource(resolved, inbox_root, backend, check_max_tokens(max_tokens))
    system: list[BaseMessage] = []
    if system_prompt is not None:
        system = [system_prompt if isinstance(system_prompt, BaseMessage) else SystemMessage(system_prompt)]
    request = {"max_tokens": check_max_tokens(max_tokens), "model": model, "tools": list(tools or []), "system": system}
    if cache_breakpoints:
        from langchain_promptstrat.strategies.cache_breakpoints import wrap_for_breakpoints

        resolved = wrap_for_breakpoints(resolved)

    def promptstrat_pre_model_hook(state: Any, config: RunnableConfig) -> dict[str, Any]:
        messages = state_messages(state, "pre_model_hook")
        durable = persist_inbox and has_checkpointer(config)
        held = notice_ids(messages) if durable else frozenset()
        save_file, delivery = inbox.deliver(
            config, seen=StoredNoticeIds(config, held), held=held, settle=not durable,
            stored=stored_reader(config) if durable else None,
        )
        prompt = prompt_for_model(resolved, messages, delivery.notices, save_file=save_file, config=config, request=request)
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
    """Return a node ``(state, config) -> update`` that delivers the thread's inbox notices.

    The inbox is that of ``configurable.save_file``, else of ``<root>/<thread_id>.chat``
    (``root`` defaults to ``$PROMPTSTRAT_INBOX_ROOT``, read on each call); with neither the
    node returns no update. ``persist=True`` returns ``{"messages": notices}``, so they are
    stored in the checkpoint; ``persist=False`` returns ``{"llm_input_messages": messages +
    notices}`` for use as a ``pre_model_hook``: the model sees them once, the state never
    does (the reference system's behaviour).

    On an ``abort`` file the node calls ``interrupt(payload)`` with the
    :func:`abort_payload` (``type``, ``thread_id``, ``reason``, ``abort``, ``notices``; the
    server paths ``path`` and ``inbox`` too with ``include_paths=True``); the caller sees it
    under ``__interrupt__``.
    ``Command(resume=value)`` re-executes the node from the top. The pickup runs as a
    LangGraph task, whose result the checkpointer saved, so the re-execution gets the
    same pickup back without touching the disk: the abort is not seen again, and the
    notices consumed before it are returned as this node's update, neither
    lost nor delivered twice. The node then picks up again, so files posted while the run
    was paused (and those that sorted after ``abort``) are delivered right away; a second
    ``abort`` interrupts again. A non-empty string ``value`` is appended as a user message
    (marked ``inbox_resume``); any other value only resumes. A run started with new input
    instead of ``Command(resume=...)`` abandons the interrupted step: its notices (named in
    the interrupt payload) then live only in the inbox's history.

    Without a checkpointer nothing could be resumed, so the node raises
    :class:`InboxAborted` (reason, path, ``delivered``) out of ``invoke`` instead of
    interrupting.

    With ``persist`` and a checkpointer a notice is acknowledged once a stored checkpoint
    holds it (notices returned on resume too); otherwise when handed over (see
    :func:`pre_model_hook`).
    A ``root`` given here wins over a run config's ``save_file`` unless ``allow_save_file``.

    ``backend=PostgresInboxes(dsn)`` reads the thread's inbox from PostgreSQL, with the
    same rules; ``root`` goes with the directory backend only.
    """
    check_backend(backend, root)

    def inbox_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        store = inbox_for_config(config, backend=backend, root=root, allow_save_file=allow_save_file)
        durable = persist and has_checkpointer(config)
        held = notice_ids(state_messages(state, "inbox node")) if durable else frozenset()
        notices = deliver_inbox(
            store, config, seen=StoredNoticeIds(config, held), held=held, settle=not durable,
            stored=stored_reader(config) if durable else None, include_paths=include_paths,
        ).notices if store is not None else []
        if persist:
            return {"messages": notices} if notices else {}
        return {"llm_input_messages": [*state_messages(state, "inbox node"), *notices]}

    return inbox_node


def read_back_tool(page_chars: int = PAGE_CHARS) -> BaseTool:
    """Return the ``read_back`` tool: a tool output of the graph state's ``messages`` as stored, a page at a time, or searched.

    Give it to the agent beside the strategies' hook (``create_agent``'s middleware adds it
    itself): every shortened output's handle and the compaction notice name it. It reads the
    state (the checkpoint, on LangGraph Server), never runs a tool again; an answer holds at
    most ``page_chars`` characters (see :func:`~langchain_promptstrat.messages.read_back`).
    """

    def read_back_(
        messages: Annotated[list[AnyMessage], InjectedState("messages")],
        call: int | str | None = None,
        offset: int = 0,
        limit: int = PAGE_LINES,
        pattern: str | None = None,
        arguments: bool = False,
    ) -> str | list[str | dict[str, Any]]:
        return read_back(messages, call, offset=offset, limit=limit, pattern=pattern, page_chars=page_chars, arguments=arguments)

    return StructuredTool.from_function(
        read_back_,
        name=READ_BACK_TOOL,
        description=(
            "Read back a tool output of this conversation as it was stored (never runs the tool again): "
            "call = the N of a [whole: read_back(call=N)] handle (calls count from 1) or a tool call id; "
            "offset = first line (0-based), limit = most lines; pattern = a regular expression: the matching "
            "lines of that output, or of every output when call is not given; arguments = true: the call's "
            "arguments instead of its output."
        ),
    )
