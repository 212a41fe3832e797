"""Specification of `promptstrat inbox ... --dsn`: the same commands over the PostgreSQL inbox."""

from __future__ import annotations

import secrets

import pytest

from langchain_promptstrat.cli import main
from langchain_promptstrat.inbox.postgres import DSN_ENV


def run(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


@pytest.fixture
def dsn(postgres_dsn, postgres_schema):  # noqa: F811
    """The test server with the session's schema first on the search path."""
    return f"{postgres_dsn}?options=-csearch_path%3D{postgres_schema}"


class TestInboxDsn:
    def test_post_abort_and_ls_with_dsn(self, capsys, dsn, monkeypatch):
        """post and abort print where the notice lies; ls lists it as pending, then as delivered."""
        monkeypatch.delenv(DSN_ENV, raising=False)
        thread = f"run-{secrets.token_hex(3)}"
        code, out, err = run(
            capsys, "inbox", "post", "--dsn", dsn, "--thread", thread, "--name", "n.txt", "hello"
        )
        assert (code, out, err) == (0, [f"pg:promptstrat_inbox_pending/{thread}/n.txt"], [])
        code, out, _ = run(
            capsys, "inbox", "abort", "--dsn", dsn, "--thread", thread, "--reason", "stop"
        )
        assert (code, out) == (0, [f"pg:promptstrat_inbox_pending/{thread}/abort"])
        code, out, _ = run(capsys, "inbox", "ls", "--dsn", dsn, "--thread", thread)
        assert code == 0 and [line.split()[::2] for line in out] == [
            ["pending", "abort"],
            ["pending", "n.txt"],
        ]
        from langchain_promptstrat.inbox.delivery import pick_up
        from langchain_promptstrat.inbox.postgres import PostgresInboxes

        store = PostgresInboxes(dsn).for_thread(thread)
        assert pick_up(store).abort_reason == "stop"
        code, out, _ = run(capsys, "inbox", "ls", "--dsn", dsn, "--thread", thread)
        assert [line.split()[::2] for line in out] == [["pending", "n.txt"], ["delivered", "abort"]]

    def test_the_environment_names_the_database(self, capsys, dsn, monkeypatch, tmp_path):
        """PROMPTSTRAT_INBOX_DSN stands for --dsn; an explicit --root still means the directory."""
        monkeypatch.setenv(DSN_ENV, dsn)
        thread = f"run-{secrets.token_hex(3)}"
        code, out, _ = run(capsys, "inbox", "ls", "--thread", thread)
        assert (code, out) == (0, [f"no notices in pg:promptstrat_inbox_pending/{thread}"])
        code, out, err = run(
            capsys,
            "inbox",
            "post",
            "--thread",
            thread,
            "--root",
            str(tmp_path),
            "--name",
            "n",
            "on disk",
        )
        assert (code, out, err) == (0, [str(tmp_path / f"{thread}.inbox" / "n")], [])
        code, out, _ = run(capsys, "inbox", "ls", "--thread", thread)
        assert (code, out) == (
            0,
            [f"no notices in pg:promptstrat_inbox_pending/{thread}"],
        )  # the database saw nothing

    def test_root_and_dsn_together_are_refused(self, capsys, dsn, tmp_path):
        """--root and --dsn name two different inboxes: a one-line usage error."""
        code, out, err = run(
            capsys, "inbox", "ls", "--dsn", dsn, "--thread", "t", "--root", str(tmp_path)
        )
        assert (code, out) == (2, []) and err == [
            "promptstrat: error: --root names a directory inbox and --dsn a PostgreSQL one; give "
            "one of them"
        ]

    def test_a_database_without_tables_is_a_one_line_error_naming_setup(self, capsys, postgres_dsn):  # noqa: F811
        """Before setup, the error says to call setup; `inbox setup` creates the tables."""
        import psycopg
        from psycopg import sql

        schema = f"cli_{secrets.token_hex(3)}"
        dsn = f"{postgres_dsn}?options=-csearch_path%3D{schema}"
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema))
            )  # empty: no inbox tables yet
        try:
            code, _, err = run(capsys, "inbox", "ls", "--dsn", dsn, "--thread", "t")
            assert code == 2 and len(err) == 1 and "setup()" in err[0]
            assert err[0].endswith("promptstrat inbox setup --dsn DSN)")
            assert run(capsys, "inbox", "setup", "--dsn", dsn) == (
                0,
                ["inbox tables ready (schema version 3)"],
                [],
            )
            assert run(capsys, "inbox", "ls", "--dsn", dsn, "--thread", "t") == (
                0,
                ["no notices in pg:promptstrat_inbox_pending/t"],
                [],
            )
        finally:
            with psycopg.connect(postgres_dsn, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )


class TestInboxLsJsonDsn:
    def test_ls_json_previews_postgres_notices_like_directory_ones(self, capsys, dsn, monkeypatch):
        """`inbox ls --json --dsn` gives the same fields, the preview read from the first bytes in
        the database."""
        import json

        monkeypatch.delenv(DSN_ENV, raising=False)
        thread = f"run-{secrets.token_hex(3)}"
        run(capsys, "inbox", "post", "--dsn", dsn, "--thread", thread, "--name", "n.txt", "x" * 300)
        code, out, err = run(capsys, "inbox", "ls", "--dsn", dsn, "--thread", thread, "--json")
        assert (code, err) == (0, [])
        (entry,) = json.loads("\n".join(out))
        assert (entry["state"], entry["name"], entry["size"], entry["delivered"]) == (
            "pending",
            "n.txt",
            300,
            None,
        )
        assert entry["preview"] == "x" * 79 + "…"


class TestInboxLsInFlightDsn:
    def test_ls_lists_postgres_claims_in_flight_with_owner_and_age(self, capsys, dsn, monkeypatch):
        """`inbox ls --dsn` shows a claimed, unacknowledged notice as in flight, in text and JSON,
        like the directory."""
        import json

        from langchain_promptstrat.inbox.postgres import PostgresInboxes

        monkeypatch.delenv(DSN_ENV, raising=False)
        thread = f"run-{secrets.token_hex(3)}"
        store = PostgresInboxes(dsn).for_thread(thread)
        store.post("use the staging database", name="a.txt")
        store.post("later", name="b.txt")
        store.lease("a.txt")
        (lease,) = store.in_flight()
        code, out, err = run(capsys, "inbox", "ls", "--dsn", dsn, "--thread", thread)
        assert (code, err) == (0, [])
        assert out[0].startswith("pending    ") and out[0].endswith("  b.txt")
        assert out[1].startswith("in-flight  ") and "  a.txt  claimed " in out[1]
        assert out[1].endswith(f" ago by {lease.owner} (owner alive, in lease)")
        code, out, _ = run(capsys, "inbox", "ls", "--dsn", dsn, "--thread", thread, "--json")
        claimed = json.loads("\n".join(out))[1]
        assert (claimed["state"], claimed["name"], claimed["size"], claimed["preview"]) == (
            "in-flight",
            "a.txt",
            24,
            "use the staging database",
        )
        assert (claimed["owner"], claimed["claim"]) == (lease.owner, "held") and claimed[
            "age_seconds"
        ] >= 0
        store.acknowledge(lease.token, lease.name)
        code, out, _ = run(capsys, "inbox", "ls", "--dsn", dsn, "--thread", thread)
        assert [line.split()[::2] for line in out] == [["pending", "b.txt"], ["delivered", "a.txt"]]
