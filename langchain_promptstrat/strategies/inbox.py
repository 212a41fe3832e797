"""inbox: moves the pending files of a conversation's inbox out and appends them as user messages.

This is the one strategy with a side effect. A person steers a running agent by dropping
a file next to its conversation; a file named exactly ``abort`` stops the run instead,
with its content as the reason.

Delivery is claim, deliver, acknowledge (:func:`pick_up`): a notice is first *leased*
(taken out of the pending set by this process, not yet in the history), handed over as a
user message whose id is derived from the claim (``promptstrat-inbox-<token>``), and
*acknowledged* (moved into the history) only once it is safe: right away for one-call
delivery (``settle=True``: the Runnable, :func:`inbox`, ``prepare_prompt``), or, where the
notice persists in a checkpointed conversation, when a later pickup finds its id in the
state (``seen``). A claim whose reader died, or whose lease ran out, is taken over by the
next pickup and delivered again under the same id, so LangGraph's ``add_messages``
replaces rather than duplicates it.

Where the inbox lives is the backend's business (:mod:`~langchain_promptstrat.inbox.contract`):
a directory beside the save file by default, or PostgreSQL with
``backend=PostgresInboxes(dsn)``. The rule above holds for both.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from typing_extensions import TypeIs

from langchain_core.callbacks import CallbackManagerForChainRun
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_promptstrat.strategy import PromptStrategy, emit_report
from langchain_promptstrat.errors import ConfigError, InboxAborted
from langchain_promptstrat.inbox.contract import InboxBackend, InboxProvider, LeasingInbox, is_inbox_backend
from langchain_promptstrat.inbox.directory import ABORT_FILE, Claimed, DirectoryInbox, inbox_root, thread_save_file, warn_once
from langchain_promptstrat.messages import coerce_messages, mark, mark_of
from langchain_promptstrat.report import Compacted, logger, make_report
from langchain_promptstrat.settings import Settings

__all__ = [
    "DELIVERY_KIND",
    "Inbox",
    "InboxBackendSpec",
    "Pickup",
    "check_backend",
    "inbox",
    "inbox_for_config",
    "inbox_for_save_file",
    "notice_id",
    "pick_up",
    "save_file_for_config",
]

InboxBackendSpec = InboxBackend | InboxProvider | type[DirectoryInbox] | None
"""What ``backend=`` accepts: a provider (``PostgresInboxes(dsn)``, the ``DirectoryInbox``
class), one conversation's backend, or None for the directory default."""

DELIVERY_KIND = "inbox_delivery"
"""Mark kind of a delivered notice (``mark_of(m)["kind"]``); it is a real user message."""

NOTICE_ID_PREFIX = "promptstrat-inbox-"


def notice_id(token: str) -> str:
    """Return the message id of the notice claimed under ``token``: the same on every redelivery."""
    return NOTICE_ID_PREFIX + token


def notice_ids(messages: Sequence[BaseMessage]) -> frozenset[str]:
    """Return the ids of the inbox notices among ``messages`` (what a conversation already holds)."""
    return frozenset(m.id for m in messages if isinstance(m.id, str) and m.id.startswith(NOTICE_ID_PREFIX))


@dataclass
class Pickup:
    """What one pass over the inbox took: notices, an abort request, and the files it skipped."""

    delivered: list[HumanMessage] = field(default_factory=list)
    abort_reason: str | None = None
    """None when no ``abort`` file was consumed."""
    abort_path: str | None = None
    """Where the consumed ``abort`` file now lies."""
    abort_token: str | None = None
    """The abort's claim token while it awaits acknowledgement (``settle=False``); None once recorded."""
    skipped: list[dict[str, str]] = field(default_factory=list)
    """``{"file", "error"}`` for each file left in place because it could not be read or moved."""
    replaced_characters: list[str] = field(default_factory=list)
    """Names of the files that were not valid UTF-8 and were decoded with U+FFFD."""
    empty: list[str] = field(default_factory=list)
    """Names of the blank files consumed but not delivered: providers reject an empty user message."""
    acknowledged: list[str] = field(default_factory=list)
    """Names of the earlier deliveries recorded now, because the conversation holds them (``seen``)."""
    unavailable: str | None = None
    """Why the inbox could not be read this time (a database outage); None when it could."""

    @property
    def aborted(self) -> bool:
        """Whether the pickup consumed an ``abort`` file."""
        return self.abort_reason is not None

    def error(self) -> InboxAborted:
        """Return the :class:`InboxAborted` this pickup stands for (only when :attr:`aborted`)."""
        return InboxAborted(self.abort_reason or "", path=self.abort_path, delivered=self.delivered)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat()


