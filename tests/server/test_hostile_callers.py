"""The inbox routes on a real LangGraph Server with custom auth, against hostile callers.

One ``langgraph dev`` per backend serves the module, started here (not the suite's: it needs
``tests/server/deployment/auth.py``, two owners and a viewer, and studio auth off): the
directory one for every probe, the PostgreSQL one for the probes where the store matters. It
is driven over HTTP with httpx and with langgraph-sdk, as callers drive it: each probe of
issues 29 and 42 is a test, and Hypothesis throws thread ids, names, bodies, content types, header
values and callers at the routes. What must hold: no answer of 500 or more and no traceback in
the server's log; no answer or interrupt naming a server path; no read or write across threads,
nor across the lives of a thread id (deleted, then created again by someone else); a viewer
reads and cannot post or abort; no token does nothing; every spelling of a thread reaches its
one inbox; a listing shows no raw control or bidi character and nothing outside the inbox root.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph_server import LangGraphServer, langgraph_command, stored_texts, wait_for

from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.postgres import PostgresInbox, PostgresInboxes

TOKENS = {"alice": "alice-token", "bob": "bob-token", "vera": "vera-token"}
TASK = {"messages": [{"role": "user", "content": "Pass the three gates."}]}
PROMPTSTRAT = Path(sys.executable).parent / "promptstrat"
UNSAFE = frozenset(
    [
        *map(chr, range(0x20)),
        *map(chr, range(0x7F, 0xA0)),
        "\u061c",
        "\u200e",
        "\u200f",
        *map(chr, range(0x202A, 0x202F)),
        *map(chr, range(0x2066, 0x206A)),
    ]
)
"""C0 and C1 controls, bidi marks, embeddings, overrides and isolates: never raw in a listing."""


class Served:
    """A module's server, where its inboxes lie (a root, or a DSN), and one thread per owner."""

    def __init__(
        self, server: LangGraphServer, root: Path | None = None, dsn: str | None = None
    ) -> None:
        self.server, self.root, self.dsn, self.url = server, root, dsn, server.url
        self.thread = {
            who: str(self.sdk(who).threads.create()["thread_id"]) for who in ("alice", "bob")
        }

    def headers(self, who: str | None) -> dict[str, str]:
        return {} if who is None else {"Authorization": f"Bearer {TOKENS[who]}"}

    def sdk(self, who: str | None) -> Any:
        from langgraph_sdk import get_sync_client

        return get_sync_client(url=self.url, headers=self.headers(who))

    def call(self, method: str, path: str, who: str | None, **kwargs: Any) -> httpx.Response:
        extra = kwargs.pop("headers", {})
        extra = extra.items() if isinstance(extra, dict) else extra
        headers = [*self.headers(who).items(), *extra]
        answer = httpx.request(method, f"{self.url}{path}", headers=headers, timeout=30, **kwargs)
        assert answer.status_code < 500, (
            f"{method} {path} as {who}: {answer.status_code} {answer.text}"
        )
        assert "/tmp/" not in answer.text and "promptstrat_inbox_" not in answer.text, answer.text
        assert self.root is None or str(self.root) not in answer.text, answer.text
        return answer

    def store(self, thread: str) -> DirectoryInbox | PostgresInbox:
        """The thread's inbox, read beside the server as an operator reads it."""
        if self.dsn is not None:
            return PostgresInboxes(self.dsn).for_thread(thread)
        assert self.root is not None
        return DirectoryInbox.for_thread(thread, self.root)

    def pending(self, thread: str) -> list[str]:
        return self.store(thread).pending()

    def log_size(self) -> int:
        return self.server.log.stat().st_size

    def log_since(self, size: int) -> str:
        with self.server.log.open("rb") as log:
            log.seek(size)
            return log.read().decode("utf-8", "replace")


def serve(home: Path, **env: str) -> LangGraphServer:
    """Return a started server of the test deployment under ``home``, with this module's auth."""
    langgraph_command()
    server = LangGraphServer.prepare(home, **env)
    config = json.loads((home / "app" / "langgraph.json").read_text())
    config["auth"] = {"path": "./auth.py:auth", "disable_studio_auth": True}
    (home / "app" / "langgraph.json").write_text(json.dumps(config))
    try:
        return server.start()
    except BaseException:
        server.stop(signal.SIGKILL)
        raise


