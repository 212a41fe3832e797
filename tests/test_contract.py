"""The contract every registered strategy keeps, checked on generated agent conversations.

Pure (input untouched, same output twice), pairs intact (no check_tool_pairs violation the
input did not have), and a no-op on a conversation under every threshold.
"""

from __future__ import annotations

from collections import Counter

import pytest
from conversations import agent_conversations, snapshot
from hypothesis import HealthCheck, given, settings

from langchain_promptstrat import Settings, get_strategy
from langchain_promptstrat.messages import find_tool_pair_violations
from langchain_promptstrat.registry import BUILTIN_STRATEGIES

TIGHT = Settings(
    full_tool_outputs=2,
    max_tool_calls=6,
    max_tool_chars=500,
    epoch_tool_call_threshold=5,
    epoch_full_tool_calls=2,
    epoch_compacted_tool_calls=4,
    epoch_size=3,
    epoch_increment_size_increase=2,
    epoch_increment_repeat_increase=2,
    epoch_increment_max_size=9,
    epoch_increment_max_compacted_tool_calls=12,
    max_tokens=300,
    tool_results_min_tokens=20,
    stable_tool_call_threshold=5,
    stable_full_tool_calls=2,
    stable_epoch_size=3,
    stable_max_compacted_tool_calls=4,
    stable_front_drop_chunk=2,
)

BUILT_IN = sorted(set(BUILTIN_STRATEGIES) - {"summary"})
"""Every built-in but summary (it needs a chat model; test_summary.py holds it to the same
contract). Taken from the registry's table, not from what imports, so a built-in that fails to
import fails here instead of dropping out."""


def violations(messages) -> Counter:
    return Counter((v.kind, v.call_id) for v in find_tool_pair_violations(messages))


@pytest.mark.parametrize("name", BUILT_IN)
class TestEveryStrategy:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(conversation=agent_conversations(max_calls=30))
    def test_pure_and_pair_preserving_under_tight_thresholds(self, name, conversation):
        """Input untouched, same output twice, and no new pairing violation."""
        strategy = get_strategy(name, TIGHT)
        before = snapshot(conversation)
        first = strategy.invoke(conversation)
        assert snapshot(conversation) == before
        assert strategy.invoke(conversation) == first
        assert not violations(first) - violations(conversation)

    @settings(max_examples=25, deadline=None)
    @given(conversation=agent_conversations(max_calls=4))
    def test_conversation_under_every_threshold_comes_back_equal(self, name, conversation):
        """With default thresholds a short conversation is returned exactly as it came."""
        assert get_strategy(name, Settings()).invoke(conversation) == conversation
