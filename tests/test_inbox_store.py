"""Specification of the inbox on disk: paths, thread-id safety, the atomic claim, the writers,
concurrency."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_promptstrat.errors import InboxError
from langchain_promptstrat.inbox.directory import DirectoryInbox, post_to_inbox, request_abort
from langchain_promptstrat.inbox.paths import (
    INBOX_ROOT_ENV,
    encode_thread_id,
    inbox_dir,
    inbox_removed_dir,
    inbox_root,
    thread_save_file,
)

HOSTILE_THREAD_IDS = [
    "../x",
    "../../etc/passwd",
    "/etc",
    "a/b",
    "a\\b",
    "\x00",
    "a\x00b",
    ".",
    "..",
    ".hidden",
    "...",
    "x" * 5000,
    "%2E%2E",
    "%",
    "~",
    "run.1.inbox",
    "sp ace",
    "é/ü",
    "\udc80",
    "\n",
    "-rf",
    "a" * 179 + "/",
    "." + "%" * 300,
]


def percent_decode(name: str) -> str:
    """Return the id a short encoded name stands for: each run of %XX escapes is UTF-8 bytes, the
    rest is verbatim."""
    return re.sub(
        r"(?:%[0-9A-F]{2})+",
        lambda m: bytes.fromhex(m.group().replace("%", "")).decode("utf-8", "surrogatepass"),
        name,
    )


ANY_CHARACTER = st.characters(exclude_categories=())
THREAD_IDS = st.one_of(
    st.text(ANY_CHARACTER, min_size=1, max_size=80),
    st.builds(
        lambda unit, times: unit * times,
        st.text(ANY_CHARACTER, min_size=1, max_size=20),
        st.integers(2, 60),
    ),
)
"""Any text, lone surrogates included; repeated units make encodings past the 180-character cut-off
common."""


@pytest.fixture
def root(tmp_path):
    """An empty directory holding one inbox per thread."""
    path = tmp_path / "threads"
    path.mkdir()
    return path


@pytest.fixture
def save_file(tmp_path):
    """The save file of a conversation whose inbox does not exist yet."""
    return tmp_path / "agent.chat"


@pytest.fixture
def store(save_file):
    """The directory inbox of that conversation."""
    return DirectoryInbox.for_save_file(save_file)


class TestSiblingRule:
    @pytest.mark.parametrize(
        ("save", "inbox", "removed"),
        [
            ("x/agent.chat", "x/agent.inbox", "x/agent.inbox_removed"),
            ("dir/a.b.chat", "dir/a.b.inbox", "dir/a.b.inbox_removed"),
            ("dir/agent", "dir/agent.inbox", "dir/agent.inbox_removed"),
            ("X.files/agent.chat", "X.files/agent.inbox", "X.files/agent.inbox_removed"),
            ("dir/.chat", "dir/.chat.inbox", "dir/.chat.inbox_removed"),
            ("dir/a.", "dir/a..inbox", "dir/a..inbox_removed"),
            ("agent.chat", "agent.inbox", "agent.inbox_removed"),
        ],
    )
    def test_strips_only_the_last_extension(self, save, inbox, removed):
        """Only the last extension is replaced; a name without one keeps its whole name."""
        assert (inbox_dir(save), inbox_removed_dir(save)) == (Path(inbox), Path(removed))

    def test_non_canonical_save_file_gets_the_sibling_in_its_own_directory(self, tmp_path):
        """A save file reached through '.' and '..' gets the inbox next to the file it names."""
        (tmp_path / "x" / "y").mkdir(parents=True)
        save = tmp_path / "x" / "." / "y" / ".." / "agent.chat"
        assert inbox_dir(save).parent.resolve() == (tmp_path / "x").resolve()
        assert inbox_dir(save).name == "agent.inbox"

    @pytest.mark.parametrize("bad", [".", "..", "/"])
    def test_a_save_file_that_names_no_file_is_refused(self, bad):
        """A path without a file name cannot have a sibling, and says so."""
        with pytest.raises(InboxError, match="names no file"):
            inbox_dir(bad)


class TestThreadPaths:
    def test_thread_save_file_is_the_encoded_id_under_the_root(self, root):
        """A dotted thread id keeps its dots: run.1 -> run.1.chat, run.1.inbox."""
        save = thread_save_file("run.1", root)
        assert save == root / "run.1.chat"
        assert (inbox_dir(save), inbox_removed_dir(save)) == (
            root / "run.1.inbox",
            root / "run.1.inbox_removed",
        )

    @pytest.mark.parametrize("thread_id", HOSTILE_THREAD_IDS, ids=lambda t: repr(t)[:24])
    def test_hostile_thread_ids_name_directories_directly_inside_the_root(self, root, thread_id):
        """Whatever a thread id holds, its inbox and removed directories are visible children of the
        root."""
        save = thread_save_file(thread_id, root)
        for path in (inbox_dir(save), inbox_removed_dir(save)):
            assert path.parent == root
            assert (
                not path.name.startswith(".") and "/" not in path.name and "\x00" not in path.name
            )
            assert len(path.name.encode()) <= 255
            path.mkdir()  # the filesystem accepts the name, inside the root
            assert path.resolve().parent == root.resolve()

    def test_encoding_is_injective_on_tricky_ids(self):
        """Distinct ids, including ones that look like encodings of each other, stay distinct."""
        ids = HOSTILE_THREAD_IDS + [
            "%2F",
            "/",
            "%252F",
            "x" * 5001,
            "y" * 5000,
            "a.b",
            "a%2Eb",
            ".a",
            "%2Ea",
        ]
        assert len({encode_thread_id(t) for t in ids}) == len(set(ids))

    @settings(max_examples=200)
    @given(thread_id=THREAD_IDS)
    def test_any_id_encodes_to_one_safe_name_that_decodes_back(self, thread_id):
        """For any text, the name is one visible, NUL-free component of at most 255 bytes; a short
        one decodes back to the id (so distinct ids never share an inbox), a long one ends in ~ and
        the id's SHA-256."""
        name = encode_thread_id(thread_id)
        assert (
            "/" not in name
            and "\x00" not in name
            and not name.startswith(".")
            and len(name.encode()) <= 255
        )
        if "~" in name:
            assert name.endswith(
                "~" + hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()
            )
        else:
            assert percent_decode(name) == thread_id

    def test_readable_ids_are_kept_verbatim(self):
        """Ids made of letters, digits, dots, dashes and underscores are not encoded."""
        assert [encode_thread_id(t) for t in ("run.1", "a-b_c", "X9")] == ["run.1", "a-b_c", "X9"]

    @pytest.mark.parametrize("thread_id", ["", None, 7])
    def test_empty_or_non_string_ids_are_refused(self, root, thread_id):
        """An empty or non-string thread id raises InboxError naming the problem."""
        with pytest.raises(InboxError, match="thread_id"):
            thread_save_file(thread_id, root)

    def test_root_comes_from_the_environment_read_at_call_time(self, root, monkeypatch):
        """Without root=, PROMPTSTRAT_INBOX_ROOT is read when the path is asked for."""
        monkeypatch.setenv(INBOX_ROOT_ENV, str(root))
        assert thread_save_file("t") == root / "t.chat"
        monkeypatch.delenv(INBOX_ROOT_ENV)
        assert inbox_root() is None
        with pytest.raises(InboxError, match=INBOX_ROOT_ENV):
            thread_save_file("t")

    def test_a_root_that_is_a_file_is_refused(self, tmp_path):
        """An inbox root that exists and is not a directory raises InboxError."""
        (tmp_path / "file").write_text("")
        with pytest.raises(InboxError, match="not a directory"):
            thread_save_file("t", tmp_path / "file")


