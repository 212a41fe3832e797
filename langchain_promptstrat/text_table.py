"""Plain-text tables for the command line, fitted to the terminal's width.

The first column is left-aligned (names), the others right-aligned (figures). Too wide,
titles wrap at their spaces, then the columns split over tables that each repeat the first
column: no figure is ever cut.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Sequence

GAP = 2
"""Spaces between two columns."""
PIPE_WIDTH = 100
"""The width output to a pipe or a file fits (a log, an issue, a review read it)."""


def terminal_width() -> int:
    """Return the width output should fit: ``$COLUMNS``, else the terminal's, else
    :data:`PIPE_WIDTH`."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout is not None and sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return PIPE_WIDTH


def fit_lines(lines: Sequence[str], width: int | None) -> list[str]:
    """Return ``lines`` with each one longer than ``width`` wrapped at spaces (continuations
    indented)."""
    if width is None:
        return list(lines)
    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out += textwrap.wrap(
            line, width, subsequent_indent=indent + "  ", break_on_hyphens=False
        ) or [line]
    return out


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * max(len(widths) - 1, 0)


def render_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None
) -> list[str]:
    """Return the lines of a table: titles, a rule of dashes, one line per row; at most ``width``
    wide when it can be.

    With ``width=None`` every title stays on one line and the table is as wide as it needs.
    """
    count = len(columns)
    cells = [max((len(row[i]) for row in rows), default=0) for i in range(count)]
    titles = [[title] for title in columns]
    widths = [max(cells[i], len(columns[i])) for i in range(count)]
    if width is not None and _total(widths) > width:
        for i, title in enumerate(columns):
            room = max(cells[i], *(len(word) for word in title.split() or [title]))
            titles[i] = textwrap.wrap(title, room) or [title]
            widths[i] = max(cells[i], *(len(t) for t in titles[i]))
    groups: list[list[int]] = [list(range(count))]
    if width is not None and _total(widths) > width and count > 2:
        groups = [[0]]
        for i in range(1, count):
            if len(groups[-1]) > 1 and _total([widths[j] for j in [*groups[-1], i]]) > width:
                groups.append([0])
            groups[-1].append(i)

    def line(group: list[int], values: Sequence[str]) -> str:
        aligned = (
            v.ljust(widths[i]) if i == 0 else v.rjust(widths[i])
            for i, v in zip(group, values, strict=False)
        )
        return (" " * GAP).join(aligned).rstrip()

    out: list[str] = []
    for group in groups:
        if out:
            out.append("")
        height = max(len(titles[i]) for i in group)
        padded = {
            i: [""] * (height - len(titles[i])) + titles[i] for i in group
        }  # titles sit on the rule
        out += [line(group, [padded[i][k] for i in group]) for k in range(height)]
        out.append(line(group, ["-" * widths[i] for i in group]))
        out += [line(group, [row[i] for i in group]) for row in rows]
    return out
