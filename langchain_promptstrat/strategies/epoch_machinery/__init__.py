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

The front-stable strategy's own machinery lives here too (its module would be four times
the size a reader can hold otherwise), each module named for what it holds:

* ``stable_regions``: the dropped front, the shortened middle and the whole newest calls
  for ``T`` outputs (:class:`StableState`, :func:`front_drop_edge`,
  :func:`stable_boundary`, :func:`stable_decisions`);
* ``token_costs``: each message's tokens whole and shortened, remembered (:class:`Costs`);
* ``bounded_replay``: replaying the history's model calls under a ceiling, the events
  that move the edges by tokens, and the strategy object's memo of replays;
* ``frozen_head``: the remembered compacted head a replay reuses between events;
* ``debris``: removing the narration and loose messages of dropped steps;
* ``stable_prompt``: the prompt a replay's edges give, its notice and report details.

The public names are re-exported by :mod:`langchain_promptstrat.strategies.epoch` and
:mod:`langchain_promptstrat.strategies.epoch_stable`, the modules users import; this
package re-exports nothing, so each import says where a name lives.
"""
