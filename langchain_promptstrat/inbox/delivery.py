"""Claim, deliver, acknowledge: how the notices of one inbox become user messages, each exactly once
to a model.

:func:`pick_up` *leases* a notice, hands it over as a user message whose id comes from the claim
(``promptstrat-inbox-<token>``), and *acknowledges* it only once that is safe: at once for
one-call delivery (``settle=True``), or once the *stored* conversation holds it
(:func:`settle_when_stored`, or a later pickup finding it in ``seen``). A claim whose reader died
or whose lease ran out is delivered again under the same id, which ``add_messages`` replaces.

Inside a LangGraph run, :func:`deliver_inbox` claims its notices in a LangGraph task (a step
re-executed on resume replays the task's result), turns an ``abort`` into a resumable
``interrupt``, and acknowledges a notice once the checkpointer has stored it
(:class:`StoredNoticeIds`, :func:`stored_reader`).
"""

from __future__ import annotations

import atexit
import re
import sys
import threading
import time
from collections.abc import Callable, Collection, Container, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypedDict

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import set_config_context
from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.func import task
from langgraph.types import interrupt
from typing_extensions import Unpack

from langchain_promptstrat.errors import InboxAborted
from langchain_promptstrat.inbox.contract import (
    ABORT_FILE,
    Claimed,
    InboxBackend,
    LeasingInbox,
    pickup_budget,
)
from langchain_promptstrat.messages import mark, mark_of
from langchain_promptstrat.report import logger
from langchain_promptstrat.tokens import as_token_counter

DELIVERY_KIND = "inbox_delivery"
"""Mark kind of a delivered notice (``mark_of(m)["kind"]``); it is a real user message."""
NOTICE_ID_PREFIX = "promptstrat-inbox-"
SETTLE_WAIT_SECONDS = (
    600.0  # how long a watcher waits for the stored conversation when the backend names no lease
)


def notice_id(token: str) -> str:
    """Return the message id of the notice claimed under ``token``: the same on every redelivery."""
    return NOTICE_ID_PREFIX + token


def notice_ids(messages: Sequence[BaseMessage]) -> frozenset[str]:
    """Return the ids of the inbox notices among ``messages`` (what a conversation already
    holds)."""
    return frozenset(
        m.id for m in messages if isinstance(m.id, str) and m.id.startswith(NOTICE_ID_PREFIX)
    )


