"""HTTP routes that steer a deployed agent: a Starlette app for LangGraph Server's ``http.app``.

``langgraph.json``: ``"http": {"app": "langchain_promptstrat.server:app"}``. ``POST
/threads/{id}/inbox`` posts a notice, ``POST /threads/{id}/abort`` asks the run to stop,
``GET /threads/{id}/inbox?offset=0&limit=100`` lists a page of each state (docs/deploying.md).
JSON only (a browser sends ``text/plain`` across origins without asking); an error is
``{"detail": sentence}``, 4xx, or 503 when the store fails. The inbox is
``PROMPTSTRAT_INBOX_DSN``'s, else the one under an absolute ``PROMPTSTRAT_INBOX_ROOT``, read
per request; answers never name a path or a database. Inside LangGraph Server the caller's
headers, byte for byte, are first put to its own thread route (``GET`` for a listing, an empty
``PATCH`` for a post), so the server's auth decides: reading and steering are separate
permissions. Then the inbox is bound to the thread's creation time, which the server gives
in process (``/noauth``, as ``langgraph_sdk.get_client()`` reaches it): an inbox left by a
deleted thread of the same id is emptied first. The app's lifespan lets every run's pickup ask
the same (:func:`~langchain_promptstrat.inbox.locate.bind_inboxes_to_threads`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.inbox.contract import (
    ABORT_FILE,
    InboxEntry,
    NoticeNameTaken,
    NoticeTooLarge,
    notice_data,
    notice_limits,
    printable_text,
    text_bytes,
)
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.locate import bind_inbox_to_thread, bind_inboxes_to_threads
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV, canonical_thread_id
from langchain_promptstrat.inbox.postgres import DSN_ENV, PostgresInbox, PostgresInboxes

MAX_THREAD_ID_CHARS = 256
MAX_PAGE = 1000
"""Most entries of each kind one ``GET`` answers (``limit``)."""
LOOKUP_SECONDS = 10.0
"""How long a run's pickup waits for the server to say when its thread was created."""
NOT_FORWARDED = (b"host", b"content-length", b"content-type", b"transfer-encoding", b"prefer")
"""Headers that describe the inbox request itself, not the caller: never put to the thread route."""

_log = logging.getLogger("langchain_promptstrat")


class _NoInbox(InboxError):
    """The server's environment names no usable inbox (503, naming the settings, no path)."""


def thread_inbox(thread_id: str) -> DirectoryInbox | PostgresInbox:
    """Return the inbox of ``thread_id`` as this server's environment configures it.

    Raises:
        InboxError: neither ``PROMPTSTRAT_INBOX_DSN`` nor an absolute ``PROMPTSTRAT_INBOX_ROOT`` is
            set.
    """
    dsn = os.environ.get(DSN_ENV, "").strip()
    if dsn:
        return PostgresInboxes(dsn).for_thread(thread_id)
    root = os.environ.get(INBOX_ROOT_ENV, "").strip()
    if not root or not Path(root).expanduser().is_absolute():
        raise _NoInbox(
            f"the server has no inbox: set {DSN_ENV} or {INBOX_ROOT_ENV} to an absolute directory"
        )
    return DirectoryInbox.for_thread(thread_id, root)


def _thread_id(request: Request) -> str:
    thread_id = str(request.path_params["thread_id"])
    if (
        len(thread_id) > MAX_THREAD_ID_CHARS
        or not thread_id.isprintable()
        or thread_id in (".", "..")
    ):
        raise HTTPException(
            422,
            f"thread id {printable_text(thread_id[:40])!r} is not a thread id: at most "
            f"{MAX_THREAD_ID_CHARS} "
            "printable characters, not '.' or '..'",
        )
    return canonical_thread_id(thread_id)


async def _check_thread_access(request: Request, thread_id: str, write: bool) -> str | None:
    """Return when the thread was created, once the server's own thread route accepts the caller.

    Inside LangGraph Server, put the caller's headers to that route (read, or update for
    ``write``) and refuse what it refuses. Outside, check nothing and return None.
    """
    if "langgraph_api.server" not in sys.modules:
        return None
    # as bytes: a value need not be ASCII, and a repeated header reaches the server's auth as sent
    raw = request.headers.raw
    headers = [(key, value) for key, value in raw if key.lower() not in NOT_FORWARDED]
    for key, value in headers:  # the server's auth decodes it, logging a traceback when it cannot
        if key.lower() == b"authorization" and not _is_utf8(value):
            raise HTTPException(400, "the Authorization header is not UTF-8 text")
    url = f"/threads/{quote(thread_id, safe='')}"
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://langgraph-server") as client:
        # empty metadata: the server's update check and filters run, nothing but updated_at changes
        if write:
            minimal = [*headers, (b"prefer", b"return=minimal")]
            answer = await client.patch(url, json={"metadata": {}}, headers=minimal)
        else:
            answer = await client.get(url, headers=headers)
    if answer.status_code >= 400:
        try:
            detail = str(answer.json().get("detail") or answer.reason_phrase)
        except (ValueError, AttributeError):
            detail = answer.reason_phrase
        raise HTTPException(answer.status_code, f"thread {thread_id!r}: {detail}")
    created_at = await _created_at(request.app, thread_id)
    if created_at is None:  # deleted a moment ago
        raise HTTPException(404, f"thread {thread_id!r}: not found")
    return created_at


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


