"""The documentation site builds strictly, and every python block of the README and the docs runs as
written.

The site (``mkdocs.yml``, ``docs/``) is built with ``mkdocs build --strict``, so a broken link,
a missing anchor or a page left out of the navigation fails here and in CI.

Every python block runs as a reader would run it: complete on its own, offline, in a fresh
directory, with no ``PROMPTSTRAT_`` variable set, in a fresh virtual environment holding
``pip install .`` plus exactly the extras its lead-in names. The lead-in is the prose between
the block and the heading or code block before it, and the block itself: each
``pip install ".[NAME]"`` there names an extra (``".[plot,agents]"`` two). A block naming none
runs on the core alone, which has none of the extras' packages, so an example that needs an
extra its page does not name fails here. A block that needs a PostgreSQL server says so in its
first line (:data:`NEEDS_POSTGRES`); it runs against ``PROMPTSTRAT_TEST_DSN``, and without one
it is skipped (a failure where ``PROMPTSTRAT_REQUIRE_POSTGRES`` is set, as in CI). A block that
needs a LangGraph Server (:data:`NEEDS_LANGGRAPH`) runs against the suite's
(``PROMPTSTRAT_LANGGRAPH_URL``, which ``.ci/run`` starts) the same way.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest_postgres import TEST_DSN_ENV, unavailable
from langgraph_server import URL_ENV as LANGGRAPH_URL_ENV
from langgraph_server import unavailable as langgraph_unavailable

from langchain_promptstrat.ceiling import DEFAULT_MAX_TOKENS
from langchain_promptstrat.defaults import SIMULATED_MAX_TOKENS

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NEEDS_POSTGRES = "# needs a PostgreSQL server"
EXAMPLE_DSN = "postgresql://user:pass@db/agents"
NEEDS_LANGGRAPH = "# needs a LangGraph Server"
EXAMPLE_URL = "http://127.0.0.1:2024"
INSTALL_EXTRAS = re.compile(r'pip install "\.\[([\w,-]+)\]"')


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    """mkdocs build --strict succeeds: every link, anchor, snippet and navigation entry resolves."""
    result = mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "site" / "settings" / "index.html").exists()


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """The strict build is a real check: a link to a missing anchor makes it fail, naming the
    page."""
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copy(ROOT / "ARCHITECTURE.md", copy / "ARCHITECTURE.md")
    page = copy / "docs" / "cli.md"
    page.write_text(
        page.read_text(encoding="utf-8") + "\nSee [nowhere](inbox.md#no-such-section).\n",
        encoding="utf-8",
    )
    result = mkdocs_build(copy / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "cli.md" in result.stderr and "no-such-section" in result.stderr


def test_every_page_is_in_the_navigation() -> None:
    """Each file of docs/ is a page of mkdocs.yml's nav, so no page is only reachable by guessing
    its address."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").glob("*.md"):
        assert f": {page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"


@dataclass(frozen=True)
class Example:
    """One python block of a page, with the extras its lead-in names."""

    page: str
    line: int
    code: str
    extras: frozenset[str]

    @property
    def label(self) -> str:
        return f"{self.page}:{self.line}"


def examples(page: Path) -> list[Example]:
    """Return the page's python blocks, each with the extras named in it or in the prose leading to
    it.

    The lead-in is the text between the block and the heading or code block before it, so an
    install line names the extras of the block it introduces and no other.
    """
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    lead: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            code = "\n".join(lines[i + 1 : end]) + "\n"
            if lines[i] == "```python":
                named = {
                    e
                    for group in INSTALL_EXTRAS.findall("\n".join(lead) + code)
                    for e in group.split(",")
                }
                found.append(Example(page.name, i + 1, code, frozenset(named)))
            lead, i = [], end + 1
            continue
        if lines[i].startswith("#"):
            lead = []
        lead.append(lines[i])
        i += 1
    return found


EXAMPLES = [example for page in PAGES for example in examples(page)]


