"""The inbox routes on a real LangGraph Server with custom auth, against hostile callers (issue 29).

One ``langgraph dev`` serves the whole module, started here (not the suite's: it needs
``tests/server/deployment/auth.py``, two owners and a viewer, and studio auth off). It is
driven over HTTP with httpx and with langgraph-sdk, as callers drive it: each probe of the
issue is a test, and Hypothesis throws thread ids, names, bodies, content types and callers
at the routes. What must hold: no answer of 500 or more; no answer or interrupt naming a
server path; no read or write across threads; a viewer reads and cannot post or abort; no
token does nothing; every spelling of a thread reaches its one inbox.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph_server import LangGraphServer, langgraph_command

from langchain_promptstrat.inbox.directory import DirectoryInbox

TOKENS = {"alice": "alice-token", "bob": "bob-token", "vera": "vera-token"}
TASK = {"messages": [{"role": "user", "content": "Pass the three gates."}]}


class Served:
    """The module's server, its inbox root, and one thread per owner."""

    def __init__(self, server: LangGraphServer, root: Path) -> None:
        self.server, self.root, self.url = server, root, server.url
        self.thread = {who: str(self.sdk(who).threads.create()["thread_id"]) for who in ("alice", "bob")}

    def headers(self, who: str | None) -> dict[str, str]:
        return {} if who is None else {"Authorization": f"Bearer {TOKENS[who]}"}

    def sdk(self, who: str | None) -> Any:
        from langgraph_sdk import get_sync_client

        return get_sync_client(url=self.url, headers=self.headers(who))

    def call(self, method: str, path: str, who: str | None, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers(who), **kwargs.pop("headers", {})}
        answer = httpx.request(method, f"{self.url}{path}", headers=headers, timeout=30, **kwargs)
        assert answer.status_code < 500, f"{method} {path} as {who}: {answer.status_code} {answer.text}"
        assert str(self.root) not in answer.text and "/tmp/" not in answer.text, answer.text
        return answer

    def pending(self, thread: str) -> list[str]:
        return DirectoryInbox.for_thread(thread, self.root).pending()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    langgraph_command()
    home = tmp_path_factory.mktemp("hostile")
    root = home / "inboxes"
    server = LangGraphServer.prepare(home, PROMPTSTRAT_INBOX_ROOT=str(root))
    config = json.loads((home / "app" / "langgraph.json").read_text())
    config["auth"] = {"path": "./auth.py:auth", "disable_studio_auth": True}
    (home / "app" / "langgraph.json").write_text(json.dumps(config))
    try:
        server.start()
        yield Served(server, root)
    finally:
        server.stop(signal.SIGKILL)


def test_the_deploying_page_shows_the_auth_file_this_suite_serves() -> None:
    """docs/deploying.md shows who may post and abort with this file: the one a deployer copies is the one tested here."""
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "deploying.md").read_text(encoding="utf-8")
    assert (root / "tests" / "server" / "deployment" / "auth.py").read_text(encoding="utf-8") in page
    assert '"disable_studio_auth": true' in page


def test_an_owner_posts_reads_and_aborts_on_her_own_thread_over_http_and_the_sdk(served: Served) -> None:
    """The routes still work for the one who may write: 201 over httpx and through the SDK's HTTP client, listed after."""
    thread = served.thread["alice"]
    assert served.call("POST", f"/threads/{thread}/inbox", "alice", json={"content": "hello", "name": "hello"}).status_code == 201
    answer = served.sdk("alice").http.post(f"/threads/{thread}/inbox", json={"content": "via the sdk", "name": "sdk"})
    assert answer["state"] == "pending"
    names = [e["name"] for e in served.sdk("alice").http.get(f"/threads/{thread}/inbox")["pending"]]
    assert {"hello", "sdk"} <= set(names)


def test_a_viewer_reads_but_cannot_post_or_abort(served: Served) -> None:
    """The viewer may GET /threads/{id} but not PATCH it or start a run: the routes check a POST against the update."""
    thread = served.thread["alice"]
    before = served.pending(thread)
    assert served.call("GET", f"/threads/{thread}/inbox", "vera").status_code == 200
    assert served.call("POST", f"/threads/{thread}/inbox", "vera", json={"content": "x"}).status_code == 403
    assert served.call("POST", f"/threads/{thread}/abort", "vera", json={"reason": "x"}).status_code == 403
    with pytest.raises(httpx.HTTPStatusError) as refused:
        served.sdk("vera").http.post(f"/threads/{thread}/abort", json={"reason": "via the sdk"})
    assert refused.value.response.status_code == 403
    assert served.pending(thread) == before


def test_an_owner_neither_reads_nor_writes_another_owners_thread(served: Served) -> None:
    """Bob's filters hide Alice's thread: 404 for reading and for posting, and nothing reaches her inbox."""
    thread = served.thread["alice"]
    before = served.pending(thread)
    assert served.call("GET", f"/threads/{thread}/inbox", "bob").status_code == 404
    assert served.call("POST", f"/threads/{thread}/inbox", "bob", json={"content": "x"}).status_code == 404
    assert served.call("POST", f"/threads/{thread}/abort", "bob", json={}).status_code == 404
    assert served.pending(thread) == before


