"""The inbox inside a LangGraph run: the pickup as a task, what the checkpointer stored, an abort as an interrupt.

:class:`InboxSource` finds a run's inbox for the hook and the middleware; :func:`deliver_inbox`
claims its notices in a LangGraph task (a step re-executed on resume replays the task's result),
turns an ``abort`` into a resumable ``interrupt``, and acknowledges a notice once the
checkpointer has stored it (:class:`StoredNoticeIds`, :func:`stored_reader`).
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypedDict

from typing_extensions import Unpack

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import set_config_context
from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.func import task
from langgraph.types import interrupt

from langchain_promptstrat.ceiling import MaxTokens
from langchain_promptstrat.errors import InboxAborted
from langchain_promptstrat.inbox.contract import ABORT_FILE, InboxBackend, LeasingInbox, pickup_budget
from langchain_promptstrat.inbox.delivery import acknowledge, notice_ids, pick_up, printable, settle_when_stored
from langchain_promptstrat.inbox.locate import InboxBackendSpec, check_backend, inbox_for_config, save_file_for_config
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV, inbox_root
from langchain_promptstrat.messages import mark, mark_of
from langchain_promptstrat.report import logger

INBOX_ABORT = "inbox_abort"  # the interrupt payload's type
RESUME_KIND = "inbox_resume"  # the mark of the user message a string Command(resume=...) becomes

NO_CHECKPOINTER_NOTE = (
    "The graph was compiled without a checkpointer, so the abort could not pause the run for a "
    "later Command(resume=...): it ends the run instead. Compile with a checkpointer (for example "
    "InMemorySaver()) to make an inbox abort resumable."
)


def _pick_up(
    store: InboxBackend, seen: Collection[str], held: Collection[str], settle: bool, budget_bytes: int | None
) -> dict[str, Any]:
    result = pick_up(store, seen=seen, held=held, settle=settle, budget_bytes=budget_bytes)
    abort = {"reason": result.abort_reason, "path": result.abort_path} if result.aborted else None
    if abort is not None and result.abort_token:
        abort["token"] = result.abort_token
    return {"delivered": result.delivered, "abort": abort}


# langgraph types task(name=...) as a decorator whose ParamSpec and TypeVar are solved (to Never) before
# it sees the function, so mypy rejects any function here; pyright accepts it
_pick_up_once: Callable[[InboxBackend, Collection[str], Collection[str], bool, int | None], Future[dict[str, Any]]] = task(name="promptstrat_inbox_pickup")(_pick_up)  # type: ignore[arg-type, assignment]


def _with_run_config(config: RunnableConfig, func: Callable[..., Any], *args: Any) -> Any:
    """Return ``func(*args)`` where ``get_config()`` finds the run's config (Python 3.10 does not carry it into an async graph's nodes)."""
    try:
        get_config()
    except RuntimeError:
        with set_config_context(config) as context:
            return context.run(func, *args)
    return func(*args)


def _checkpointed_pick_up(
    store: InboxBackend, seen: Collection[str], held: Collection[str], settle: bool, budget_bytes: int | None
) -> dict[str, Any]:
    try:
        future = _pick_up_once(store, seen, held, settle, budget_bytes)
    except (RuntimeError, KeyError):  # called outside a LangGraph run: nothing to replay
        return _pick_up(store, seen, held, settle, budget_bytes)
    return future.result()


def has_checkpointer(config: RunnableConfig | None) -> bool:
    """Return whether the run saves checkpoints, so a notice put in its state survives the process."""
    return (config or {}).get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER) is not None


def stored_notice_ids(config: RunnableConfig | None, keys: Sequence[str] = ()) -> frozenset[str] | None:
    """Return the notice ids the checkpointer has *stored* for the run's thread (in ``messages`` and under ``keys``), None when it cannot tell.

    Read back from the checkpointer, not the run's memory: ``durability="async"`` writes behind the run.
    """
    configurable = (config or {}).get("configurable", {})
    saver, thread = configurable.get(CONFIG_KEY_CHECKPOINTER), configurable.get("thread_id")
    if saver is None or thread is None:
        return None
    # a node's namespace is its graph's plus "|<node>:<task id>" (the task's own segment, "|"-separated)
    task_ns = str(configurable.get("checkpoint_ns") or "")  # langgraph's CONFIG_KEY_CHECKPOINT_NS, private since 1.0
    graph_ns = task_ns.rpartition("|")[0] if "|" in task_ns else ("" if ":" in task_ns else task_ns)
    stored = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": graph_ns}})
    if stored is None:
        return frozenset()
    values = stored.checkpoint.get("channel_values") or {}
    ids = set(notice_ids(values.get("messages") or []))
    for key in keys:
        ids.update(str(nid) for nid in values.get(key) or [])
    return frozenset(ids)


def stored_reader(config: RunnableConfig, keys: Sequence[str] = ()) -> Callable[[], frozenset[str] | None]:
    """Return a reader of :func:`stored_notice_ids` for this run, for a watcher thread to poll."""
    return lambda: stored_notice_ids(config, keys)


class StoredNoticeIds(Collection[str]):
    """The ids among ``candidates`` (those in the run's state) that the checkpointer has stored, read on first use only."""

    def __init__(self, config: RunnableConfig, candidates: Collection[str], keys: Sequence[str] = ()) -> None:
        self.candidates = frozenset(candidates)
        self._read = stored_reader(config, keys)
        self._stored: frozenset[str] | None = None

    def _ids(self) -> frozenset[str]:
        if self._stored is None:
            try:
                self._stored = (self._read() or frozenset()) & self.candidates
            except Exception as exc:  # unreadable now: nothing counts as stored, the claims stay in flight
                logger.debug("inbox: could not read the stored conversation: %s", exc)
                self._stored = frozenset()
        return self._stored

    def __contains__(self, nid: object) -> bool:
        return nid in self.candidates and nid in self._ids()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids())

    def __len__(self) -> int:
        return len(self._ids())


