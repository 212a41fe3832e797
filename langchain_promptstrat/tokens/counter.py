"""The token counter, :class:`TokenCounter`: close to what the provider bills, cheap on a growing
conversation, offline.

A message counts 3 tokens (the OpenAI cookbook's ``tokens_per_message``) plus the encoded
texts it sends: its role; a set ``name`` (1 token more; not a ``ToolMessage``'s, which
integrations do not send); its call ids (joined by spaces, or a ``ToolMessage``'s
``tool_call_id``: OpenAI does not bill them, ``call_ids=False`` leaves them out); each tool
call once wherever recorded (name plus ``json.dumps(args, sort_keys=True,
ensure_ascii=False)``; ``invalid_tool_calls`` by name and raw arguments); the text of its
content, 85 tokens per image block, any other block by its JSON. Nothing else, not the bound
tools (:func:`tool_schema_tokens`) nor the reply's priming, so ``count(a + b) == count(a) +
count(b)``, as budget arithmetic and ``trim_messages`` need. Text is encoded with
``encode_ordinary``; without an encoding (see :mod:`.encodings`) counts approximate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import tiktoken
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_promptstrat.defaults import DEFAULT_ENCODING
from langchain_promptstrat.errors import ConfigError, InvalidMessagesError
from langchain_promptstrat.messages import (
    CountTokens,
    call_block_id,
    canonical_json,
    content_text,
    recorded_calls,
)
from langchain_promptstrat.messages.history_memo import IdentityMemo, SizedCache
from langchain_promptstrat.tokens.encodings import (
    DEFAULT_LOAD_TIMEOUT,
    _encoding_for_model,
    _load_encoding,
)

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_IMAGE = 85

_IMAGE_BLOCKS = frozenset({"image", "image_url", "input_image"})


def _role(message: BaseMessage) -> str:
    if isinstance(message, ChatMessage):
        return message.role
    if isinstance(message, SystemMessage):
        role = message.additional_kwargs.get("__openai_role__")  # "developer" for o-series
        return role if isinstance(role, str) else "system"
    roles = (
        (AIMessage, "assistant"),
        (HumanMessage, "user"),
        (ToolMessage, "tool"),
        (FunctionMessage, "function"),
    )
    return next((role for kind, role in roles if isinstance(message, kind)), message.type)


def _call_ids_text(message: BaseMessage) -> str:
    """Return the call ids ``message`` sends as one text: its calls' ids joined by spaces, or a tool
    output's ``tool_call_id``."""
    if isinstance(message, ToolMessage):
        return message.tool_call_id or ""
    if isinstance(message, AIMessage):
        return " ".join(call_id for call_id, _, _ in recorded_calls(message) if call_id)
    return ""


def _sent_parts(message: BaseMessage, call_ids: bool = True) -> tuple[tuple[str, ...], int]:
    """Return the texts a provider encodes for ``message`` and its fixed extra tokens: a count's
    cache key."""
    texts = [_role(message)]
    fixed = TOKENS_PER_MESSAGE
    if message.name and not isinstance(message, ToolMessage):
        texts.append(message.name)
        fixed += TOKENS_PER_NAME
    if call_ids:
        texts.append(_call_ids_text(message))

    counted_calls: set[str] = set()
    if isinstance(message, AIMessage):
        invalid_ids = {bad.get("id") for bad in message.invalid_tool_calls}
        for call_id, name, args in recorded_calls(message):
            counted_calls.add(call_id)
            if call_id not in invalid_ids:  # an invalid call's OpenAI mirror is counted below
                texts += (name, canonical_json(args))
        for tool_call in message.tool_calls:
            if not tool_call.get(
                "id"
            ):  # no id, so no mirror to match: counted from tool_calls alone
                texts += (tool_call.get("name") or "", canonical_json(tool_call.get("args")))
        for bad in message.invalid_tool_calls:
            texts += (bad.get("name") or "", bad.get("args") or "")

    content = message.content
    texts.append(content_text(content))
    for block in content if isinstance(content, list) else ():
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(block, str) or (kind == "text" and isinstance(block.get("text"), str)):
            continue  # in content_text
        if kind in _IMAGE_BLOCKS:
            fixed += TOKENS_PER_IMAGE
        elif call_block_id(block) not in counted_calls:  # a call block is counted above as a call
            texts.append(canonical_json(block))
    return tuple(t for t in texts if t), fixed