def printable(text: str) -> str:
    """Return ``text`` with the lone surrogates of an undecodable file name as ``\\xNN`` escapes (valid UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") if _escapable(text) else (
            text.encode("utf-8", "surrogatepass").decode("utf-8", "backslashreplace")
        )
    return text


def _escapable(text: str) -> bool:
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def _notice(name: str, path: Path | str, mtime: float, data: bytes, token: str | None = None) -> tuple[HumanMessage, bool]:
    try:
        text, replaced = data.decode("utf-8"), False
    except UnicodeDecodeError:
        text, replaced = data.decode("utf-8", errors="replace"), True
    extra = {"token": token} if token else {}
    message = mark(
        HumanMessage(text, id=notice_id(token) if token else None), DELIVERY_KIND, notice=False,
        file=printable(name), mtime=_iso(mtime), removed_path=printable(str(path)), replaced_characters=replaced, **extra,
    )
    return message, replaced


_outages: set[str] = set()
_outages_lock = threading.Lock()


def _outage(store: InboxBackend, exc: OSError) -> None:
    """Log one warning when ``store`` becomes unreachable; later failures of the same outage stay at DEBUG."""
    with _outages_lock:
        first = store.location not in _outages
        _outages.add(store.location)
    if first:
        logger.warning(
            "inbox: %s cannot be read (%s); model calls go on without its notices until it is back, "
            "and nothing is lost", store.location, exc,
        )
    else:
        logger.debug("inbox: %s still unavailable: %s", store.location, exc)


def _reachable(store: InboxBackend) -> None:
    with _outages_lock:
        if store.location not in _outages:
            return
        _outages.discard(store.location)
    logger.warning("inbox: %s is reachable again; its notices are delivered from now on", store.location)


def _acknowledge(store: LeasingInbox, token: str, name: str) -> bool:
    try:
        store.acknowledge(token, name)
    except OSError as exc:
        logger.warning("inbox: could not record the delivery of %s/%s (%s); it will be delivered again", store.location, printable(name), exc)
        return False
    return True


def acknowledge_notices(store: InboxBackend | None, notices: Sequence[BaseMessage]) -> int:
    """Record as delivered every leased notice among ``notices`` (after the model call that received them); return how many."""
    if store is None or not isinstance(store, LeasingInbox):
        return 0
    done = 0
    for message in notices:
        info = mark_of(message) or {}
        if info.get("kind") == DELIVERY_KIND and info.get("token"):
            done += _acknowledge(store, str(info["token"]), str(info.get("file", "")))
    return done


def _abort(store: InboxBackend, claimed: Claimed, result: Pickup, settle: bool) -> None:
    """Return the abort request ``claimed`` in ``result``, recorded as consumed at once with ``settle``.

    Without ``settle`` it stays claimed (``abort_token``) until the caller has acted on it
    and acknowledges it, or a later pickup finds ``notice_id(abort_token)`` in ``seen``.
    """
    where: Path | str | None = claimed.path
    if claimed.token and not settle:
        result.abort_token = claimed.token
    elif claimed.token:
        try:
            where = store.acknowledge(claimed.token, claimed.name) or claimed.path  # type: ignore[attr-defined]
        except OSError as exc:
            logger.warning("inbox: could not record the abort of %s (%s); honouring it anyway", store.location, exc)
    if claimed.data is None:
        reason = f"abort requested through the inbox (unreadable abort file, now at {where})"
    else:
        text = claimed.data.decode("utf-8", errors="replace").strip()
        reason = text or f"abort requested through the inbox (empty abort file, now at {where})"
    result.abort_reason = reason
    result.abort_path = printable(str(where))


def pick_up(
    store: InboxBackend,
    *,
    seen: Collection[str] = frozenset(),
    held: Collection[str] = frozenset(),
    settle: bool = True,
) -> Pickup:
    """Return the notices claimed from ``store`` (any backend), in order, stopping at an ``abort`` file.

    First the claims already in flight: one whose message id is in ``seen`` (the
    conversation holds it, checkpointed) is acknowledged, not delivered again; one in
    ``held`` (handed over and awaiting its model call) is left alone; one of this process,
    of a dead reader or out of lease is taken over and delivered again under its id. Then
    the ``ready()`` pending notices, in name order, each leased. With ``settle`` every
    notice delivered is acknowledged before returning (one-call delivery: a crash before
    that point redelivers, a failure after it does not); without, the caller acknowledges
    (:func:`acknowledge_notices`) or a later pickup does through ``seen``.

    Files sorting after ``abort`` stay for the next pickup; the abort itself is consumed at
    once. A file that cannot be read or moved is left where it is, logged at INFO and
    listed in ``skipped``. A blank file is consumed but not delivered (``empty``). When the
    backend cannot be reached (a database outage) the pickup returns nothing, with one
    warning per outage, and ``unavailable`` says why.
    """
    result = Pickup()
    leasing = isinstance(store, LeasingInbox)
    try:
        leases = store.in_flight() if leasing else []  # type: ignore[attr-defined]
        names = store.ready() if leasing else store.pending()  # type: ignore[attr-defined]
    except OSError as exc:
        _outage(store, exc)
        result.unavailable = str(exc)
        return result
    _reachable(store)
    taken: list[Claimed] = []
    for lease in leases:
        nid = notice_id(lease.token)
        if nid in seen:
            if _acknowledge(store, lease.token, lease.name):  # type: ignore[arg-type]
                result.acknowledged.append(printable(lease.name))
            continue
        if nid in held or not lease.recoverable:
            continue
        try:
            claimed = store.take_over(lease, need_content=lease.name != ABORT_FILE)  # type: ignore[attr-defined]
        except OSError as exc:
            logger.info("inbox: could not recover %s/%s: %s", store.location, printable(lease.name), exc)
            continue
        if claimed is None:
            continue
        if claimed.name == ABORT_FILE:  # a reader stopped before it recorded the abort: honour it now
            _abort(store, claimed, result, settle)
            return result
        taken.append(claimed)
    for name in names:
        is_abort = name == ABORT_FILE
        try:
            if not leasing:
                claimed = store.claim(name, need_content=not is_abort)
            else:
                claimed = store.lease(name, need_content=not is_abort)  # type: ignore[attr-defined]
        except OSError as exc:
            logger.info("inbox: skipped %s/%s: %s", store.location, printable(name), exc)
            result.skipped.append({"file": printable(name), "error": printable(str(exc))})
            continue
        if claimed is None:
            continue
        if is_abort:
            _abort(store, claimed, result, settle)
            break
        taken.append(claimed)
    for claimed in taken:
        message, replaced = _notice(claimed.name, claimed.path, claimed.mtime, claimed.data or b"", claimed.token)
        if not str(message.content).strip():
            result.empty.append(printable(claimed.name))  # consumed (recorded in the history) but never sent
            if claimed.token:
                _acknowledge(store, claimed.token, claimed.name)  # type: ignore[arg-type]
            continue
        if settle and claimed.token:
            try:
                final = store.acknowledge(claimed.token, claimed.name)  # type: ignore[attr-defined]
            except OSError as exc:  # not recorded: keep it claimed for this process's next pickup, not sent now
                logger.info("inbox: skipped %s/%s: %s", store.location, printable(claimed.name), exc)
                result.skipped.append({"file": printable(claimed.name), "error": printable(str(exc))})
                continue
            if final is None:  # no longer this reader's claim (another reader recovered it): not ours to send
                continue
            message, replaced = _notice(claimed.name, final, claimed.mtime, claimed.data or b"", claimed.token)
        result.delivered.append(message)
        if replaced:
            result.replaced_characters.append(printable(claimed.name))
    return result


def save_file_for_config(
    config: RunnableConfig | None, root: str | os.PathLike[str] | None = None, *, allow_save_file: bool = False
) -> Path | None:
    """Return the save file a run's config names: ``configurable.save_file``, else ``<root>/<thread_id>.chat``.

    ``root`` defaults to ``$PROMPTSTRAT_INBOX_ROOT``, read now; with neither, a thread has
    no inbox and None comes back. A ``root`` the application gave wins over the run
    config's ``save_file`` (which would let a run point the inbox at any path; it is
    ignored with one warning) unless ``allow_save_file``.
    """
    configurable = (config or {}).get("configurable") or {}
    if configurable.get("save_file") and root is not None and not allow_save_file:
        warn_once(
            ("save_file", os.fspath(root)),
            "inbox: the run config's configurable.save_file is ignored because the application set root=%s; "
            "pass allow_save_file=True to let run configs choose the inbox", os.fspath(root),
        )
    elif configurable.get("save_file"):
        return Path(configurable["save_file"])
    thread_id = configurable.get("thread_id")
    if thread_id is None or inbox_root(root) is None:
        return None
    return thread_save_file(str(thread_id), root)


def check_backend(backend: Any, root: str | os.PathLike[str] | None = None) -> InboxBackendSpec:
    """Return ``backend`` once it is known to be usable as ``backend=``; raise :class:`ConfigError` otherwise.

    ``root`` (the directory backend's inbox root) only goes with the directory backend.
    """
    directory = backend is None or (isinstance(backend, type) and issubclass(backend, DirectoryInbox))
    if not directory and (isinstance(backend, type) or not (is_inbox_backend(backend) or isinstance(backend, InboxProvider))):
        raise ConfigError(
            f"backend={backend!r} is not an inbox backend; pass a provider such as PostgresInboxes(dsn) or "
            "DirectoryInbox, one conversation's inbox such as PostgresInbox(dsn, thread_id=...), or None"
        )
    if root is not None and not directory:
        raise ConfigError(f"root= is the directory backend's inbox root; {backend!r} needs none")
    return cast(InboxBackendSpec, backend)  # checked above


def inbox_for_save_file(save_file: str | os.PathLike[str] | None, backend: InboxBackendSpec = None) -> InboxBackend | None:
    """Return the inbox of the conversation saved to ``save_file``: from ``backend``, a directory by default.

    A backend bound to one conversation is returned whatever ``save_file`` says; otherwise
    no save file means no inbox (None).
    """
    if is_inbox_backend(backend):
        return backend
    if not save_file or not os.fspath(save_file):
        return None
    return (backend or DirectoryInbox).for_save_file(save_file)


def inbox_for_config(
    config: RunnableConfig | None,
    *,
    backend: InboxBackendSpec = None,
    root: str | os.PathLike[str] | None = None,
    allow_save_file: bool = False,
) -> InboxBackend | None:
    """Return the inbox of a run: ``configurable.save_file``'s, else ``configurable.thread_id``'s, else None.

    With the directory backend a thread's inbox lies under ``root`` (default
    ``$PROMPTSTRAT_INBOX_ROOT``, read now) and without a root there is none; a provider
    such as ``PostgresInboxes`` needs no root. A backend bound to one conversation is
    returned as is.
    """
    if is_inbox_backend(backend):
        return backend
    if _is_directory(backend):
        save_file = save_file_for_config(config, root, allow_save_file=allow_save_file)
        return None if save_file is None else (backend or DirectoryInbox).for_save_file(save_file)
    configurable = (config or {}).get("configurable") or {}
    if configurable.get("save_file"):
        return backend.for_save_file(configurable["save_file"])
    thread_id = configurable.get("thread_id")
    return None if thread_id is None else backend.for_thread(str(thread_id))


def _is_directory(backend: InboxBackendSpec) -> TypeIs[type[DirectoryInbox] | None]:
    """Return whether ``backend`` names the directory backend: None, ``DirectoryInbox`` or a subclass."""
    return backend is None or (isinstance(backend, type) and issubclass(backend, DirectoryInbox))


def _deliver(messages: Sequence[BaseMessage], store: InboxBackend | None) -> Compacted:
    if store is None:
        out = list(messages)
        return Compacted(out, make_report("inbox", messages, out, delivered=0))
    result = pick_up(store)
    if result.aborted:
        raise result.error()
    out = [*messages, *result.delivered]
    return Compacted(out, make_report(
        "inbox", messages, out,
        inbox=store.location,
        delivered=len(result.delivered),
        files=[mark_of(m)["file"] for m in result.delivered],  # type: ignore[index]
        skipped=result.skipped,
        replaced_characters=result.replaced_characters,
        empty=result.empty,
    ))


def inbox(
    messages: Sequence[BaseMessage],
    /,
    *,
    save_file: str | os.PathLike[str] | None = None,
    backend: InboxBackendSpec = None,
) -> Compacted:
    """Return ``messages`` plus the pending notices of ``save_file``'s inbox, consuming them (side effect).

    No save file, or no inbox directory: the messages come back unchanged and nothing is
    created. An ``abort`` file raises :class:`InboxAborted` carrying its reason, where it
    now lies, and the notices consumed before it (``delivered``). ``backend`` says where
    the inbox lives (see :func:`inbox_for_save_file`); the directory beside the save file
    by default.
    """
    return _deliver(messages, inbox_for_save_file(save_file, backend))


class Inbox(PromptStrategy):
    """``inbox``: appends the pending notices of the conversation's inbox as user messages, once each.

    Side effect: consumed files move into the ``.inbox_removed`` sibling. The save file
    comes from ``prepare_prompt(..., save_file=)`` or, as a Runnable, from
    ``config["configurable"]["save_file"]``, else from the ``thread_id`` under ``root``
    (default ``$PROMPTSTRAT_INBOX_ROOT``, read on each call): ``<root>/<thread_id>.chat``.

    A ``root`` given here wins over a run config's ``save_file`` unless
    ``allow_save_file=True``. Notices are acknowledged as they are handed over (one-call
    delivery; see :func:`pick_up`).

    ``backend`` moves the inbox elsewhere: ``PostgresInboxes(dsn)`` serves each run the
    inbox of its ``configurable.thread_id`` (or ``save_file``) from PostgreSQL, with the
    same consume-once rule; a backend bound to one conversation
    (``PostgresInbox(dsn, thread_id=...)``) serves every call. The default, None, is the
    directory backend.
    """

    strategy_name = "inbox"
    uses_save_file = True

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        root: str | os.PathLike[str] | None = None,
        backend: InboxBackendSpec = None,
        allow_save_file: bool = False,
        **overrides: Any,
    ) -> None:
        super().__init__(settings, **overrides)
        self.root = root
        self.backend = check_backend(backend, root)
        self.allow_save_file = allow_save_file

    def compact(self, messages: list[BaseMessage], *, save_file: str | os.PathLike[str] | None = None) -> Compacted:
        """Return :func:`inbox` of ``messages`` for ``save_file``; raises InboxAborted on ``abort``."""
        return inbox(messages, save_file=save_file, backend=self.backend)

    def save_file_from_config(self, config: RunnableConfig | None) -> Path | None:
        """Return ``configurable.save_file``, else ``<root>/<thread_id>.chat`` when a root is set, else None."""
        return save_file_for_config(config, self.root, allow_save_file=self.allow_save_file)

    def inbox_for_config(self, config: RunnableConfig | None) -> InboxBackend | None:
        """Return the run's inbox from this strategy's backend (see :func:`inbox_for_config`), or None."""
        return inbox_for_config(config, backend=self.backend, root=self.root, allow_save_file=self.allow_save_file)

    def _invoke(self, input: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig) -> list[BaseMessage]:
        result = _deliver(coerce_messages(input), self.inbox_for_config(config))
        emit_report(result, config)
        return result.messages