async def _created_at(app: Any, thread_id: str) -> str | None:
    """Return when the server's thread ``thread_id`` was created (None: no such thread)."""
    # the in-process path with no auth that langgraph_sdk.get_client() takes inside the server
    transport = httpx.ASGITransport(app=app, root_path="/noauth")
    search = {"ids": [thread_id], "select": ["thread_id", "created_at"], "limit": 1}
    async with httpx.AsyncClient(transport=transport, base_url="http://langgraph-server") as client:
        answer = await client.post("/threads/search", json=search)
    if answer.status_code != 200:
        raise InboxError(
            f"the server did not say when thread {thread_id!r} was created: "
            f"{answer.status_code} {answer.text[:200]}"
        )
    found = answer.json()
    return str(found[0]["created_at"]) if found else None


def _bound_inbox(
    thread_id: str, created_at: str | None, *, create: bool = False
) -> DirectoryInbox | PostgresInbox:
    """Return the inbox of ``thread_id``, bound to the thread created at ``created_at`` if given."""
    store = thread_inbox(thread_id)
    if created_at is not None:
        bind_inbox_to_thread(store, thread_id, created_at, create=create)
    return store


async def _body(request: Request) -> dict[str, Any]:
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise HTTPException(
            415,
            "send the body as application/json, not "
            f"{printable_text(media_type[:60]) or 'no content type'}",
        )
    _, _, cap = notice_limits()
    limit = 6 * cap + 4096  # JSON may spell each byte as \\uXXXX
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise HTTPException(
                413,
                f"the request body is larger than {limit} bytes; a notice holds at most {cap} "
                "bytes",
            )
    try:
        body = json.loads(data or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise HTTPException(
            400,
            f'the request body is not JSON ({exc}); send an object such as {{"content": "..."}}',
        ) from None
    except RecursionError:
        raise HTTPException(
            400, 'the request body nests too deeply; send an object such as {"content": "..."}'
        ) from None
    if not isinstance(body, dict):
        raise HTTPException(
            400, f"the request body must be a JSON object, got {type(body).__name__}"
        )
    return body


def _text_field(body: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None and required:
        raise HTTPException(422, f'the request body has no {key!r} field; send {{"{key}": "..."}}')
    if value is not None and not isinstance(value, str):
        raise HTTPException(422, f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def _checked(check: Callable[..., bytes], *args: Any) -> None:
    """Refuse what every writer refuses, before any store is opened: 413 over the notice cap, else
    422."""
    try:
        check(*args, notice_limits()[2])
    except NoticeTooLarge as exc:
        raise HTTPException(413, str(exc)) from None
    except InboxError as exc:
        raise HTTPException(422, str(exc)) from None


def _entry(entry: InboxEntry) -> dict[str, Any]:
    return {
        "name": printable_text(entry.name),
        "posted": entry.mtime,
        "delivered": entry.delivered_at,
        "size": entry.size,
        "preview": entry.preview,
    }


def _post(thread_id: str, created_at: str | None, content: str, name: str | None) -> dict[str, Any]:
    where = _bound_inbox(thread_id, created_at, create=True).post(content, name=name)
    name = where.name if isinstance(where, Path) else where.rsplit("/", 1)[-1]
    return {"thread_id": thread_id, "name": name, "state": "pending"}


def _abort(thread_id: str, created_at: str | None, reason: str) -> dict[str, Any]:
    _bound_inbox(thread_id, created_at, create=True).request_abort(reason)
    return {"thread_id": thread_id, "name": ABORT_FILE, "state": "pending", "reason": reason}


def _page(request: Request) -> slice:
    try:
        offset, limit = (
            int(request.query_params.get(key, default))
            for key, default in (("offset", 0), ("limit", 100))
        )
    except ValueError:
        raise HTTPException(422, "offset and limit must be whole numbers") from None
    if offset < 0 or not 1 <= limit <= MAX_PAGE:
        raise HTTPException(422, f"offset must be 0 or more and limit between 1 and {MAX_PAGE}")
    return slice(offset, offset + limit)


def _listing(thread_id: str, created_at: str | None, page: slice) -> dict[str, Any]:
    """Return one page of each state; only the page's notices are read for their previews."""
    store = _bound_inbox(thread_id, created_at)
    offset, limit = page.start, page.stop - page.start
    pending, pending_total = store.pending_page(offset, limit)
    delivered, delivered_total = store.delivered_page(offset, limit)
    problem = store.delivery_problem()  # said in the answer; the pickups log it
    claims = store.in_flight(with_head=True) if problem is None else []
    now = time.time()
    return {
        "thread_id": thread_id,
        "totals": {
            "pending": pending_total,
            "in_flight": len(claims),
            "delivered": delivered_total,
        },
        "pending": [_entry(e) for e in pending],
        "in_flight": [
            {
                **_entry(c.entry),
                "claimed": c.leased_at,
                "age_seconds": round(max(0.0, now - c.leased_at), 1),
                "claim": c.listed_state,
            }
            for c in claims[page]
        ],
        "delivered": [_entry(e) for e in delivered],
        "problem": problem,
    }


async def _answer(request: Request, action: str) -> JSONResponse:
    try:
        thread_id = _thread_id(request)
        created_at = await _check_thread_access(request, thread_id, write=action != "list")
        if action == "list":
            listing = await run_in_threadpool(_listing, thread_id, created_at, _page(request))
            return JSONResponse(listing)
        body = await _body(request)
        if action == "abort":
            reason = _text_field(body, "reason") or ""
            _checked(text_bytes, reason, "abort reason")
            aborted = await run_in_threadpool(_abort, thread_id, created_at, reason)
            return JSONResponse(aborted, status_code=201)
        content = _text_field(body, "content", required=True) or ""
        if not content.strip():
            raise HTTPException(422, "the notice is empty; give it some text")
        name = _text_field(body, "name")
        if name == ABORT_FILE:
            raise HTTPException(
                422, "'abort' is reserved; POST /threads/{thread_id}/abort asks the run to stop"
            )
        _checked(notice_data, content, name)
        posted = await run_in_threadpool(_post, thread_id, created_at, content, name)
        return JSONResponse(posted, status_code=201)
    except HTTPException as refused:  # the caller's mistake, in one sentence
        return JSONResponse({"detail": refused.detail}, status_code=refused.status_code)
    except NoticeNameTaken as exc:
        return JSONResponse({"detail": str(exc)}, status_code=409)
    except _NoInbox as exc:
        return JSONResponse({"detail": str(exc)}, status_code=503)
    except Exception:  # the store's side (the database or disk failing), not the caller's
        _log.exception("inbox route %s %s failed", request.method, request.url.path)
        detail = "the inbox store cannot be used right now; the server's log says why"
        return JSONResponse({"detail": detail}, status_code=503)


@asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    """Inside LangGraph Server, let each run's pickup ask the server when its thread was created."""
    if "langgraph_api.server" not in sys.modules:
        yield
        return
    loop = asyncio.get_running_loop()

    def created_at(thread_id: str) -> str | None:
        with suppress(RuntimeError):  # no loop in this thread: a node in a worker thread, as usual
            if asyncio.get_running_loop() is loop:
                raise InboxError("the server's event loop cannot wait for itself")
        asked = asyncio.run_coroutine_threadsafe(_created_at(app, thread_id), loop)
        try:
            return asked.result(LOOKUP_SECONDS)
        except InboxError:
            raise
        except Exception as exc:  # a timeout, the server stopping: the pickup waits, losing nothing
            raise InboxError(f"no creation time for thread {thread_id!r}: {exc!r}") from exc

    bind_inboxes_to_threads(created_at)
    try:
        yield
    finally:
        bind_inboxes_to_threads(None)


app = Starlette(
    lifespan=_lifespan,
    routes=[
        Route(
            "/threads/{thread_id}/inbox",
            functools.partial(_answer, action="post"),
            methods=["POST"],
        ),
        Route(
            "/threads/{thread_id}/inbox", functools.partial(_answer, action="list"), methods=["GET"]
        ),
        Route(
            "/threads/{thread_id}/abort",
            functools.partial(_answer, action="abort"),
            methods=["POST"],
        ),
    ],
)
"""The routes, ready for ``langgraph.json``'s ``"http": {"app":
"langchain_promptstrat.server:app"}``."""
