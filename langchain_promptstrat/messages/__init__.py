"""The message model (being split into modules; see ``tool_index``)."""

from langchain_promptstrat.messages.tool_index import *  # noqa: F403
from langchain_promptstrat.messages.tool_index import __all__ as __all__
