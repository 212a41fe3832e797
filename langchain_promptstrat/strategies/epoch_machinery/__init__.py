"""The machinery the epoch strategies share; it defines no strategy.

``shorten_tools_epoch`` and ``shorten_tools_epoch_increment``
(:mod:`langchain_promptstrat.strategies.epoch`) and ``shorten_tools_epoch_stable``
(:mod:`langchain_promptstrat.strategies.epoch_stable`) all freeze old tool calls behind a
boundary that moves once per epoch. What they share lives here, one module per concern:

* ``boundary``: where the boundary is for ``T`` tool outputs (:class:`EpochState`, the
  fixed and the growing schedule);
* ``repeats``: which completed calls repeat, which stay whole;
* ``decisions``: each call's fate, and why the prefix changed since the previous call;
* ``notice``: the compaction notice, its text and its place;
* ``caches``: the one head cache (a compacted head, found by what its messages are), and
  :func:`apply_frozen`.

Every one of them reads calls from the one tool-call index,
:class:`~langchain_promptstrat.messages.ToolIndex`.

The default's rule (its edges, replay and prompt) is in
:mod:`langchain_promptstrat.strategies.epoch_stable` itself; only what it shares with the
others, and the shape of a shortened call (``shortened_form``: :class:`ShortenedForm`, a file
read keeps whole lines of its head and tail), live here.

The public names are re-exported by :mod:`langchain_promptstrat.strategies.epoch` and
:mod:`langchain_promptstrat.strategies.epoch_stable`, the modules users import; this
package re-exports nothing, so each import says where a name lives.
"""
