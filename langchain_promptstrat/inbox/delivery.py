"""Claim, deliver, acknowledge: how the notices of one inbox become user messages, each exactly once to a model.

:func:`pick_up` *leases* a notice, hands it over as a user message whose id comes from the claim
(``promptstrat-inbox-<token>``), and *acknowledges* it only once that is safe: at once for
one-call delivery (``settle=True``), or once the *stored* conversation holds it
(:func:`settle_when_stored`, or a later pickup finding it in ``seen``). A claim whose reader died
or whose lease ran out is delivered again under the same id, which ``add_messages`` replaces.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_promptstrat.errors import InboxAborted
from langchain_promptstrat.inbox.contract import ABORT_FILE, Claimed, InboxBackend, LeasingInbox, pickup_budget
from langchain_promptstrat.messages import mark, mark_of
from langchain_promptstrat.report import logger

DELIVERY_KIND = "inbox_delivery"
"""Mark kind of a delivered notice (``mark_of(m)["kind"]``); it is a real user message."""
NOTICE_ID_PREFIX = "promptstrat-inbox-"
SETTLE_WAIT_SECONDS = 600.0  # how long a watcher waits for the stored conversation when the backend names no lease


def notice_id(token: str) -> str:
    """Return the message id of the notice claimed under ``token``: the same on every redelivery."""
    return NOTICE_ID_PREFIX + token


def notice_ids(messages: Sequence[BaseMessage]) -> frozenset[str]:
    """Return the ids of the inbox notices among ``messages`` (what a conversation already holds)."""
    return frozenset(m.id for m in messages if isinstance(m.id, str) and m.id.startswith(NOTICE_ID_PREFIX))


def printable(text: str) -> str:
    """Return ``text`` with the lone surrogates of an undecodable file name as ``\\xNN`` escapes (valid UTF-8)."""
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
    ``acknowledged``: earlier deliveries recorded now (``seen``); ``unavailable``: why the inbox
    could not be read; ``waiting``: notices left for later, over ``budget_bytes``.
    """

    delivered: list[HumanMessage] = field(default_factory=list)
    abort_reason: str | None = None
    abort_path: str | None = None
    abort_token: str | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)
    replaced_characters: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    unavailable: str | None = None
    budget_bytes: int = 0
    waiting: int = 0

    @property
    def aborted(self) -> bool:
        return self.abort_reason is not None

    def error(self) -> InboxAborted:
        """Return the :class:`InboxAborted` this pickup stands for (only when :attr:`aborted`)."""
        return InboxAborted(self.abort_reason or "", path=self.abort_path, delivered=self.delivered)


def _notice(claimed: Claimed) -> tuple[HumanMessage, bool]:
    """Return the user message a notice becomes (its mark names the notice, never a path: clients read it), and whether its bytes needed replacing."""
    data = claimed.data or b""
    try:
        text, replaced = data.decode("utf-8"), False
    except UnicodeDecodeError:
        text, replaced = data.decode("utf-8", errors="replace"), True
    token = claimed.token
    message = mark(
        HumanMessage(text, id=notice_id(token) if token else None), DELIVERY_KIND, notice=False,
        file=printable(claimed.name), mtime=datetime.fromtimestamp(claimed.mtime, timezone.utc).isoformat(),
        replaced_characters=replaced, **({"token": token} if token else {}),
    )
    return message, replaced


_outages: set[str] = set()
_outages_lock = threading.Lock()


def _outage(store: InboxBackend, exc: OSError | None) -> None:
    """Log one warning when ``store`` becomes unreachable (``exc``) and one when it is back; repeats stay at DEBUG."""
    with _outages_lock:
        was_out = store.location in _outages
        (_outages.add if exc is not None else _outages.discard)(store.location)
    if exc is None and was_out:
        logger.warning("inbox: %s is reachable again; its notices are delivered from now on", store.location)
    elif exc is not None and not was_out:
        logger.warning(
            "inbox: %s cannot be read (%s); model calls go on without its notices until it is back, "
            "and nothing is lost", store.location, exc,
        )
    elif exc is not None:
        logger.debug("inbox: %s still unavailable: %s", store.location, exc)


