"""What the epoch strategies share; it defines no strategy.

``frozen_region`` (the boundary, each call's fate, the head cache), ``notice`` (the compaction
notice) and ``shortened_form`` (what a frozen call of the default looks like). Each import
names the module a name lives in.
"""
