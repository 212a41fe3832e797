"""Hash-stamped truncation: the same string always gives the same bytes (so a provider's cache keeps
serving a compacted prefix), and the md5 stamp matches it to the whole value kept in the stored
conversation."""

from __future__ import annotations

import hashlib

DEFAULT_TRUNCATE_SIZE = 150
"""The reference's default ``max`` for :func:`truncate_string`."""
DEFAULT_OUTPUT_SIZE = 400
"""Size a shortened tool output is truncated to."""
DEFAULT_ARGUMENT_SIZE = 200
"""Size each shortened string-valued tool argument is truncated to."""


def _md5_prefix(s: str) -> str:
    return hashlib.md5(s.encode("utf-8", "surrogatepass")).hexdigest()[:5]


def truncate_string(s: str, max_length: int = DEFAULT_TRUNCATE_SIZE) -> str:
    """Return ``s`` unchanged when it fits, else its head, an md5 marker ``<...LENGTH -
    MD5PREFIX...>``, and its tail.

    The head is ``half - 1`` characters and the tail ``half``, ``half = (max_length -
    len(marker)) // 2`` (the reference's layout); the marker alone (or ``s``, when not
    longer) when ``max_length`` cannot hold more.
    """
    if max_length < 0:
        raise ValueError(f"max_length must be >= 0, got {max_length}")
    if len(s) <= max_length:
        return s
    marker = f"<...{len(s)} - {_md5_prefix(s)}...>"
    half = (max_length - len(marker)) // 2
    if half <= 1:
        return marker if len(marker) < len(s) else s
    return s[: half - 1] + marker + s[len(s) - half :]


def shorten_string(s: str, size: int = DEFAULT_OUTPUT_SIZE, warning: str = "Truncated") -> str:
    """Return ``s`` unchanged when it fits, else ``"<warning> (<length>): "`` + its truncation."""
    t = truncate_string(s, size)
    if len(t) < len(s):
        return f"{warning} ({len(s)}): {t}"
    return s


def shorten_by_lines(text: str, size: int) -> str:
    """Return ``text`` when it fits in ``size`` characters, else whole lines of its head and tail
    around one marker.

    Head and tail each take the most whole lines that fit in half of ``size``, around
    ``<...N lines of LENGTH chars - MD5PREFIX...>``; :func:`shorten_string` when no whole line fits.
    """
    if len(text) <= size:
        return text
    lines = text.split("\n")
    half = size // 2
    head_end, used = 0, 0
    while head_end < len(lines) and used + len(lines[head_end]) + 1 <= half:
        used += len(lines[head_end]) + 1
        head_end += 1
    tail_start, used = len(lines), 0
    while tail_start > head_end and used + len(lines[tail_start - 1]) + 1 <= half:
        used += len(lines[tail_start - 1]) + 1
        tail_start -= 1
    gone = tail_start - head_end
    if gone <= 0:
        return text
    if gone == len(lines):
        return shorten_string(text, size)
    marker = (
        f"<...{gone} line{'s' if gone != 1 else ''} of {len(text)} chars - {_md5_prefix(text)}...>"
    )
    return "\n".join([*lines[:head_end], marker, *lines[tail_start:]])