def printable(text: str) -> str:
    """Return ``text`` with the lone surrogates of an undecodable file name as ``\\xNN`` escapes
    (valid UTF-8)."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


@dataclass
class Pickup:
    """What one pass over the inbox took: notices, an abort request, and the files it skipped.

    ``abort_reason`` is None when no ``abort`` was consumed; ``abort_token`` is its claim while it
    awaits acknowledgement (``settle=False``). ``skipped``: ``{"file", "error"}`` for each notice
    that could not be read or moved, left in place; ``replaced_characters``: notices decoded with
    U+FFFD; ``empty``: blank ones consumed, not sent (providers reject an empty user message);
    ``waiting``: notices left for later, over ``budget_tokens``.
    """

    delivered: list[HumanMessage] = field(default_factory=list)
    abort_reason: str | None = None
    abort_path: str | None = None
    abort_token: str | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)
    replaced_characters: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    budget_tokens: int = 0
    waiting: int = 0

    @property
    def aborted(self) -> bool:
        return self.abort_reason is not None

    def error(self) -> InboxAborted:
        """Return the :class:`InboxAborted` this pickup stands for (only when :attr:`aborted`)."""
        return InboxAborted(self.abort_reason or "", path=self.abort_path, delivered=self.delivered)


def _notice(claimed: Claimed) -> tuple[HumanMessage, bool]:
    """Return the user message a notice becomes (its mark names the notice, never a path: clients
    read it), and whether its bytes needed replacing."""
    data = claimed.data or b""
    try:
        text, replaced = data.decode("utf-8"), False
    except UnicodeDecodeError:
        text, replaced = data.decode("utf-8", errors="replace"), True
    token = claimed.token
    message = mark(
        HumanMessage(text, id=notice_id(token) if token else None),
        DELIVERY_KIND,
        notice=False,
        file=printable(claimed.name),
        mtime=datetime.fromtimestamp(claimed.mtime, timezone.utc).isoformat(),
        replaced_characters=replaced,
        **({"token": token} if token else {}),
    )
    return message, replaced


_outages: set[str] = set()
_outages_lock = threading.Lock()


def _outage(store: InboxBackend, exc: OSError | None) -> None:
    """Log one warning when ``store`` becomes unreachable (``exc``) and one when it is back; repeats
    stay at DEBUG."""
    with _outages_lock:
        was_out = store.location in _outages
        (_outages.add if exc is not None else _outages.discard)(store.location)
    if exc is None and was_out:
        logger.warning(
            "inbox: %s is reachable again; its notices are delivered from now on", store.location
        )
    elif exc is not None and not was_out:
        logger.warning(
            "inbox: %s cannot be read (%s); model calls go on without its notices until it is "
            "back, "
            "and nothing is lost",
            store.location,
            exc,
        )
    elif exc is not None:
        logger.debug("inbox: %s still unavailable: %s", store.location, exc)


def acknowledge(store: LeasingInbox, token: str, name: str) -> Path | str | None | Literal[False]:
    """Record claim ``token`` as delivered and return where it lies (None: not in flight); False,
    with a warning, when it fails."""
    try:
        return store.acknowledge(token, name)
    except OSError as exc:
        if name == ABORT_FILE:
            logger.warning(
                "inbox: could not record the abort of %s as consumed: %s", store.location, exc
            )
        else:
            logger.warning(
                "inbox: could not record the delivery of %s/%s (%s); it will be delivered again",
                store.location,
                printable(name),
                exc,
            )
        return False


def _leased(notices: Sequence[BaseMessage]) -> Iterator[tuple[BaseMessage, str, str]]:
    """Yield each leased notice among ``notices`` with its claim token and name."""
    for message in notices:
        info = mark_of(message) or {}
        if info.get("kind") == DELIVERY_KIND and info.get("token"):
            yield message, str(info["token"]), str(info.get("file", ""))


def acknowledge_notices(store: InboxBackend | None, notices: Sequence[BaseMessage]) -> int:
    """Record as delivered every leased notice among ``notices`` (after the model call that received
    them); return how many."""
    if not isinstance(store, LeasingInbox):
        return 0
    return sum(acknowledge(store, token, name) is not False for _, token, name in _leased(notices))


_settling: set[str] = (
    set()
)  # tokens this process waits to see stored: no pickup of this process takes them over
_watchers: set[_Watcher] = set()
_settling_lock = threading.Lock()


class _Watcher:
    """Acknowledges a batch of leased notices once ``stored()`` lists their ids; polled from its own
    thread."""

    def __init__(
        self,
        store: LeasingInbox,
        claims: dict[str, tuple[str, str]],
        stored: Callable[[], Collection[str] | None],
    ) -> None:
        self.store, self.claims, self.stored = store, claims, stored
        self.lock = threading.Lock()

    def check(self) -> bool:
        """Acknowledge the claims whose ids are stored now; return whether none is left."""
        with self.lock:
            if not self.claims:
                return True
            try:
                ids = self.stored()
            except (
                Exception
            ) as exc:  # a checkpointer read that failed: stored or not, we cannot tell yet
                logger.debug(
                    "inbox: could not read the stored conversation of %s: %s",
                    self.store.location,
                    exc,
                )
                return False
            for nid in [nid for nid in self.claims if ids is not None and nid in ids]:
                token, name = self.claims.pop(nid)
                acknowledge(self.store, token, name)
                with _settling_lock:
                    _settling.discard(token)
            return not self.claims

    def finish(self) -> None:
        """Release the claims still waiting (a later pickup settles them) and forget this
        watcher."""
        with self.lock, _settling_lock:
            _settling.difference_update(token for token, _ in self.claims.values())
            _watchers.discard(self)

    def run(self, wait: float) -> None:
        deadline, delay = time.monotonic() + wait, 0.002
        try:
            while not self.check() and time.monotonic() < deadline:
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
        finally:
            self.finish()


def settle_when_stored(
    store: InboxBackend | None,
    notices: Sequence[BaseMessage],
    stored: Callable[[], Collection[str] | None],
) -> None:
    """Acknowledge each leased notice among ``notices`` once ``stored()`` lists its message id.

    ``stored`` reads the ids the *durable* conversation holds (the checkpointer's, written behind
    the run with ``durability="async"``), or None while it cannot tell. A background thread polls
    it for up to the store's lease; then a later pickup acknowledges them
    through ``seen``, and the process's exit checks once more. A crash before that leaves the
    claim to the next reader: never lost, never twice.
    """
    if not isinstance(store, LeasingInbox):
        return
    claims = {m.id: (token, name) for m, token, name in _leased(notices) if isinstance(m.id, str)}
    if not claims:
        return
    watcher = _Watcher(store, claims, stored)
    with _settling_lock:
        _settling.update(token for token, _ in claims.values())
        _watchers.add(watcher)
    wait = float(getattr(store, "lease_seconds", SETTLE_WAIT_SECONDS))
    threading.Thread(
        target=watcher.run, args=(wait,), name="promptstrat-inbox-settle", daemon=True
    ).start()


def wait_settled(timeout: float = 5.0) -> bool:
    """Return whether every notice this process waits to see stored was acknowledged (or released)
    within ``timeout`` s (tests, scripts)."""
    deadline = time.monotonic() + timeout
    while True:
        with _settling_lock:
            watchers = list(_watchers)
        if not watchers:
            return True
        for watcher in watchers:
            if watcher.check():
                watcher.finish()
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(0.01, left))


atexit.register(
    wait_settled, 0.0
)  # check each waiting notice once more: a script's run has ended, its checkpoints are written


def _abort(store: InboxBackend, claimed: Claimed, result: Pickup, settle: bool) -> None:
    """Put the abort request ``claimed`` in ``result``: recorded as consumed at once with
    ``settle``, else left claimed (``abort_token``)."""
    where: Path | str | None = claimed.path
    if claimed.token and not settle:
        result.abort_token = claimed.token
    elif claimed.token and isinstance(store, LeasingInbox):
        where = acknowledge(store, claimed.token, claimed.name) or claimed.path
    if claimed.data is None:
        reason = "abort requested through the inbox (an unreadable abort file)"
    else:
        text = claimed.data.decode("utf-8", errors="replace").strip()
        reason = text or "abort requested through the inbox (an empty abort file)"
    result.abort_reason = reason
    result.abort_path = printable(str(where))


def pick_up(
    store: InboxBackend,
    *,
    seen: Container[str] = frozenset(),
    held: Collection[str] = frozenset(),
    settle: bool = True,
    budget_tokens: int | None = None,
    count: Any = None,
) -> Pickup:
    """Return the notices claimed from ``store`` (any backend), in order, stopping at an ``abort``.

    First the claims in flight: one in ``seen`` (the stored conversation holds it) is
    acknowledged, not sent again; one in ``held`` (awaiting its model call) or waiting to be
    seen stored is left alone; one of this process, of a dead reader or out of lease is taken
    over and sent again under its id. Then the ``ready()`` notices, each leased. With ``settle``
    each is acknowledged before returning; without, the caller does (:func:`acknowledge_notices`).
    Notices are admitted in order while their tokens fit ``budget_tokens`` (the first always),
    each user message counted by ``count``, the prompt's token counter (anything
    :func:`~langchain_promptstrat.tokens.as_token_counter` takes; None: cl100k_base); an
    unreachable backend gives nothing, with one warning per outage.
    """
    result = Pickup(budget_tokens=pickup_budget() if budget_tokens is None else budget_tokens)
    leasing = store if isinstance(store, LeasingInbox) else None
    counter = as_token_counter(count)
    admitted = 0

    def over_budget(message: HumanMessage) -> int | None:
        """Return the tokens of ``message`` when it fits what is left of the budget, else None."""
        tokens = counter([message])
        over = leasing is not None and admitted > 0 and admitted + tokens > result.budget_tokens
        return None if over else tokens

    try:
        leases = leasing.in_flight() if leasing else []
        names = leasing.ready() if leasing else store.pending()
    except OSError as exc:
        _outage(store, exc)
        return result
    _outage(store, None)
    taken: list[tuple[Claimed, HumanMessage, bool]] = []
    for lease in leases:
        assert leasing is not None
        nid = notice_id(lease.token)
        with (
            _settling_lock
        ):  # this process's watcher records it once stored: one acknowledgement, not two racing
            if lease.token in _settling:
                continue
        if nid in seen:
            acknowledge(leasing, lease.token, lease.name)
            continue
        if nid in held or lease.state == "held":
            continue
        try:
            claimed = leasing.take_over(lease, need_content=lease.name != ABORT_FILE)
        except OSError as exc:
            logger.info(
                "inbox: could not recover %s/%s: %s", store.location, printable(lease.name), exc
            )
            continue
        if claimed is None:
            continue
        if (
            claimed.name == ABORT_FILE
        ):  # a reader stopped before it recorded the abort: honour it now
            _abort(store, claimed, result, settle)
            return result
        message, replaced = _notice(claimed)
        tokens = over_budget(message)
        if tokens is None:  # this process's claim now: the next pickup takes it over first
            result.waiting += 1
            continue
        taken.append((claimed, message, replaced))
        admitted += tokens
    for name in names:
        is_abort = name == ABORT_FILE
        if result.waiting and not is_abort:
            result.waiting += 1  # the budget is spent: only an abort is still taken now
            continue
        try:
            claimed = (leasing.lease if leasing else store.claim)(name, need_content=not is_abort)
        except OSError as exc:
            logger.info("inbox: skipped %s/%s: %s", store.location, printable(name), exc)
            result.skipped.append({"file": printable(name), "error": printable(str(exc))})
            continue
        if claimed is None:
            continue
        if is_abort:
            _abort(store, claimed, result, settle)
            break
        message, replaced = _notice(claimed)
        tokens = over_budget(message)
        if tokens is None:  # stays this process's claim: the next pickup takes it over first
            result.waiting += 1
            continue
        taken.append((claimed, message, replaced))
        admitted += tokens
    for claimed, message, replaced in taken:
        if not str(message.content).strip():
            result.empty.append(
                printable(claimed.name)
            )  # consumed (recorded in the history) but never sent
            if leasing and claimed.token:
                acknowledge(leasing, claimed.token, claimed.name)
            continue
        if settle and leasing and claimed.token:
            try:
                final = leasing.acknowledge(claimed.token, claimed.name)
            except (
                OSError
            ) as exc:  # not recorded: keep it claimed for this process's next pickup, not sent now
                logger.info(
                    "inbox: skipped %s/%s: %s", store.location, printable(claimed.name), exc
                )
                result.skipped.append(
                    {"file": printable(claimed.name), "error": printable(str(exc))}
                )
                continue
            if (
                final is None
            ):  # no longer this reader's claim (another reader recovered it): not ours to send
                continue
        result.delivered.append(message)
        if replaced:
            result.replaced_characters.append(printable(claimed.name))
    return result


INBOX_ABORT = "inbox_abort"  # the interrupt payload's type
RESUME_KIND = "inbox_resume"  # the mark of the user message a string Command(resume=...) becomes

NO_CHECKPOINTER_NOTE = (
    "The graph was compiled without a checkpointer, so the abort could not pause the run for a "
    "later Command(resume=...): it ends the run instead. Compile with a checkpointer (for example "
    "InMemorySaver()) to make an inbox abort resumable."
)


def _pick_up(
    store: InboxBackend,
    seen: Container[str],
    held: Collection[str],
    settle: bool,
    budget: int | None,
    count: Any,
) -> dict[str, Any]:
    result = pick_up(store, seen=seen, held=held, settle=settle, budget_tokens=budget, count=count)
    abort = {"reason": result.abort_reason, "path": result.abort_path} if result.aborted else None
    if abort is not None and result.abort_token:
        abort["token"] = result.abort_token
    return {"delivered": result.delivered, "abort": abort}


# langgraph types task(name=...) as a decorator whose ParamSpec and TypeVar are solved (to Never)
# before it sees the function, so mypy rejects any function here; pyright accepts it
_pick_up_once: Callable[
    [InboxBackend, Container[str], Collection[str], bool, int | None, Any], Future[dict[str, Any]]
] = task(name="promptstrat_inbox_pickup")(_pick_up)  # type: ignore[arg-type, assignment]


def _with_run_config(config: RunnableConfig, func: Callable[..., Any], *args: Any) -> Any:
    """Return ``func(*args)`` where ``get_config()`` finds the run's config (Python 3.10 does not
    carry it into an async graph's nodes)."""
    try:
        get_config()
    except RuntimeError:
        with set_config_context(config) as context:
            return context.run(func, *args)
    return func(*args)


