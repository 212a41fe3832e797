"""HTTP routes that steer a deployed agent: a Starlette app for LangGraph Server's ``http.app``.

``langgraph.json``: ``"http": {"app": "langchain_promptstrat.server:app"}``. Routes (JSON
in, JSON out; an error is ``{"detail": sentence}`` with a 4xx status):

* ``POST /threads/{thread_id}/inbox`` with ``{"content": "...", "name"?: "..."}``: post a notice (201);
* ``POST /threads/{thread_id}/abort`` with ``{"reason"?: "..."}``: ask the run to stop (201);
* ``GET /threads/{thread_id}/inbox``: the notices pending, in flight and delivered.

The inbox is found the way the front ends find it (:func:`~langchain_promptstrat.inbox.locate.inbox_for_config`):
PostgreSQL when ``PROMPTSTRAT_INBOX_DSN`` is set, else the directory under
``PROMPTSTRAT_INBOX_ROOT``, which must be absolute (a relative root would follow the
server's working directory). Both are read on every request. Answers never name a server
path. Inside LangGraph Server a request is first checked against the server's own
``GET /threads/{thread_id}`` with the caller's headers, so a route is exactly as open as
the server's thread routes (its custom auth included) and an unknown thread is a 404.

A front end: it parses and answers; every inbox rule lives in :mod:`~langchain_promptstrat.inbox`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.inbox.contract import InboxBackend, InboxEntry, LeasingInbox
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.locate import inbox_for_config
from langchain_promptstrat.inbox.notices import check_notice_name, notice_limits
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV
from langchain_promptstrat.inbox.postgres import PostgresInboxes
from langchain_promptstrat.inbox.postgres_connection import DSN_ENV

__all__ = ["app", "thread_inbox"]

MAX_THREAD_ID_CHARS = 256
"""Longest thread id a route accepts."""


class _Refused(Exception):
    """A request the routes answer with ``status`` and one sentence."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def thread_inbox(thread_id: str) -> InboxBackend:
    """Return the inbox of ``thread_id`` as this server's environment configures it.

    Raises:
        InboxError: neither ``PROMPTSTRAT_INBOX_DSN`` nor an absolute ``PROMPTSTRAT_INBOX_ROOT`` is set.
    """
    config: Any = {"configurable": {"thread_id": thread_id}}
    dsn = os.environ.get(DSN_ENV, "").strip()
    if dsn:
        store = inbox_for_config(config, backend=PostgresInboxes(dsn))
    else:
        root = os.environ.get(INBOX_ROOT_ENV, "").strip()
        if not root or not Path(root).expanduser().is_absolute():
            raise InboxError(
                f"the server has no inbox: set {DSN_ENV} or {INBOX_ROOT_ENV} to an absolute directory (got {root!r})"
            )
        store = inbox_for_config(config, backend=DirectoryInbox, root=root)
    if store is None:  # pragma: no cover - a thread id and a backend always name an inbox
        raise InboxError(f"no inbox for thread {thread_id!r}")
    return store


def _thread_id(request: Request) -> str:
    thread_id = str(request.path_params["thread_id"])
    if len(thread_id) > MAX_THREAD_ID_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in thread_id):
        raise _Refused(422, f"thread id {thread_id[:40]!r} is not a thread id: at most {MAX_THREAD_ID_CHARS} printable characters")
    return thread_id


async def _check_thread_access(request: Request, thread_id: str) -> None:
    """Inside LangGraph Server, ask its own thread route with the caller's headers; refuse what it refuses."""
    if "langgraph_api.server" not in sys.modules:
        return
    headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length", "content-type")}
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://langgraph-server") as client:
        answer = await client.get(f"/threads/{thread_id}", headers=headers)
    if answer.status_code >= 400:
        try:
            detail = str(answer.json().get("detail") or answer.reason_phrase)
        except (ValueError, AttributeError):
            detail = answer.reason_phrase
        raise _Refused(answer.status_code, f"thread {thread_id!r}: {detail}")


