"""The settings page's options table (``docs/settings.md``), written from the options declarations
(:mod:`langchain_promptstrat.options`).

A row is one option: the built-in strategies that take it as a keyword, or, for an option no
strategy takes under its name, who reads it and what sets it (its field says so).
``python -m langchain_promptstrat.docs_tables`` rewrites the table between :data:`BEGIN` and
:data:`END`; ``--check`` exits 1 when it is stale.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
from pathlib import Path

from langchain_promptstrat.registry import BUILTIN_STRATEGIES
from langchain_promptstrat.settings import (
    Settings,
    documented_default,
    environment_variables,
    option_doc,
    options_of,
)

BEGIN = "<!-- options table: written by python -m langchain_promptstrat.docs_tables -->"
END = "<!-- end of the options table -->"
DEFAULT_PAGE = "docs/settings.md"


def _rows() -> list[tuple[str, str]]:
    """Return ``(key, who takes it)`` for every option, in declaration order."""
    taking: dict[str, list[str]] = {}
    for name, target in BUILTIN_STRATEGIES.items():
        module, attribute = target.split(":")
        for key in options_of(getattr(importlib.import_module(module), attribute)):
            taking.setdefault(key, []).append(f"`{name}`")
    rows = []
    for f in dataclasses.fields(Settings):
        reader = f.metadata["reader"]
        if f.name in taking:
            rows.append((f.name, ", ".join(taking[f.name])))
        elif reader is not None:
            rows.append((f.name, f"{reader[0]}; set by {reader[1]}" if reader[1] else reader[0]))
        else:
            raise LookupError(
                f"option {f.name!r} is no built-in strategy's keyword and names no reader"
            )
    return rows


def options_table() -> str:
    """Return the Markdown table of every option: who takes it, its variables, default and
    meaning."""
    lines = [
        "| option | taken by | environment variables | default | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for key, taken_by in _rows():
        variables = ", ".join(f"`{v}`" for v in environment_variables(key))
        lines.append(
            f"| `{key}` | {taken_by} | {variables} | {documented_default(key)} | "
            f"{option_doc(key)} |"
        )
    return "\n".join(lines)


def with_options_table(page: str) -> str:
    """Return ``page`` with the lines between :data:`BEGIN` and :data:`END` replaced by
    :func:`options_table`."""
    if page.count(BEGIN) != 1 or page.count(END) != 1 or page.index(BEGIN) > page.index(END):
        raise ValueError(
            f"the page must hold the lines {BEGIN!r} and {END!r} once each, in that order"
        )
    head, rest = page.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{options_table()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    """Rewrite the options table of a documentation page (``--check``: exit 1 when it is stale,
    writing nothing)."""
    parser = argparse.ArgumentParser(
        prog="python -m langchain_promptstrat.docs_tables", description=main.__doc__
    )
    parser.add_argument(
        "page",
        nargs="?",
        default=DEFAULT_PAGE,
        type=Path,
        help=f"the page to update (default: {DEFAULT_PAGE})",
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the table is stale; write nothing"
    )
    args = parser.parse_args(argv)
    try:
        text = args.page.read_text(encoding="utf-8")
        updated = with_options_table(text)
    except (OSError, ValueError) as exc:
        print(f"docs_tables: {exc}", file=sys.stderr)
        return 2
    if updated == text:
        return 0
    if args.check:
        print(
            f"docs_tables: the options table in {args.page} is stale; run python -m "
            "langchain_promptstrat.docs_tables",
            file=sys.stderr,
        )
        return 1
    partial = args.page.with_name(f".{args.page.name}.docs_tables")
    partial.write_text(updated, encoding="utf-8")
    os.replace(partial, args.page)  # never a half-written page
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