def _checkpointed_pick_up(*args: Any) -> dict[str, Any]:
    """Return :func:`_pick_up` of ``args`` as the run's checkpointed task, or directly outside a
    run."""
    try:
        future = _pick_up_once(*args)
    except (RuntimeError, KeyError):  # called outside a LangGraph run: nothing to replay
        return _pick_up(*args)
    return future.result()


def has_checkpointer(config: RunnableConfig | None) -> bool:
    """Return whether the run saves checkpoints, so a notice put in its state survives the
    process."""
    return (config or {}).get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER) is not None


def stored_notice_ids(
    config: RunnableConfig | None, keys: Sequence[str] = ()
) -> frozenset[str] | None:
    """Return the notice ids the checkpointer has *stored* for the run's thread (in ``messages`` and
    under ``keys``), None when it cannot tell.

    Read back from the checkpointer, not the run's memory: ``durability="async"`` writes behind the
    run.
    """
    configurable = (config or {}).get("configurable", {})
    saver, thread = configurable.get(CONFIG_KEY_CHECKPOINTER), configurable.get("thread_id")
    if saver is None or thread is None:
        return None
    # a node's namespace is its graph's plus "|<node>:<task id>" (the task's own segment,
    # "|"-separated)
    task_ns = str(
        configurable.get("checkpoint_ns") or ""
    )  # langgraph's CONFIG_KEY_CHECKPOINT_NS, private since 1.0
    graph_ns = task_ns.rpartition("|")[0] if "|" in task_ns else ("" if ":" in task_ns else task_ns)
    stored = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": graph_ns}})
    if stored is None:
        return frozenset()
    values = stored.checkpoint.get("channel_values") or {}
    ids = set(notice_ids(values.get("messages") or []))
    for key in keys:
        ids.update(str(nid) for nid in values.get(key) or [])
    return frozenset(ids)


