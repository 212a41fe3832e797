"""Token counts of message lists (being split into modules; see ``encodings``)."""

from langchain_promptstrat.tokens.encodings import *  # noqa: F403
from langchain_promptstrat.tokens.encodings import __all__ as __all__
