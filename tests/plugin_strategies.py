"""A stand-in third-party plugin, loaded through a fake entry point in the registry tests."""

from __future__ import annotations


def drop_system(messages):
    """Return the messages without system messages (a plugin strategy receiving messages only)."""
    return [m for m in messages if m.type != "system"]