def stored_reader(
    config: RunnableConfig, keys: Sequence[str] = ()
) -> Callable[[], frozenset[str] | None]:
    """Return a reader of :func:`stored_notice_ids` for this run, for a watcher thread to poll."""
    return lambda: stored_notice_ids(config, keys)


class StoredNoticeIds(Container[str]):
    """The ids among ``candidates`` (those in the run's state) that the checkpointer has stored,
    read on first use only."""

    def __init__(
        self, config: RunnableConfig, candidates: Collection[str], keys: Sequence[str] = ()
    ) -> None:
        self.candidates = frozenset(candidates)
        self._read = stored_reader(config, keys)

    @cached_property
    def _ids(self) -> frozenset[str]:
        try:
            return (self._read() or frozenset()) & self.candidates
        except (
            Exception
        ) as exc:  # unreadable now: nothing counts as stored, the claims stay in flight
            logger.debug("inbox: could not read the stored conversation: %s", exc)
            return frozenset()

    def __contains__(self, nid: object) -> bool:
        return nid in self.candidates and nid in self._ids


def _add_note(error: BaseException, note: str) -> None:
    if sys.version_info >= (3, 11):
        error.add_note(note)
    # Python 3.10: the PEP 678 attribute, which tracebacks there do not print (and typeshed does not
    # declare)
    else:
        error.__notes__ = [*getattr(error, "__notes__", []), note]  # type: ignore[attr-defined, unused-ignore]


