"""Built-in strategies, one module per registry key (``epoch.py`` holds the two fixed and growing epoch strategies).

A module directly here defines a strategy; ``epoch_machinery/`` holds what the epoch
strategies share and defines none, and ``ladder.py`` also holds what its rungs share.
``tests/test_architecture.py`` checks both rules; the built-ins are listed in
:data:`langchain_promptstrat.strategy_names.BUILTIN_STRATEGIES`.
"""

from __future__ import annotations