class TestClaim:
    def test_claim_moves_the_file_and_keeps_its_mtime(self, store):
        """A claimed file lies in the removed directory with its bytes and its old mtime."""
        path = store.post("hello", name="a.txt")
        os.utime(path, (1_000_000, 1_000_000))
        claimed = store.claim("a.txt")
        assert claimed.data == b"hello" and claimed.mtime == 1_000_000
        assert claimed.path == store.removed_path / "a.txt"
        assert claimed.path.stat().st_mtime == 1_000_000 and not path.exists()

    def test_name_clash_takes_the_first_free_number(self, store):
        """Clashing names become name.1.ext, name.2.ext, the first free number, never
        overwriting."""
        store.removed_path.mkdir(parents=True)
        (store.removed_path / "a.txt").write_text("old")
        (store.removed_path / "a.2.txt").write_text("old2")
        paths = []
        for text in ("one", "two", "three"):
            store.post(text, name="a.txt")
            paths.append(store.claim("a.txt").path.name)
        assert paths == ["a.1.txt", "a.3.txt", "a.4.txt"]
        assert (store.removed_path / "a.txt").read_text() == "old"
        assert (store.removed_path / "a.2.txt").read_text() == "old2"

    def test_without_hard_links_clashes_still_never_overwrite(self, store, monkeypatch):
        """Where os.link is unsupported, names are reserved exclusively and the numbering still
        holds."""
        import errno

        def no_links(*args, **kwargs):
            raise OSError(errno.EPERM, "Operation not permitted")

        monkeypatch.setattr(os, "link", no_links)
        for text in ("one", "two"):
            store.post(text, name="a.txt")
            store.claim("a.txt")
        assert {p.name: p.read_text() for p in store.removed_path.iterdir()} == {
            "a.txt": "one",
            "a.1.txt": "two",
        }
        assert os.listdir(store.path) == []

    def test_extensionless_clash_appends_the_number(self, store):
        """A name without extension clashes into name.1, name.2."""
        for _ in range(3):
            store.request_abort("x")
            store.claim("abort")
        assert sorted(p.name for p in store.removed_path.iterdir()) == [
            "abort",
            "abort.1",
            "abort.2",
        ]

    def test_a_file_gone_before_the_claim_is_not_ours(self, store):
        """A name another reader already took returns None instead of raising."""
        store.post("x", name="a.txt")
        assert store.claim("a.txt").data == b"x"
        assert store.claim("a.txt") is None

    def test_a_name_reused_after_opening_delivers_the_file_actually_claimed(
        self, store, monkeypatch
    ):
        """If a writer replaces the file between open and rename, the reader reads what it moved."""
        store.post("old", name="a.txt")
        real_rename = os.rename

        def swap_then_rename(src, dst):
            if Path(src).name == "a.txt":
                os.unlink(src)
                Path(src).write_text("new")
            return real_rename(src, dst)

        monkeypatch.setattr(os, "rename", swap_then_rename)
        assert store.claim("a.txt").data == b"new"

    def test_something_swapped_in_that_is_not_a_file_is_given_back(
        self, store, tmp_path, monkeypatch
    ):
        """If a symlink replaces the file between open and rename, it is put back and the claim
        fails."""
        store.post("old", name="a.txt")
        target = tmp_path / "elsewhere"
        target.write_text("secret")
        real_rename = os.rename

        def swap_then_rename(src, dst):
            if Path(src).name == "a.txt":
                os.unlink(src)
                Path(src).symlink_to(target)
            return real_rename(src, dst)

        monkeypatch.setattr(os, "rename", swap_then_rename)
        with pytest.raises(OSError, match="not a regular file"):
            store.claim("a.txt")
        assert (store.path / "a.txt").is_symlink() and os.listdir(store.removed_path) == []

    def test_pending_lists_regular_non_dot_files_sorted(self, store):
        """Dotfiles, subdirectories and symbolic links are not pending notices."""
        store.path.mkdir(parents=True)
        for name in ("b", "a", ".hidden"):
            (store.path / name).write_text(name)
        (store.path / "sub").mkdir()
        (store.path / "link").symlink_to(store.path / "a")
        assert store.pending() == ["a", "b"]

    def test_reading_a_missing_inbox_creates_nothing(self, store, tmp_path):
        """Listing an inbox that does not exist returns nothing and creates no directory."""
        assert store.pending() == [] and store.delivered_entries() == []
        assert sorted(p.name for p in tmp_path.iterdir()) == []


