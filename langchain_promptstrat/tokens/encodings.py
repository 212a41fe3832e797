"""Loading tiktoken encodings without waiting on the network: cl100k_base from the file this package
ships, o200k_base from quicktok-v1, others from tiktoken's cache.

tiktoken downloads only with ``download=True``, in a daemon thread bounded by a timeout. An
encoding that cannot be loaded is decided once per process (``_LOADED``), with one
:class:`TokenizerUnavailableWarning`; counts then approximate.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any

import tiktoken

from langchain_promptstrat.defaults import DEFAULT_ENCODING
from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.extras import install_hint

DEFAULT_LOAD_TIMEOUT = 10.0
"""Seconds the first count waits for tiktoken to load an encoding before approximating:
tiktoken downloads without a timeout, and a proxy that never answers would block for ever."""

_CL100K_FILE = Path(__file__).with_name("cl100k_base.tiktoken.xz")
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
"""sha256 of OpenAI's ``cl100k_base.tiktoken``, the hash tiktoken checks when it downloads the
file: the copy this package ships (xz-compressed, 548 KB) is that file, checked when loaded."""


@functools.cache  # one Encoding per process, as tiktoken's registry keeps its own
def _bundled_cl100k() -> tiktoken.Encoding:
    """Return cl100k_base from the BPE file this package ships, or raise if it is not that file.

    Read here, not through ``tiktoken.load``, which would copy it into tiktoken's cache; the
    split pattern and special tokens are those of ``tiktoken_ext.openai_public.cl100k_base``.
    """
    # here, not at the top: a Python built without it still counts (approximately, with a warning)
    import lzma

    contents = lzma.decompress(_CL100K_FILE.read_bytes())
    if hashlib.sha256(contents).hexdigest() != CL100K_SHA256:
        raise ValueError(
            f"{_CL100K_FILE} is not OpenAI's cl100k_base.tiktoken (sha256 {CL100K_SHA256})"
        )
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in map(bytes.split, contents.splitlines())
    }
    special = {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    }
    pattern = (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
        r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    )
    return tiktoken.Encoding(
        DEFAULT_ENCODING, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special
    )


_QUICKTOK_ENCODINGS = ("o200k_base", "o200k_harmony")
"""Encodings served offline by the optional ``quicktok-v1`` package when it is installed (tiktoken
must download them)."""


def _offline_encoding(name: str) -> Any:
    """Return an offline copy of encoding ``name`` (quicktok's o200k_base) with a counter's one
    method, or None."""
    if name not in _QUICKTOK_ENCODINGS:
        return None
    try:
        import quicktok  # type: ignore[import-not-found,import-untyped,unused-ignore]

        tokenizer = quicktok.get_encoding(name)
    except Exception:  # not installed, or its data cannot be read: tiktoken's own load decides
        return None
    # encode() refuses special-token text (``<|endoftext|>``); encode_ordinary counts it as plain
    # text
    encode = getattr(tokenizer, "encode_ordinary", None) or tokenizer.encode
    return SimpleNamespace(encode_ordinary=lambda text: list(encode(text)))


_O200K_MODEL = re.compile(
    r"(?:^|[/:.])(?:chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o1|o3|o4)(?![a-z0-9])"
)
"""Current OpenAI model families (o200k_base), also behind a provider prefix such as
``openai:``, ``azure/`` or ``ft:``. gpt-oss uses o200k_harmony, which is o200k_base plus
special tokens that ordinary text never produces."""


class TokenizerUnavailableWarning(UserWarning):
    """The tokenizer a count needs is not at hand; counts are approximate.

    An encoding that could not be loaded, or a model whose encoding is unknown.
    """


def _encoding_for_model(model: str) -> str:
    """Return ``o200k_base`` for current OpenAI models, else ``cl100k_base`` (shipped).

    A model whose own encoding is not ``cl100k_base`` by tiktoken's table (another provider's,
    a misspelt name) gets one :class:`TokenizerUnavailableWarning` naming the encoding used.
    """
    name = model.strip().lower()
    if _O200K_MODEL.search(name):
        return "o200k_base"
    if _tiktoken_encoding_name(name) != DEFAULT_ENCODING:
        warnings.warn(
            f"no tokenizer is known for model {model!r}: tokens are counted with "
            f"{DEFAULT_ENCODING}, which this package ships and which only approximates another "
            "model's tokenizer; name an encoding (encoding=..., --encoding) to choose one",
            TokenizerUnavailableWarning,
            stacklevel=_caller_outside_this_package(),
        )
    return DEFAULT_ENCODING


def _tiktoken_encoding_name(model: str) -> str | None:
    """Return tiktoken's encoding for ``model``, also behind ``openai:`` or ``azure/``, or None."""
    for candidate in (model, model.split("/", 1)[-1], model.split(":", 1)[-1]):
        try:
            return tiktoken.model.encoding_name_for_model(candidate)
        except KeyError:
            continue
    return None


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
            raise TimeoutError(
                "not tried: an earlier tiktoken download still hangs and holds tiktoken's lock"
            )
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
        raise TimeoutError(
            f"still loading after {timeout:g} s (a proxy or firewall that never answers?)"
        )
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
    """Return the directory tiktoken caches downloads in, as tiktoken.load.read_file_cached chooses
    it."""
    default = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR", default))


