"""Replay a long agent run through prompt strategies (being split into modules; see ``engine``)."""

from langchain_promptstrat.simulate.engine import *  # noqa: F403
from langchain_promptstrat.simulate.engine import __all__ as __all__
