"""Token counts of message lists as a provider sees them, offline: ``encodings`` loads an encoding,
``counter`` counts (its docstring gives the rules)."""

from __future__ import annotations

from langchain_promptstrat.defaults import DEFAULT_ENCODING as DEFAULT_ENCODING
from langchain_promptstrat.tokens.counter import (
    TokenCounter as TokenCounter,
)
from langchain_promptstrat.tokens.counter import (
    as_token_counter as as_token_counter,
)
from langchain_promptstrat.tokens.counter import (
    call_id_tokens as call_id_tokens,
)
from langchain_promptstrat.tokens.counter import (
    message_counter as message_counter,
)
from langchain_promptstrat.tokens.counter import (
    missing_call_id_tokens as missing_call_id_tokens,
)
from langchain_promptstrat.tokens.counter import (
    tool_schema_tokens as tool_schema_tokens,
)
from langchain_promptstrat.tokens.encodings import (
    TokenizerUnavailableWarning as TokenizerUnavailableWarning,
)