def schema_dsn(dsn: str, schema: str) -> str:
    """Return ``dsn`` with ``schema`` first on its search path: where this session's tables are."""
    return f"{dsn}{'&' if '?' in dsn else '?'}options=-csearch_path%3D{schema}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("hostile")
    root = home / "inboxes"
    server = serve(home, PROMPTSTRAT_INBOX_ROOT=str(root))
    try:
        yield Served(server, root=root)
    finally:
        server.stop(signal.SIGKILL)


@pytest.fixture(scope="module")
def served_postgres(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_dsn: str,
    postgres_schema: str,  # noqa: F811
) -> Iterator[Served]:
    dsn = schema_dsn(postgres_dsn, postgres_schema)
    server = serve(tmp_path_factory.mktemp("hostile-postgres"), PROMPTSTRAT_INBOX_DSN=dsn)
    try:
        yield Served(server, dsn=dsn)
    finally:
        server.stop(signal.SIGKILL)


@pytest.fixture(params=["directory", "postgresql"])
def either(request: pytest.FixtureRequest) -> Served:
    """The directory server, then the PostgreSQL one: for the probes both backends must pass."""
    return request.getfixturevalue("served" if request.param == "directory" else "served_postgres")


def test_the_deploying_page_shows_the_auth_file_this_suite_serves() -> None:
    """docs/deploying.md shows who may post and abort with this file: the one a deployer copies is
    the one tested here."""
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "deploying.md").read_text(encoding="utf-8")
    assert (root / "tests" / "server" / "deployment" / "auth.py").read_text(
        encoding="utf-8"
    ) in page
    assert '"disable_studio_auth": true' in page


def test_an_owner_posts_reads_and_aborts_on_her_own_thread_over_http_and_the_sdk(
    served: Served,
) -> None:
    """The routes still work for the one who may write: 201 over httpx and through the SDK's HTTP
    client, listed after."""
    thread = served.thread["alice"]
    assert (
        served.call(
            "POST", f"/threads/{thread}/inbox", "alice", json={"content": "hello", "name": "hello"}
        ).status_code
        == 201
    )
    answer = served.sdk("alice").http.post(
        f"/threads/{thread}/inbox", json={"content": "via the sdk", "name": "sdk"}
    )
    assert answer["state"] == "pending"
    names = [e["name"] for e in served.sdk("alice").http.get(f"/threads/{thread}/inbox")["pending"]]
    assert {"hello", "sdk"} <= set(names)


def test_a_viewer_reads_but_cannot_post_or_abort(served: Served) -> None:
    """The viewer may GET /threads/{id} but not PATCH it or start a run: the routes check a POST
    against the update."""
    thread = served.thread["alice"]
    before = served.pending(thread)
    assert served.call("GET", f"/threads/{thread}/inbox", "vera").status_code == 200
    assert (
        served.call("POST", f"/threads/{thread}/inbox", "vera", json={"content": "x"}).status_code
        == 403
    )
    assert (
        served.call("POST", f"/threads/{thread}/abort", "vera", json={"reason": "x"}).status_code
        == 403
    )
    with pytest.raises(httpx.HTTPStatusError) as refused:
        served.sdk("vera").http.post(f"/threads/{thread}/abort", json={"reason": "via the sdk"})
    assert refused.value.response.status_code == 403
    assert served.pending(thread) == before


def test_an_owner_neither_reads_nor_writes_another_owners_thread(served: Served) -> None:
    """Bob's filters hide Alice's thread: 404 for reading and for posting, and nothing reaches her
    inbox."""
    thread = served.thread["alice"]
    before = served.pending(thread)
    assert served.call("GET", f"/threads/{thread}/inbox", "bob").status_code == 404
    assert (
        served.call("POST", f"/threads/{thread}/inbox", "bob", json={"content": "x"}).status_code
        == 404
    )
    assert served.call("POST", f"/threads/{thread}/abort", "bob", json={}).status_code == 404
    assert served.pending(thread) == before


