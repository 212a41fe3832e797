"""Token counts of message lists as a provider sees them, with tiktoken where it can load.

A count must be close to what the provider bills, cheap on a conversation that grows by a
message or two, and available offline. Per message (a list counts as the sum):

* 3 tokens of overhead (the OpenAI cookbook's ``tokens_per_message``) plus the role name;
  a set ``message.name`` 1 more plus its tokens (not a ``ToolMessage``'s: integrations do not
  send it).
* Content: a string's tokens; in a list, the text of strings and ``text`` blocks, 85 tokens
  per image block (OpenAI's low-detail price, as ``count_tokens_approximately``), any other
  block by its JSON.
* Each tool call once, wherever it is recorded: its name plus ``json.dumps(args,
  sort_keys=True, ensure_ascii=False)``; ``invalid_tool_calls`` by name and raw arguments.
* Call ids (an assistant message's, joined by spaces; a ``ToolMessage``'s ``tool_call_id``):
  every request carries them, the safe side for a ceiling, though OpenAI does not bill them
  (measured, docs/performance.md): ``TokenCounter(..., call_ids=False)`` leaves them out.
* Not counted: other ``additional_kwargs``, metadata, artifacts, the bound tools' schemas
  (:func:`tool_schema_tokens`), and the 3 tokens priming the reply, so ``count(a + b) ==
  count(a) + count(b)``, as budget arithmetic and ``trim_messages`` need.

Text is encoded with ``encode_ordinary`` (``<|endoftext|>`` in a message is plain text). An
encoding neither shipped (cl100k_base is) nor cached is not downloaded unless asked
(``download=True``): one :class:`TokenizerUnavailableWarning` per encoding and process, and
counts fall back to ``count_tokens_approximately``; ``as_token_counter("approximate")``
asks for those directly. Import from here: ``encodings`` loads an encoding offline,
``counter`` counts.
"""

from __future__ import annotations

from langchain_promptstrat.defaults import DEFAULT_ENCODING as DEFAULT_ENCODING
from langchain_promptstrat.tokens.counter import (
    DEFAULT_CACHE_SIZE as DEFAULT_CACHE_SIZE,
    TOKENS_PER_IMAGE as TOKENS_PER_IMAGE,
    TOKENS_PER_MESSAGE as TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME as TOKENS_PER_NAME,
    TokenCounter as TokenCounter,
    as_token_counter as as_token_counter,
    call_id_tokens as call_id_tokens,
    counts_call_ids as counts_call_ids,
    missing_call_id_tokens as missing_call_id_tokens,
    tool_schema_tokens as tool_schema_tokens,
)
from langchain_promptstrat.tokens.encodings import DEFAULT_LOAD_TIMEOUT as DEFAULT_LOAD_TIMEOUT
from langchain_promptstrat.tokens.encodings import TokenizerUnavailableWarning as TokenizerUnavailableWarning
