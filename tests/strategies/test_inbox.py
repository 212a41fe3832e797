"""Specification of the inbox strategy: consume-once notices, the reserved abort file, the Runnable
and prepare_prompt forms."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_promptstrat import Settings, check_tool_pairs, prepare_prompt
from langchain_promptstrat.errors import InboxAborted
from langchain_promptstrat.inbox.directory import DirectoryInbox
from langchain_promptstrat.inbox.paths import INBOX_ROOT_ENV, inbox_dir, inbox_removed_dir
from langchain_promptstrat.messages import is_real_user_message, mark_of
from langchain_promptstrat.registry import apply_strategies
from langchain_promptstrat.strategies.epoch import ShortenToolsEpochIncrement
from langchain_promptstrat.strategies.epoch_stable import ShortenToolsEpochStable
from langchain_promptstrat.strategies.inbox import Inbox, inbox


def write(directory: Path, name: str, text: str | bytes, mtime: float | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def contents(messages) -> list[str]:
    return [m.content for m in messages]


@pytest.fixture
def save_file(tmp_path):
    """The save file of a conversation; its inbox does not exist yet."""
    return tmp_path / "agent.chat"


@pytest.fixture
def inbox_path(save_file):
    """The conversation's inbox directory (the .inbox sibling), not created."""
    return inbox_dir(save_file)


@pytest.fixture
def removed_path(save_file):
    """Where delivered notices go (the .inbox_removed sibling)."""
    return inbox_removed_dir(save_file)


@pytest.fixture
def conversation():
    """A system message, a task and one completed tool call."""
    return [
        SystemMessage("sys"),
        HumanMessage("task"),
        AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1", "type": "tool_call"}]),
        ToolMessage("result", tool_call_id="c1"),
    ]


class TestGating:
    def test_no_save_file_is_a_no_op_that_creates_nothing(self, conversation, tmp_path):
        """Without a save file the messages come back equal and no directory appears."""
        for save in (None, ""):
            out = Inbox().compact(conversation, save_file=save)
            assert out.messages == conversation and out.messages is not conversation
        assert list(tmp_path.iterdir()) == []

    def test_missing_inbox_directory_is_a_no_op_that_creates_nothing(
        self, conversation, save_file, tmp_path
    ):
        """A save file without an inbox sibling changes nothing and creates nothing."""
        assert Inbox().compact(conversation, save_file=save_file).messages == conversation
        assert list(tmp_path.iterdir()) == []

    def test_empty_inbox_does_not_create_the_removed_directory(
        self, conversation, save_file, inbox_path, removed_path
    ):
        """The removed directory is created lazily, on the first move only."""
        inbox_path.mkdir()
        assert Inbox().compact(conversation, save_file=save_file).messages == conversation
        assert not removed_path.exists()

    def test_input_list_is_never_mutated(self, conversation, save_file, inbox_path):
        """Delivering appends to a new list; the caller's list keeps its length."""
        write(inbox_path, "a", "hello")
        before = list(conversation)
        out = Inbox().compact(conversation, save_file=save_file).messages
        assert (
            contents(out)[-1] == "hello" and len(out) == len(before) + 1
        )  # a delivery really happened
        assert conversation == before and len(conversation) == len(before)