DEFAULT_CACHE_SIZE = 50_000
"""Live message objects whose counts a :class:`TokenCounter` remembers (oldest dropped first)."""
_CONTENT_CACHE_CHARS = 4_000_000
"""Characters of message text whose counts a :class:`TokenCounter` remembers by content."""


class TokenCounter:
    """Count the tokens of messages with a tiktoken encoding; call it on a message list (it fits
    ``trim_messages(token_counter=...)``).

    ``TokenCounter()`` uses cl100k_base, ``TokenCounter("o200k_base")`` an encoding by name,
    ``TokenCounter(model="gpt-4o")`` a model's. The encoding loads at the first count, never
    from the network unless ``download=True``; an unknown name raises
    :class:`~langchain_promptstrat.errors.ConfigError` then. A count is cached under exactly
    what the message sends (re-created messages hit; the cache is bounded by characters) and,
    weakly, by message object (``cache_size`` entries).
    """

    def __init__(
        self,
        encoding: str | None = None,
        *,
        model: str | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        load_timeout: float = DEFAULT_LOAD_TIMEOUT,
        download: bool = False,
        call_ids: bool = True,
    ) -> None:
        """Build a counter for ``encoding`` or ``model`` (not both); nothing is loaded yet."""
        if encoding is not None and model is not None:
            raise ConfigError(
                f"give encoding={encoding!r} or model={model!r}, not both: the model only chooses "
                "the encoding"
            )
        if encoding is not None and not isinstance(encoding, str):
            raise ConfigError(
                f"encoding must be a tiktoken encoding name, got {type(encoding).__name__}"
            )
        if encoding is None:
            encoding = DEFAULT_ENCODING if model is None else _encoding_for_model(model)
        self.encoding_name: str = encoding
        """The encoding asked for (by name, or chosen from the model)."""
        self.call_ids: bool = bool(call_ids)
        """Whether call ids are counted (the approximation without an encoding always counts
        them)."""
        self._load_timeout = load_timeout
        self._download = download
        self._resolved = False
        self._encoding: tiktoken.Encoding | None = None
        self._by_content: SizedCache[tuple[tuple[str, ...], int], int] = SizedCache(
            _CONTENT_CACHE_CHARS, max_entries=max(cache_size, 0)
        )
        self._by_identity: IdentityMemo[int] = IdentityMemo(cache_size)

    def __repr__(self) -> str:
        return (
            f"TokenCounter({self.encoding_name!r})"
            if self.call_ids
            else f"TokenCounter({self.encoding_name!r}, call_ids=False)"
        )

    @property
    def encoding(self) -> tiktoken.Encoding | None:
        """Return the loaded tiktoken encoding (loading it now), or None when counts are
        approximate."""
        if not self._resolved:
            self._encoding = _load_encoding(self.encoding_name, self._load_timeout, self._download)
            self._resolved = True
        return self._encoding

    @property
    def exact(self) -> bool:
        """Return whether counts come from tiktoken (True) or the approximation (False)."""
        return self.encoding is not None

    def _count_parts(self, texts: tuple[str, ...], fixed: int) -> int:
        key = (texts, fixed)
        count: int | None = self._by_content.get(key)
        if count is None:
            encode = self._encoding.encode_ordinary  # type: ignore[union-attr]  # only called once loaded
            count = fixed + sum(len(encode(text)) for text in texts)
            self._by_content.put(key, count, sum(map(len, texts)) + 64)
        return count

    def count_message(self, message: BaseMessage) -> int:
        """Return the tokens ``message`` costs in a prompt: overhead, content and tool calls."""
        if not isinstance(message, BaseMessage):
            raise InvalidMessagesError(
                f"expected a BaseMessage, got {type(message).__name__}; convert with "
                "langchain_core.messages.convert_to_messages first"
            )
        if self.encoding is None:
            return count_tokens_approximately([message])
        # the same object counted again (a replay, a trimmer probing cut points); replacing its
        # content or calls misses
        calls = getattr(message, "tool_calls", None)
        content = message.content
        count = self._by_identity.get(message, content, calls)
        if count is None:
            count = self._count_parts(*_sent_parts(message, self.call_ids))
            self._by_identity.put(message, count, content, calls)
        return count

    def __call__(self, messages: Sequence[BaseMessage], /) -> int:
        if isinstance(messages, BaseMessage):
            raise InvalidMessagesError(
                "expected a list of messages, got a single message; wrap it in a list"
            )
        return sum(self.count_message(message) for message in messages)


