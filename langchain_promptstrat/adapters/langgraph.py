"""LangGraph adapters: the inbox node (the pre-model hook comes with a later issue)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.func import task
from langgraph.types import interrupt

from langchain_promptstrat.errors import InboxAborted
from langchain_promptstrat.inbox_store import DirectoryInbox
from langchain_promptstrat.messages import mark
from langchain_promptstrat.strategies.inbox import pick_up, save_file_for_config

__all__ = ["INBOX_ABORT", "RESUME_KIND", "make_inbox_node"]

INBOX_ABORT = "inbox_abort"
"""``type`` of the interrupt payload the inbox node raises on an ``abort`` file."""

RESUME_KIND = "inbox_resume"
"""Mark kind of the user message a non-empty string ``Command(resume=...)`` becomes."""


def _pick_up(save_file: str) -> dict[str, Any]:
    result = pick_up(DirectoryInbox.for_save_file(save_file))
    abort = {"reason": result.abort_reason, "path": result.abort_path} if result.aborted else None
    return {"delivered": result.delivered, "abort": abort}


_pick_up_once = task(name="promptstrat_inbox_pickup")(_pick_up)
"""The pickup as a LangGraph task: its result is checkpointed, so a node re-executed on
resume gets the same notices back instead of touching the disk again."""


def _checkpointed_pick_up(save_file: str) -> dict[str, Any]:
    try:
        future = _pick_up_once(save_file)
    except (RuntimeError, KeyError):  # called outside a LangGraph run: nothing to replay
        return _pick_up(save_file)
    return future.result()


def make_inbox_node(
    *, root: str | os.PathLike[str] | None = None, persist: bool = True
) -> Callable[[Any, RunnableConfig], dict[str, Any]]:
    """Return a node ``(state, config) -> update`` that delivers the thread's inbox notices.

    The inbox is that of ``configurable.save_file``, else of ``<root>/<thread_id>.chat``
    (``root`` defaults to ``$PROMPTSTRAT_INBOX_ROOT``, read on each call); with neither the
    node returns no update. ``persist=True`` returns ``{"messages": notices}``, so they are
    stored in the checkpoint; ``persist=False`` returns ``{"llm_input_messages": messages +
    notices}`` for use as a ``pre_model_hook``: the model sees them once, the state never
    does (the reference system's behaviour).

    On an ``abort`` file the node calls ``interrupt({"type": "inbox_abort", "reason",
    "path", "delivered", "save_file"})``; the caller sees it under ``__interrupt__``.
    ``Command(resume=value)`` re-executes the node from the top. The pickup runs as a
    LangGraph task, whose result the checkpointer saved, so the re-execution gets the
    same pickup back without touching the disk: the abort is not seen again, and the
    notices consumed before it (``delivered``) are returned as this node's update, neither
    lost nor delivered twice. The node then picks up again, so files posted while the run
    was paused (and those that sorted after ``abort``) are delivered right away; a second
    ``abort`` interrupts again. A non-empty string ``value`` is appended as a user message
    (marked ``inbox_resume``); any other value only resumes. A run started with new input
    instead of ``Command(resume=...)`` abandons the interrupted step: its notices then live
    only in the interrupt payload and in the ``.inbox_removed`` directory.

    Without a checkpointer nothing could be resumed, so the node raises
    :class:`InboxAborted` (reason, path, ``delivered``) out of ``invoke`` instead of
    interrupting.
    """

    def inbox_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        save_file = save_file_for_config(config, root)
        notices: list[Any] = []
        while save_file is not None:
            picked = _checkpointed_pick_up(str(save_file))
            notices += picked["delivered"]
            abort = picked["abort"]
            if abort is None:
                break
            if (config.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER) is None:
                raise InboxAborted(abort["reason"], path=abort["path"], delivered=notices)
            payload = {"type": INBOX_ABORT, **abort, "delivered": picked["delivered"], "save_file": str(save_file)}
            answer = interrupt(payload)
            if isinstance(answer, str) and answer.strip():
                notices.append(mark(HumanMessage(answer), RESUME_KIND, notice=False))
        if persist:
            return {"messages": notices} if notices else {}
        messages = state["messages"] if isinstance(state, dict) else state.messages
        return {"llm_input_messages": [*messages, *notices]}

    return inbox_node