class TestWriters:
    def test_post_creates_the_inbox_and_writes_atomically(self, save_file):
        """post_to_inbox creates the inbox and leaves no temporary file behind."""
        path = post_to_inbox(save_file, "hello", name="n.txt")
        assert path == inbox_dir(save_file) / "n.txt" and path.read_text() == "hello"
        assert os.listdir(inbox_dir(save_file)) == ["n.txt"]

    def test_default_names_sort_in_arrival_order(self, store):
        """Default names are a UTC timestamp with microseconds plus a random suffix, in posting
        order."""
        names = [store.post(str(i)).name for i in range(20)]
        assert names == sorted(names) and len(set(names)) == 20
        assert all(n.endswith(".txt") and "Z-" in n for n in names)

    def test_request_abort_writes_the_reserved_file(self, save_file):
        """request_abort writes 'abort' with the reason as content."""
        path = request_abort(save_file, "stop now")
        assert path.name == "abort" and path.read_text() == "stop now"

    def test_a_second_pending_abort_is_refused(self, store):
        """An abort already pending is not replaced; the second request raises."""
        store.request_abort("first")
        with pytest.raises(InboxError, match="abort is already pending"):
            store.request_abort("second")
        assert (store.path / "abort").read_text() == "first"

    def test_a_pending_name_is_never_replaced(self, store):
        """Posting an explicit name that is pending raises instead of replacing it."""
        store.post("first", name="n.txt")
        with pytest.raises(InboxError, match="already pending"):
            store.post("second", name="n.txt")
        assert (store.path / "n.txt").read_text() == "first"
        assert store.pending() == ["n.txt"] and not [
            n for n in os.listdir(store.path) if n.startswith(".")
        ]

    @pytest.mark.parametrize(
        ("name", "match"),
        [
            ("abort", "reserved"),
            (".x", "starts with '.'"),
            ("a/b", "plain file name"),
            ("..", "starts with '.'"),
            ("", "non-empty"),
            ("a\x00", "plain file name"),
            ("x" * 300, "longer than"),
        ],
    )
    def test_unusable_names_are_refused(self, store, name, match):
        """post refuses the reserved name, hidden names, paths and over-long names."""
        with pytest.raises(InboxError, match=match):
            store.post("text", name=name)

    def test_empty_content_is_refused(self, store):
        """An empty notice is refused rather than delivered as an empty user message."""
        with pytest.raises(InboxError, match="empty"):
            store.post("  \n")

    def test_writers_accept_a_thread_instead_of_a_save_file(self, root):
        """thread_id= and root= name the thread's inbox, with the same path safety."""
        post_to_inbox(content="hi", thread_id="../evil", root=root, name="n.txt")
        request_abort(thread_id="../evil", root=root)
        assert sorted(os.listdir(root)) == ["%2E.%2Fevil.inbox"]
        assert sorted(os.listdir(root / "%2E.%2Fevil.inbox")) == ["abort", "n.txt"]

    def test_save_file_and_thread_together_are_refused(self, root, save_file):
        """Naming the inbox twice is an error, not a silent choice."""
        with pytest.raises(InboxError, match="not both"):
            post_to_inbox(save_file, "x", thread_id="t", root=root)