class TestDelivery:
    def test_appends_in_sorted_order_moves_files_and_preserves_mtime(
        self, conversation, save_file, inbox_path, removed_path
    ):
        """Files are appended sorted by name, moved into .inbox_removed with their mtimes kept."""
        write(inbox_path, "b.txt", "second", mtime=2_000_000)
        write(inbox_path, "a.txt", "first", mtime=1_000_000)
        write(inbox_path, "C.txt", "zeroth", mtime=3_000_000)
        out = Inbox().compact(conversation, save_file=save_file).messages
        assert out[:4] == conversation and contents(out[4:]) == ["zeroth", "first", "second"]
        assert (
            sorted(os.listdir(removed_path)) == ["C.txt", "a.txt", "b.txt"]
            and os.listdir(inbox_path) == []
        )
        assert (removed_path / "a.txt").stat().st_mtime == 1_000_000
        assert (removed_path / "b.txt").stat().st_mtime == 2_000_000

    def test_delivered_messages_are_marked_real_user_messages(self, save_file, inbox_path):
        """Each notice is a HumanMessage marked inbox_delivery with its file and mtime (no path: the
        mark is stored with the conversation)."""
        write(inbox_path, "note.md", "hi", mtime=86400)
        (message,) = Inbox().compact([], save_file=save_file).messages
        assert isinstance(message, HumanMessage) and is_real_user_message(message)
        assert mark_of(message) == {
            "kind": "inbox_delivery",
            "notice": False,
            "file": "note.md",
            "mtime": "1970-01-02T00:00:00+00:00",
            "replaced_characters": False,
            "token": message.id.removeprefix("promptstrat-inbox-"),
        }

    def test_skips_directories_dotfiles_and_symlinks(self, save_file, inbox_path, tmp_path):
        """Subdirectories, dotfiles and symbolic links stay where they are, undelivered."""
        write(inbox_path, ".hidden", "no")
        write(inbox_path / "sub", "inner", "no")
        (inbox_path / "link").symlink_to(write(tmp_path, "outside", "secret"))
        write(inbox_path, "real", "yes")
        assert contents(Inbox().compact([], save_file=save_file).messages) == ["yes"]
        assert sorted(os.listdir(inbox_path)) == [".hidden", "link", "sub"]

    def test_is_consume_once(self, conversation, save_file, inbox_path):
        """A delivered notice is not delivered again by the next call (tool-call rounds
        included)."""
        write(inbox_path, "a", "once")
        first = prepare_prompt(conversation, "inbox", save_file=save_file)
        second = prepare_prompt(
            first[:-1] + [AIMessage("next round")], "inbox", save_file=save_file
        )
        assert contents(first)[-1] == "once" and "once" not in contents(second)

    def test_collision_in_removed_gets_numeric_suffix(self, save_file, inbox_path, removed_path):
        """A name already delivered becomes name.1.ext, then name.2.ext; old deliveries stay."""
        for text in ("one", "two", "three"):
            write(inbox_path, "a.txt", text)
            Inbox().compact([], save_file=save_file)
        assert {p.name: p.read_text() for p in removed_path.iterdir()} == {
            "a.txt": "one",
            "a.1.txt": "two",
            "a.2.txt": "three",
        }

    def test_invalid_utf8_is_delivered_with_replacement_characters(self, save_file, inbox_path):
        """Bytes that are not UTF-8 are decoded with U+FFFD, and the mark and report say so."""
        write(inbox_path, "bad", b"caf\xe9 ok")
        write(inbox_path, "good", "fine")
        result = Inbox().compact([], save_file=save_file)
        assert contents(result.messages) == ["caf\ufffd ok", "fine"]
        assert mark_of(result.messages[0])["replaced_characters"] is True
        assert result.report.details["replaced_characters"] == ["bad"]

    def test_blank_file_is_consumed_but_never_sent(self, save_file, inbox_path, removed_path):
        """A blank notice (e.g. from touch) is moved to the history but not appended: providers
        reject empty user messages."""
        write(inbox_path, "a-touched", "  \n")
        write(inbox_path, "b", "real")
        result = Inbox().compact([], save_file=save_file)
        assert contents(result.messages) == ["real"]
        assert result.report.details["empty"] == ["a-touched"]
        assert sorted(p.name for p in removed_path.iterdir()) == ["a-touched", "b"]

    def test_report_counts_the_delivery(self, save_file, inbox_path):
        """The report names the inbox, the delivered files and the skipped ones, the pickup's token
        budget (a share of the ceiling) and how many notices wait for the next pickup."""
        write(inbox_path, "a", "x")
        report = Inbox().compact([], save_file=save_file).report
        assert report.details == {
            "inbox": str(inbox_path),
            "delivered": 1,
            "files": ["a"],
            "skipped": [],
            "replaced_characters": [],
            "empty": [],
            "budget_tokens": 27_904,
            "waiting": 0,
        }
        assert report.messages_in == 0 and report.messages_out == 1


