"""What the epoch strategies share, defining no strategy and knowing none.

``frozen_region`` (the epoch pair's boundary, repeats, the previous call's history),
``shortened_form`` (a frozen call's form fitted to its kind), ``costs`` (the tokens the default's
estimate reads), ``history_replay`` (the replay of a history's model calls, resumed from a memo or
from the value a front end carries), ``frozen_prompt`` (the prompt with the regions applied and
the compaction notice after the head), ``notice`` (the notice), ``fallback`` (the last resort
under a ceiling) and ``apply_rule`` (a rule applied to one request, with its report). What only a
rule knows they ask as they go, as questions its strategy's module answers: no call goes back up.
"""
