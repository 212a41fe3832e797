"""The graph front ends themselves, killed at random moments: every notice exactly once in the
stored conversation.

``create_agent`` + ``PromptStrategyMiddleware`` and ``create_react_agent`` + ``pre_model_hook``,
each over a file-backed ``SqliteSaver`` with LangGraph's default durability (``"async"``),
on the directory and the PostgreSQL inbox: 55 readers SIGKILLed per case (220 in all), then
one healthy reader resumes each thread (see ``benchmarks/graph_kills.py``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "graph_kills", Path(__file__).parent.parent / "benchmarks" / "graph_kills.py"
)
graph_kills = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["graph_kills"] = graph_kills
_spec.loader.exec_module(graph_kills)  # type: ignore[union-attr]

ROUNDS = 55


def _check(figures, capsys) -> None:
    with capsys.disabled():
        print(f"\n{graph_kills.HEADER}\n{figures.row()}")
    assert figures.killed == ROUNDS and figures.posted >= ROUNDS
    assert (figures.lost, figures.duplicated, figures.stuck) == (0, 0, 0)
    assert figures.delivered == figures.posted


@pytest.mark.parametrize("front_end", graph_kills.FRONT_ENDS)
def test_killed_graph_front_ends_on_the_directory_store_every_notice_exactly_once(
    front_end, tmp_path, capsys
):
    """Readers killed while a checkpoint is still being written in the background: a notice
    acknowledged before its checkpoint is on disk would be missing from the stored conversation; one
    redelivered would be there twice."""
    _check(
        graph_kills.run_graph_kills(front_end, "directory", workdir=tmp_path, rounds=ROUNDS), capsys
    )


@pytest.mark.parametrize("front_end", graph_kills.FRONT_ENDS)
def test_killed_graph_front_ends_on_postgresql_store_every_notice_exactly_once(
    front_end, postgres_dsn, postgres_schema, tmp_path, capsys
):  # noqa: F811
    """The same kills with the inbox in PostgreSQL (the checkpoints still in the SQLite file)."""
    figures = graph_kills.run_graph_kills(
        front_end,
        "postgresql",
        workdir=tmp_path,
        rounds=ROUNDS,
        dsn=postgres_dsn,
        schema=postgres_schema,
    )
    _check(figures, capsys)