@pytest.mark.parametrize(
    "extra", [{}, {"x-auth-scheme": "langsmith"}, {"Authorization": "Bearer wrong"}]
)
@pytest.mark.parametrize(
    "path", ["{thread}", "%2E%2E", "%2E", "..%3Fx", "{thread}%3Fx", "{thread}%23x"]
)
def test_no_token_does_nothing(served: Served, extra: dict[str, str], path: str) -> None:
    """Without a valid token (the studio's scheme included) nothing is read or written, whatever the
    id: '..' once made the check URL the server's public root."""
    thread = served.thread["alice"]
    before = sorted(os.listdir(served.root)) if served.root.exists() else []
    target = path.format(thread=thread)
    for method, route, body in (
        ("GET", "inbox", None),
        ("POST", "inbox", {"content": "x"}),
        ("POST", "abort", {}),
    ):
        answer = served.call(method, f"/threads/{target}/{route}", None, json=body, headers=extra)
        assert answer.status_code in (401, 403, 404, 422), answer.text
    assert (sorted(os.listdir(served.root)) if served.root.exists() else []) == before


def test_every_spelling_of_a_thread_reaches_its_one_inbox(served: Served) -> None:
    """Uppercase, no hyphens, braces and urn:uuid: are one thread to the server: all five notices in
    one inbox."""
    thread = served.thread["bob"]
    spellings = [
        thread,
        thread.upper(),
        thread.replace("-", ""),
        "%7B" + thread + "%7D",
        "urn:uuid:" + thread,
    ]
    for i, spelling in enumerate(spellings):
        answer = served.call(
            "POST",
            f"/threads/{spelling}/inbox",
            "bob",
            json={"content": f"n{i}", "name": f"spelling-{i}"},
        )
        assert answer.status_code == 201, answer.text
    assert [n for n in served.pending(thread) if n.startswith("spelling-")] == [
        f"spelling-{i}" for i in range(5)
    ]
    assert not any(
        thread.upper() in p or thread.replace("-", "") in p for p in os.listdir(served.root)
    )  # no inbox per spelling


def test_a_cross_origin_text_plain_abort_is_refused(served: Served) -> None:
    """A browser page may send text/plain with the owner's cookie-less token attached by a proxy;
    JSON only."""
    thread = served.thread["alice"]
    answer = served.call(
        "POST",
        f"/threads/{thread}/abort",
        "alice",
        content=b'{"reason": "x"}',
        headers={"content-type": "text/plain", "origin": "https://evil.example"},
    )
    assert answer.status_code == 415 and "abort" not in served.pending(thread)


def test_the_abort_interrupt_names_no_server_path(served: Served) -> None:
    """The owner's abort interrupts her run; the interrupt every API client reads names the thread
    and the reason only."""
    client = served.sdk("alice")
    thread = str(client.threads.create()["thread_id"])
    assert (
        served.call(
            "POST", f"/threads/{thread}/abort", "alice", json={"reason": "stop here"}
        ).status_code
        == 201
    )
    client.runs.wait(thread, "agent", input=TASK)
    (interrupt,) = client.threads.get_state(thread)["interrupts"]
    assert interrupt["value"]["reason"] == "stop here" and str(served.root) not in json.dumps(
        interrupt
    )