class TestUnreadableFiles:
    def test_a_file_that_cannot_be_opened_is_skipped_in_place(
        self, save_file, inbox_path, monkeypatch
    ):
        """An open failure leaves the file in the inbox, logs it and delivers the others."""
        for name in ("a", "b", "c"):
            write(inbox_path, name, name)
        real_open = os.open

        def refuse_b(path, *args, **kwargs):
            if Path(path).name == "b":
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse_b)
        result = Inbox().compact([], save_file=save_file)
        assert contents(result.messages) == ["a", "c"] and os.listdir(inbox_path) == ["b"]
        assert [s["file"] for s in result.report.details["skipped"]] == ["b"]

    def test_a_file_that_cannot_be_moved_is_skipped_in_place(
        self, save_file, inbox_path, monkeypatch
    ):
        """A rename failure other than a lost race leaves the file and never breaks the call."""
        for name in ("a", "b"):
            write(inbox_path, name, name)
        real_rename = os.rename

        def refuse_a(src, dst):
            if Path(src).name == "a":
                raise OSError(16, "Device or resource busy", str(src))
            return real_rename(src, dst)

        monkeypatch.setattr(os, "rename", refuse_a)
        assert contents(Inbox().compact([], save_file=save_file).messages) == ["b"]
        assert os.listdir(inbox_path) == ["a"]

    def test_unreadable_file_is_skipped_without_raising_for_a_non_root_user(self):
        """A mode-000 file is skipped in place for an ordinary user (run as uid 65534 when tests run
        as root)."""
        if os.geteuid() != 0:
            assert _unreadable_scenario() == (["a", "c"], ["b"])
            return
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_as_nobody, args=(child,))
        proc.start()
        proc.join(20)
        outcome = parent.recv() if parent.poll() else ("error", "no answer")
        if outcome[0] == "cannot-drop":
            pytest.skip(
                f"running as root and cannot switch to an unprivileged user ({outcome[1]}); root "
                "reads any file"
            )
        assert outcome == ("ok", (["a", "c"], ["b"]))


def _unreadable_scenario() -> tuple[list[str], list[str]]:
    base = Path(tempfile.mkdtemp(prefix="inbox-unreadable-"))
    try:
        inbox = base / "agent.inbox"
        for name in ("a", "b", "c"):
            write(inbox, name, name)
        (inbox / "b").chmod(0)
        out = Inbox().compact([], save_file=base / "agent.chat").messages
        return contents(out), sorted(os.listdir(inbox))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(conn) -> None:
    try:
        os.setgid(65534)
        os.setuid(65534)
    except OSError as exc:
        conn.send(("cannot-drop", str(exc)))
        return
    try:
        conn.send(("ok", _unreadable_scenario()))
    except BaseException as exc:  # report, do not hang the parent
        conn.send(("error", repr(exc)))