# --------------------------------------------------------------------------- concurrency

READERS, WRITERS, PER_WRITER = 4, 2, 250
"""Sized so that a check-then-move or a link-then-unlink claim fails this test almost every run."""


def _reader(save_file: str, done, out: str) -> None:
    from langchain_promptstrat.inbox.delivery import pick_up

    store = DirectoryInbox.for_save_file(save_file)
    got = []
    while True:
        finished = done.is_set()
        result = pick_up(store)
        got += [(m.additional_kwargs["promptstrat"]["file"], m.content) for m in result.delivered]
        assert not result.skipped, result.skipped
        if finished and not store.pending():
            break
        if not result.delivered:
            time.sleep(0.001)
    Path(out).write_text(json.dumps(got))


def _writer(save_file: str, number: int) -> None:
    store = DirectoryInbox.for_save_file(save_file)
    for i in range(PER_WRITER):
        content = f"w{number}-{i}:" + "x" * 3000
        if number == 0:
            store.post(content)
            continue
        while True:  # reuse one name as soon as it is free: claims race a writer, deliveries clash
            try:
                store.post(content, name="same.txt")
                break
            except InboxError:
                time.sleep(0.0005)


class TestConcurrency:
    def test_a_reader_that_loses_the_race_for_a_notice_leaves_no_claims_directory(
        self, tmp_path, monkeypatch
    ):
        """Another reader took the file between this reader's open and its claim: nothing of the
        failed claim is left behind."""
        import langchain_promptstrat.inbox.directory as directory

        save = tmp_path / "agent.chat"
        post_to_inbox(save, "once", name="n.txt")
        store = DirectoryInbox.for_save_file(save)
        real_rename = os.rename

        def taken_first(src, dst):
            if str(src).endswith("n.txt"):
                os.remove(src)  # the other reader's claim, at the worst moment
            real_rename(src, dst)

        monkeypatch.setattr(directory.os, "rename", taken_first)
        assert store.lease("n.txt") is None
        monkeypatch.setattr(directory.os, "rename", real_rename)
        assert [n for n in os.listdir(inbox_removed_dir(save)) if n.startswith(".")] == []

    def test_readers_and_writers_race_without_duplicates_overwrites_or_loss(self, tmp_path):
        """4 readers and 2 writers in separate processes: each file delivered once, none lost, none
        overwritten."""
        ctx = multiprocessing.get_context("fork")
        save = str(tmp_path / "agent.chat")
        done = ctx.Event()
        outs = [str(tmp_path / f"reader{i}.json") for i in range(READERS)]
        readers = [ctx.Process(target=_reader, args=(save, done, out)) for out in outs]
        writers = [ctx.Process(target=_writer, args=(save, n)) for n in range(WRITERS)]
        deadline = time.monotonic() + 18
        for p in readers + writers:
            p.start()
        for p in writers:
            p.join(max(0.1, deadline - time.monotonic()))
        done.set()
        for p in readers:
            p.join(max(0.1, deadline - time.monotonic()))
        for p in readers + writers:
            if p.is_alive():
                p.kill()
        assert [p.exitcode for p in readers + writers] == [0] * (READERS + WRITERS)

        delivered = [content for out in outs for _, content in json.loads(Path(out).read_text())]
        posted = {f"w{n}-{i}:" + "x" * 3000 for n in range(WRITERS) for i in range(PER_WRITER)}
        assert len(delivered) == len(set(delivered)), "a file was delivered twice"
        assert set(delivered) == posted, "a file was lost or half-read"
        removed = inbox_removed_dir(save)
        kept = sorted(os.listdir(removed))
        assert len(kept) == len(posted) and not [n for n in kept if n.startswith(".")]
        assert {(removed / n).read_text() for n in kept} == posted, (
            "a delivered file was overwritten"
        )
        assert os.listdir(inbox_dir(save)) == []