def acknowledge(store: LeasingInbox, token: str, name: str) -> Path | str | None | Literal[False]:
    """Record claim ``token`` as delivered and return where it lies (None: not in flight); False, with a warning, when it fails."""
    try:
        return store.acknowledge(token, name)
    except OSError as exc:
        if name == ABORT_FILE:
            logger.warning("inbox: could not record the abort of %s as consumed: %s", store.location, exc)
        else:
            logger.warning(
                "inbox: could not record the delivery of %s/%s (%s); it will be delivered again",
                store.location, printable(name), exc,
            )
        return False


def _leased(notices: Sequence[BaseMessage]) -> Iterator[tuple[BaseMessage, str, str]]:
    """Yield each leased notice among ``notices`` with its claim token and name."""
    for message in notices:
        info = mark_of(message) or {}
        if info.get("kind") == DELIVERY_KIND and info.get("token"):
            yield message, str(info["token"]), str(info.get("file", ""))


def acknowledge_notices(store: InboxBackend | None, notices: Sequence[BaseMessage]) -> int:
    """Record as delivered every leased notice among ``notices`` (after the model call that received them); return how many."""
    if not isinstance(store, LeasingInbox):
        return 0
    return sum(acknowledge(store, token, name) is not False for _, token, name in _leased(notices))


_settling: set[str] = set()  # tokens this process waits to see stored: no pickup of this process takes them over
_watchers: set[_Watcher] = set()
_settling_lock = threading.Lock()


class _Watcher:
    """Acknowledges a batch of leased notices once ``stored()`` lists their ids; polled from its own thread."""

    def __init__(self, store: LeasingInbox, claims: dict[str, tuple[str, str]], stored: Callable[[], Collection[str] | None]) -> None:
        self.store, self.claims, self.stored = store, claims, stored
        self.lock = threading.Lock()

    def check(self) -> bool:
        """Acknowledge the claims whose ids are stored now; return whether none is left."""
        with self.lock:
            if not self.claims:
                return True
            try:
                ids = self.stored()
            except Exception as exc:  # a checkpointer read that failed: stored or not, we cannot tell yet
                logger.debug("inbox: could not read the stored conversation of %s: %s", self.store.location, exc)
                return False
            for nid in [nid for nid in self.claims if ids is not None and nid in ids]:
                token, name = self.claims.pop(nid)
                acknowledge(self.store, token, name)
                with _settling_lock:
                    _settling.discard(token)
            return not self.claims

    def finish(self) -> None:
        """Release the claims still waiting (a later pickup settles them) and forget this watcher."""
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
    *,
    wait: float | None = None,
) -> bool:
    """Acknowledge each leased notice among ``notices`` once ``stored()`` lists its message id; return whether any waits.

    ``stored`` reads the ids the *durable* conversation holds (the checkpointer's, written behind
    the run with ``durability="async"``), or None while it cannot tell. A background thread polls
    it for up to ``wait`` seconds (default: the lease); then a later pickup acknowledges them
    through ``seen``, and the process's exit checks once more. A crash before that leaves the
    claim to the next reader: never lost, never twice.
    """
    if not isinstance(store, LeasingInbox):
        return False
    claims = {m.id: (token, name) for m, token, name in _leased(notices) if isinstance(m.id, str)}
    if not claims:
        return False
    watcher = _Watcher(store, claims, stored)
    with _settling_lock:
        _settling.update(token for token, _ in claims.values())
        _watchers.add(watcher)
    wait = float(getattr(store, "lease_seconds", SETTLE_WAIT_SECONDS)) if wait is None else wait
    threading.Thread(target=watcher.run, args=(wait,), name="promptstrat-inbox-settle", daemon=True).start()
    return True


def wait_settled(timeout: float = 5.0) -> bool:
    """Return whether every notice this process waits to see stored was acknowledged (or released) within ``timeout`` s (tests, scripts)."""
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


