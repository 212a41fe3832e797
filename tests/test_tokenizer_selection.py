"""Which tokenizer counts: the model's own encoding, offline where a copy is installed."""

from __future__ import annotations

import json
import re
import warnings

import pytest
from langchain_core.messages import HumanMessage
from realruns import realruns_dir

from langchain_promptstrat.extras import install_hint
from langchain_promptstrat.tokens import TokenCounter, TokenizerUnavailableWarning


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-5-mini", "o200k_base"),
        ("openai:gpt-4o", "o200k_base"),
        ("azure/gpt-4.1", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("claude-sonnet-4-5", "cl100k_base"),
    ],
)
def test_the_model_chooses_its_encoding(model, encoding):
    """Current OpenAI models count with o200k_base; models tiktoken has no tokenizer for with
    cl100k_base (saying so: tests/test_tokens.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TokenizerUnavailableWarning)
        assert TokenCounter(model=model).encoding_name == encoding


def test_o200k_counts_exactly_offline_with_quicktok():
    """With quicktok-v1 installed, o200k_base loads without a network and counts ordinary text as
    its BPE does."""
    quicktok = pytest.importorskip("quicktok")
    counter = TokenCounter(model="gpt-5-mini")
    assert counter.exact
    text = "def f(x):\n    return x ** 2  # héllo <|endoftext|>"
    assert counter([HumanMessage(text)]) == 3 + 1 + len(
        quicktok.get_encoding("o200k_base").encode_ordinary(text)
    )


def test_quicktok_counts_special_token_text_as_plain_text(monkeypatch):
    """A message quoting ``<|endoftext|>`` counts as text through quicktok too: its encode() would
    refuse it."""
    import sys
    import types

    from langchain_promptstrat.tokens import encodings

    class Strict:
        def encode(self, text):
            if "<|endoftext|>" in text:
                raise ValueError(
                    "Encountered text corresponding to disallowed special token '<|endoftext|>'."
                )
            return list(text.encode())

        def encode_ordinary(self, text):
            return list(text.encode())

    monkeypatch.setitem(
        sys.modules, "quicktok", types.SimpleNamespace(get_encoding=lambda name: Strict())
    )
    monkeypatch.setattr(encodings, "_LOADED", {})
    text = "the log ends with <|endoftext|>"
    assert TokenCounter("o200k_base")([HumanMessage(text)]) == 3 + len(b"user") + len(
        text.encode()
    )  # overhead, role, text


def test_quicktok_agrees_with_tiktoken_on_real_transcripts():
    """The premise of trusting quicktok's o200k_base: its cl100k_base equals tiktoken's on every
    real message."""
    quicktok = pytest.importorskip("quicktok")
    ours, reference = quicktok.get_encoding("cl100k_base"), TokenCounter().encoding
    texts = [
        str(m.get("content") or "")
        for path in sorted(realruns_dir("raw").glob("*.traj.json"))
        for m in json.loads(path.read_text())["messages"]
    ]
    assert texts and all(list(ours.encode(t)) == reference.encode_ordinary(t) for t in texts)


def test_without_an_offline_o200k_the_warning_names_the_package_that_bundles_it(
    monkeypatch, tmp_path
):
    """When o200k_base cannot load, the one warning points to the tokenizers extra, not to
    cl100k_base."""
    import sys

    from langchain_promptstrat import tokens
    from langchain_promptstrat.tokens import encodings

    monkeypatch.setitem(sys.modules, "quicktok", None)  # not installed
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache
    monkeypatch.setattr(encodings, "_LOADED", {})
    with pytest.warns(
        tokens.TokenizerUnavailableWarning, match=re.escape(install_hint("tokenizers"))
    ):
        assert not TokenCounter(model="gpt-5-mini").exact