def _add_note(error: BaseException, note: str) -> None:
    if sys.version_info >= (3, 11):
        error.add_note(note)
    else:  # Python 3.10: the PEP 678 attribute, which tracebacks there do not print (and typeshed does not declare)
        error.__notes__ = [*getattr(error, "__notes__", []), note]  # type: ignore[attr-defined, unused-ignore]


def abort_payload(config: RunnableConfig | None, reason: str, path: str | None, notices: Sequence[BaseMessage]) -> dict[str, Any]:
    """Return the interrupt payload of an inbox abort: ``type``, ``thread_id``, ``reason``, ``abort`` (its history name), ``notices`` (taken before it); no server path."""
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    marks = [mark_of(m) or {} for m in notices]
    names = [str(m["file"]) for m in marks if m.get("file") is not None]
    name = printable(re.split(r"[/\\]", path)[-1]) if path else ABORT_FILE
    return {"type": INBOX_ABORT, "thread_id": None if thread is None else str(thread), "reason": reason,
            "abort": name, "notices": names}


class DeliveryOptions(TypedDict, total=False):
    """How :func:`deliver_inbox` (and :meth:`InboxSource.deliver`) treat an abort and acknowledge notices."""

    on_abort: Literal["interrupt", "raise", "return"]
    seen: Collection[str]
    held: Collection[str]
    settle: bool
    stored: Callable[[], Collection[str] | None] | None


class InboxDelivery(NamedTuple):
    """What one delivery took from the inbox: the notices, and the abort it stopped at (``on_abort="return"``)."""

    notices: list[BaseMessage]
    abort: dict[str, Any] | None = None


