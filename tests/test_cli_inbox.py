"""Specification of `promptstrat inbox post|abort|ls|setup`: exact output, one-line errors, exit
codes, the action list."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_promptstrat.cli import build_parser, main
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV

PROMPTSTRAT = Path(sys.executable).parent / "promptstrat"


@pytest.fixture
def save_file(tmp_path):
    """A conversation's save file; its inbox is agent.inbox beside it."""
    return tmp_path / "agent.chat"


@pytest.fixture
def root(tmp_path):
    """An inbox root for thread-named inboxes."""
    return tmp_path / "threads"


@pytest.fixture(autouse=True)
def no_env_root(monkeypatch):
    """No inbox root from the environment unless a test sets one."""
    monkeypatch.delenv(INBOX_ROOT_ENV, raising=False)


def run(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


class TestInboxPost:
    def test_post_writes_the_argument_and_prints_the_path(self, capsys, save_file, tmp_path):
        """post CONTENT --name N writes the file and prints its path."""
        code, out, err = run(
            capsys,
            "inbox",
            "post",
            "--save-file",
            str(save_file),
            "--name",
            "n.txt",
            "check the tests",
        )
        assert (code, out, err) == (0, [str(tmp_path / "agent.inbox" / "n.txt")], [])
        assert (tmp_path / "agent.inbox" / "n.txt").read_text() == "check the tests"

    def test_post_reads_standard_input_without_content(self, capsys, root, monkeypatch):
        """Without CONTENT (or with '-') the notice is read from standard input; the name defaults
        to arrival order."""
        monkeypatch.setattr(sys, "stdin", io.StringIO("from stdin\n"))
        code, out, _ = run(capsys, "inbox", "post", "--thread", "run.1", "--root", str(root))
        path = Path(out[0])
        assert (
            code == 0 and path.parent == root / "run.1.inbox" and path.read_text() == "from stdin\n"
        )
        assert path.name.endswith(".txt") and "Z-" in path.name

    def test_post_to_a_pending_name_is_a_one_line_error(self, capsys, save_file, tmp_path):
        """A clash is reported in one line with exit status 2 and the pending file untouched."""
        run(capsys, "inbox", "post", "--save-file", str(save_file), "--name", "n", "first")
        code, out, err = run(
            capsys, "inbox", "post", "--save-file", str(save_file), "--name", "n", "second"
        )
        assert (code, out) == (2, [])
        assert err == [
            "promptstrat: error: a notice named 'n' is already pending in this inbox; "
            "wait for it to be delivered or pick another name"
        ]

    def test_an_over_cap_notice_on_standard_input_is_refused_in_one_line_and_never_written(
        self, capsys, save_file, monkeypatch
    ):
        """`head -c 5000000 | promptstrat inbox post` used to print success for a notice no pickup
        would ever deliver: the CLI reads at most one byte over the cap and the store refuses it
        with the sentence every writer gives."""
        monkeypatch.setenv("PROMPTSTRAT_INBOX_MAX_NOTICE_BYTES", "1000")
        stdin = io.BytesIO(b"x" * 5_000_000)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin))
        code, out, err = run(capsys, "inbox", "post", "--save-file", str(save_file))
        assert (code, out) == (2, []) and stdin.tell() < 100_000
        assert err == [
            "promptstrat: error: the notice is 1001 bytes; this inbox takes at most 1000 "
            "(INBOX_MAX_NOTICE_BYTES)"
        ]
        assert (
            not (save_file.parent / "agent.inbox").exists()
            or DirectoryInbox.for_save_file(save_file).pending() == []
        )

    def test_post_abort_by_name_is_refused(self, capsys, save_file):
        """The reserved name is refused with a pointer to the abort command."""
        code, _, err = run(
            capsys, "inbox", "post", "--save-file", str(save_file), "--name", "abort", "x"
        )
        assert code == 2 and err == [
            "promptstrat: error: 'abort' is reserved for abort requests; use request_abort() or "
            "`promptstrat inbox abort`"
        ]


class TestInboxAbort:
    def test_abort_writes_the_reserved_file_with_the_reason(self, capsys, save_file, tmp_path):
        """abort --reason R writes 'abort' holding R and prints its path."""
        code, out, err = run(
            capsys, "inbox", "abort", "--save-file", str(save_file), "--reason", "stop now"
        )
        assert (code, out, err) == (0, [str(tmp_path / "agent.inbox" / "abort")], [])
        assert (tmp_path / "agent.inbox" / "abort").read_text() == "stop now"


