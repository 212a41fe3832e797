"""docs/deploying.md as written: its own files, in an empty folder, served by its own command,
driven by its own client.

The page's graph module becomes ``agent.py`` and its ``langgraph.json`` is written beside it;
the page's ``langgraph dev`` command runs there (with the inbox root in a temporary folder
instead of ``/srv/agents/inboxes``), and the page's client block runs against it as written with
Python's warnings on, so a socket it leaves open fails here too. Both find the port where the
page puts it, ``AGENT_PORT``: a free loopback port here.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_server import QUIET_SERVER_ENV, SECRETS, free_port, langgraph_command, wait_for

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "deploying.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", PAGE, flags=re.S)
GRAPH_MODULE = next(code for lang, code in BLOCKS if lang == "python")
LANGGRAPH_JSON = next(code for lang, code in BLOCKS if lang == "json" and '"graphs"' in code)
START = next(code.strip() for lang, code in BLOCKS if lang == "bash" and "langgraph dev" in code)
CLIENT = next(code for lang, code in BLOCKS if lang == "python" and "get_sync_client" in code)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Return the URL of the page's command serving the page's two files from an empty folder."""
    bin_dir = Path(langgraph_command()).parent
    home = tmp_path_factory.mktemp("deploying-page")
    folder = home / "agent"
    folder.mkdir()
    (folder / "agent.py").write_text(GRAPH_MODULE, encoding="utf-8")
    (folder / "langgraph.json").write_text(LANGGRAPH_JSON, encoding="utf-8")
    port = free_port()
    command = START.replace("/srv/agents/inboxes", str(home / "inboxes"))
    env = {
        k: v for k, v in os.environ.items() if k not in SECRETS and not k.startswith("PROMPTSTRAT_")
    }
    path = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env.update(QUIET_SERVER_ENV, PATH=path, AGENT_PORT=str(port))
    with (home / "server.log").open("wb") as log:
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(
                f"{command} exited with "
                f"{process.returncode}:\n{(home / 'server.log').read_text()[-3000:]}"
            )
        try:
            return httpx.get(f"{url}/ok", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(answers, f"the page's langgraph dev on {url}", 90, 0.05)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def test_the_pages_files_and_command_serve_the_pages_client(server: str, tmp_path: Path) -> None:
    """The client block, run as written with the AGENT_PORT the command used, talks to the page's
    deployment, prints what its comments say and leaves no socket open (the client once hard-coded
    2024, whoever held it)."""
    env = {**os.environ, "AGENT_PORT": server.rsplit(":", 1)[1]}
    command = [sys.executable, "-W", "default", "-c", CLIENT]
    result = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ResourceWarning" not in result.stderr, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert (
        lines[0] == "201 pending"
        and lines[1].startswith("wait for review [")
        and lines[-1] == "done"
    )


def test_an_unknown_thread_is_a_404_and_an_id_that_is_not_a_uuid_a_422(server: str) -> None:
    """What the page says of the routes' answers for threads the server does not have."""
    assert httpx.get(f"{server}/threads/{uuid.uuid4()}/inbox").status_code == 404
    assert httpx.get(f"{server}/threads/run-3/inbox").status_code == 422


def test_the_page_reads_the_port_from_one_variable_and_says_where_each_command_runs() -> None:
    """The command and the client read AGENT_PORT, the page says to check langgraph dev's own lines
    (it moves to another port when the one asked for is taken, silently for a client), and names
    each command's folder."""
    assert '--port "$AGENT_PORT"' in START and 'export AGENT_PORT="${AGENT_PORT:-2024}"' in START
    assert "os.environ.get('AGENT_PORT', '2024')" in CLIENT and "127.0.0.1:2024" not in CLIENT
    text = " ".join(PAGE.split())
    assert "Port 2024 is already in use, using port N instead" in text
    assert "API: http://127.0.0.1:N" in text
    assert "from the clone of this repository" in text
    assert "in a folder of its own** outside the clone" in text
    assert "Start it from that folder (`~/my-agent`)" in text
