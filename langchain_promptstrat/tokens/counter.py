"""The token counter: :class:`TokenCounter` (a message list's tokens, cached per message) and :func:`as_token_counter`.

A :class:`TokenCounter` counts each message as the sum of the texts it sends
(:mod:`~langchain_promptstrat.tokens.message_parts`) encoded with the encoding
:mod:`~langchain_promptstrat.tokens.encodings` loads, or approximately when none loads; a
list counts as the sum of its messages. :func:`as_token_counter` turns whatever counts
tokens (None, ``"approximate"``, a counter, a chat model, a function) into a function of a
message list, and holds the process-wide default counter.

Must not load encodings itself (it asks ``encodings``) nor decide what a message sends
(``message_parts`` does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import tiktoken
from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

from langchain_promptstrat.messages.history_memo import IdentityMemo, SizedCache
from langchain_promptstrat.defaults import DEFAULT_ENCODING
from langchain_promptstrat.errors import ConfigError, InvalidMessagesError
from langchain_promptstrat.tokens.encodings import DEFAULT_LOAD_TIMEOUT, _encoding_for_model, _load_encoding
from langchain_promptstrat.tokens.message_parts import _sent_parts

__all__ = ["DEFAULT_CACHE_SIZE", "TokenCounter", "as_token_counter"]


DEFAULT_CACHE_SIZE = 50_000
"""Live message objects whose counts a :class:`TokenCounter` remembers (oldest dropped first)."""

_CONTENT_CACHE_CHARS = 4_000_000
"""Characters of message text whose counts a :class:`TokenCounter` remembers by content."""

class TokenCounter:
    """Count the tokens of messages with a tiktoken encoding; call it on a message list.

    ``TokenCounter()`` uses cl100k_base, ``TokenCounter("o200k_base")`` an encoding by
    name, ``TokenCounter(model="gpt-4o")`` the encoding of a model (o200k_base for current
    OpenAI models, cl100k_base otherwise). ``counter(messages)`` fits the
    ``token_counter`` argument of ``langchain_core.messages.trim_messages``. Call ids are
    counted (every request carries them); ``call_ids=False`` leaves them out, which is
    closer to an OpenAI bill (see :mod:`langchain_promptstrat.tokens`).

    The encoding loads at the first count, not at construction or import. cl100k_base comes
    from the BPE file this package ships (OpenAI's file, verified by its sha256), so it
    works without a network or a cache. Other encodings load from tiktoken's disk cache; the network is used only
    with ``download=True`` (and then for at most ``load_timeout`` seconds), because a
    count runs before a model call and must never wait on a download. An encoding that
    cannot be loaded gives one :class:`TokenizerUnavailableWarning` per process and
    approximate counts (``count_tokens_approximately``) from then on, at once. An encoding name tiktoken does not know
    raises :class:`~langchain_promptstrat.errors.ConfigError` at the first count.

    Each message's count is cached under exactly what it sends (role, name, texts, tool
    calls, image count), never under ``id()``: re-created messages hit the cache, two
    messages that send different text never share an entry, and counting a conversation
    that grew by one message encodes only that message. That cache is bounded by the
    characters it holds (a few megabytes), and a per-object memo of ``cache_size``
    entries holds messages only weakly, so a finished conversation is never kept alive.
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
                f"give encoding={encoding!r} or model={model!r}, not both: the model only chooses the encoding"
            )
        if encoding is not None and not isinstance(encoding, str):
            raise ConfigError(f"encoding must be a tiktoken encoding name, got {type(encoding).__name__}")
        if encoding is None:
            encoding = DEFAULT_ENCODING if model is None else _encoding_for_model(model)
        self.encoding_name: str = encoding
        """The encoding asked for (by name, or chosen from the model)."""
        self.call_ids: bool = bool(call_ids)
        """Whether call ids are counted (the approximation without an encoding always counts them)."""
        self._load_timeout = load_timeout
        self._download = download
        self._resolved = False
        self._encoding: tiktoken.Encoding | None = None
        self._by_content: SizedCache[tuple[tuple[str, ...], int], int] = SizedCache(
            _CONTENT_CACHE_CHARS, max_entries=max(cache_size, 0)
        )
        self._by_identity: IdentityMemo[int] = IdentityMemo(cache_size)

    def __repr__(self) -> str:
        return f"TokenCounter({self.encoding_name!r})" if self.call_ids else f"TokenCounter({self.encoding_name!r}, call_ids=False)"

    @property
    def encoding(self) -> tiktoken.Encoding | None:
        """Return the loaded tiktoken encoding (loading it now), or None when counts are approximate."""
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
                f"expected a BaseMessage, got {type(message).__name__}; "
                "convert with langchain_core.messages.convert_to_messages first"
            )
        if self.encoding is None:
            return count_tokens_approximately([message])
        # Fast path: the same message object counted again (a replay, a trimmer probing
        # many cut points). The memo holds the message weakly (a finished conversation is
        # freed) and checks the content and calls objects, so replacing either is a miss.
        calls = getattr(message, "tool_calls", None)
        content = message.content
        count = self._by_identity.get(message, content, calls)
        if count is None:
            count = self._count_parts(*_sent_parts(message, self.call_ids))
            self._by_identity.put(message, count, content, calls)
        return count

    def __call__(self, messages: Sequence[BaseMessage], /) -> int:
        """Return the tokens of ``messages``: the sum of their :meth:`count_message` counts."""
        if isinstance(messages, BaseMessage):
            raise InvalidMessagesError("expected a list of messages, got a single message; wrap it in a list")
        return sum(self.count_message(message) for message in messages)


_default_counter: TokenCounter | None = None


def as_token_counter(obj: Any = None) -> Callable[[Sequence[BaseMessage]], int]:
    """Return a function counting the tokens of a message list, from whatever counts tokens.

    Accepts None (one process-wide :class:`TokenCounter`, so its cache carries over
    between calls), ``"approximate"`` (``count_tokens_approximately``, as in
    ``trim_messages``), a :class:`TokenCounter`, a chat model or any object with
    ``get_num_tokens_from_messages`` (its own count, which may need its tokenizer or an
    API call), or any callable taking a message list.
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
    model_count: Callable[[list[BaseMessage]], int] | None = getattr(obj, "get_num_tokens_from_messages", None)
    if callable(model_count):

        def count_with_model(messages: Sequence[BaseMessage], /) -> int:
            return model_count(list(messages))

        return count_with_model
    if callable(obj):
        return cast("Callable[[Sequence[BaseMessage]], int]", obj)  # documented: any callable taking a message list
    raise ConfigError(
        f"cannot count tokens with a {type(obj).__name__}; pass None, \"approximate\", a TokenCounter, "
        "a chat model or a function taking a message list"
    )