async def _body(request: Request) -> dict[str, Any]:
    _, _, cap = notice_limits()
    limit = 6 * cap + 4096  # JSON may spell each byte as \\uXXXX
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise _Refused(413, f"the request body is larger than {limit} bytes; a notice holds at most {cap} bytes")
    try:
        body = json.loads(data or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise _Refused(400, f"the request body is not JSON ({exc}); send an object such as {{\"content\": \"...\"}}") from None
    if not isinstance(body, dict):
        raise _Refused(400, f"the request body must be a JSON object, got {type(body).__name__}")
    return body


def _text_field(body: dict[str, Any], key: str, *, required: bool) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise _Refused(422, f"the request body has no {key!r} field; send {{\"{key}\": \"...\"}}")
        return None
    if not isinstance(value, str):
        raise _Refused(422, f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def _check_size(text: str, what: str) -> None:
    _, _, cap = notice_limits()
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > cap:
        raise _Refused(413, f"the {what} is {size} bytes; this inbox takes at most {cap} (INBOX_MAX_NOTICE_BYTES)")


def _stored_name(where: Path | str) -> str:
    return where.name if isinstance(where, Path) else str(where).rsplit("/", 1)[-1]


def _entry(entry: InboxEntry) -> dict[str, Any]:
    return {"name": entry.name, "posted": entry.mtime, "delivered": entry.delivered_at, "size": entry.size, "preview": entry.preview}


def _post(thread_id: str, content: str, name: str | None) -> dict[str, Any]:
    store = thread_inbox(thread_id)
    if name is not None and name in store.pending():
        raise _Refused(409, f"a notice named {name!r} is already pending; wait for it to be delivered or pick another name")
    where = store.post(content, name=name)
    return {"thread_id": thread_id, "name": _stored_name(where), "state": "pending"}


def _abort(thread_id: str, reason: str) -> dict[str, Any]:
    store = thread_inbox(thread_id)
    if "abort" in store.pending():
        raise _Refused(409, f"an abort is already pending for thread {thread_id!r}")
    store.request_abort(reason)
    return {"thread_id": thread_id, "name": "abort", "state": "pending", "reason": reason}


def _listing(thread_id: str) -> dict[str, Any]:
    store = thread_inbox(thread_id)
    claims = store.in_flight(with_head=True) if isinstance(store, LeasingInbox) else []
    now = time.time()
    return {
        "thread_id": thread_id,
        "pending": [_entry(e) for e in store.pending_entries()],
        "in_flight": [
            {**_entry(InboxEntry(c.name, c.mtime, c.size, head=c.head)), "claimed": c.leased_at,
             "age_seconds": round(max(0.0, now - c.leased_at), 1), "claim": "held" if c.state == "mine" else c.state}
            for c in claims
        ],
        "delivered": [_entry(e) for e in store.delivered_entries()],
    }


async def _answer(request: Request, action: str) -> JSONResponse:
    try:
        thread_id = _thread_id(request)
        await _check_thread_access(request, thread_id)
        if action == "list":
            return JSONResponse(await run_in_threadpool(_listing, thread_id))
        body = await _body(request)
        if action == "post":
            content = _text_field(body, "content", required=True) or ""
            if not content.strip():
                raise _Refused(422, "the notice is empty; give it some text")
            _check_size(content, "notice")
            name = _text_field(body, "name", required=False)
            if name is not None:
                try:
                    check_notice_name(name)
                except InboxError as exc:
                    raise _Refused(422, str(exc)) from None
                if name == "abort":
                    raise _Refused(422, "'abort' is reserved; POST /threads/{thread_id}/abort asks the run to stop")
            return JSONResponse(await run_in_threadpool(_post, thread_id, content, name), status_code=201)
        reason = _text_field(body, "reason", required=False) or ""
        _check_size(reason, "reason")
        return JSONResponse(await run_in_threadpool(_abort, thread_id, reason), status_code=201)
    except _Refused as refused:
        return JSONResponse({"detail": refused.detail}, status_code=refused.status)
    except InboxError as exc:  # no inbox configured, or the database unreachable: the server's side, not the caller's
        return JSONResponse({"detail": str(exc)}, status_code=503)


async def _post_notice(request: Request) -> JSONResponse:
    return await _answer(request, "post")


async def _post_abort(request: Request) -> JSONResponse:
    return await _answer(request, "abort")


async def _get_inbox(request: Request) -> JSONResponse:
    return await _answer(request, "list")


app = Starlette(
    routes=[
        Route("/threads/{thread_id}/inbox", _post_notice, methods=["POST"]),
        Route("/threads/{thread_id}/inbox", _get_inbox, methods=["GET"]),
        Route("/threads/{thread_id}/abort", _post_abort, methods=["POST"]),
    ]
)
"""The routes, ready for ``langgraph.json``'s ``"http": {"app": "langchain_promptstrat.server:app"}``."""