CALLERS = st.sampled_from([None, "alice", "bob", "vera"])
IDS = st.one_of(st.sampled_from(["alice", "bob"]), st.text(min_size=1, max_size=60))
TYPES = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-8",
        "text/plain",
        "",
        "application/x-www-form-urlencoded",
    ]
)
BODIES = st.one_of(
    st.binary(max_size=200),
    st.dictionaries(
        st.sampled_from(["content", "name", "reason"]),
        st.one_of(st.text(max_size=40), st.integers(), st.none()),
    ).map(lambda d: json.dumps(d).encode()),
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    caller=CALLERS,
    thread=IDS,
    route=st.sampled_from(["inbox", "abort", "list"]),
    content_type=TYPES,
    body=BODIES,
)
def test_hypothesis_no_5xx_no_path_and_writes_only_by_the_owner(
    served: Served, caller: str | None, thread: str, route: str, content_type: str, body: bytes
) -> None:
    """Whatever the caller, id, body or content type: no 5xx, no server path, and a 201 only for the
    thread's owner."""
    thread_id = served.thread.get(thread, thread)
    path = f"/threads/{quote(thread_id.encode('utf-8', 'surrogatepass'), safe='')}"
    if route == "list":
        answer = served.call("GET", f"{path}/inbox", caller)
        assert answer.status_code != 200 or caller in ("vera", thread)
        return
    answer = served.call(
        "POST",
        f"{path}/{route}",
        caller,
        content=body,
        headers={"content-type": content_type} if content_type else {},
    )
    if answer.status_code == 201:
        assert caller == thread, f"{caller} wrote to {thread}'s inbox"


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.one_of(st.none(), st.text(max_size=300)), content=st.text(max_size=200))
def test_hypothesis_an_owners_notice_is_stored_and_listed_or_refused_with_a_4xx(
    served: Served, name: str | None, content: str
) -> None:
    """Any name and text from the owner: a 201 that the listing then shows, or a 4xx saying why;
    never a 5xx."""
    thread = served.thread["bob"]
    body = json.dumps({"content": content, **({} if name is None else {"name": name})}).encode()
    answer = served.call(
        "POST",
        f"/threads/{thread}/inbox",
        "bob",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert answer.status_code in (201, 409, 413, 422), answer.text
    if answer.status_code == 201:
        listed = served.call("GET", f"/threads/{thread}/inbox?limit=1000", "bob").json()
        assert (
            answer.json()["name"] in [e["name"] for e in listed["pending"]]
            or listed["totals"]["pending"] > 1000
        )


# --------------------------------------------------------------------------- issue 42


def delivered_texts(served: Served, who: str, thread: str) -> list[str]:
    """Run the agent on ``thread`` as ``who`` and return the texts of its stored conversation."""
    client = served.sdk(who)
    client.runs.wait(thread, "agent", input=TASK)
    return stored_texts(client, thread)


def post(served: Served, who: str, thread: str, content: str) -> int:
    """Post ``content`` to ``thread``'s inbox as ``who``; return the status."""
    answer = served.call("POST", f"/threads/{thread}/inbox", who, json={"content": content})
    return answer.status_code


@pytest.mark.parametrize("first", ["listing", "run"])
def test_a_deleted_threads_inbox_reaches_no_thread_created_again_under_its_id(
    either: Served, first: str
) -> None:
    """Alice posts, runs, posts again and deletes her thread; Bob creates a thread with its id.
    Neither his listing nor his run may hold her notices, whichever comes first: the inbox
    belonged to her thread's life."""
    alice, bob = either.sdk("alice"), either.sdk("bob")
    thread = str(alice.threads.create()["thread_id"])
    secrets = [f"the db password is hunter{i} ({first})" for i in (1, 2)]
    assert post(either, "alice", thread, secrets[0]) == 201
    assert secrets[0] in delivered_texts(either, "alice", thread)
    assert post(either, "alice", thread, secrets[1]) == 201
    recorded = lambda: not either.store(thread).in_flight()  # noqa: E731
    wait_for(recorded, "the delivered notice to be recorded", 30, 0.05)
    alice.threads.delete(thread)
    bob.threads.create(thread_id=thread)
    if first == "run":
        texts = delivered_texts(either, "bob", thread)
        assert not any("hunter" in text for text in texts) and texts[-1] == "done"
    listing = either.call("GET", f"/threads/{thread}/inbox", "bob")
    assert listing.status_code == 200 and "hunter" not in listing.text
    assert listing.json()["totals"] == {"pending": 0, "in_flight": 0, "delivered": 0}
    assert not any("hunter" in text for text in delivered_texts(either, "bob", thread))
    store = either.store(thread)
    assert store.pending() == [] and store.delivered_entries() == []  # removed, not only hidden


@pytest.mark.parametrize("backend", ["directory", "postgresql"])
def test_an_inbox_whose_thread_vanished_while_the_server_was_down_reaches_no_new_thread(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The inbox (root or table) outlives the server's threads: Alice's thread is gone when the
    server comes back (its data wiped while it was down), and Bob's thread of the same id
    neither lists nor receives her notice."""
    if backend == "directory":
        where: dict[str, Any] = {"root": tmp_path / "inboxes"}
        env = {"PROMPTSTRAT_INBOX_ROOT": str(where["root"])}
    else:
        fixture = request.getfixturevalue
        dsn = schema_dsn(fixture("postgres_dsn"), fixture("postgres_schema"))
        where, env = {"dsn": dsn}, {"PROMPTSTRAT_INBOX_DSN": dsn}
    server = serve(tmp_path / "home", **env)
    try:
        served = Served(server, **where)
        thread = str(served.sdk("alice").threads.create()["thread_id"])
        assert post(served, "alice", thread, "alice's secret") == 201
        server.stop()
        shutil.rmtree(server.data)  # every thread, run and checkpoint: gone while it was down
        server.start()
        served.sdk("bob").threads.create(thread_id=thread)
        texts = delivered_texts(served, "bob", thread)
        assert "alice's secret" not in texts and texts[-1] == "done"
        assert "alice's secret" not in served.call("GET", f"/threads/{thread}/inbox", "bob").text
        assert served.store(thread).pending() == []
    finally:
        server.stop(signal.SIGKILL)


NOT_ASCII = [
    ("X-Note", "café".encode()),
    ("X-Note", b"\xff\xfe"),
    ("Accept-Language", "日本語".encode()),
    ("Authorization", b"Bearer \xff"),
]
ROUTES = [("POST", "abort", {}), ("POST", "inbox", {"content": "a header"}), ("GET", "inbox", None)]


@pytest.mark.parametrize("header", NOT_ASCII, ids=["utf-8", "latin-1", "cjk", "token-not-utf-8"])
@pytest.mark.parametrize("who", [None, "alice"])
def test_a_header_value_outside_ascii_is_no_5xx_and_no_traceback(
    served: Served, header: tuple[str, bytes], who: str | None
) -> None:
    """A header value of UTF-8 or Latin-1 bytes once made the forwarding to the thread route
    raise: 503, "the store cannot be used", and a traceback in the log for anyone to add. It
    is forwarded as sent, so the owner's requests work; a token that is not UTF-8 (which the
    server's own auth would log a traceback for) is a 400 before that."""
    thread = served.thread["alice"]
    size = served.log_size()
    if header[0] == "Authorization":
        expected: tuple[int, ...] = (400,)
    else:
        expected = (401,) if who is None else (200, 201, 409)
    for method, route, body in ROUTES:
        answer = served.call(method, f"/threads/{thread}/{route}", who, json=body, headers=[header])
        assert answer.status_code in expected, answer.text
    log = served.log_since(size)
    assert "Traceback" not in log and "UnicodeEncodeError" not in log, log[-2000:]


HEADER_BYTES = st.binary(max_size=40).map(lambda b: bytes(c for c in b if c == 9 or 32 <= c != 127))
"""Header values HTTP/1.1 carries: visible ASCII, spaces, tabs and any byte from 0x80 up."""


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.sampled_from(["X-Note", "Authorization", "X-Auth-Scheme", "Prefer"]),
    value=HEADER_BYTES.map(lambda b: b.strip(b" \t")),
    who=st.sampled_from([None, "alice", "vera"]),
    route=st.sampled_from(ROUTES),
)
def test_hypothesis_any_header_value_is_answered_below_500_without_a_traceback(
    served: Served, name: str, value: bytes, who: str | None, route: tuple[str, str, Any]
) -> None:
    """Whatever bytes a header holds (those HTTP lets through), the token's header included, the
    answer is below 500 and the log stays clean."""
    method, path, body = route
    size = served.log_size()
    served.call(
        method, f"/threads/{served.thread['alice']}/{path}", who, json=body, headers=[(name, value)]
    )
    assert "Traceback" not in served.log_since(size)


@pytest.mark.parametrize("order", [("alice", "bob"), ("bob", "alice")])
def test_two_authorization_headers_count_as_on_the_servers_own_thread_route(
    served: Served, order: tuple[str, str]
) -> None:
    """A caller sending two tokens gets from the inbox routes what the server's own thread routes
    give it: the routes forward both as sent, and the server's custom auth reads the headers
    into a dict, so the last one counts in both."""
    thread = served.thread["alice"]
    tokens = [("Authorization", f"Bearer {TOKENS[who]}") for who in order]
    url = f"{served.url}/threads/{thread}"
    own_read = httpx.get(url, headers=tokens, timeout=30).status_code
    own_update = httpx.patch(url, json={"metadata": {}}, headers=tokens, timeout=30).status_code
    listed = served.call("GET", f"/threads/{thread}/inbox", None, headers=tokens)
    assert listed.status_code == own_read
    notice = {"content": f"two tokens {order}"}
    posted = served.call("POST", f"/threads/{thread}/inbox", None, headers=tokens, json=notice)
    assert (posted.status_code, own_update) in ((201, 200), (404, 404))


def test_a_symlinked_history_is_neither_listed_nor_silently_stuck(
    served: Served, tmp_path: Path
) -> None:
    """A history directory that is a link out of the root: no listing shows the files behind it
    (not the viewer's GET, not ``promptstrat inbox ls``), nothing moves there, and the notice
    that cannot be delivered is listed pending with the reason, which the pickup logs; once the
    link is a directory again, the next run delivers it."""
    assert served.root is not None
    thread = str(served.sdk("alice").threads.create()["thread_id"])
    assert post(served, "alice", thread, "stuck behind a link") == 201
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "far-away.txt").write_text("a file beyond the inbox root")
    history = served.store(thread).removed_path
    history.symlink_to(outside)

    listing = served.call("GET", f"/threads/{thread}/inbox", "vera")
    assert listing.status_code == 200
    assert "far-away" not in listing.text and "beyond" not in listing.text
    answer = listing.json()
    assert [e["preview"] for e in answer["pending"]] == ["stuck behind a link"]
    assert answer["delivered"] == [] and "symbolic link" in answer["problem"]
    ls = [str(PROMPTSTRAT), "inbox", "ls", "--thread", thread, "--root", str(served.root)]
    for command in (ls, [*ls, "--json"]):
        shown = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0 and "far-away" not in shown.stdout, shown
        assert "symbolic link" in shown.stderr, shown
    size = served.log_size()
    assert "stuck behind a link" not in delivered_texts(served, "alice", thread)
    assert "symbolic link" in served.log_since(size)  # the pickup says why the notice waits
    assert os.listdir(outside) == ["far-away.txt"] and len(served.pending(thread)) == 1

    history.unlink()
    assert "stuck behind a link" in delivered_texts(served, "alice", thread)
    assert served.call("GET", f"/threads/{thread}/inbox", "alice").json()["problem"] is None


