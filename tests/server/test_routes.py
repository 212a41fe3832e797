"""The inbox's HTTP routes (``langchain_promptstrat.server:app``), driven in process on both backends."""

from __future__ import annotations

import pytest
from conftest_postgres import postgres_dsn, postgres_schema  # noqa: F401  (fixtures)
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
    """A notice posted over HTTP is listed pending, reaches one pickup, and is then listed delivered."""
    answer = client.post("/threads/t-1/inbox", json={"content": "Use the staging database."})
    assert answer.status_code == 201, answer.text
    assert answer.json()["state"] == "pending"
    assert [e["preview"] for e in client.get("/threads/t-1/inbox").json()["pending"]] == ["Use the staging database."]
    first = pick_up(thread_inbox("t-1"))
    second = pick_up(thread_inbox("t-1"))
    assert [m.content for m in first.delivered] == ["Use the staging database."] and second.delivered == []
    listing = client.get("/threads/t-1/inbox").json()
    assert listing["pending"] == [] and listing["in_flight"] == [] and len(listing["delivered"]) == 1


def test_an_abort_over_http_stops_the_next_pickup_with_its_reason(client):
    """POST /abort writes the abort a pickup honours, with the reason given; a second one is refused (409)."""
    assert client.post("/threads/t-2/abort", json={"reason": "budget reached"}).status_code == 201
    assert client.post("/threads/t-2/abort", json={"reason": "again"}).status_code == 409
    assert pick_up(thread_inbox("t-2")).abort_reason == "budget reached"


def test_answers_never_name_a_server_path(client, tmp_path):
    """An API client learns names and figures, never where the server keeps its inboxes."""
    texts = [client.post("/threads/t-3/inbox", json={"content": "x"}).text, client.get("/threads/t-3/inbox").text,
             client.post("/threads/t-3/abort", json={}).text]
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
    """Each kind of bad body is refused with its own status and a sentence saying what was wrong; nothing is posted."""
    answer = client.post("/threads/t-4/inbox", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == status, answer.text
    assert words in answer.json()["detail"] and "Traceback" not in answer.text
    assert client.get("/threads/t-4/inbox").json()["pending"] == []


def test_a_notice_over_the_size_cap_is_refused_with_413(client, monkeypatch):
    """The cap is the inbox's own INBOX_MAX_NOTICE_BYTES, so the routes never accept what a pickup would leave pending."""
    monkeypatch.setenv("PROMPTSTRAT_INBOX_MAX_NOTICE_BYTES", "100")
    assert client.post("/threads/t-5/inbox", json={"content": "é" * 51}).status_code == 413
    assert client.post("/threads/t-5/inbox", json={"content": "é" * 50}).status_code == 201


def test_a_bad_thread_id_is_refused_with_422(client):
    """A thread id with control characters or of absurd length names no thread."""
    assert client.get("/threads/" + "x" * 300 + "/inbox").status_code == 422
    assert client.get("/threads/a%01b/inbox").status_code == 422


def test_a_relative_or_missing_inbox_root_is_the_servers_fault_503(tmp_path, monkeypatch):
    """A relative root would follow the server's working directory: the route says how to configure it instead."""
    monkeypatch.delenv("PROMPTSTRAT_INBOX_DSN", raising=False)
    monkeypatch.setenv("PROMPTSTRAT_INBOX_ROOT", "inboxes")
    with TestClient(app) as c:
        answer = c.post("/threads/t/inbox", json={"content": "x"})
    assert answer.status_code == 503 and "absolute" in answer.json()["detail"]
    assert not (tmp_path / "inboxes").exists()
