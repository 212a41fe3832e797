"""Token counts of message lists as a provider sees them, with tiktoken where it can load.

Strategies compare a conversation with a token budget before every model call, so the count
must be close to what the provider bills, cheap on a conversation that grows by a message or
two per turn, and available on machines that cannot download tiktoken's BPE files.

Counting rules, per message (a list counts as the sum of its messages):

* 3 tokens of overhead (the OpenAI cookbook's ``tokens_per_message``) plus the tokens of the
  role name (``user``, ``assistant``, ``system``, ``tool``...); when ``message.name`` is set,
  1 more (the cookbook's ``tokens_per_name``) plus its tokens. A ``ToolMessage``'s ``name``
  is not counted: the OpenAI and Anthropic integrations do not send it.
* String content: its tokens. List content: the text of its strings and ``text`` blocks;
  85 tokens per image block (``image``, ``image_url``, ``input_image``), OpenAI's flat
  low-detail price and the base of its high-detail price, because the real cost depends on
  the pixel size and counting a base64 payload as text would be off by orders of
  magnitude (``count_tokens_approximately`` uses the same 85, so both modes agree); any
  other block (``thinking``, ``document``...) by its JSON.
* Each tool call once: its name plus ``json.dumps(args, sort_keys=True, ensure_ascii=False)``
  (non-ASCII stays as the model wrote it instead of six-character escapes). A call recorded
  in ``tool_calls`` and mirrored in OpenAI's ``additional_kwargs["tool_calls"]`` or as an
  Anthropic ``tool_use`` block counts once; :mod:`langchain_promptstrat.messages` decides what
  is one call. ``invalid_tool_calls`` count their name and raw argument string.
* Call ids, as every request carries them: an assistant message's call ids (each call once,
  wherever it is recorded: ``tool_calls``, OpenAI's ``additional_kwargs``, an Anthropic
  ``tool_use`` block), joined by spaces, and a ``ToolMessage``'s ``tool_call_id``; an
  Anthropic ``tool_result`` block in a user message counts by its JSON, its
  ``tool_use_id`` included. Ids are part of every request body, and on a ceiling
  counting them is the safe side: measured against gpt-5-mini's bills (see docs/performance.md),
  OpenAI does not bill them (each step cost a constant 12 tokens more than its content
  whatever the ids' length), so ``TokenCounter(..., call_ids=False)`` leaves them out for
  the closest estimate of an OpenAI bill; Anthropic's tokenization of its blocks is not
  published. :func:`missing_call_id_tokens` says what a counter leaves out.
* Not counted: other ``additional_kwargs``, ``response_metadata``, ``usage_metadata``,
  artifacts (never sent), the bound tools' schemas (not messages: see
  :func:`tool_schema_tokens`), and the 3 tokens that prime the reply: they are a constant
  per request, and adding them to every count would break ``count(a + b) == count(a) +
  count(b)``, which budget arithmetic and ``trim_messages`` rely on.

Text is encoded with ``encode_ordinary``: a message that quotes ``<|endoftext|>`` counts it
as plain text, as the provider does with user text, instead of raising.

When the BPE file is neither shipped (cl100k_base is) nor in tiktoken's cache, it is not
downloaded unless asked (``TokenCounter(..., download=True)``): one
:class:`TokenizerUnavailableWarning` per encoding and process says so and counts fall back
to ``langchain_core.messages.utils.count_tokens_approximately`` at once; nothing raises.
``as_token_counter("approximate")`` asks for those approximate counts directly, as
``trim_messages(token_counter="approximate")`` does.

Import from here: ``encodings`` loads an encoding offline, ``counter`` counts.
"""

from __future__ import annotations

from langchain_promptstrat.defaults import DEFAULT_ENCODING
from langchain_promptstrat.tokens.counter import (
    DEFAULT_CACHE_SIZE,
    TOKENS_PER_IMAGE as TOKENS_PER_IMAGE,
    TOKENS_PER_MESSAGE as TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME as TOKENS_PER_NAME,
    TokenCounter,
    as_token_counter,
    call_id_tokens,
    counts_call_ids,
    missing_call_id_tokens,
    tool_schema_tokens,
)
from langchain_promptstrat.tokens.encodings import DEFAULT_LOAD_TIMEOUT, TokenizerUnavailableWarning

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_ENCODING",
    "DEFAULT_LOAD_TIMEOUT",
    "TokenCounter",
    "TokenizerUnavailableWarning",
    "as_token_counter",
    "call_id_tokens",
    "counts_call_ids",
    "missing_call_id_tokens",
    "tool_schema_tokens",
]