class TestInboxLs:
    def test_ls_escapes_names_that_would_drive_the_terminal_or_forge_a_line(
        self, capsys, save_file
    ):
        """A file name under the inbox is chosen by whoever wrote it: ESC (\\x1b[2J clears the
        operator's screen), a newline (a forged listing line) and undecodable bytes are printed
        escaped, one line per notice."""
        inbox = save_file.parent / "agent.inbox"
        inbox.mkdir()
        for raw in (b"clear\x1b[2J", b"a\npending    2099-01-01T00:00:00Z  forged", b"n\x80"):
            (inbox / os.fsdecode(raw)).write_text("planted")
        code, out, err = run(capsys, "inbox", "ls", "--save-file", str(save_file))
        assert (code, err) == (0, []) and len(out) == 3 and not any("\x1b" in line for line in out)
        assert sorted(line[33:] for line in out) == [
            "a\\npending    2099-01-01T00:00:00Z  forged",
            "clear\\x1b[2J",
            "n\\udc80",
        ]

    def test_ls_lists_pending_then_delivered_with_times(self, capsys, save_file):
        """ls prints one line per file: state, UTC mtime, name; pending in delivery order."""
        store = DirectoryInbox.for_save_file(save_file)
        for name, when in (("b", 200), ("a", 100), ("old", 50)):
            os.utime(store.post(name, name=name), (when, when))
        store.claim("old")
        code, out, err = run(capsys, "inbox", "ls", "--save-file", str(save_file))
        assert (code, err) == (0, [])
        assert out == [
            "pending    1970-01-01T00:01:40Z  a",
            "pending    1970-01-01T00:03:20Z  b",
            "delivered  1970-01-01T00:00:50Z  old",
        ]

    def test_ls_of_an_empty_inbox_says_so(self, capsys, save_file, tmp_path):
        """An inbox with nothing in it prints one line naming it, and creates nothing."""
        assert run(capsys, "inbox", "ls", "--save-file", str(save_file)) == (
            0,
            [f"no notices in {tmp_path / 'agent.inbox'}"],
            [],
        )
        assert list(tmp_path.iterdir()) == []

    def test_thread_root_comes_from_the_environment(self, capsys, root, monkeypatch):
        """--thread without --root uses PROMPTSTRAT_INBOX_ROOT."""
        monkeypatch.setenv(INBOX_ROOT_ENV, str(root))
        run(capsys, "inbox", "post", "--thread", "t", "--name", "n", "x")
        code, out, _ = run(capsys, "inbox", "ls", "--thread", "t")
        assert (
            code == 0 and len(out) == 1 and out[0].startswith("pending ") and out[0].endswith("  n")
        )


def inbox_actions_the_parser_knows() -> list[str]:
    """Return the actions the full parser accepts after `promptstrat inbox`, read from argparse
    itself."""

    def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))

    return list(subcommands(subcommands(build_parser())["inbox"]))


class TestActions:
    def test_the_parser_knows_the_four_actions(self):
        """The helper below reads argparse's own table, so a new action is seen by the tests that
        use it."""
        assert inbox_actions_the_parser_knows() == ["post", "abort", "ls", "setup"]

    def test_the_command_summary_names_every_inbox_action(self, capsys, monkeypatch):
        """`promptstrat --help` names each action the parser knows (setup included), so none can be
        left out again."""
        monkeypatch.setenv(
            "COLUMNS", "1000"
        )  # argparse wraps at the terminal's width: one line per command
        code, out, _ = run(capsys, "--help")
        summary = next(line for line in out if line.split()[:1] == ["inbox"])
        missing = [
            a for a in inbox_actions_the_parser_knows() if not re.search(rf"\b{a}\b", summary)
        ]
        assert code == 0 and missing == [], summary

    def test_inbox_without_an_action_lists_the_actions_and_exits_2(self, capsys):
        """`promptstrat inbox` alone prints its usage, one line per action the parser knows and the
        error line, exit 2."""
        code, out, err = run(capsys, "inbox")
        assert (code, out) == (2, [])
        assert err[0].startswith("usage: promptstrat inbox ")
        listed = [line.split()[0] for line in err[1:-1] if line.startswith("  ")]
        assert listed == inbox_actions_the_parser_knows()
        assert all(len(line.split()) > 3 for line in err[1:-1] if line.startswith("  ")), (
            "each action has its line of help"
        )
        assert (
            err[-1] == "promptstrat: error: choose an action (see promptstrat inbox ACTION --help)"
        )
        assert not any(line.startswith("promptstrat: error:") for line in err[:-1])


