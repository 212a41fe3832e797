"""A stand-in third-party plugin, loaded through a fake entry point in the registry tests."""

from __future__ import annotations

from langchain_core.messages import HumanMessage


def append_note(messages):
    """Return the messages with one note appended (a plugin strategy receiving messages only)."""
    return [*messages, HumanMessage("a note from the plugin")]
