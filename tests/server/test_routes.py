"""The inbox's HTTP routes (``langchain_promptstrat.server:app``), driven in process on both
backends."""

from __future__ import annotations

import os
import time

import pytest
from starlette.testclient import TestClient

from langchain_promptstrat.inbox.delivery import pick_up
from langchain_promptstrat.server import app, thread_inbox


@pytest.fixture(params=["directory", "postgres"])
def client(request, tmp_path, monkeypatch):
    """A client of the routes over the directory backend (absolute root) or the PostgreSQL one."""
    monkeypatch.delenv("PROMPTSTRAT_INBOX_DSN", raising=False)
    if request.param == "directory":
        monkeypatch.setenv("PROMPTSTRAT_INBOX_ROOT", str(tmp_path / "inboxes"))
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        schema = request.getfixturevalue("postgres_schema")
        sep = "&" if "?" in dsn else "?"
        monkeypatch.setenv("PROMPTSTRAT_INBOX_DSN", f"{dsn}{sep}options=-csearch_path%3D{schema}")
        monkeypatch.delenv("PROMPTSTRAT_INBOX_ROOT", raising=False)
    with TestClient(app) as c:
        yield c


def test_a_posted_notice_is_pending_then_delivered_once(client):
    """A notice posted over HTTP is listed pending, reaches one pickup, and is then listed
    delivered."""
    answer = client.post("/threads/t-1/inbox", json={"content": "Use the staging database."})
    assert answer.status_code == 201, answer.text
    assert answer.json()["state"] == "pending"
    assert [e["preview"] for e in client.get("/threads/t-1/inbox").json()["pending"]] == [
        "Use the staging database."
    ]
    first = pick_up(thread_inbox("t-1"))
    second = pick_up(thread_inbox("t-1"))
    assert [m.content for m in first.delivered] == [
        "Use the staging database."
    ] and second.delivered == []
    listing = client.get("/threads/t-1/inbox").json()
    assert (
        listing["pending"] == [] and listing["in_flight"] == [] and len(listing["delivered"]) == 1
    )


def test_an_abort_over_http_stops_the_next_pickup_with_its_reason(client):
    """POST /abort writes the abort a pickup honours, with the reason given; a second one is refused
    (409)."""
    assert client.post("/threads/t-2/abort", json={"reason": "budget reached"}).status_code == 201
    assert client.post("/threads/t-2/abort", json={"reason": "again"}).status_code == 409
    assert pick_up(thread_inbox("t-2")).abort_reason == "budget reached"


def test_answers_never_name_a_server_path(client, tmp_path):
    """An API client learns names and figures, never where the server keeps its inboxes."""
    texts = [
        client.post("/threads/t-3/inbox", json={"content": "x"}).text,
        client.get("/threads/t-3/inbox").text,
        client.post("/threads/t-3/abort", json={}).text,
    ]
    assert not any(str(tmp_path) in t or "pg:" in t for t in texts)


def test_threads_do_not_share_an_inbox(client):
    """A notice posted to one thread is never listed for another."""
    client.post("/threads/a/inbox", json={"content": "for a"})
    assert client.get("/threads/b/inbox").json()["pending"] == []


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"{not json", 400, "not JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b"{}", 422, "no 'content' field"),
        (b'{"content": 5}', 422, "must be a string"),
        (b'{"content": "   "}', 422, "empty"),
        (b'{"content": "x", "name": "abort"}', 422, "reserved"),
        (b'{"content": "x", "name": "../up"}', 422, ""),
    ],
)
def test_bad_input_gets_a_4xx_with_one_sentence_and_posts_nothing(client, body, status, words):
    """Each kind of bad body is refused with its own status and a sentence saying what was wrong;
    nothing is posted."""
    answer = client.post(
        "/threads/t-4/inbox", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == status, answer.text
    assert words in answer.json()["detail"] and "Traceback" not in answer.text
    assert client.get("/threads/t-4/inbox").json()["pending"] == []


def test_a_notice_over_the_size_cap_is_refused_with_413(client, monkeypatch):
    """The cap is the inbox's own INBOX_MAX_NOTICE_BYTES, so the routes never accept what a pickup
    would leave pending."""
    monkeypatch.setenv("PROMPTSTRAT_INBOX_MAX_NOTICE_BYTES", "100")
    assert client.post("/threads/t-5/inbox", json={"content": "é" * 51}).status_code == 413
    assert client.post("/threads/t-5/inbox", json={"content": "é" * 50}).status_code == 201


def test_a_bad_thread_id_is_refused_with_422(client):
    """A thread id with control characters or of absurd length names no thread."""
    assert client.get("/threads/" + "x" * 300 + "/inbox").status_code == 422
    assert client.get("/threads/a%01b/inbox").status_code == 422


def test_a_relative_or_missing_inbox_root_is_the_servers_fault_503(tmp_path, monkeypatch):
    """A relative root would follow the server's working directory: the route says how to configure
    it instead."""
    monkeypatch.delenv("PROMPTSTRAT_INBOX_DSN", raising=False)
    monkeypatch.setenv("PROMPTSTRAT_INBOX_ROOT", "inboxes")
    with TestClient(app) as c:
        answer = c.post("/threads/t/inbox", json={"content": "x"})
    assert answer.status_code == 503 and "absolute" in answer.json()["detail"]
    assert not (tmp_path / "inboxes").exists()


# ----------------------------------------------------------------------------- hostile callers
# (issue 29)


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None]
)
def test_a_post_that_is_not_json_is_refused_with_415_and_posts_nothing(client, content_type):
    """A browser sends text/plain (or a form) across origins without asking first, and LangGraph's
    default CORS is *: only application/json is taken, so a web page cannot post or abort on a
    visitor's behalf."""
    headers = {} if content_type is None else {"content-type": content_type}
    for route in ("inbox", "abort"):
        answer = client.post(
            f"/threads/t-6/{route}", content=b'{"content": "x", "reason": "x"}', headers=headers
        )
        assert answer.status_code == 415 and "application/json" in answer.json()["detail"], (
            answer.text
        )
    assert client.get("/threads/t-6/inbox").json()["totals"] == {
        "pending": 0,
        "in_flight": 0,
        "delivered": 0,
    }