_default_counter: TokenCounter | None = None


def as_token_counter(obj: Any = None) -> Callable[[Sequence[BaseMessage]], int]:
    """Return a function counting the tokens of a message list, from whatever counts tokens.

    None (one process-wide :class:`TokenCounter`, so its cache carries over), ``"approximate"``
    (``count_tokens_approximately``), a :class:`TokenCounter`, anything with
    ``get_num_tokens_from_messages`` (a chat model), or any callable taking a message list.
    """
    global _default_counter
    if isinstance(obj, str) and obj == "approximate":
        return count_tokens_approximately
    if obj is None:
        if _default_counter is None:
            _default_counter = TokenCounter()
        return _default_counter
    if isinstance(obj, TokenCounter):
        return obj
    model_count: Callable[[list[BaseMessage]], int] | None = getattr(
        obj, "get_num_tokens_from_messages", None
    )
    if callable(model_count):

        def count_with_model(messages: Sequence[BaseMessage], /) -> int:
            return model_count(list(messages))

        return count_with_model
    if callable(obj):
        return cast(
            "Callable[[Sequence[BaseMessage]], int]", obj
        )  # documented: any callable taking a message list
    raise ConfigError(
        f'cannot count tokens with a {type(obj).__name__}; pass None, "approximate", a '
        "TokenCounter, "
        "a chat model or a function taking a message list"
    )


def message_counter(counter: CountTokens) -> Callable[[BaseMessage], int]:
    """Return one message's share of ``counter``'s count of a list: exact for a
    :class:`TokenCounter`, else its count alone minus an empty list's."""
    if isinstance(counter, TokenCounter):  # it remembers each message object's count
        return counter.count_message
    base = counter([])
    return lambda message: counter([message]) - base


def _text_tokens(counter: Any, text: str) -> int:
    """Return the tokens of ``text`` with ``counter``'s encoding (about four characters a token when
    it has none)."""
    encoding = counter.encoding if isinstance(counter, TokenCounter) else None
    return len(encoding.encode_ordinary(text)) if encoding is not None else -(-len(text) // 4)


def call_id_tokens(message: BaseMessage, counter: Any = None) -> int:
    """Return the tokens of the call ids ``message`` sends, exactly what
    :meth:`TokenCounter.count_message` adds for them."""
    counter = as_token_counter(counter)
    text = _call_ids_text(message)
    return _text_tokens(counter, text) if text else 0


def missing_call_id_tokens(message: BaseMessage, counter: Any = None) -> int:
    """Return the call-id tokens of ``message`` that ``counter`` leaves out, so a ceiling counts ids
    once whatever the counter."""
    counter = as_token_counter(counter)
    if isinstance(counter, TokenCounter):
        counted = counter.call_ids or counter.encoding is None
    else:
        counted = (
            counter is count_tokens_approximately
        )  # a foreign counter's rules are unknown: add them
    return 0 if counted else call_id_tokens(message, counter)


def tool_schema_tokens(tools: Sequence[Any] | None, counter: Any = None) -> int:
    """Return the tokens of the bound tools' schemas as OpenAI function JSON (by ``repr`` when one
    cannot be converted).

    Providers wrap these in their own framing, which the ceiling's margin covers.
    """
    if not tools:
        return 0
    counter = as_token_counter(counter)
    total = 0
    for tool in tools:
        try:
            text = canonical_json(convert_to_openai_tool(tool))
        except Exception:  # noqa: BLE001 -- a schema we cannot render is still sent: count something
            text = repr(tool)
        total += _text_tokens(counter, text) + TOKENS_PER_MESSAGE
    return total