@atexit.register
def _settle_at_exit() -> None:
    """Check each waiting notice once more: a script's run has ended, its checkpoints are written."""
    with _settling_lock:
        watchers = list(_watchers)
    for watcher in watchers:
        watcher.check()


def _abort(store: InboxBackend, claimed: Claimed, result: Pickup, settle: bool) -> None:
    """Put the abort request ``claimed`` in ``result``: recorded as consumed at once with ``settle``, else left claimed (``abort_token``)."""
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
    seen: Collection[str] = frozenset(),
    held: Collection[str] = frozenset(),
    settle: bool = True,
    budget_bytes: int | None = None,
) -> Pickup:
    """Return the notices claimed from ``store`` (any backend), in order, stopping at an ``abort``.

    First the claims in flight: one in ``seen`` (the stored conversation holds it) is
    acknowledged, not sent again; one in ``held`` (awaiting its model call) or waiting to be
    seen stored is left alone; one of this process, of a dead reader or out of lease is taken
    over and sent again under its id. Then the ``ready()`` notices, each leased. With ``settle``
    each is acknowledged before returning; without, the caller does (:func:`acknowledge_notices`).
    Notices are admitted in order while their bytes fit ``budget_bytes`` (the first always); an
    unreachable backend gives nothing, with one warning per outage.
    """
    result = Pickup(budget_bytes=pickup_budget() if budget_bytes is None else budget_bytes)
    leasing = store if isinstance(store, LeasingInbox) else None
    admitted = 0

    def over_budget(size: int) -> bool:
        return leasing is not None and admitted > 0 and admitted + size > result.budget_bytes

    try:
        leases = leasing.in_flight() if leasing else []
        names = leasing.ready() if leasing else store.pending()
    except OSError as exc:
        _outage(store, exc)
        result.unavailable = str(exc)
        return result
    _outage(store, None)
    taken: list[Claimed] = []
    for lease in leases:
        assert leasing is not None
        nid = notice_id(lease.token)
        with _settling_lock:  # this process's watcher records it once stored: one acknowledgement, not two racing
            if lease.token in _settling:
                continue
        if nid in seen:
            if acknowledge(leasing, lease.token, lease.name) is not False:
                result.acknowledged.append(printable(lease.name))
            continue
        if nid in held or lease.state == "held":
            continue
        if over_budget(lease.size) and lease.name != ABORT_FILE:
            result.waiting += 1
            continue
        try:
            claimed = leasing.take_over(lease, need_content=lease.name != ABORT_FILE)
        except OSError as exc:
            logger.info("inbox: could not recover %s/%s: %s", store.location, printable(lease.name), exc)
            continue
        if claimed is None:
            continue
        if claimed.name == ABORT_FILE:  # a reader stopped before it recorded the abort: honour it now
            _abort(store, claimed, result, settle)
            return result
        taken.append(claimed)
        admitted += len(claimed.data or b"")
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
        if over_budget(len(claimed.data or b"")):  # stays this process's claim: the next pickup takes it over first
            result.waiting += 1
            continue
        taken.append(claimed)
        admitted += len(claimed.data or b"")
    for claimed in taken:
        message, replaced = _notice(claimed)
        if not str(message.content).strip():
            result.empty.append(printable(claimed.name))  # consumed (recorded in the history) but never sent
            if leasing and claimed.token:
                acknowledge(leasing, claimed.token, claimed.name)
            continue
        if settle and leasing and claimed.token:
            try:
                final = leasing.acknowledge(claimed.token, claimed.name)
            except OSError as exc:  # not recorded: keep it claimed for this process's next pickup, not sent now
                logger.info("inbox: skipped %s/%s: %s", store.location, printable(claimed.name), exc)
                result.skipped.append({"file": printable(claimed.name), "error": printable(str(exc))})
                continue
            if final is None:  # no longer this reader's claim (another reader recovered it): not ours to send
                continue
        result.delivered.append(message)
        if replaced:
            result.replaced_characters.append(printable(claimed.name))
    return result
