"""Built-in strategies, one module per strategy, named like its registry key.

The layout is the convention a reader relies on:

* **A module directly in this package is a strategy's home**: it defines the strategy
  class (and its pure function, when it has one), named like the strategy's key
  (``shorten_tools_epoch_stable`` in ``epoch_stable.py``; ``epoch.py`` holds the two fixed
  and growing epoch strategies, ``ladder.py`` the ``CompactionLadder``).
* **A subpackage holds machinery a family of strategies shares, and defines no strategy**:
  ``epoch_machinery/`` (the boundary, repeated calls, decisions, the compaction notice and
  the caches of the epoch strategies) and ``ladder_machinery/`` (the marks' kinds and token
  shares, the rung protocol, the :class:`Rung` base and one pass, the call points the
  watermark replays). Its modules are named for what they hold; a strategy's module
  re-exports the public names its users import, as ``epoch`` and ``ladder`` do.

A helper a single strategy needs stays in that strategy's module, so its rule reads top
to bottom in one place (``epoch_stable.py`` holds the default's rule, its replay and its
prompt). One that several strategies need goes in a subpackage, never in a module that
looks like a strategy.
``tests/test_architecture.py`` checks both rules. Each built-in is listed by registry key in
:data:`langchain_promptstrat.strategy_names.BUILTIN_STRATEGIES`, imported on first use.
"""

from __future__ import annotations