def declared_extras() -> set[str]:
    """Return the extras of pyproject.toml's ``[project.optional-dependencies]`` table."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    table = pyproject.split("[project.optional-dependencies]\n", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([\w-]+) = \[", table, flags=re.M))


@pytest.fixture(scope="session")
def plain_install(tmp_path_factory: pytest.TempPathFactory) -> Callable[[frozenset[str]], Path]:
    """Return the python of a fresh virtual environment holding ``pip install ".[EXTRAS]"`` of a
    copy of the project.

    One environment per distinct set of extras, built on first use and kept for the session. The
    package is installed from a copy of the project's files (the build writes into the folder
    it builds), not in editable mode, so nothing of this checkout's environment is visible.
    """
    where = tmp_path_factory.mktemp("installs")
    clone = where / "clone"
    clone.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, clone / name)
    shutil.copytree(
        ROOT / "langchain_promptstrat",
        clone / "langchain_promptstrat",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    built: dict[frozenset[str], Path] = {}

    def python_with(extras: frozenset[str]) -> Path:
        if extras not in built:
            venv = where / ("venv-" + ("-".join(sorted(extras)) or "plain"))
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
            python = venv / "bin" / "python"
            target = f"{clone}[{','.join(sorted(extras))}]" if extras else str(clone)
            result = subprocess.run(
                [
                    str(python),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    target,
                ],  # wheels come from pip's cache
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert result.returncode == 0, f"pip install {target} failed:\n{result.stderr[-3000:]}"
            built[extras] = python
        return built[extras]

    return python_with


def run_plain(
    python: Path, code: str, cwd: Path, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with ``python`` in ``cwd``, offline, with no ``PROMPTSTRAT_`` variable and no
    PYTHONPATH (``extra_env`` added)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PROMPTSTRAT_", "PYTHONPATH", "VIRTUAL_ENV"))
    }
    env.update(extra_env or {})
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, timeout=600, cwd=cwd, env=env
    )


def test_every_extra_a_page_names_is_declared() -> None:
    """An install line names an extra pyproject.toml declares, so copying it installs something (a
    typo would install nothing extra, silently)."""
    declared = declared_extras()
    for page in PAGES:
        for group in INSTALL_EXTRAS.findall(page.read_text(encoding="utf-8")):
            assert set(group.split(",")) <= declared, (
                f"{page.name} names {group!r}; pyproject.toml declares {sorted(declared)}"
            )


def test_a_plain_install_has_none_of_the_extras(
    plain_install: Callable[[frozenset[str]], Path], tmp_path: Path
) -> None:
    """The environment of an example that names no extra lacks every extra's packages, so an example
    needing one it does not name fails."""
    code = (
        "import importlib.util, langchain_promptstrat, sys\n"
        "assert langchain_promptstrat.__file__.startswith(sys.prefix), "
        "langchain_promptstrat.__file__\n"
        "print([m for m in ('langchain', 'psycopg', 'matplotlib', 'starlette', 'mkdocs') if "
        "importlib.util.find_spec(m)])\n"
    )
    result = run_plain(plain_install(frozenset()), code, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.label)
def test_every_python_block_runs_after_the_install_its_page_names(
    example: Example, plain_install: Callable[[frozenset[str]], Path], tmp_path: Path
) -> None:
    """Each python block runs as written in a fresh environment holding the package and only the
    extras its lead-in names."""
    code = example.code
    if code.startswith(NEEDS_POSTGRES):
        dsn = os.environ.get(TEST_DSN_ENV, "").strip()
        if not dsn:
            unavailable(
                f"{example.label} needs a PostgreSQL server: set {TEST_DSN_ENV} or run .ci/run"
            )
        code = code.replace(EXAMPLE_DSN, dsn)
    if code.startswith(NEEDS_LANGGRAPH):
        url = os.environ.get(LANGGRAPH_URL_ENV, "").strip().rstrip("/")
        if not url:
            langgraph_unavailable(
                f"{example.label} needs a LangGraph Server: set {LANGGRAPH_URL_ENV} or run .ci/run"
            )
        code = code.replace(EXAMPLE_URL, url)
        env = {"AGENT_PORT": url.rsplit(":", 1)[1]}  # docs/deploying.md's client reads it
    else:
        env = {}
    result = run_plain(plain_install(example.extras), code, tmp_path, env)
    assert result.returncode == 0, (
        f"{example.label} with extras {sorted(example.extras)}:\n{result.stderr[-3000:]}"
    )
    assert "Traceback" not in result.stderr


def test_the_docs_say_why_simulate_and_the_agents_use_different_ceilings() -> None:
    """One sentence gives both defaults, as the code has them, so a reader comparing simulate with
    apply is not misled."""
    text = (ROOT / "docs" / "default.md").read_text(encoding="utf-8")
    sentence = next((s for s in text.split(". ") if f"{SIMULATED_MAX_TOKENS:,}" in s), "")
    assert "simulate" in sentence and f"{DEFAULT_MAX_TOKENS:,}" in sentence and "apply" in sentence


HISTORY = re.compile(
    r"before this change|used to (quote|be)|main's code|other engineers|\bwe changed\b|no "
    r"longer|\bthe reference\b",
    re.I,
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_speaks_of_the_projects_history(page: Path) -> None:
    """User-facing pages describe what is (change-log wording belongs in commit messages) and name
    Scout-AI, never an unexplained "the reference"."""
    found = [m.group(0) for m in HISTORY.finditer(page.read_text(encoding="utf-8"))]
    assert not found, f"{page.name}: {found}"


def test_the_docs_extra_and_the_test_extra_bring_the_site_builder() -> None:
    """pip install ".[docs]" builds the site, and the test extra (what CI installs) can run this
    file."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    docs = re.search(r"^docs = \[(.*?)\]$", pyproject, flags=re.M | re.S)
    test = re.search(r"^test = \[(.*?)^\]", pyproject, flags=re.M | re.S)
    assert docs and test
    for requirement in ("mkdocs", "mkdocs-material"):
        assert f'"{requirement}>=' in docs.group(1) and f'"{requirement}>=' in test.group(1)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_cites_outside_the_clone_only_what_get_realruns_downloads(page: Path) -> None:
    """A reader of a clone has no ../shared: a page names ../shared/realruns only with the script
    that fills it, and nothing else there."""
    text = page.read_text(encoding="utf-8")
    cited = set(re.findall(r"\.\./shared/\w*", text))
    assert cited <= {"../shared/realruns"}, f"{page.name} cites {sorted(cited)}"
    assert not cited or "python benchmarks/get_realruns.py" in text, (
        f"{page.name} cites ../shared/realruns without its download command"
    )