def abort_payload(
    config: RunnableConfig | None, reason: str, path: str | None, notices: Sequence[BaseMessage]
) -> dict[str, Any]:
    """Return the interrupt payload of an inbox abort: ``type``, ``thread_id``, ``reason``,
    ``abort`` (its history name), ``notices`` (taken before it); no server path."""
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    marks = [mark_of(m) or {} for m in notices]
    names = [str(m["file"]) for m in marks if m.get("file") is not None]
    name = printable(re.split(r"[/\\]", path)[-1]) if path else ABORT_FILE
    return {
        "type": INBOX_ABORT,
        "thread_id": None if thread is None else str(thread),
        "reason": reason,
        "abort": name,
        "notices": names,
    }


class DeliveryOptions(TypedDict, total=False):
    """How :func:`deliver_inbox` treats an abort and acknowledges notices."""

    on_abort: Literal["interrupt", "raise", "return"]
    seen: Container[str]
    held: Collection[str]
    settle: bool
    stored: Callable[[], Collection[str] | None] | None


def acknowledgement(
    config: RunnableConfig, persist: bool, messages: Callable[[], Sequence[BaseMessage]]
) -> DeliveryOptions:
    """Return how a graph's pickup acknowledges: once a stored checkpoint holds the notice
    (``persist``, with a checkpointer), else at once.

    ``messages`` reads the state's messages, whose notices wait for their checkpoint; only called
    then.
    """
    if not (persist and has_checkpointer(config)):
        return {"settle": True}
    held = notice_ids(messages())
    return {
        "seen": StoredNoticeIds(config, held),
        "held": held,
        "settle": False,
        "stored": stored_reader(config),
    }


