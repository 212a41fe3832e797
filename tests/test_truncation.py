"""Specification of the hash-stamped truncation every shortening strategy shares."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from langchain_promptstrat import shorten_string, truncate_string


def md5_5(s: str) -> str:
    return hashlib.md5(s.encode()).hexdigest()[:5]


texts = st.one_of(
    st.text(max_size=300),
    st.builds(
        lambda unit, times: unit * times, st.text(min_size=1, max_size=40), st.integers(1, 120)
    ),
)
"""Strings short and long: plain ``st.text`` almost never exceeds the sizes below, so repeated units
supply strings of up to 4,800 characters and most examples really get truncated."""


class TestTruncateString:
    def test_string_that_fits_is_returned_unchanged(self):
        """A string no longer than max comes back as the very same string."""
        s = "a" * 150
        assert truncate_string(s, 150) is s

    def test_layout_is_head_marker_tail_with_the_reference_sizes(self):
        """The result is the first half-1 characters, the md5 marker, then the last half
        characters."""
        s = "".join(chr(ord("a") + i % 26) for i in range(1000))
        marker = f"<...1000 - {md5_5(s)}...>"
        half = (150 - len(marker)) // 2
        assert truncate_string(s, 150) == s[: half - 1] + marker + s[-half:]

    def test_default_max_is_150(self):
        """Without a max, the reference default of 150 applies."""
        s = "q" * 1000
        assert truncate_string(s) == truncate_string(s, 150)

    def test_size_too_small_for_the_marker_yields_the_marker_alone(self):
        """A max that cannot hold the marker never slices negatively: the result is just the
        marker."""
        s = "z" * 500
        assert truncate_string(s, 5) == f"<...500 - {md5_5(s)}...>"

    def test_size_too_small_never_lengthens_a_short_string(self):
        """When even the marker is longer than the string, the string is kept as it is."""
        assert truncate_string("abcdefghij", 3) == "abcdefghij"

    @given(texts, st.integers(0, 800))
    def test_same_input_gives_the_same_bytes(self, s, size):
        """Truncation is a pure function of its input: prompt caching depends on it."""
        first = truncate_string(s, size)
        assert truncate_string(s, size) == first

    @given(texts, st.integers(40, 800))
    def test_result_never_exceeds_max_once_the_marker_fits(self, s, size):
        """With room for the marker (at most 20 characters for these lengths), a longer string is
        cut to at most max characters, marker included."""
        result = truncate_string(s, size)
        if len(s) <= size:
            assert result is s
        else:
            assert len(result) <= size and f"<...{len(s)} - " in result


class TestShortenString:
    def test_prefix_names_the_warning_and_original_length(self):
        """A shortened value reads 'Truncated (N): ' followed by its truncation."""
        s = "x" * 1000
        assert shorten_string(s, 400) == "Truncated (1000): " + truncate_string(s, 400)

    def test_value_that_fits_is_unchanged(self):
        """A value within the size is returned as it is, with no prefix."""
        assert shorten_string("short", 400) == "short"

    def test_custom_warning_word(self):
        """The warning word is the caller's choice."""
        s = "y" * 500
        assert shorten_string(s, 200, warning="Cut") == "Cut (500): " + truncate_string(s, 200)
