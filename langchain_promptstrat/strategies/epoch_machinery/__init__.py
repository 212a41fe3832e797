"""The machinery the epoch strategies share; it defines no strategy.

``shorten_tools_epoch`` and ``shorten_tools_epoch_increment``
(:mod:`langchain_promptstrat.strategies.epoch`) and ``shorten_tools_epoch_stable``
(:mod:`langchain_promptstrat.strategies.epoch_stable`) all freeze old tool calls behind a
boundary that moves once per epoch. What they share lives here, one module per concern:

* ``boundary``: where the boundary is for ``T`` tool outputs (:class:`EpochState`, the
  fixed and the growing schedule);
* ``repeats``: the completed calls, which repeat, which stay whole;
* ``decisions``: each call's fate, and why the prefix changed since the previous call;
* ``notice``: the compaction notice, its text and its place;
* ``caches``: the repeat-key and compacted-head caches, and :func:`apply_frozen`.

The public names are re-exported by :mod:`langchain_promptstrat.strategies.epoch`, the
module users import; this package re-exports nothing, so each import says where a name
lives.
"""