def _needs_download(name: str) -> bool:
    """Return whether loading ``name`` would fetch a file from the network (only tiktoken's own
    encodings can)."""
    if name in tiktoken.registry.ENCODINGS or name not in _DOWNLOADED_FILES:
        return False
    cache_dir = _tiktoken_cache_dir()
    if cache_dir == "":
        return True
    return not all(
        os.path.exists(
            os.path.join(cache_dir, hashlib.sha1((_BLOB_ROOT + path).encode()).hexdigest())
        )
        for path in _DOWNLOADED_FILES[name]
    )


def _load_encoding(name: str, timeout: float, download: bool = False) -> tiktoken.Encoding | None:
    """Return the encoding ``name``, or None (after one warning) when it cannot be loaded now; the
    network only with ``download``."""
    with _LOAD_LOCK:
        if name in _LOADED:
            return _LOADED[name]
        offline = _offline_encoding(name)
        if offline is not None:
            _LOADED[name] = offline
            return offline  # type: ignore[no-any-return]
        failures: list[str] = []
        if name == DEFAULT_ENCODING:
            try:
                _LOADED[name] = _bundled_cl100k()
                return _LOADED[name]
            except Exception as exc:  # a Python built without lzma, or a damaged install
                failures.append(f"the bundled copy: {type(exc).__name__}: {exc}")
        if not download and _needs_download(name):
            failures.append(
                f"{name}: not installed offline and not in tiktoken's cache "
                f"({_tiktoken_cache_dir()}); "
                "not downloaded because download=False"
            )
        else:
            try:
                _LOADED[name] = _get_encoding_within(name, timeout)
                return _LOADED[name]
            except _UnknownEncoding as exc:
                raise ConfigError(
                    f"unknown tiktoken encoding {name!r}; known: {exc}; or pass model=... to "
                    "choose one"
                ) from None
            except Exception as exc:  # requests errors, hash mismatch, timeout: all mean "not here"
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
        _LOADED[name] = None
    offline_copy = (
        f"install quicktok-v1, which bundles it: {install_hint('tokenizers')}; "
        "or count with cl100k_base, which this package ships (TokenCounter('cl100k_base'))"
        if name in _QUICKTOK_ENCODINGS
        else "reinstall langchain-promptstrat, which ships cl100k_base"
        if name == DEFAULT_ENCODING
        else "count with cl100k_base, which this package ships (TokenCounter('cl100k_base'))"
    )
    warnings.warn(
        f"tiktoken encoding {name!r} could not be loaded ({'; '.join(failures)}). Token counts "
        "fall back to langchain_core.messages.utils.count_tokens_approximately (about 4 characters "
        f"per token). To count exactly without a network, {offline_copy}, or download the "
        "encoding once with "
        f"TokenCounter({name!r}, download=True) into tiktoken's cache (TIKTOKEN_CACHE_DIR).",
        TokenizerUnavailableWarning,
        stacklevel=_caller_outside_this_package(),
    )
    return None


def _caller_outside_this_package() -> int:
    """Return the ``stacklevel`` of the first caller outside the ``tokens`` package: the warning
    points at the code that counted."""
    package = __name__.rpartition(".")[0] + "."
    frame: FrameType | None
    level, frame = 1, sys._getframe(1)
    while frame is not None and f"{frame.f_globals.get('__name__')}.".startswith(package):
        level, frame = level + 1, frame.f_back
    return level
