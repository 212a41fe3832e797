"""Custom auth for the hostile-caller tests (and the example in docs/deploying.md): two owners and a
viewer.

``alice`` and ``bob`` own the threads they create and see no other; ``vera`` (a viewer) reads
every thread and changes none; a request without a known bearer token is refused. The inbox
routes ask the server's own thread routes with the caller's headers, so these handlers
decide who may read an inbox (``threads.read``) and who may post or abort
(``threads.update``).
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

auth = Auth()

USERS = {
    "alice-token": ("alice", "owner"),
    "bob-token": ("bob", "owner"),
    "vera-token": ("vera", "viewer"),
}


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or token not in USERS:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="a valid bearer token is needed"
        )
    identity, role = USERS[token]
    return {"identity": identity, "permissions": [role]}


@auth.on.threads.create
async def create_thread(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    if "owner" not in ctx.permissions:
        raise Auth.exceptions.HTTPException(status_code=403, detail="viewers create no threads")
    value.setdefault("metadata", {})["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}


@auth.on.threads.read
async def read_thread(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str] | bool:
    return True if "viewer" in ctx.permissions else {"owner": ctx.user.identity}


@auth.on.assistants
async def assistants(ctx: Auth.types.AuthContext, value: Any) -> bool:
    return True


@auth.on
async def owners_only(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Everything else (update a thread, start a run, ...): an owner, on their own threads."""
    if "owner" not in ctx.permissions:
        raise Auth.exceptions.HTTPException(status_code=403, detail="viewers change nothing")
    return {"owner": ctx.user.identity}