class TestErrors:
    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            (
                ["inbox", "ls", "--thread", "t"],
                "no inbox root for thread 't': pass root= (--root) or set PROMPTSTRAT_INBOX_ROOT",
            ),
            (
                ["inbox", "ls"],
                "one of the arguments --save-file --thread is required (see promptstrat inbox ls "
                "--help)",
            ),
            (
                ["inbox", "ls", "--save-file", "a.chat", "--thread", "t"],
                "argument --thread: not allowed with argument --save-file (see promptstrat inbox "
                "ls --help)",
            ),
            (
                ["inbox", "ls", "--save-file", "a.chat", "--root", "r"],
                "--root goes with --thread, not with --save-file",
            ),
            (
                ["inbox", "post", "--thread", "", "--root", "r", "x"],
                "thread_id is empty; an inbox needs a non-empty thread id",
            ),
            ([], "choose a command (see promptstrat --help)"),
        ],
    )
    def test_errors_are_one_line_with_exit_status_2(self, capsys, argv, message):
        """Every usage or inbox error prints exactly one 'promptstrat: error:' line and returns
        2."""
        assert run(capsys, *argv) == (2, [], [f"promptstrat: error: {message}"])

    def test_an_unknown_command_is_one_line(self, capsys):
        """argparse's own complaints are one line too (its wording varies with Python and the
        command set)."""
        code, out, err = run(capsys, "frobnicate")
        assert (code, out, len(err)) == (2, [], 1)
        assert err[0].startswith(
            "promptstrat: error: argument COMMAND: invalid choice: 'frobnicate'"
        )

    def test_a_root_that_is_a_file_is_one_line(self, capsys, tmp_path):
        """An inbox root that is a file is reported without a traceback."""
        (tmp_path / "f").write_text("")
        code, _, err = run(capsys, "inbox", "abort", "--thread", "t", "--root", str(tmp_path / "f"))
        assert code == 2 and err == [
            f"promptstrat: error: inbox root '{tmp_path / 'f'}' (root) exists and is not a "
            "directory; point it at a directory"
        ]


