"""Install hints: every one names a command that works from a clone (the package is on no index) and
the extra it stands for."""

from __future__ import annotations

import re
from importlib.metadata import requires
from pathlib import Path

import pytest

from langchain_promptstrat.extras import EXTRAS, install_hint

ROOT = Path(__file__).resolve().parent.parent


def declared_extras() -> dict[str, list[str]]:
    """Return each optional extra of the installed distribution and its requirements, as
    pyproject.toml declares them."""
    extras: dict[str, list[str]] = {}
    for line in requires("langchain-promptstrat") or []:
        requirement, _, marker = line.partition(";")
        found = re.search(r'extra == "([^"]+)"', marker)
        if found:
            extras.setdefault(found.group(1), []).append(requirement.strip())
    return extras


def test_no_hint_names_a_distribution_the_index_does_not_have():
    """pip install of the distribution's name with an extra fails (the index has no such name): no
    module, test, notebook, README or docs line says it, except as a direct reference (``NAME[extra]
    @ git+URL``), which pip fetches from the address given."""
    files = [
        ROOT / "README.md",
        ROOT / "ARCHITECTURE.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "notebooks").glob("*.ipynb")),
        *(
            path
            for folder in ("langchain_promptstrat", "tests", "benchmarks")
            for path in sorted((ROOT / folder).rglob("*.py"))
        ),
    ]
    named = re.compile(
        "langchain-promptstrat" + r"\\?\[[^\]]*\](?!\s*@)"
    )  # in two halves so this file does not find itself
    offending = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if named.search(line)
    ]
    assert offending == []


def test_each_extra_a_hint_names_is_declared_with_the_same_requirement():
    """Each hint's extra exists in pyproject.toml and brings the requirement the hint installs, so
    the two cannot drift."""
    declared = declared_extras()
    assert {extra: [requirement] for extra, requirement in EXTRAS.items()} == {
        extra: requirements
        for extra, requirements in declared.items()
        if extra
        not in (
            "test",
            "docs",
            "server",
        )  # tooling, and the server app (imported only by LangGraph Server, which brings it)
    }


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_a_hint_works_from_a_clone_and_from_any_install(extra):
    """The hint installs the requirement itself (works however the package came) or the extra from
    the project folder."""
    hint = install_hint(extra)
    assert hint.startswith("pip install ") and EXTRAS[extra] in hint
    assert f'pip install ".[{extra}]" in the project folder' in hint