class TestAbort:
    def test_abort_file_aborts_and_is_consumed_once(
        self, conversation, save_file, inbox_path, removed_path
    ):
        """'abort' raises InboxAborted once; it lies in .inbox_removed and the next call runs
        normally."""
        write(inbox_path, "abort", "stop", mtime=5_000_000)
        with pytest.raises(InboxAborted) as caught:
            Inbox().compact(conversation, save_file=save_file)
        assert caught.value.path == str(removed_path / "abort")
        assert (removed_path / "abort").stat().st_mtime == 5_000_000 and os.listdir(
            inbox_path
        ) == []
        assert Inbox().compact(conversation, save_file=save_file).messages == conversation

    def test_abort_content_is_the_reason_and_never_reaches_the_prompt(self, save_file, inbox_path):
        """The stripped content becomes the reason; no message carries it."""
        write(inbox_path, "0-note", "check the budget")
        write(inbox_path, "abort", "  budget exhausted\n")
        with pytest.raises(InboxAborted) as caught:
            prepare_prompt([HumanMessage("task")], "inbox", save_file=save_file)
        assert caught.value.reason == "budget exhausted" and str(caught.value) == "budget exhausted"
        assert contents(caught.value.delivered) == ["check the budget"]

    def test_files_before_abort_are_consumed_and_carried_by_the_error(
        self, save_file, inbox_path, removed_path
    ):
        """Notices sorting before 'abort' are moved and handed back in InboxAborted.delivered."""
        write(inbox_path, "0-first", "one")
        write(inbox_path, "1-second", "two")
        write(inbox_path, "abort", "stop")
        with pytest.raises(InboxAborted) as caught:
            Inbox().compact([], save_file=save_file)
        assert contents(caught.value.delivered) == ["one", "two"]
        assert sorted(os.listdir(removed_path)) == ["0-first", "1-second", "abort"]

    def test_empty_abort_still_aborts_with_a_reason_saying_so_and_its_path_apart(
        self, save_file, inbox_path, removed_path
    ):
        """A blank abort file aborts with a sentence for a reason; where it lies is the error's
        path, never its text."""
        write(inbox_path, "abort", " \n ")
        with pytest.raises(InboxAborted) as caught:
            Inbox().compact([], save_file=save_file)
        assert caught.value.reason == "abort requested through the inbox (an empty abort file)"
        assert caught.value.path == str(removed_path / "abort")

    def test_an_unreadable_abort_file_still_aborts(
        self, save_file, inbox_path, removed_path, monkeypatch
    ):
        """An abort file that cannot be opened is consumed anyway, with a reason saying it was
        unreadable."""
        write(inbox_path, "abort", "secret reason")
        real_open = os.open

        def refuse_abort(path, *args, **kwargs):
            if Path(path).name == "abort" or Path(path).name.startswith(".claim-"):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse_abort)
        with pytest.raises(InboxAborted) as caught:
            Inbox().compact([], save_file=save_file)
        assert caught.value.reason == "abort requested through the inbox (an unreadable abort file)"
        assert caught.value.path == str(removed_path / "abort")
        assert os.listdir(inbox_path) == []

    def test_files_around_abort_behave_as_without_it(self, save_file, inbox_path):
        """Files sorting after 'abort' stay for the next run; look-alike names are ordinary
        notices."""
        for name in ("Abort", "abort", "abort.txt", "my-abort", "zz"):
            write(inbox_path, name, name)
        with pytest.raises(InboxAborted) as caught:
            Inbox().compact([], save_file=save_file)
        assert contents(caught.value.delivered) == ["Abort"]
        assert sorted(os.listdir(inbox_path)) == ["abort.txt", "my-abort", "zz"]
        assert contents(Inbox().compact([], save_file=save_file).messages) == [
            "abort.txt",
            "my-abort",
            "zz",
        ]

    def test_inbox_aborted_survives_pickling(self, save_file, inbox_path):
        """The error crosses process boundaries with its reason, path and notices."""
        import pickle

        write(inbox_path, "a", "kept")
        write(inbox_path, "abort", "why")
        with pytest.raises(InboxAborted) as caught:
            inbox([], save_file=save_file)
        copy = pickle.loads(pickle.dumps(caught.value))
        assert (copy.reason, copy.path, contents(copy.delivered)) == (
            "why",
            caught.value.path,
            ["kept"],
        )


