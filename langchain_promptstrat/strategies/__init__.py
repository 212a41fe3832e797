"""Built-in strategies, one module per registry key (the table is ``registry.BUILTIN_STRATEGIES``).

``epoch_machinery/`` holds what the epoch strategies share and defines none; ``ladder.py``
also holds what its rungs share. ``tests/test_architecture.py`` checks both rules.
"""
