"""The documentation site builds strictly, and every python block of the README and the docs runs as written.

The site (``mkdocs.yml``, ``docs/``) is built with ``mkdocs build --strict``, so a broken link,
a missing anchor or a page left out of the navigation fails here and in CI. Each page's python
blocks run in order in one plain subprocess (a block may use what an earlier block of the same
page defined), offline, in a fresh directory, with no ``PROMPTSTRAT_`` variable set. A block
that needs a PostgreSQL server says so in its first line (:data:`NEEDS_POSTGRES`); it runs
against ``PROMPTSTRAT_TEST_DSN`` and is left out, visibly, without one. A block that needs a
LangGraph Server (:data:`NEEDS_LANGGRAPH`) runs against the suite's (``PROMPTSTRAT_LANGGRAPH_URL``,
which ``.ci/run`` starts), the same way.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_postgres import TEST_DSN_ENV
from langgraph_server import DEPLOYMENT
from langgraph_server import REQUIRE_ENV as LANGGRAPH_REQUIRE_ENV
from langgraph_server import URL_ENV as LANGGRAPH_URL_ENV
from langgraph_server import required as langgraph_required

from langchain_promptstrat.ceiling import DEFAULT_CEILING
from langchain_promptstrat.defaults import DEFAULT_MAX_TOKENS

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NEEDS_POSTGRES = "# needs a PostgreSQL server"
EXAMPLE_DSN = "postgresql://user:pass@db/agents"
NEEDS_LANGGRAPH = "# needs a LangGraph Server"
EXAMPLE_URL = "http://127.0.0.1:2024"

RUNNER = """
import json, sys
for label, code in json.loads(sys.stdin.read()):
    print(f"--- {label}", flush=True)
    exec(compile(code, label, "exec"), globals())
"""


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_the_site_builds_in_strict_mode(tmp_path):
    """mkdocs build --strict succeeds: every link, anchor, snippet and navigation entry resolves."""
    result = mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "site" / "settings" / "index.html").exists()


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """The strict build is a real check: a link to a missing anchor makes it fail, naming the page."""
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copy(ROOT / "ARCHITECTURE.md", copy / "ARCHITECTURE.md")
    page = copy / "docs" / "cli.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [nowhere](inbox.md#no-such-section).\n", encoding="utf-8")
    result = mkdocs_build(copy / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "cli.md" in result.stderr and "no-such-section" in result.stderr


def test_every_page_is_in_the_navigation():
    """Each file of docs/ is a page of mkdocs.yml's nav, so no page is only reachable by guessing its address."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").glob("*.md"):
        assert f": {page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
def test_every_python_block_of_a_page_runs_in_order(page, tmp_path):
    """A page's python blocks, run one after the other in one plain process, raise nothing."""
    dsn = os.environ.get(TEST_DSN_ENV, "").strip()
    url = os.environ.get(LANGGRAPH_URL_ENV, "").strip().rstrip("/")
    blocks = []
    for number, code in enumerate(python_blocks(page)):
        if code.startswith(NEEDS_POSTGRES):
            if not dsn:
                print(f"{page.name} block {number}: left out, {TEST_DSN_ENV} is not set")
                continue
            code = code.replace(EXAMPLE_DSN, dsn)
        if code.startswith(NEEDS_LANGGRAPH):
            if not url:
                if langgraph_required():
                    pytest.fail(f"{page.name} block {number} needs {LANGGRAPH_URL_ENV} ({LANGGRAPH_REQUIRE_ENV} is set)")
                print(f"{page.name} block {number}: left out, {LANGGRAPH_URL_ENV} is not set")
                continue
            code = code.replace(EXAMPLE_URL, url)
        blocks.append((f"{page.name} block {number}", code))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROMPTSTRAT_")}
    result = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(blocks), capture_output=True,
                            text=True, timeout=300, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout[-1500:] + result.stderr[-3000:]
    assert result.stdout.count("--- ") == len(blocks)


def test_the_deploying_page_shows_the_langgraph_json_the_server_tests_serve():
    """The page's langgraph.json is the test deployment's, so the example a deployer copies is the one CI runs."""
    text = (ROOT / "docs" / "deploying.md").read_text(encoding="utf-8")
    shown = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, flags=re.S) if '"graphs"' in block]
    assert shown == [json.loads((DEPLOYMENT / "langgraph.json").read_text(encoding="utf-8"))]
    assert shown[0]["http"] == {"app": "langchain_promptstrat.server:app"}


def test_the_docs_say_why_simulate_and_the_agents_use_different_ceilings():
    """One sentence gives both defaults, as the code has them, so a reader comparing simulate with apply is not misled."""
    text = (ROOT / "docs" / "default.md").read_text(encoding="utf-8")
    sentence = next((s for s in text.split(". ") if f"{DEFAULT_MAX_TOKENS:,}" in s), "")
    assert "simulate" in sentence and f"{DEFAULT_CEILING:,}" in sentence and "apply" in sentence


HISTORY = re.compile(r"before this change|used to (quote|be)|main's code|other engineers|\bwe changed\b|no longer|\bthe reference\b", re.I)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_speaks_of_the_projects_history(page):
    """User-facing pages describe what is (change-log wording belongs in commit messages) and name Scout-AI, never an unexplained "the reference"."""
    found = [m.group(0) for m in HISTORY.finditer(page.read_text(encoding="utf-8"))]
    assert not found, f"{page.name}: {found}"


def test_the_docs_extra_and_the_test_extra_bring_the_site_builder():
    """pip install ".[docs]" builds the site, and the test extra (what CI installs) can run this file."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    docs = re.search(r"^docs = \[(.*?)\]$", pyproject, flags=re.M | re.S)
    test = re.search(r"^test = \[(.*?)^\]", pyproject, flags=re.M | re.S)
    assert docs and test
    for requirement in ("mkdocs", "mkdocs-material"):
        assert f'"{requirement}>=' in docs.group(1) and f'"{requirement}>=' in test.group(1)