class TestRunnableForm:
    def test_save_file_comes_from_the_config(self, conversation, save_file, inbox_path):
        """invoke reads configurable.save_file."""
        write(inbox_path, "a", "hello")
        out = Inbox().invoke(conversation, {"configurable": {"save_file": str(save_file)}})
        assert contents(out)[-1] == "hello"

    def test_thread_id_and_root_name_the_inbox(self, conversation, tmp_path):
        """With a root, configurable.thread_id names <root>/<thread_id>.inbox; a dotted id keeps its
        dots."""
        write(tmp_path / "run.1.inbox", "a", "for run.1")
        out = Inbox(root=tmp_path).invoke(conversation, {"configurable": {"thread_id": "run.1"}})
        assert contents(out)[-1] == "for run.1"

    def test_root_from_the_environment_is_read_at_call_time(
        self, conversation, tmp_path, monkeypatch
    ):
        """PROMPTSTRAT_INBOX_ROOT set after the strategy was built still applies."""
        strategy = Inbox()
        write(tmp_path / "t.inbox", "a", "late root")
        config = {"configurable": {"thread_id": "t"}}
        assert strategy.invoke(conversation, config) == conversation
        monkeypatch.setenv(INBOX_ROOT_ENV, str(tmp_path))
        assert contents(strategy.invoke(conversation, config))[-1] == "late root"

    def test_thread_id_without_root_is_a_no_op(self, conversation, monkeypatch, tmp_path):
        """A thread without any inbox root has no inbox: not even one in the working directory."""
        monkeypatch.delenv(INBOX_ROOT_ENV, raising=False)
        monkeypatch.chdir(tmp_path)
        decoy = write(
            tmp_path / "t.inbox", "a", "must stay"
        )  # where a root defaulting to '.' would look
        assert Inbox().invoke(conversation, {"configurable": {"thread_id": "t"}}) == conversation
        assert decoy.exists()

    def test_a_thread_config_names_the_same_inbox_for_apply_strategies_as_for_invoke(
        self, conversation, tmp_path
    ):
        """apply_strategies(config=) and the Runnable take one apply path: a thread id under a root
        finds the same inbox for both."""
        strategy = Inbox(root=tmp_path)
        config = {"configurable": {"thread_id": "t"}}
        write(tmp_path / "t.inbox", "a", "first")
        assert contents(apply_strategies(conversation, [strategy], config=config)[0])[-1] == "first"
        write(tmp_path / "t.inbox", "b", "second")
        assert contents(strategy.invoke(conversation, config))[-1] == "second"
        assert os.listdir(tmp_path / "t.inbox") == []

    def test_invoke_emits_the_inbox_report_to_the_run_callbacks(self, conversation, tmp_path):
        """The Runnable's report reaches the run's callbacks as the promptstrat event, as on every
        other path."""
        from langchain_core.callbacks import BaseCallbackHandler

        seen: list[dict] = []

        class Events(BaseCallbackHandler):
            def on_custom_event(self, name, data, **kwargs):  # noqa: ANN001
                seen.append({"name": name, **data})

        write(tmp_path / "t.inbox", "a", "notice")
        Inbox(root=tmp_path).invoke(
            conversation, {"configurable": {"thread_id": "t"}, "callbacks": [Events()]}
        )
        assert [(e["name"], e["strategy"], e["delivered"]) for e in seen] == [
            ("promptstrat", "inbox", 1)
        ]

    def test_invoke_raises_inbox_aborted(self, conversation, save_file, inbox_path):
        """The Runnable form raises InboxAborted on an abort file."""
        write(inbox_path, "abort", "halt")
        with pytest.raises(InboxAborted, match="halt"):
            Inbox().invoke(conversation, {"configurable": {"save_file": str(save_file)}})


def long_run(steps: int = 14) -> list:
    msgs = [SystemMessage("sys"), HumanMessage("task")]
    for i in range(steps):
        msgs.append(
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "f",
                        "args": {"q": "a" * 300 + str(i)},
                        "id": f"c{i}",
                        "type": "tool_call",
                    }
                ],
            )
        )
        msgs.append(ToolMessage(f"out{i}:" + "r" * 800, tool_call_id=f"c{i}"))
    return msgs


TIGHT = Settings(
    epoch_tool_call_threshold=5, epoch_full_tool_calls=2, epoch_compacted_tool_calls=4, epoch_size=3
)
STABLE_TIGHT = Settings(
    stable_tool_call_threshold=5,
    stable_full_tool_calls=2,
    stable_epoch_size=3,
    stable_max_compacted_tool_calls=4,
    stable_front_drop_chunk=2,
)
"""The default list's compactor acting from the sixth of long_run's 14 calls on."""