def test_previews_and_names_carry_no_raw_control_or_bidi_character(either: Served) -> None:
    """A notice holding C1's CSI and a right-to-left override came back raw in the GET body and
    in ``inbox ls --json`` (C0 escaped by JSON only): every listing escapes them, while the run
    receives the text as posted."""
    thread = str(either.sdk("alice").threads.create()["thread_id"])
    hostile = "\u009b31mred\u202eevil\u2066isolated\u200fmark\x1b[2J\x07end"
    assert post(either, "alice", thread, hostile) == 201
    if either.root is not None:  # a name only someone writing under the root can choose
        planted = either.store(thread).path / "txt.\u202eexe"
        planted.write_text("planted")
        planted.chmod(0o444)
    answer = either.call("GET", f"/threads/{thread}/inbox", "alice")
    assert not UNSAFE & set(answer.text), [c for c in answer.text if c in UNSAFE]
    listed = answer.json()["pending"]
    assert not any(UNSAFE & set(e["preview"] + e["name"]) for e in listed)
    assert "\\x9b31mred\\u202eevil" in listed[0]["preview"]
    where = ["--root", str(either.root)] if either.root is not None else ["--dsn", str(either.dsn)]
    shown = subprocess.run(
        [str(PROMPTSTRAT), "inbox", "ls", "--json", "--thread", thread, *where],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and not UNSAFE - {"\n"} & set(shown.stdout), shown
    assert not any(UNSAFE & set(e["preview"] + e["name"]) for e in json.loads(shown.stdout))
    assert hostile in delivered_texts(either, "alice", thread)
