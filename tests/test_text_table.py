"""The shared table formatter: tables fit the terminal's width without losing a cell."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langchain_promptstrat.cli import main
from langchain_promptstrat.testing import build_agent_run
from langchain_promptstrat.text_table import render_table, terminal_width

words = st.text(alphabet="abcdefgh ", min_size=1, max_size=14).map(str.strip).filter(bool)
cells = st.text(alphabet="0123456789,.%", min_size=1, max_size=9)


@given(
    columns=st.lists(words, min_size=2, max_size=9),
    data=st.data(),
    width=st.integers(40, 200),
)
def test_every_line_fits_and_every_cell_is_kept(columns, data, width):
    """With room for the first column and any one other, every line fits the width and every cell
    appears in order."""
    rows = data.draw(
        st.lists(
            st.lists(cells, min_size=len(columns), max_size=len(columns)), min_size=1, max_size=4
        )
    )
    lines = render_table(columns, rows, width)
    assert all(len(line) <= width for line in lines)
    blocks = "\n".join(lines).split("\n\n")
    rebuilt: list[list[str]] = [[] for _ in rows]
    for block in blocks:
        block_lines = block.splitlines()
        rule = next(i for i, line in enumerate(block_lines) if line.startswith("-"))
        body = block_lines[rule + 1 :]
        assert len(body) == len(rows)
        for i, line in enumerate(body):
            label, *values = line.split()
            assert label == rows[i][0]  # every block repeats the first column
            rebuilt[i] += values
    assert rebuilt == [row[1:] for row in rows]


def test_without_a_width_the_table_is_one_block_of_single_line_titles():
    """width=None keeps the natural layout: one title line, one rule, one line per row."""
    lines = render_table(["strategy", "tokens sent"], [["none", "1,000"]])
    assert lines == ["strategy  tokens sent", "--------  -----------", "none            1,000"]


def test_terminal_width_follows_columns(monkeypatch):
    """$COLUMNS sets the width; without it and without a terminal (a pipe, a file) output fits 100
    columns."""
    monkeypatch.setenv("COLUMNS", "77")
    assert terminal_width() == 77
    monkeypatch.delenv("COLUMNS")
    assert terminal_width() == 100  # pytest captures stdout: not a terminal


@pytest.mark.parametrize("command", ["simulate", "stats"])
def test_cli_tables_fit_an_80_column_terminal(capsys, monkeypatch, tmp_path, command):
    """`simulate --compare` (191 columns unfitted) and `stats` print no line wider than
    $COLUMNS=80."""
    monkeypatch.setenv("COLUMNS", "80")
    if command == "simulate":
        argv = ["simulate", "--calls", "30", "--compare", "--price-per-mtok", "3", "--no-progress"]
    else:
        path = tmp_path / "run.json"
        from langchain_core.messages import messages_to_dict

        path.write_text(json.dumps(messages_to_dict(build_agent_run(30, seed=2))))
        argv = ["stats", str(path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "ClearToolUsesEdit (peer)" in out or command == "stats"