@pytest.mark.parametrize("extra", [{}, {"x-auth-scheme": "langsmith"}, {"Authorization": "Bearer wrong"}])
@pytest.mark.parametrize("path", ["{thread}", "%2E%2E", "%2E", "..%3Fx", "{thread}%3Fx", "{thread}%23x"])
def test_no_token_does_nothing(served: Served, extra: dict[str, str], path: str) -> None:
    """Without a valid token (the studio's scheme included) nothing is read or written, whatever the id: '..' once
    made the check URL the server's public root."""
    thread = served.thread["alice"]
    before = sorted(os.listdir(served.root)) if served.root.exists() else []
    target = path.format(thread=thread)
    for method, route, body in (("GET", "inbox", None), ("POST", "inbox", {"content": "x"}), ("POST", "abort", {})):
        answer = served.call(method, f"/threads/{target}/{route}", None, json=body, headers=extra)
        assert answer.status_code in (401, 403, 404, 422), answer.text
    assert (sorted(os.listdir(served.root)) if served.root.exists() else []) == before


def test_every_spelling_of_a_thread_reaches_its_one_inbox(served: Served) -> None:
    """Uppercase, no hyphens, braces and urn:uuid: are one thread to the server: all five notices in one inbox."""
    thread = served.thread["bob"]
    spellings = [thread, thread.upper(), thread.replace("-", ""), "%7B" + thread + "%7D", "urn:uuid:" + thread]
    for i, spelling in enumerate(spellings):
        answer = served.call("POST", f"/threads/{spelling}/inbox", "bob", json={"content": f"n{i}", "name": f"spelling-{i}"})
        assert answer.status_code == 201, answer.text
    assert [n for n in served.pending(thread) if n.startswith("spelling-")] == [f"spelling-{i}" for i in range(5)]
    assert not any(thread.upper() in p or thread.replace("-", "") in p for p in os.listdir(served.root))  # no inbox per spelling


def test_a_cross_origin_text_plain_abort_is_refused(served: Served) -> None:
    """A browser page may send text/plain with the owner's cookie-less token attached by a proxy; JSON only."""
    thread = served.thread["alice"]
    answer = served.call("POST", f"/threads/{thread}/abort", "alice", content=b'{"reason": "x"}',
                         headers={"content-type": "text/plain", "origin": "https://evil.example"})
    assert answer.status_code == 415 and "abort" not in served.pending(thread)


def test_the_abort_interrupt_names_no_server_path(served: Served) -> None:
    """The owner's abort interrupts her run; the interrupt every API client reads names the thread and the reason only."""
    client = served.sdk("alice")
    thread = str(client.threads.create()["thread_id"])
    assert served.call("POST", f"/threads/{thread}/abort", "alice", json={"reason": "stop here"}).status_code == 201
    client.runs.wait(thread, "agent", input=TASK)
    (interrupt,) = client.threads.get_state(thread)["interrupts"]
    assert interrupt["value"]["reason"] == "stop here" and str(served.root) not in json.dumps(interrupt)


CALLERS = st.sampled_from([None, "alice", "bob", "vera"])
IDS = st.one_of(st.sampled_from(["alice", "bob"]), st.text(min_size=1, max_size=60))
TYPES = st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain", "", "application/x-www-form-urlencoded"])
BODIES = st.one_of(
    st.binary(max_size=200),
    st.dictionaries(st.sampled_from(["content", "name", "reason"]), st.one_of(st.text(max_size=40), st.integers(), st.none()))
    .map(lambda d: json.dumps(d).encode()),
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(caller=CALLERS, thread=IDS, route=st.sampled_from(["inbox", "abort", "list"]), content_type=TYPES, body=BODIES)
def test_hypothesis_no_5xx_no_path_and_writes_only_by_the_owner(
    served: Served, caller: str | None, thread: str, route: str, content_type: str, body: bytes
) -> None:
    """Whatever the caller, id, body or content type: no 5xx, no server path, and a 201 only for the thread's owner."""
    thread_id = served.thread.get(thread, thread)
    path = f"/threads/{quote(thread_id.encode('utf-8', 'surrogatepass'), safe='')}"
    if route == "list":
        answer = served.call("GET", f"{path}/inbox", caller)
        assert answer.status_code != 200 or caller in ("vera", thread)
        return
    answer = served.call("POST", f"{path}/{route}", caller, content=body, headers={"content-type": content_type} if content_type else {})
    if answer.status_code == 201:
        assert caller == thread, f"{caller} wrote to {thread}'s inbox"


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.one_of(st.none(), st.text(max_size=300)), content=st.text(max_size=200))
def test_hypothesis_an_owners_notice_is_stored_and_listed_or_refused_with_a_4xx(served: Served, name: str | None, content: str) -> None:
    """Any name and text from the owner: a 201 that the listing then shows, or a 4xx saying why; never a 5xx."""
    thread = served.thread["bob"]
    body = json.dumps({"content": content, **({} if name is None else {"name": name})}).encode()
    answer = served.call("POST", f"/threads/{thread}/inbox", "bob", content=body, headers={"content-type": "application/json"})
    assert answer.status_code in (201, 409, 413, 422), answer.text
    if answer.status_code == 201:
        listed = served.call("GET", f"/threads/{thread}/inbox?limit=1000", "bob").json()
        assert answer.json()["name"] in [e["name"] for e in listed["pending"]] or listed["totals"]["pending"] > 1000
