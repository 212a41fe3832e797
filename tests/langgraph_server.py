"""A real LangGraph Server (``langgraph dev``, in-memory runtime) serving the test deployment, and
its client.

The deployment is ``tests/server/deployment/`` (``langgraph.json``, one graph module per front
end, the ``gate`` tool). A server runs in a copy of that folder inside a temporary directory:
the in-memory runtime keeps its data in ``.langgraph_api/`` under its working directory, and
``langgraph.json``'s paths are read from there too. Loopback only, no version check, no
analytics, no tracing.

``.ci/run`` starts one server for the whole suite and exports ``PROMPTSTRAT_LANGGRAPH_URL``
(and ``PROMPTSTRAT_LANGGRAPH_GATES``, the gate folder it shares with the tests), plus
``PROMPTSTRAT_REQUIRE_LANGGRAPH=1``, so that a missing server fails instead of skipping, as
``PROMPTSTRAT_REQUIRE_POSTGRES`` does for PostgreSQL. Without the URL a test module starts its
own server; tests that restart a server, or need two, always start their own.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

DEPLOYMENT = Path(__file__).parent / "server" / "deployment"
URL_ENV = "PROMPTSTRAT_LANGGRAPH_URL"
GATES_URL_ENV = "PROMPTSTRAT_LANGGRAPH_GATES"
REQUIRE_ENV = "PROMPTSTRAT_REQUIRE_LANGGRAPH"
GATES_ENV = "PROMPTSTRAT_TEST_GATES"  # what the deployment's gate tool reads
START_SECONDS = 90.0
JOBS = 4
"""Runs one server executes at once (``--n-jobs-per-worker``): the tests hold several runs open
together."""
QUIET_SERVER_ENV = {
    # langgraph_api.cli: no request to the package index at start
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",  # langgraph_cli.analytics: no usage report
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
}
SECRETS = (
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGGRAPH_CLOUD_LICENSE_KEY",
    "LANGSMITH_CONTROL_PLANE_API_KEY",
)


def required() -> bool:
    """Return whether a missing server (or langgraph-cli) is a failure rather than a reason to
    skip."""
    return os.environ.get(REQUIRE_ENV, "").strip().lower() in ("1", "true", "yes")


def unavailable(reason: str) -> NoReturn:
    """Skip with ``reason``, or fail with it when the environment requires a LangGraph Server."""
    if required():
        pytest.fail(
            f"{reason} ({REQUIRE_ENV} is set: the LangGraph Server tests must run here)",
            pytrace=False,
        )
    pytest.skip(reason)


def langgraph_command() -> str:
    """Return the ``langgraph`` executable next to this interpreter (skip or fail when langgraph-cli
    is missing)."""
    here = Path(sys.executable).parent / "langgraph"
    found = str(here) if here.exists() else shutil.which("langgraph")
    try:
        import langgraph_runtime_inmem  # type: ignore[import-untyped]  # noqa: F401
        import langgraph_sdk  # noqa: F401
    except ImportError:
        found = None
    if found is None:
        unavailable(
            "no langgraph-cli with its in-memory runtime, or no langgraph-sdk: pip install "
            '"langgraph-cli[inmem]" langgraph-sdk'
        )
    return str(found)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(condition: Any, what: str, timeout: float = 60.0, interval: float = 0.02) -> Any:
    """Return ``condition()`` once it is truthy; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def stored_texts(client: Any, thread_id: str) -> list[str]:
    """Return the contents of the thread's stored messages, as the server's state holds them."""
    return [str(m["content"]) for m in client.threads.get_state(thread_id)["values"]["messages"]]


def post_notice(url: str, thread_id: str, content: str) -> str:
    """Post a notice to the thread through the package's HTTP route; return its name in the
    inbox."""
    import httpx

    answer = httpx.post(f"{url}/threads/{thread_id}/inbox", json={"content": content}, timeout=30)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["name"])


