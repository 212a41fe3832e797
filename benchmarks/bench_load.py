"""Time what tests only check for correctness: building a long synthetic run, and giving up on a
hanging download.

Run from the repository root::

    python benchmarks/bench_load.py

* **build_agent_run(5000)**: seconds to build a 5,000-call run (mirror="mixed"); the
  docstring of ``build_agent_run`` promises well under a second.
* **hanging download abandoned**: seconds a first count waits when ``download=True`` and the
  download never answers, with ``load_timeout=0.05`` (should be about the timeout).
* **uncached, download=False**: seconds the first count takes when the encoding is neither
  installed nor cached: no download is tried, so it is immediate.

Timings on a shared machine are noisy; each figure is the median of ``--runs`` runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
import warnings

import tiktoken
from langchain_core.messages import HumanMessage

from langchain_promptstrat.testing import build_agent_run
from langchain_promptstrat.tokens import TokenCounter, encodings


def _median_seconds(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    os.environ["TIKTOKEN_CACHE_DIR"] = tempfile.mkdtemp()
    release = threading.Event()

    def hanging(name: str) -> tiktoken.Encoding:
        release.wait(30)
        raise ConnectionError(name)

    tiktoken.get_encoding = hanging  # this process only

    def first_count(download: bool) -> None:
        encodings._LOADED.clear()
        encodings._HUNG_LOADS.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            TokenCounter("o200k_base", load_timeout=0.05, download=download)([HumanMessage("hi")])

    rows = [
        (
            "build_agent_run(5000)",
            _median_seconds(lambda: build_agent_run(5000, seed=13, mirror="mixed"), args.runs),
        ),
        ("hanging download abandoned", _median_seconds(lambda: first_count(True), args.runs)),
        ("uncached, download=False", _median_seconds(lambda: first_count(False), args.runs)),
    ]
    release.set()
    print(f"median of {args.runs} runs, seconds")
    for name, seconds in rows:
        print(f"{name:<30} {seconds:8.3f}")


if __name__ == "__main__":
    main()