BELOW_THE_CEILING = re.compile(
    r"(\d+) tool calls at (\d+)% of the default ceiling come\s+back with their (\d+) oldest calls "
    r"shortened "
    r"\((\d+) of their outputs are long enough to change\) and the\s+newest (\d+) whole"
)


def test_every_page_gives_one_true_account_of_what_the_default_does_below_the_ceiling() -> None:
    """The default shortens by count well below its ceiling; a page saying it waits for the ceiling
    would mislead a reader.

    docs/default.md states the figure (a history at about half the ceiling, its oldest calls
    shortened), recomputed here; README, docs/strategies.md and the notebooks give the same
    threshold and none says the prompt is left alone below the ceiling.
    """
    from langchain_core.messages import ToolMessage

    from langchain_promptstrat import ShortenToolsEpochStable
    from langchain_promptstrat.settings import Settings
    from langchain_promptstrat.testing import build_agent_run
    from langchain_promptstrat.tokens import TokenCounter

    found = BELOW_THE_CEILING.search((ROOT / "docs" / "default.md").read_text(encoding="utf-8"))
    assert found, "docs/default.md states what the default does below the ceiling"
    calls, share, shortened, changed, whole = map(int, found.groups())
    history = build_agent_run(calls)
    result = ShortenToolsEpochStable(max_tokens=DEFAULT_MAX_TOKENS).compact(history)
    stored = {m.tool_call_id: m.content for m in history if isinstance(m, ToolMessage)}
    assert round(100 * TokenCounter()(history) / DEFAULT_MAX_TOKENS) == share < 100
    assert result.report.details["compaction_edge"] == shortened == calls - whole
    assert (
        sum(
            isinstance(m, ToolMessage) and m.content != stored[m.tool_call_id]
            for m in result.messages
        )
        == changed
    )
    threshold = Settings().stable_tool_call_threshold
    notebooks = {
        name: (ROOT / "notebooks" / name).read_text(encoding="utf-8")
        for name in ("01_quickstart.ipynb", "03_cache_and_cost.ipynb")
    }
    pages = {
        "README.md": (ROOT / "README.md").read_text(encoding="utf-8"),
        **notebooks,
        "strategies.md": (ROOT / "docs" / "strategies.md").read_text(encoding="utf-8"),
    }
    assert f"from the {threshold + 1}st call on" in pages["README.md"]
    assert f"by count past {threshold} tool calls" in pages["strategies.md"]
    assert f"Past {threshold} tool calls it shortens" in pages["01_quickstart.ipynb"]
    assert f"by count only from the {threshold + 1}st" in pages["03_cache_and_cost.ipynb"]
    wrong = re.compile(
        r"leaves the prompt alone|only acts near|(?<!by tokens )only near the (ceiling|model's "
        r"window)",
        re.I,
    )
    assert {name: wrong.findall(text) for name, text in pages.items() if wrong.search(text)} == {}