def settled_listing(url: str, thread_id: str) -> dict[str, Any]:
    """Return the thread's inbox listing once nothing is pending or in flight (the last
    acknowledgement follows the checkpoint)."""
    import httpx

    def listing() -> dict[str, Any] | None:
        answer = httpx.get(f"{url}/threads/{thread_id}/inbox", timeout=30).json()
        return None if answer["pending"] or answer["in_flight"] else answer

    found: dict[str, Any] = wait_for(listing, f"the inbox of {thread_id} to settle", 30, 0.05)
    return found


@dataclass
class LangGraphServer:
    """One ``langgraph dev`` process serving the deployment from ``home`` on ``port``; restartable
    on the same data."""

    home: Path
    env: dict[str, str]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.home / "server.log"

    @classmethod
    def prepare(cls, home: Path, **env: str) -> LangGraphServer:
        """Return a server (not started) whose deployment is a copy of tests/server/deployment under
        ``home``."""
        app = home / "app"
        shutil.copytree(
            DEPLOYMENT, app, ignore=shutil.ignore_patterns("__pycache__", ".langgraph_api")
        )
        gates = home / "gates"
        gates.mkdir(exist_ok=True)
        base = {
            k: v
            for k, v in os.environ.items()
            if k not in SECRETS and not k.startswith("PROMPTSTRAT_")
        }
        return cls(home, {**base, **QUIET_SERVER_ENV, GATES_ENV: str(gates), **env})

    @property
    def gates(self) -> Path:
        return Path(self.env[GATES_ENV])

    @property
    def data(self) -> Path:
        """The in-memory runtime's files (``.langgraph_api/``): what survives a restart."""
        return self.home / "app" / ".langgraph_api"

    def start(self) -> LangGraphServer:
        """Start the process and return once ``GET /ok`` answers; fail with the log's tail if it
        exits first."""
        command = [
            langgraph_command(),
            "dev",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--no-browser",
            "--no-reload",
            "--n-jobs-per-worker",
            str(JOBS),
            "--config",
            str(self.home / "app" / "langgraph.json"),
        ]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                cwd=self.home / "app",
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.starts += 1
        import httpx

        def answers() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(
                    f"langgraph dev exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                return httpx.get(f"{self.url}/ok", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, f"langgraph dev on {self.url}", START_SECONDS, 0.05)
        return self

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """Stop the whole process group with ``sig`` (SIGKILL: no chance to write anything) and reap
        it."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        except ProcessLookupError:
            pass

    def restart(self, sig: signal.Signals = signal.SIGTERM) -> LangGraphServer:
        """Stop with ``sig`` and start again on the same port and data."""
        self.stop(sig)
        return self.start()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@dataclass
class Deployment:
    """What a test drives: the server's URL, the gate folder it shares with it, and the server when
    the test owns it."""

    url: str
    gates: Path
    server: LangGraphServer | None = None

    def client(self) -> Any:
        from langgraph_sdk import get_sync_client

        return get_sync_client(url=self.url)


@contextmanager
def own_server(home: Path, **env: str) -> Iterator[LangGraphServer]:
    """Yield a started server of the deployment with an absolute inbox root under ``home`` (or
    ``env``'s); always stopped."""
    env.setdefault("PROMPTSTRAT_INBOX_ROOT", str(home / "inboxes"))
    server = LangGraphServer.prepare(home, **env)
    try:
        yield server.start()
    finally:
        server.stop(signal.SIGKILL)


def shared_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """Yield the suite's server (``PROMPTSTRAT_LANGGRAPH_URL``), else a server started for the
    calling module."""
    url = os.environ.get(URL_ENV, "").strip()
    if url:
        gates = os.environ.get(GATES_URL_ENV, "").strip()
        if not gates:
            unavailable(
                f"{URL_ENV} is set without {GATES_URL_ENV}, the gate folder that server shares "
                "with the tests"
            )
        yield Deployment(url.rstrip("/"), Path(gates))
        return
    if required():
        unavailable(f"{URL_ENV} is not set: .ci/run starts the suite's LangGraph Server")
    langgraph_command()
    with own_server(tmp_path_factory.mktemp("langgraph")) as server:
        yield Deployment(server.url, server.gates, server)


class Gates:
    """The test's side of the deployment's ``gate`` tool for one thread: hold its calls, see them
    arrive, open them."""

    def __init__(self, folder: Path, thread_id: str) -> None:
        self.folder, self.thread_id = folder, thread_id

    def hold(self) -> Gates:
        (self.folder / f"{self.thread_id}.hold").write_text("")
        return self

    def release(self) -> None:
        """Let every gate call of the thread through from now on."""
        (self.folder / f"{self.thread_id}.hold").unlink(missing_ok=True)

    def entered(self, step: int) -> int:
        """Return how many runs of the thread (one per server process) have entered gate
        ``step``."""
        return len(list(self.folder.glob(f"{self.thread_id}.{step}.*.entered")))

    def wait_entered(self, step: int, runs: int = 1, timeout: float = 60.0) -> None:
        wait_for(
            lambda: self.entered(step) >= runs,
            f"{runs} run(s) of thread {self.thread_id} to enter gate {step}",
            timeout,
        )

    def forget_entries(self) -> None:
        """Forget which gates were entered, to see the calls a resumed run makes again."""
        for entered in self.folder.glob(f"{self.thread_id}.*.entered"):
            entered.unlink()

    def open(self, step: int) -> None:
        (self.folder / f"{self.thread_id}.{step}.go").write_text("")


# ----------------------------------------------------------------------------- .ci/langgraph

MARKER = ".promptstrat-langgraph"


def _start_for_the_suite() -> int:
    """Start a server in a fresh directory, detached, and print the export lines the suite reads."""
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="promptstrat-langgraph."))
    (home / MARKER).write_text("")
    server = LangGraphServer.prepare(home, PROMPTSTRAT_INBOX_ROOT=str(home / "inboxes"))
    try:
        server.start()
    except BaseException as exc:  # noqa: BLE001 - the CLI says what went wrong in one line, then the log
        print(f"langgraph: could not start langgraph dev: {exc}", file=sys.stderr)
        server.stop(signal.SIGKILL)
        shutil.rmtree(home, ignore_errors=True)
        return 1
    assert server.process is not None
    (home / "pid").write_text(str(server.process.pid))
    print(f"langgraph: langgraph dev running on {server.url}, data in {home}", file=sys.stderr)
    print(f"export {URL_ENV}='{server.url}'")
    print(f"export {GATES_URL_ENV}='{server.gates}'")
    print(f"export PROMPTSTRAT_LANGGRAPH_DIR='{home}'")
    return 0