@pytest.mark.parametrize("thread", ["%2E%2E", "%2E", "%2e%2E"])
def test_dot_and_dot_dot_are_not_thread_ids(client, thread):
    """'..' would make the server's own check URL /threads/.. (its public root), so an anonymous
    caller could post."""
    for answer in (
        client.post(f"/threads/{thread}/inbox", json={"content": "x"}),
        client.get(f"/threads/{thread}/inbox"),
        client.post(f"/threads/{thread}/abort", json={}),
    ):
        assert answer.status_code == 422 and "'.' or '..'" in answer.json()["detail"], answer.text


def test_every_spelling_of_a_uuid_thread_lists_and_fills_one_inbox(client):
    """Uppercase, no hyphens, braces, urn:uuid: are one thread to LangGraph Server, so one inbox
    here."""
    thread = "5a0e1e5c-0b5e-4d7e-9a51-3f1c2b9d8e70"
    spellings = [
        thread,
        thread.upper(),
        thread.replace("-", ""),
        "%7B" + thread + "%7D",
        "urn:uuid:" + thread,
    ]
    for i, spelling in enumerate(spellings):
        assert (
            client.post(f"/threads/{spelling}/inbox", json={"content": f"n{i}"}).json()["thread_id"]
            == thread
        )
    for spelling in spellings:
        assert client.get(f"/threads/{spelling}/inbox").json()["totals"]["pending"] == 5
    assert len(pick_up(thread_inbox(thread.upper())).delivered) == 5


