"""``promptstrat settings``: every setting, its value here and the variable it came from.

The meaning of each is in docs/settings.md (written from the same declaration, ``Settings``);
``apply --help`` and ``stats --help`` point here instead of listing them. Imports only the
settings module, so it answers as fast as ``--help``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from langchain_promptstrat.text_table import fit_lines, terminal_width

__all__ = ["add_settings_command"]


def add_settings_command(commands: argparse._SubParsersAction[Any], detailed: bool = True) -> None:
    """Add ``settings`` to ``commands`` (its options only when ``detailed``)."""
    command = commands.add_parser(
        "settings",
        help="print every setting, its value here and the environment variable it came from",
        description="Print every setting the strategies read, its value in this environment and "
        "where it came from: the environment variable that set it, else its default. What each "
        "means: docs/settings.md.",
    )
    if not detailed:
        return
    command.add_argument("--json", action="store_true", help="print the settings as JSON")
    command.set_defaults(func=_settings)


def _settings(args: argparse.Namespace) -> int:
    from langchain_promptstrat.settings import (
        Settings,
        documented_default,
        environment_variables,
        variable_read,
    )

    settings = Settings.load()  # a bad value is refused here, in one line naming the variable
    rows = []
    for f in dataclasses.fields(Settings):
        variable = variable_read(f.name)
        value = getattr(settings, f.name)
        rows.append(
            {
                "key": f.name,
                "value": value,
                "shown": str(value)
                if value is not None
                else documented_default(f.name).replace("`", ""),
                "from": variable or "default",
                "variables": list(environment_variables(f.name)),
            }
        )
    if args.json:
        print(
            json.dumps([{k: v for k, v in row.items() if k != "shown"} for row in rows], indent=2)
        )
        return 0
    head = [
        "Each setting, its value here and where it came from; what each means: docs/settings.md. "
        "A variable is read with the PROMPTSTRAT_ prefix and without it; the prefixed one wins."
    ]
    key_width = max(len(row["key"]) for row in rows)
    lines = [f"{row['key']:<{key_width}}  {row['shown']}  ({row['from']})" for row in rows]
    print("\n".join([*fit_lines(head, terminal_width()), "", *lines]))
    return 0
