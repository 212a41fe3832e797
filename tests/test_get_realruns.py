"""benchmarks/get_realruns.py: the headline's transcripts, downloaded, checked by sha256 and
converted.

No network here, so the pinned files are served from a local copy laid out as the source is
(``REPOSITORY/COMMIT/PATH``): by a loopback HTTP server and by a file URL. The copy holds the
two trajectories of ``../shared/realruns/raw``; what the script makes of them must be, byte
for byte, the shared ``converted/`` files the benchmarks read.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from realruns import REALRUNS, get_realruns, realruns_dir

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local copy of the source holding the shared raw trajectories; the script pins only the
    files it holds."""
    held = {
        hashlib.sha256(p.read_bytes()).hexdigest(): p
        for p in realruns_dir("raw").glob("*.traj.json")
    }
    sources = {name: pin for name, pin in get_realruns.SOURCES.items() if pin[3] in held}
    for repo, commit, path, sha256 in sources.values():
        (tmp_path / "mirror" / repo / commit / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(held[sha256], tmp_path / "mirror" / repo / commit / path)
    monkeypatch.setattr(get_realruns, "SOURCES", sources)
    assert len(sources) == 4  # each raw trajectory, and its converted form
    return tmp_path / "mirror"


@pytest.fixture
def server(mirror: Path) -> Iterator[str]:
    """Return the URL of a loopback HTTP server serving the local copy."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(mirror))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
        httpd.shutdown()


def test_the_downloaded_files_are_converted_into_exactly_what_the_benchmarks_read(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Over HTTP, each pinned file is checked and written: converted/, raw/ and the usage/ sidecars
    equal the shared copies byte for byte."""
    assert get_realruns.main(["--source", server, "--dest", str(tmp_path / "out")]) == 0
    sidecars = [
        f"usage/{Path(name).stem}.usage.json"
        for name in get_realruns.SOURCES
        if name.startswith("converted/")
    ]
    assert len(sidecars) == 2
    for name in [*get_realruns.SOURCES, *sidecars]:
        assert (tmp_path / "out" / name).read_bytes() == (REALRUNS / name).read_bytes(), name
    assert capsys.readouterr().out.endswith(
        f"4 files in {tmp_path / 'out'}, and usage/ beside converted/\n"
    )


def test_a_file_whose_sha256_differs_is_refused_in_one_line_and_nothing_is_written(
    mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A changed byte in the source (a file URL here) is exit 2, one line naming both hashes, and no
    file, whole or partial."""
    first = next(iter(get_realruns.SOURCES.values()))
    changed = mirror / first[0] / first[1] / first[2]
    changed.write_bytes(changed.read_bytes().replace(b"django", b"Django", 1))
    assert get_realruns.main(["--source", mirror.as_uri(), "--dest", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and f"sha256 {hashlib.sha256(changed.read_bytes()).hexdigest()}, expected {first[3]}" in err
    )
    assert not (tmp_path / "out").exists()


def test_without_a_network_it_says_so_with_the_url_and_what_to_do_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A source that cannot be reached is exit 2 and one line, as recall.py words it: 'no network',
    the URL it tried (not only the file it meant to write) and the next step, never a traceback;
    nothing is written."""
    with http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), http.server.BaseHTTPRequestHandler
    ) as closed:
        port = closed.server_address[
            1
        ]  # bound, then closed when the block ends: nothing listens there
    source = f"http://127.0.0.1:{port}"
    assert get_realruns.main(["--source", source, "--dest", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    repo, commit, path, _ = next(iter(get_realruns.SOURCES.values()))
    assert err.count("\n") == 1
    url = f"{source}/{repo}/{commit}/{path}"
    assert err.startswith(f"get_realruns: no network: cannot reach {url} (")
    layout = "a local copy laid out as REPOSITORY/COMMIT/PATH"
    next_step = f"run with --source DIR ({layout}) or fetch later"
    assert "refused" in err and err.endswith(f"); {next_step}\n")
    assert not (tmp_path / "out").exists()


def test_a_folder_is_a_source_and_a_file_it_lacks_is_named_in_one_line(
    mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--source DIR reads a local copy (what the offline line suggests); a pinned file missing there
    is one line naming it."""
    assert get_realruns.main(["--source", str(mirror), "--dest", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    repo, commit, path, _ = next(iter(get_realruns.SOURCES.values()))
    (mirror / repo / commit / path).unlink()
    assert get_realruns.main(["--source", str(mirror), "--dest", str(tmp_path / "again")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{(mirror / repo / commit / path).as_uri()}: not in the local copy" in err


def test_by_default_the_files_go_into_the_clone_where_git_ignores_them_and_the_readers_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The download no longer writes outside the clone (../shared/realruns): its default is
    realruns/ in the clone, which git ignores (heldout/ too), and the benchmarks and tests read
    there first; PROMPTSTRAT_REALRUNS wins over both, and a machine's shared copy beside the clone
    is read only while the clone holds none."""
    assert get_realruns.destination({}) == ROOT / "realruns"
    assert get_realruns.destination({"PROMPTSTRAT_REALRUNS": "/data/runs"}) == Path("/data/runs")
    files = ["realruns/converted/a.jsonl", "heldout/converted/b.jsonl"]
    command = ["git", "check-ignore", *files]
    ignored = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert ignored.stdout.split() == files
    clone = tmp_path / "clone"
    (tmp_path / "shared" / "realruns").mkdir(parents=True)
    clone.mkdir()
    assert get_realruns.realruns_folder({}, clone) == tmp_path / "shared" / "realruns"
    (clone / "realruns").mkdir()
    assert get_realruns.realruns_folder({}, clone) == clone / "realruns"
    given = {"PROMPTSTRAT_REALRUNS": "/data/runs"}
    assert get_realruns.realruns_folder(given, clone) == Path("/data/runs")


def test_the_script_pins_exactly_the_files_the_shared_readme_lists() -> None:
    """The script's repository, commit and path for each file are those of
    ../shared/realruns/README.md, the sources' record."""
    readme = REALRUNS / "README.md"
    if not readme.exists():
        pytest.skip(f"no {readme}")
    rows = re.findall(
        r"^\| (?:converted/`(\S+)`|(raw/\S+)) \| (\S+) \| `(\w+)` \| `(\S+)` \|$",
        readme.read_text(),
        flags=re.M,
    )
    listed = {
        ("converted/" + c if c else r): (repo, commit, path) for c, r, repo, commit, path in rows
    }
    assert listed == {name: pin[:3] for name, pin in get_realruns.SOURCES.items()}


def test_the_text_format_becomes_tool_calls_and_the_exit_the_pending_calls_output() -> None:
    """One ```bash block is one bash call answered by the next user message; two blocks stay text;
    exit answers a pending call."""
    trajectory = {
        "messages": [
            {"role": "system", "content": "Use bash."},
            {"role": "user", "content": "Fix it."},
            {
                "role": "assistant",
                "content": "THOUGHT: look.\n\n```bash\nls\n```\nextra",
                "extra": {"response": {}},
            },
            {"role": "user", "content": "<returncode>0</returncode>"},
            {"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"},
            {"role": "user", "content": "Please always provide EXACTLY ONE action."},
            {"role": "assistant", "content": "Done.\n```bash\necho SUBMIT\n```"},
            {"role": "exit", "content": "the diff", "extra": {"exit_status": "Submitted"}},
        ]
    }

    def call(n: int, command: str) -> list[dict[str, object]]:
        arguments = f'{{"command": "{command}"}}'
        function = {"name": "bash", "arguments": arguments}
        return [{"id": f"call_000{n}", "type": "function", "function": function}]

    assert get_realruns.convert(trajectory) == [
        {"role": "system", "content": "Use bash."},
        {"role": "user", "content": "Fix it."},
        {"role": "assistant", "content": "THOUGHT: look.", "tool_calls": call(1, "ls")},
        {"role": "tool", "tool_call_id": "call_0001", "content": "<returncode>0</returncode>"},
        {"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action."},
        {"role": "assistant", "content": "Done.", "tool_calls": call(2, "echo SUBMIT")},
        {"role": "tool", "tool_call_id": "call_0002", "content": "the diff"},
    ]


def test_held_out_fetches_the_pinned_deepseek_runs_instead_and_refuses_a_missing_one_in_one_line(
    mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--held-out` reads the DeepSeek pins, not the shared runs' (a copy holding only those is no
    source for it): exit 2, one line naming the first held-out file's place in the copy, nothing
    written."""
    argv = ["--held-out", "--source", str(mirror), "--dest", str(tmp_path / "out")]
    assert get_realruns.main(argv) == 2
    err = capsys.readouterr().err
    repo, commit, path, _ = next(iter(get_realruns.HELD_OUT.values()))
    place = (mirror / repo / commit / path).as_uri()
    assert err.count("\n") == 1 and err.startswith(f"get_realruns: {place}: not in the local copy")
    assert next(iter(get_realruns.HELD_OUT)).startswith("converted/deepseek__")
    assert not (tmp_path / "out").exists()
