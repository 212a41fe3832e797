"""The machinery the token ladder and its rungs share; it defines no strategy.

:class:`~langchain_promptstrat.strategies.ladder.CompactionLadder` runs rungs
(``tool_results``, ``sliding_window``, ``summary``: each its own strategy module) cheapest
first toward a token target; ``shorten_tools_epoch_stable`` reuses its pass. What
they share lives here, one module per concern:

* ``vocabulary``: the kinds of the rungs' marks, and token counting shared by rungs;
* ``plan``: the rung protocol (a plan yields model requests and ends with a
  :class:`Rewrite`), run sync or async;
* ``rung``: the :class:`Rung` base and one pass of rungs (:func:`ladder_pass`).

The replay engine the watermark resumes from (a history's model calls and the memo of
earlier replays) is :mod:`langchain_promptstrat.messages.history_memo`, shared with the default.

The public names are re-exported by :mod:`langchain_promptstrat.strategies.ladder`; this
package re-exports nothing, so each import says where a name lives.
"""