class InboxDelivery(NamedTuple):
    """What one delivery took from the inbox: the notices, and the abort it stopped at
    (``on_abort="return"``)."""

    notices: list[BaseMessage]
    abort: dict[str, Any] | None = None


def deliver_inbox(
    store: InboxBackend,
    config: RunnableConfig,
    *,
    include_paths: bool = False,
    budget_tokens: int | None = None,
    count: Any = None,
    **options: Unpack[DeliveryOptions],
) -> InboxDelivery:
    """Return the notices of ``store`` (any inbox backend), handling ``abort`` as ``on_abort`` says.

    ``seen``, ``held`` and ``settle`` (default True) are :func:`pick_up`'s, as are
    ``budget_tokens`` and ``count``; with ``stored`` the notices are acknowledged once it lists
    them (:func:`settle_when_stored`).
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
        picked = _with_run_config(
            config,
            _checkpointed_pick_up,
            store,
            seen,
            frozenset(taken),
            settle,
            budget_tokens,
            count,
        )
        notices += picked["delivered"]
        if picked["abort"] is None:
            break
        # The pickup task's result, abort included, is in the checkpoint (or, without a
        # checkpointer, acted on now): the abort is spent. A replayed task acknowledges again, which
        # finds nothing left to do.
        token = picked["abort"].get("token")
        recorded = (
            acknowledge(store, token, ABORT_FILE) or None
            if token and isinstance(store, LeasingInbox)
            else None
        )
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


def prompt_counter(strategies: Sequence[Any]) -> Any:
    """Return the token counter the prompt is counted with: the first ``strategies`` have.

    None when no strategy counts tokens (a pickup then counts with cl100k_base, as they would).
    """
    counters = (getattr(s, "token_counter", None) for s in strategies)
    return next((counter for counter in counters if counter is not None), None)