def _stop_for_the_suite(where: str) -> int:
    """Stop the server ``start`` left in ``where`` (its whole process group) and remove the
    directory."""
    home = Path(where)
    if not home.is_dir():
        print(f"langgraph: {home} is already gone", file=sys.stderr)
        return 0
    if not (home / MARKER).exists():
        print(
            f"langgraph: {home} was not created by 'start'; refusing to remove it", file=sys.stderr
        )
        return 2
    try:
        pid = int((home / "pid").read_text())
        os.killpg(pid, signal.SIGTERM)
        try:
            wait_for(lambda: not _alive(pid), f"langgraph dev (pid {pid}) to stop", 15, 0.1)
        except AssertionError:
            os.killpg(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass  # no pid file, or the process is gone already
    shutil.rmtree(home, ignore_errors=True)
    print(f"langgraph: stopped and removed {home}", file=sys.stderr)
    return 0


def _alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except OSError:
        return False
    return True


if __name__ == "__main__":
    if sys.argv[1:2] == ["start"] and len(sys.argv) == 2:
        sys.exit(_start_for_the_suite())
    if sys.argv[1:2] == ["stop"] and len(sys.argv) == 3:
        sys.exit(_stop_for_the_suite(sys.argv[2]))
    print(f"usage: {sys.argv[0]} start | {sys.argv[0]} stop DIR", file=sys.stderr)
    sys.exit(2)
