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

The front-stable strategy's own machinery lives here too, read in this order:

* ``stable_rule``: the default's rule, top to bottom: the edges (:class:`Edges`), where they
  sit by count (:func:`stable_boundary`), how one model call moves them under a ceiling
  (:func:`advance`), how many recent calls stay whole (:func:`whole_from`), each frozen
  call's fate (:func:`call_fates`);
* ``shortened_form``: what a frozen call looks like (:class:`ShortenedForm`): its output by the
  kind of call (a file read keeps whole lines of its head and tail), its message's narration;
* ``token_costs``: each message's tokens whole and shortened (:class:`Costs`), and the calls'
  prefix sums the rule's estimate reads (:class:`StepCosts`);
* ``bounded_replay``: replaying the history's model calls through the rule, and the strategy
  object's memo of replays;
* ``stable_prompt``: the edges applied: each call's fate, the debris of dropped steps left
  out, the notice, the report's details; its compacted head goes in the head cache.

The public names are re-exported by :mod:`langchain_promptstrat.strategies.epoch` and
:mod:`langchain_promptstrat.strategies.epoch_stable`, the modules users import; this
package re-exports nothing, so each import says where a name lives.
"""