def deliver_inbox(
    store: InboxBackend,
    config: RunnableConfig,
    *,
    include_paths: bool = False,
    budget_bytes: int | None = None,
    **options: Unpack[DeliveryOptions],
) -> InboxDelivery:
    """Return the notices of ``store`` (any inbox backend), handling ``abort`` as ``on_abort`` says.

    ``seen``, ``held`` and ``settle`` (default True) are :func:`~langchain_promptstrat.inbox.delivery.pick_up`'s;
    with ``stored`` the notices are acknowledged once it lists them (:func:`~langchain_promptstrat.inbox.delivery.settle_when_stored`).
    ``on_abort="interrupt"`` (the default) interrupts with the :func:`abort_payload` (plus ``path``
    and ``inbox`` with ``include_paths``) and, once resumed, picks up again (a string resume value
    becomes a user message); without a checkpointer it raises :class:`InboxAborted`, with a note.
    ``raise`` always raises; ``return`` returns the payload beside the notices taken before it.
    """
    on_abort = options.get("on_abort", "interrupt")
    seen, held = options.get("seen", frozenset()), options.get("held", frozenset())
    settle, stored = options.get("settle", True), options.get("stored")
    notices: list[BaseMessage] = []
    payload: dict[str, Any] | None = None
    while payload is None:
        taken = held if not notices else frozenset(held) | notice_ids(notices)
        picked = _with_run_config(config, _checkpointed_pick_up, store, seen, frozenset(taken), settle, budget_bytes)
        notices += picked["delivered"]
        if picked["abort"] is None:
            break
        # The pickup task's result, abort included, is in the checkpoint (or, without a checkpointer, acted on
        # now): the abort is spent. A replayed task acknowledges again, which finds nothing left to do.
        token = picked["abort"].get("token")
        recorded = acknowledge(store, token, ABORT_FILE) or None if token and isinstance(store, LeasingInbox) else None
        path = printable(str(recorded)) if recorded is not None else picked["abort"]["path"]
        payload = abort_payload(config, picked["abort"]["reason"], path, picked["delivered"])
        if include_paths:
            payload.update(path=path, inbox=printable(store.location))
        if on_abort == "raise" or (on_abort == "interrupt" and not has_checkpointer(config)):
            error = InboxAborted(payload["reason"], path=path, delivered=notices)
            if on_abort == "interrupt":
                _add_note(error, NO_CHECKPOINTER_NOTE)
            raise error
        if on_abort == "interrupt":
            answer = _with_run_config(config, interrupt, payload)
            if isinstance(answer, str) and answer.strip():
                notices.append(mark(HumanMessage(answer), RESUME_KIND, notice=False))
            payload = None
    if stored is not None and not settle:
        settle_when_stored(store, notices, stored)
    return InboxDelivery(notices, payload)


class InboxSource:
    """Where one hook or middleware finds a run's inbox; warns once when a root is set but the run has no thread id."""

    def __init__(
        self,
        strategies: Sequence[Any],
        root: str | os.PathLike[str] | None = None,
        backend: InboxBackendSpec = None,
        max_tokens: MaxTokens = None,
    ) -> None:
        inboxes = [s for s in strategies if getattr(s, "places_notices", False)]  # the inbox strategy
        if root is None and backend is None and inboxes:  # the adapter's arguments win over the strategy's
            root, backend = inboxes[0].root, inboxes[0].backend
        self.allow_save_file = bool(inboxes) and inboxes[0].allow_save_file
        self.include_paths = bool(inboxes) and inboxes[0].include_paths
        self.root = root
        self.backend = check_backend(backend, root)
        if root is not None:
            inbox_root(root)  # a root that is not a directory fails now, not at the first model call
        self.enabled = bool(inboxes)
        self.needed = any(getattr(s, "uses_save_file", False) for s in strategies)
        self.ceiling = max_tokens if isinstance(max_tokens, int) else None  # a pickup admits a share of it
        self._warned = False

    def save_file(self, config: RunnableConfig) -> Path | None:
        """Return the run's save file (``configurable.save_file``, else ``<root>/<thread_id>.chat``), or None."""
        if not self.needed:
            return None
        path = save_file_for_config(config, self.root, allow_save_file=self.allow_save_file)
        if path is None and not self._warned and inbox_root(self.root) is not None:
            self._warned = True
            where = "root=" + os.fspath(self.root) if self.root is not None else INBOX_ROOT_ENV
            warnings.warn(
                f"the inbox is skipped: an inbox root is set ({where}) but the run config has neither "
                "configurable.thread_id nor configurable.save_file; pass "
                "config={'configurable': {'thread_id': ...}} to deliver this thread's notices",
                RuntimeWarning,
                stacklevel=2,
            )
        return path

    def store(self, config: RunnableConfig | None) -> InboxBackend | None:
        """Return the run's inbox, or None (no inbox strategy, or the run names no inbox)."""
        if not self.enabled:
            return None
        return inbox_for_config(config, backend=self.backend, root=self.root, allow_save_file=self.allow_save_file)

    def deliver(self, config: RunnableConfig, **options: Unpack[DeliveryOptions]) -> tuple[Path | None, InboxDelivery]:
        """Return the save file and what the inbox delivered (nothing without an inbox strategy or a save file)."""
        save_file = self.save_file(config)
        store = self.store(config)
        if store is None:
            return save_file, InboxDelivery([])
        return save_file, deliver_inbox(
            store, config, include_paths=self.include_paths, budget_bytes=pickup_budget(self.ceiling), **options
        )