def test_the_command_line_page_gives_the_measured_reason_each_rung_goes_over_its_target() -> None:
    """docs/cli.md's figures for the rows that go over in the default run are what that run gives,
    and the page says why: the schemas for sliding_window, and for tool_results its own count too
    (it drops no message and clears only outputs over tool_results_min_tokens), not "by the schemas'
    size" alone (the issue measured it 3,047 tokens over, the schemas 1,146)."""
    from langchain_promptstrat.simulate import simulate

    text = " ".join((ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split())
    result = simulate(["tool_results", "sliding_window"], progress=False)
    schemas = result.tool_schemas[0][1]
    for run in result.runs:
        over = [t - SIMULATED_MAX_TOKENS for t in run.tokens if t > SIMULATED_MAX_TOKENS]
        own = [t - schemas for t in run.tokens if t - schemas > SIMULATED_MAX_TOKENS]
        said = f"`{run.name}` goes over on {len(over)}" if own else f"on {len(over)} of {run.calls}"
        assert said in text and f"{max(over):,} tokens" in text, run.name
        if own:
            own_peak = run.peak_tokens - schemas
            assert f"on {len(own)} calls its own count too ({own_peak:,} at the peak)" in text
            assert f"(peak {run.peak_tokens:,})" in text and "never drops a message" in text
            assert "tool_results_min_tokens" in text
        else:
            assert f"less than the schemas' {schemas:,}" in text and max(over) < schemas


DEFAULT_RECALL = (
    "of the references the agent's next message made to what only an old tool output held"
)
"""How the README and the strategies page word the default's recall: one column, one definition."""


def test_the_default_keeps_one_recall_figure_in_one_definition_on_every_page() -> None:
    """The README said '1.000 of the references ... to old tool outputs' and strategies.md '0.999 of
    the agent's references to old tool outputs': two columns (outputs-only, old recall) in nearly
    the same words. Both pages now give the same column, named, in the same words, with the same
    number: the README table's default-list figure."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    strategies = " ".join((ROOT / "docs" / "strategies.md").read_text(encoding="utf-8").split())
    row = next(
        line
        for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| **default list, no settings** |")
    )
    outputs_only = row.strip(" |").split(" | ")[-1]
    pattern = rf"keeps ([\d.]+) {re.escape(DEFAULT_RECALL)} \(the [*`]outputs-only[*`] column"
    assert re.findall(pattern, readme) == re.findall(pattern, strategies) == [outputs_only]
    assert "references to old tool outputs" not in readme + strategies


def test_the_settings_page_shows_the_default_list_and_says_what_scout_ai_is() -> None:
    """The prompt_strategy row shows the list itself (not the constant's name, DEFAULT_STRATEGIES),
    and Scout-AI is said to be an agent system the first time each page names it."""
    from langchain_promptstrat import DEFAULT_STRATEGIES

    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if "| `prompt_strategy` |" in line)
    assert f"| `{','.join(DEFAULT_STRATEGIES)}` |" in row and "DEFAULT_STRATEGIES" not in row
    for page in PAGES:
        flat = " ".join(page.read_text(encoding="utf-8").split())
        if "Scout-AI" in flat:
            first = flat[flat.index("Scout-AI") :].split(". ")[0]
            assert "the agent system" in first, f"{page.name}: {first}"