class TestConsoleScript:
    def test_installed_script_posts_lists_and_fails_cleanly(self, tmp_path):
        """The promptstrat console script works end to end and never prints a traceback."""
        save = str(tmp_path / "agent.chat")
        env = {k: v for k, v in os.environ.items() if k != INBOX_ROOT_ENV}
        posted = subprocess.run(
            [str(PROMPTSTRAT), "inbox", "post", "--save-file", save, "--name", "n"],
            input="hello",
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert (posted.returncode, posted.stdout, posted.stderr) == (
            0,
            f"{tmp_path / 'agent.inbox' / 'n'}\n",
            "",
        )
        listed = subprocess.run(
            [str(PROMPTSTRAT), "inbox", "ls", "--save-file", save],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert (
            listed.returncode == 0
            and listed.stdout.startswith("pending    ")
            and listed.stdout.endswith("  n\n")
        )
        failed = subprocess.run(
            [str(PROMPTSTRAT), "inbox", "abort", "--thread", "t"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert (failed.returncode, failed.stdout) == (2, "")
        assert (
            failed.stderr
            == "promptstrat: error: no inbox root for thread 't': pass root= (--root) or set "
            "PROMPTSTRAT_INBOX_ROOT\n"
        )


class TestInboxLsJson:
    def test_ls_json_lists_state_times_size_and_a_one_line_preview(self, capsys, save_file):
        """`inbox ls --json` gives one object per notice, pending first, with a preview cut to 80
        characters."""
        inbox = DirectoryInbox.for_save_file(save_file)
        inbox.post("use the\nstaging database", name="a")
        inbox.post("é" * 200, name="b")
        code, out, err = run(capsys, "inbox", "ls", "--save-file", str(save_file), "--json")
        assert (code, err) == (0, [])
        listed = json.loads("\n".join(out))
        assert [(e["state"], e["name"], e["size"], e["delivered"]) for e in listed] == [
            ("pending", "a", 24, None),
            ("pending", "b", 400, None),
        ]
        assert listed[0]["preview"] == "use the staging database"
        assert listed[1]["preview"] == "é" * 79 + "…"
        assert all(e["posted"].endswith("Z") for e in listed)

    def test_ls_json_escapes_control_and_bidi_characters_in_previews(self, capsys, save_file):
        """A preview shows what the poster wrote: C1's CSI or a right-to-left override would drive
        the operator's terminal or reorder the line: escaped, as in a name (issue 42)."""
        DirectoryInbox.for_save_file(save_file).post("\u009b31mred \u202eevil \u2066x", name="a")
        code, out, err = run(capsys, "inbox", "ls", "--save-file", str(save_file), "--json")
        (entry,) = json.loads("\n".join(out))
        assert (code, err, entry["preview"]) == (0, [], "\\x9b31mred \\u202eevil \\u2066x")

    def test_ls_of_a_symlinked_history_shows_nothing_behind_it_and_warns(self, capsys, save_file):
        """A history directory linking out of the inbox is not listed (its files are elsewhere); the
        pending notice, which cannot be delivered until it is fixed, is, with one warning line."""
        store = DirectoryInbox.for_save_file(save_file)
        store.post("waiting", name="n")
        elsewhere = save_file.parent / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "private.txt").write_text("not the inbox's")
        store.removed_path.symlink_to(elsewhere)
        code, out, err = run(capsys, "inbox", "ls", "--save-file", str(save_file), "--json")
        listed = [(e["state"], e["name"]) for e in json.loads("\n".join(out))]
        assert (code, listed, len(err)) == (0, [("pending", "n")], 1)
        assert err[0].startswith("promptstrat: warning: ") and "symbolic link" in err[0]

    def test_ls_json_of_an_empty_inbox_is_an_empty_array(self, capsys, save_file):
        """No notices: `[]`, not the human sentence."""
        code, out, _ = run(capsys, "inbox", "ls", "--save-file", str(save_file), "--json")
        assert (code, json.loads("\n".join(out))) == (0, [])


class TestInboxLsInFlight:
    """A claimed notice (picked up, not yet recorded as delivered) is listed as in flight, with its
    owner and age."""

    LEASE = (
        "import sys; from langchain_promptstrat.inbox.directory import DirectoryInbox; "
        "assert DirectoryInbox.for_save_file(sys.argv[1]).lease(sys.argv[2]) is not None"
    )

    def test_ls_shows_a_claim_whose_reader_died_with_its_owner_and_age(self, capsys, save_file):
        """A reader killed after its pickup leaves a claim; ls lists it between pending and
        delivered, owner gone."""
        store = DirectoryInbox.for_save_file(save_file)
        for name, when in (("a", 100), ("b", 200), ("c", 300)):
            os.utime(store.post(name, name=name), (when, when))
        store.claim("c")
        subprocess.run(
            [sys.executable, "-c", self.LEASE, str(save_file), "a"], check=True, timeout=120
        )
        (lease,) = store.in_flight()
        code, out, err = run(capsys, "inbox", "ls", "--save-file", str(save_file))
        assert (code, err) == (0, [])
        assert out[0] == "pending    1970-01-01T00:03:20Z  b"
        assert out[1].startswith("in-flight  1970-01-01T00:01:40Z  a  claimed ")
        assert out[1].endswith(f" ago by {lease.owner} (owner gone: the next pickup takes it over)")
        assert out[2] == "delivered  1970-01-01T00:05:00Z  c"

    def test_ls_json_gives_in_flight_claims_their_owner_time_age_and_state(self, capsys, save_file):
        """--json: an in-flight entry carries owner, claimed, age_seconds and claim; other entries
        have them null."""
        store = DirectoryInbox.for_save_file(save_file)
        store.post("use the\nstaging database", name="a")
        store.post("later", name="b")
        store.lease("a")
        code, out, err = run(capsys, "inbox", "ls", "--save-file", str(save_file), "--json")
        assert (code, err) == (0, [])
        pending, claimed = json.loads("\n".join(out))
        assert (claimed["state"], claimed["name"], claimed["size"], claimed["delivered"]) == (
            "in-flight",
            "a",
            24,
            None,
        )
        assert claimed["preview"] == "use the staging database"
        assert claimed["owner"] == store.in_flight()[0].owner and claimed["claim"] == "held"
        assert claimed["claimed"].endswith("Z") and 0 <= claimed["age_seconds"] < 60
        assert (
            pending["state"],
            pending["owner"],
            pending["claimed"],
            pending["age_seconds"],
            pending["claim"],
        ) == ("pending", None, None, None, None)

    def test_another_live_process_sees_the_claim_held_then_expired(self, save_file):
        """Listed from another process, a claim of this live process is held, and expired once past
        its lease."""
        store = DirectoryInbox.for_save_file(save_file)
        store.post("x", name="a")
        store.lease("a")
        env = {k: v for k, v in os.environ.items() if k != INBOX_ROOT_ENV}
        listed = [
            subprocess.run(
                [str(PROMPTSTRAT), "inbox", "ls", "--save-file", str(save_file), "--json"],
                capture_output=True,
                text=True,
                env={**env, "INBOX_LEASE_SECONDS": lease},
                timeout=120,
            )
            for lease in ("600", "0")
        ]
        assert [(p.returncode, p.stderr) for p in listed] == [(0, ""), (0, "")]
        assert [json.loads(p.stdout)[0]["claim"] for p in listed] == ["held", "expired"]