def test_concurrent_posts_of_one_name_are_one_201_and_409s_naming_no_path(client, tmp_path):
    """Sixteen callers race for one name: exactly one notice is stored; the rest learn the name is
    taken (409), not that the server failed (503), and no answer names where the inbox lies."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(16) as pool:
        answers = list(
            pool.map(
                lambda i: client.post(
                    "/threads/race/inbox", json={"content": f"{i}", "name": "same"}
                ),
                range(16),
            )
        )
    assert sorted(a.status_code for a in answers) == [201] + [409] * 15
    assert not any(
        str(tmp_path) in a.text or "pg:" in a.text or "postgresql" in a.text for a in answers
    )
    assert client.get("/threads/race/inbox").json()["totals"]["pending"] == 1


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"[" * 100_000, 400),
        (b'{"content": "x", "name": "n\\ud800"}', 422),
        (b'{"content": "x", "name": "n\\udc80"}', 422),
        (b'{"content": "x", "name": "a\\u001b[2Jb"}', 422),
        (b'{"content": "x", "name": "a\\nb"}', 422),
        (b'{"content": "x\\ud800"}', 422),
    ],
)
def test_hostile_bodies_get_a_4xx_with_one_sentence_and_the_listing_still_works(
    client, body, status
):
    """Deep nesting, lone surrogates and control characters were 500s (or a listing that failed ever
    after)."""
    answer = client.post(
        "/threads/t-7/inbox", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == status and "Traceback" not in answer.text, answer.text
    assert client.get("/threads/t-7/inbox").json()["totals"]["pending"] == 0


def test_a_lone_surrogate_or_an_over_cap_abort_reason_is_refused(client, monkeypatch):
    """The abort's reason goes into the interrupt payload every API client reads: text only, under
    the notice cap."""
    answer = client.post(
        "/threads/t-8/abort",
        content=b'{"reason": "\\udc80"}',
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 422, answer.text
    monkeypatch.setenv("PROMPTSTRAT_INBOX_MAX_NOTICE_BYTES", "100")
    assert client.post("/threads/t-8/abort", json={"reason": "r" * 101}).status_code == 413
    assert client.post("/threads/t-8/abort", json={"reason": "r" * 100}).status_code == 201


def test_a_listing_is_paginated_and_shows_its_totals(client):
    """GET returns a page of each list (limit at most 1000) with the totals, not the whole history
    at once."""
    for i in range(5):
        client.post("/threads/t-9/inbox", json={"content": f"n{i}", "name": f"n{i}"})
    page = client.get("/threads/t-9/inbox?offset=1&limit=2").json()
    assert [e["name"] for e in page["pending"]] == ["n1", "n2"] and page["totals"]["pending"] == 5
    for bad in ("limit=0", "limit=1001", "offset=-1", "limit=x"):
        assert client.get(f"/threads/t-9/inbox?{bad}").status_code == 422


def test_a_delivered_notice_is_listed_with_the_time_it_was_delivered(client):
    """A listing says when each delivered notice was delivered, after its posting time: an operator
    asking "did the agent see it, and when?" reads it there (the directory backend, which keeps
    the posting time as the file's mtime, gave null)."""
    client.post("/threads/t-10/inbox", json={"content": "x"})
    time.sleep(0.3)
    picked_at = time.time()
    assert [m.content for m in pick_up(thread_inbox("t-10")).delivered] == ["x"]
    (entry,) = client.get("/threads/t-10/inbox").json()["delivered"]
    assert entry["posted"] < picked_at - 0.05 <= entry["delivered"] <= time.time()


def test_a_file_with_an_undecodable_name_never_breaks_a_listing(tmp_path, monkeypatch):
    """A file named with a byte that is not UTF-8 (planted, or left by another tool) is listed
    escaped; the other notices still list and post."""
    monkeypatch.delenv("PROMPTSTRAT_INBOX_DSN", raising=False)
    monkeypatch.setenv("PROMPTSTRAT_INBOX_ROOT", str(tmp_path))
    with TestClient(app) as c:
        assert c.post("/threads/t/inbox", json={"content": "ok", "name": "ok"}).status_code == 201
        (tmp_path / "t.inbox" / os.fsdecode(b"n\x80\x1b")).write_text("planted")
        answer = c.get("/threads/t/inbox")
        assert answer.status_code == 200 and sorted(
            e["name"] for e in answer.json()["pending"]
        ) == ["n\\udc80\\x1b", "ok"]


def test_a_failing_filesystem_is_a_503_with_one_sentence_naming_no_path(tmp_path, monkeypatch):
    """An OSError of the store (here a root under /dev/null, so mkdir fails) is the server's side:
    503, no traceback, no path."""
    monkeypatch.delenv("PROMPTSTRAT_INBOX_DSN", raising=False)
    monkeypatch.setenv("PROMPTSTRAT_INBOX_ROOT", "/dev/null/inboxes")
    with TestClient(app) as c:
        answer = c.post("/threads/t/inbox", json={"content": "x"})
    assert (
        answer.status_code == 503
        and "/dev/null" not in answer.text
        and answer.json()["detail"].count(".") <= 1
    )


def test_a_database_that_is_down_is_a_503_naming_no_dsn(monkeypatch):
    """PostgreSQL errors carry host:port/dbname and the driver's text: they go to the server's log,
    not to the caller."""
    monkeypatch.setenv(
        "PROMPTSTRAT_INBOX_DSN", "postgresql://u:p@127.0.0.1:1/secretdb?connect_timeout=1"
    )
    with TestClient(app) as c:
        answers = [c.post("/threads/t/inbox", json={"content": "x"}), c.get("/threads/t/inbox")]
    assert [a.status_code for a in answers] == [503, 503]
    assert not any("secretdb" in a.text or "127.0.0.1" in a.text for a in answers)


def test_a_name_taken_by_a_directory_is_409_and_a_symlinked_inbox_503_naming_no_path(
    tmp_path, monkeypatch
):
    """A directory already named like the notice is a taken name (409); an inbox that is a symbolic
    link is refused by the store (503): neither answer says where the server keeps its inboxes."""
    monkeypatch.delenv("PROMPTSTRAT_INBOX_DSN", raising=False)
    monkeypatch.setenv("PROMPTSTRAT_INBOX_ROOT", str(tmp_path / "root"))
    (tmp_path / "root" / "t.inbox" / "same").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root" / "u.inbox").symlink_to(tmp_path / "elsewhere")
    with TestClient(app) as c:
        taken = c.post("/threads/t/inbox", json={"content": "x", "name": "same"})
        linked = c.post("/threads/u/inbox", json={"content": "x"})
    assert (taken.status_code, linked.status_code) == (409, 503)
    assert (
        str(tmp_path) not in taken.text + linked.text and os.listdir(tmp_path / "elsewhere") == []
    )
