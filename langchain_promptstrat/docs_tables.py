"""The settings page's options table (``docs/settings.md``), written from the strategies' options
classes and the settings.

A row is an option of built-in strategies, or a setting that is no strategy's option (its
field names who reads it). ``python -m langchain_promptstrat.docs_tables`` rewrites the table
between :data:`BEGIN` and :data:`END`; ``--check`` exits 1 when it is stale.
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
    option_keys,
)

BEGIN = "<!-- options table: written by python -m langchain_promptstrat.docs_tables -->"
END = "<!-- end of the options table -->"
DEFAULT_PAGE = "docs/settings.md"


def _rows() -> list[tuple[str, str, str]]:
    """Return ``(strategies, option, key)`` for every option of the built-ins (one row for
    strategies sharing one), then every other setting."""
    shared: dict[tuple[str, str], list[str]] = {}
    for name, target in BUILTIN_STRATEGIES.items():
        module, attribute = target.split(":")
        for option, key in option_keys(getattr(importlib.import_module(module), attribute)).items():
            shared.setdefault((option, key), []).append(f"`{name}`")
    rows = [(", ".join(names), f"`{option}`", key) for (option, key), names in shared.items()]
    taken = {key for _, key in shared}
    for f in dataclasses.fields(Settings):
        if f.name not in taken:
            if f.metadata["reader"] is None:
                raise LookupError(
                    f"setting {f.name!r} is no built-in strategy's option and names no reader"
                )
            rows.append((*f.metadata["reader"], f.name))
    return rows


def options_table() -> str:
    """Return the Markdown table of every option and setting: who takes it, its key, variables,
    default and meaning."""
    docs = {f.name: f.metadata["doc"] for f in dataclasses.fields(Settings)}
    lines = [
        "| strategy | option | settings key | environment variables | default | meaning |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for strategies, option, key in _rows():
        variables = ", ".join(f"`{v}`" for v in environment_variables(key))
        lines.append(
            f"| {strategies} | {option} | `{key}` | {variables} | {documented_default(key)} | "
            f"{docs[key]} |"
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