class TestComposition:
    @pytest.mark.parametrize(
        "order", ["inbox,shorten_tools_epoch_increment", "shorten_tools_epoch_increment,inbox"]
    )
    def test_composes_with_shorten_tools_epoch_increment_in_both_orders(
        self, save_file, inbox_path, order
    ):
        """Either order compacts the tools exactly as alone and delivers each notice once, at the
        end."""
        run = long_run()
        write(inbox_path, "a", "notice one")
        write(inbox_path, "b", "notice two")
        alone = ShortenToolsEpochIncrement(TIGHT).compact(run).messages
        out = prepare_prompt(run, order, save_file=save_file, settings=TIGHT)
        assert out[-2:][0].content == "notice one" and out[-1].content == "notice two"
        assert contents(out).count("notice one") == 1 and contents(out).count("notice two") == 1
        assert [m for m in out if isinstance(m, ToolMessage)] == [
            m for m in alone if isinstance(m, ToolMessage)
        ]
        assert out[:-2] == alone and check_tool_pairs(out) == []
        assert len(alone) < len(run)  # the compactor really did something
        assert prepare_prompt(run, order, save_file=save_file, settings=TIGHT) == alone

    def test_prepare_prompt_gives_the_save_file_only_to_the_inbox(
        self, save_file, inbox_path, monkeypatch
    ):
        """The default list forwards save_file to the inbox and leaves the compactor unaffected."""
        monkeypatch.delenv("PROMPT_STRATEGY", raising=False)
        write(inbox_path, "a", "hello")
        out = prepare_prompt([HumanMessage("task")], save_file=save_file)
        assert contents(out) == ["task", "hello"]
        write(inbox_path, "b", "again")
        run = long_run()
        compacted = (
            ShortenToolsEpochStable(STABLE_TIGHT).compact(run).messages
        )  # what the compactor gives without a save file
        out = prepare_prompt(run, save_file=save_file, settings=STABLE_TIGHT)
        assert len(compacted) < len(run) and out[:-1] == compacted and out[-1].content == "again"

    def test_directory_inbox_is_what_the_strategy_reads(self, save_file):
        """A notice posted through DirectoryInbox is delivered by the strategy."""
        DirectoryInbox.for_save_file(save_file).post("via store")
        assert contents(Inbox().compact([], save_file=save_file).messages) == ["via store"]


FILE_EVENTS = ("open", "os.listdir", "os.scandir", "os.mkdir", "os.remove", "os.rename")
"""The audit events of a file opened, a directory listed, made, or an entry removed or moved."""
_watching: list[list[str]] = []


def _record_file_events(event: str, args: tuple[object, ...]) -> None:
    if _watching and event in FILE_EVENTS:
        _watching[-1].append(f"{event} {args[0]!r}")


sys.addaudithook(_record_file_events)  # a process keeps its audit hooks: it records only when asked


@pytest.mark.parametrize(
    "config",
    [None, {"configurable": {}}, {"configurable": {"user": "x"}}],
    ids=["no config", "an empty configurable", "no thread in it"],
)
def test_the_default_list_touches_no_file_when_the_request_names_no_save_file_or_thread(
    tmp_path, monkeypatch, config
):
    """With neither a save file nor a thread in the request, the default list (the inbox
    included) opens, lists, stats or writes no file, even with an inbox root set: a server
    serving requests without threads pays no disk access."""
    monkeypatch.setenv(INBOX_ROOT_ENV, str(tmp_path / "inboxes"))
    history = [SystemMessage("sys"), HumanMessage("task")]
    for i in range(160):
        history += [
            AIMessage("", tool_calls=[{"name": "read", "args": {"n": i}, "id": f"c{i}"}]),
            ToolMessage(f"output {i}\n" + "line\n" * 50, tool_call_id=f"c{i}"),
        ]
    apply_strategies(history[:-2], config=config)  # warm: the encoding loads once per process
    stats: list[str] = []
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        stats.append(f"stat {path!r}")
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    _watching.append([])
    try:
        _, reports = apply_strategies(history, config=config)
    finally:
        touched = _watching.pop()
        monkeypatch.setattr(os, "stat", real_stat)
    assert [r.strategy for r in reports] == [
        "dedupe_outputs",
        "shorten_tools_epoch_stable",
        "inbox",
    ]
    assert reports[-1].details["delivered"] == 0
    assert touched + stats == []
