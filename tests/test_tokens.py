"""Specification of langchain_promptstrat.tokens: what a message list costs, offline.

Exact counts use ``cl100k_base``, whose BPE file the package ships (no network); every
other encoding is made available or unavailable on purpose by patching
``tiktoken.get_encoding``, so the tests behave the same on a connected machine. A test that
needs an encoding no offline package bundles uses ``p50k_base`` or ``r50k_base`` (neither
the package nor quicktok-v1 ships them), or ``o200k_base`` with the ``no_offline_o200k``
fixture, so the tests also behave the same with or without the ``tokenizers`` extra.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import subprocess
import sys
import threading
import warnings

import pytest
import requests
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

from langchain_promptstrat import tokens
from langchain_promptstrat.errors import ConfigError, InvalidMessagesError
from langchain_promptstrat.testing import ScriptedChatModel, build_agent_run
from langchain_promptstrat.tokens import (
    TokenCounter,
    TokenizerUnavailableWarning,
    as_token_counter,
    encodings,
)
from langchain_promptstrat.tokens import counter as counter_module

OFFLINE = "cl100k_base"
ENCODING = encodings._bundled_cl100k()
OVERHEAD = 3
"""Tokens every message costs besides its texts: the OpenAI cookbook's tokens_per_message."""


def n(text: str) -> int:
    """Return the real cl100k_base token count of ``text``."""
    return len(tiktoken.Encoding.encode_ordinary(ENCODING, text))  # unaffected by encoder_spy


def call(call_id: str | None, name: str, args: dict) -> dict:
    """Return a LangChain tool call dict."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def fresh_load_state(monkeypatch, tmp_path):
    """Every test decides afresh which encodings load: no memo, no hung load, no default counter, an
    empty tiktoken cache."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken-cache"))
    monkeypatch.setattr(encodings, "_LOADED", {})
    monkeypatch.setattr(encodings, "_HUNG_LOADS", [])
    monkeypatch.setattr(counter_module, "_default_counter", None)


@pytest.fixture
def counter() -> TokenCounter:
    """An exact counter on the bundled cl100k_base copy."""
    return TokenCounter(OFFLINE)


@pytest.fixture
def only_offline_loads(monkeypatch) -> list[str]:
    """tiktoken as on an air-gapped machine: the bundled copy loads, downloads fail; holds the names
    asked for."""
    asked: list[str] = []

    def get_encoding(name: str) -> tiktoken.Encoding:
        asked.append(name)
        raise requests.ConnectionError(
            f"cannot resolve openaipublic.blob.core.windows.net ({name})"
        )

    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
    return asked


@pytest.fixture
def no_offline_o200k(monkeypatch) -> None:
    """o200k_base has no offline copy, as without the ``tokenizers`` extra: quicktok-v1 cannot be
    imported."""
    monkeypatch.setitem(sys.modules, "quicktok", None)


@pytest.fixture
def nothing_loads(monkeypatch) -> None:
    """tiktoken with every encoding failing to load, the bundled copy included."""

    def get_encoding(name: str) -> tiktoken.Encoding:
        raise requests.ConnectionError(f"cannot load {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)


@pytest.fixture
def hanging_download(monkeypatch) -> threading.Event:
    """tiktoken whose downloads block until the returned event is set (set again at teardown)."""
    release = threading.Event()
    real_get_encoding = tiktoken.get_encoding

    def get_encoding(name: str) -> tiktoken.Encoding:
        if name in tiktoken.registry.ENCODINGS:
            return real_get_encoding(name)
        release.wait(5)
        raise requests.ConnectionError(f"gave up on {name}")

    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
    yield release
    release.set()


class EncoderSpy:
    """Records every text the counter's encoding is asked to encode."""

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.texts: list[str] = []
        self._encode = encoding.encode_ordinary

    def __call__(self, text: str) -> list[int]:
        self.texts.append(text)
        return self._encode(text)


@pytest.fixture
def encoder_spy(monkeypatch) -> EncoderSpy:
    """A spy on the encode calls of the bundled cl100k_base copy, which every OFFLINE counter
    shares."""
    spy = EncoderSpy(ENCODING)
    monkeypatch.setattr(ENCODING, "encode_ordinary", spy)
    return spy


# --------------------------------------------------------------------------- message strategies

texts = st.text(max_size=30)
call_ids = st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True)
tool_names = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
tool_args = st.dictionaries(
    st.text(max_size=8),
    st.one_of(st.text(max_size=20), st.integers(), st.booleans(), st.none()),
    max_size=3,
)
blocks = st.one_of(
    texts.map(lambda t: {"type": "text", "text": t}),
    texts,
    st.just({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}),
    texts.map(lambda t: {"type": "thinking", "thinking": t}),
)
contents = st.one_of(texts, st.lists(blocks, max_size=3))


@st.composite
def ai_messages(draw) -> AIMessage:
    """An AIMessage with up to two calls, recorded plainly, OpenAI-style or Anthropic-style."""
    calls = draw(
        st.lists(st.tuples(call_ids, tool_names, tool_args), max_size=2, unique_by=lambda c: c[0])
    )
    text = draw(texts)
    tool_calls = [call(cid, name, args) for cid, name, args in calls]
    mirror = draw(st.sampled_from([None, "openai", "anthropic"]))
    if mirror == "openai" and calls:
        raw = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for cid, name, args in calls
        ]
        return AIMessage(content=text, tool_calls=tool_calls, additional_kwargs={"tool_calls": raw})
    if mirror == "anthropic":
        content = [{"type": "text", "text": text}] + [
            {"type": "tool_use", "id": cid, "name": name, "input": args}
            for cid, name, args in calls
        ]
        return AIMessage(content=content, tool_calls=tool_calls)
    return AIMessage(content=text, tool_calls=tool_calls)


messages = st.one_of(
    st.builds(HumanMessage, content=contents, name=st.none() | tool_names),
    st.builds(SystemMessage, content=texts),
    ai_messages(),
    st.builds(ToolMessage, content=contents, tool_call_id=call_ids),
)
message_lists = st.lists(messages, max_size=6)


# --------------------------------------------------------------------------- tests


class TestEncodingChoice:
    @pytest.mark.parametrize(
        "model",
        [
            "gpt-4o",
            "gpt-4o-mini",
            "chatgpt-4o-latest",
            "gpt-4.1-nano",
            "gpt-4.5-preview",
            "gpt-5",
            "gpt-5-mini",
            "gpt-5.1",
            "o1",
            "o1-mini",
            "o3-mini",
            "o4-mini",
            "openai:gpt-4o",
            "azure/gpt-4.1",
            "ft:gpt-4o-mini:acme::abc123",
            "GPT-4o",
        ],
    )
    def test_current_openai_models_use_o200k_base(self, model):
        """Current OpenAI families, with or without a provider prefix, map to o200k_base."""
        assert TokenCounter(model=model).encoding_name == "o200k_base"

    @pytest.mark.parametrize(
        "model", ["gpt-4", "gpt-4-turbo", "gpt-3.5-turbo", "openai:gpt-4", "azure/gpt-35-turbo"]
    )
    def test_older_openai_models_use_cl100k_base_without_a_word(self, model):
        """Older OpenAI models count with their own encoding, cl100k_base: nothing to warn about."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert TokenCounter(model=model).encoding_name == "cl100k_base"

    @pytest.mark.parametrize(
        "model", ["claude-sonnet-4-5", "gemini-2.5-pro", "llama3", "foo3", "no-such-model"]
    )
    def test_a_model_without_a_known_tokenizer_counts_with_cl100k_base_and_says_so(self, model):
        """Another provider's model, or a misspelt name, counts with cl100k_base and warns naming
        it, as a model whose encoding cannot be loaded does: a silent cl100k_base count passed for
        the model's own."""
        said = f"no tokenizer is known for model '{model}': tokens are counted with cl100k_base"
        with pytest.warns(TokenizerUnavailableWarning, match=said):
            assert TokenCounter(model=model).encoding_name == "cl100k_base"

    def test_default_is_cl100k_base(self):
        """Without encoding or model the counter uses cl100k_base."""
        assert TokenCounter().encoding_name == "cl100k_base"

    def test_encoding_and_model_together_are_rejected(self):
        """Giving both an encoding and a model is ambiguous and raises ConfigError."""
        with pytest.raises(ConfigError, match="not both"):
            TokenCounter("o200k_base", model="gpt-4")

    def test_construction_loads_nothing(self, only_offline_loads):
        """Building a counter asks tiktoken for nothing: the encoding loads at the first count."""
        counter = TokenCounter(model="gpt-4o")
        assert counter.encoding_name == "o200k_base"
        assert only_offline_loads == []

    def test_unknown_encoding_name_raises_at_first_count(self):
        """A name tiktoken does not know is a ConfigError that lists the known names, not a
        fallback."""
        counter = TokenCounter("cl100k")
        with pytest.raises(
            ConfigError, match=r"unknown tiktoken encoding 'cl100k'; known: .*cl100k_base"
        ):
            counter([HumanMessage("hi")])


class TestCountingRules:
    def test_string_content_costs_its_tokens_plus_overhead_and_role(self, counter):
        """A user message costs 3 + tokens('user') + the tokens of its text."""
        text = "The ingestion API returns 503 since the last release."
        assert counter([HumanMessage(text)]) == OVERHEAD + n("user") + n(text)

    @pytest.mark.parametrize(
        ("message", "role"),
        [
            (SystemMessage("be brief"), "system"),
            (HumanMessage("be brief"), "user"),
            (AIMessage("be brief"), "assistant"),
            (ToolMessage("be brief", tool_call_id=""), "tool"),
            (ChatMessage(content="be brief", role="critic"), "critic"),
            (
                SystemMessage("be brief", additional_kwargs={"__openai_role__": "developer"}),
                "developer",
            ),
        ],
    )
    def test_the_provider_role_name_is_counted(self, counter, message, role):
        """Each message pays for its provider role name (user, assistant, tool...)."""
        assert counter.count_message(message) == OVERHEAD + n(role) + n("be brief")

    def test_a_name_costs_one_token_plus_its_tokens(self, counter):
        """A message name adds the cookbook's 1 token plus the name's own tokens."""
        text = "hello"
        named = counter([HumanMessage(text, name="alice_the_reviewer")])
        assert named - counter([HumanMessage(text)]) == 1 + n("alice_the_reviewer")

    def test_a_tool_message_costs_its_content_and_call_id_not_its_name(self, counter):
        """A tool result costs its content and its tool_call_id (every request carries it);
        providers get no name."""
        short = ToolMessage("42 rows", tool_call_id="c1")
        long = ToolMessage("42 rows", tool_call_id="call_" + "x" * 40, name="query_db")
        assert counter([short]) == OVERHEAD + n("tool") + n("42 rows") + n("c1")
        assert counter([long]) == OVERHEAD + n("tool") + n("42 rows") + n("call_" + "x" * 40)

    def test_call_ids_false_leaves_the_ids_out(self):
        """TokenCounter(call_ids=False) counts a call and its output without their ids (closest to
        an OpenAI bill)."""
        counter = TokenCounter(OFFLINE, call_ids=False)
        message = AIMessage("", tool_calls=[call("call_1", "web_search", {"q": "503"})])
        assert counter([message]) == OVERHEAD + n("assistant") + n("web_search") + n('{"q": "503"}')
        assert counter([ToolMessage("42 rows", tool_call_id="call_1")]) == OVERHEAD + n("tool") + n(
            "42 rows"
        )
        assert repr(counter) == "TokenCounter('cl100k_base', call_ids=False)"

    def test_text_blocks_count_their_text(self, counter):
        """List content counts the text of its strings and text blocks, not their JSON wrapping."""
        content = [{"type": "text", "text": "first part, "}, "second part"]
        assert counter([HumanMessage(content)]) == OVERHEAD + n("user") + n(
            "first part, second part"
        )

    def test_an_image_costs_a_flat_85_tokens_whatever_its_size(self, counter):
        """Image blocks cost OpenAI's 85-token low-detail price, never their base64 length."""
        huge = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 100_000}}
        anthropic = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
        }
        text_only = counter([HumanMessage([{"type": "text", "text": "what is this?"}])])
        with_images = counter(
            [HumanMessage([{"type": "text", "text": "what is this?"}, huge, anthropic])]
        )
        assert with_images == text_only + 2 * 85

    def test_other_blocks_count_as_their_json(self, counter):
        """A block that is neither text, image nor a known call costs the tokens of its sorted
        JSON."""
        block = {"type": "thinking", "thinking": "check the retry loop", "signature": "abc"}
        expected = (
            OVERHEAD + n("assistant") + n(json.dumps(block, sort_keys=True, ensure_ascii=False))
        )
        assert counter([AIMessage([block])]) == expected

    def test_a_tool_call_costs_its_name_sorted_json_arguments_and_id(self, counter):
        """A call costs its name, json.dumps(args, sort_keys=True) and its id."""
        message = AIMessage(
            "", tool_calls=[call("call_1", "web_search", {"query": "503 errors", "limit": 3})]
        )
        expected = (
            OVERHEAD
            + n("assistant")
            + n("web_search")
            + n('{"limit": 3, "query": "503 errors"}')
            + n("call_1")
        )
        assert counter([message]) == expected

    def test_parallel_calls_cost_their_ids_joined_by_spaces(self, counter):
        """The ids of a message's calls count as one text, joined by spaces, each call once."""
        calls = [call("call_a1", "grep", {"p": "x"}), call("call_b2", "grep", {"p": "y"})]
        expected = (
            OVERHEAD
            + n("assistant")
            + 2 * n("grep")
            + n('{"p": "x"}')
            + n('{"p": "y"}')
            + n("call_a1 call_b2")
        )
        assert counter([AIMessage("", tool_calls=calls)]) == expected

    def test_non_ascii_arguments_count_as_written_not_escaped(self, counter):
        """Arguments keep non-ASCII characters, which costs fewer tokens than \\u escapes would."""
        args = {"query": "東京の天気予報"}
        message = AIMessage("", tool_calls=[call("call_1", "search", args)])
        as_written = n(json.dumps(args, ensure_ascii=False))
        assert counter([message]) == OVERHEAD + n("assistant") + n("search") + as_written + n(
            "call_1"
        )
        assert as_written < n(json.dumps(args))

    def test_a_call_without_an_id_is_still_counted(self, counter):
        """A call whose id is missing costs its name and arguments like any other."""
        message = AIMessage("", tool_calls=[call(None, "list_dir", {"path": "/srv"})])
        assert counter([message]) == OVERHEAD + n("assistant") + n("list_dir") + n(
            '{"path": "/srv"}'
        )

    def test_an_invalid_call_costs_its_name_and_raw_arguments(self, counter):
        """A call whose arguments are not JSON costs its name and the raw argument string."""
        raw = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "grep", "arguments": '{"pattern": "50'},
        }
        message = AIMessage("", additional_kwargs={"tool_calls": [raw]})
        assert message.invalid_tool_calls, (
            "langchain_core should have parsed this as an invalid call"
        )
        assert counter([message]) == OVERHEAD + n("assistant") + n("grep") + n(
            '{"pattern": "50'
        ) + n("call_1")

    def test_special_token_text_counts_as_plain_text(self, counter):
        """Text quoting <|endoftext|> is counted as ordinary text instead of raising."""
        text = "the tokenizer ends documents with <|endoftext|>"
        with pytest.raises(ValueError):
            ENCODING.encode(text)  # what a naive encode would do
        assert counter([HumanMessage(text)]) == OVERHEAD + n("user") + n(text)

    def test_an_empty_list_costs_nothing(self, counter):
        """No reply-priming tokens are added, so an empty list counts 0."""
        assert counter([]) == 0

    def test_non_messages_are_rejected(self, counter):
        """A single message instead of a list, or a dict inside the list, raises
        InvalidMessagesError."""
        with pytest.raises(InvalidMessagesError, match="wrap it in a list"):
            counter(HumanMessage("hi"))
        with pytest.raises(InvalidMessagesError, match="convert_to_messages"):
            counter([{"role": "user", "content": "hi"}])

    def test_trim_messages_accepts_the_counter(self, counter):
        """trim_messages keeps the newest messages that fit the budget measured by the counter."""
        history = [HumanMessage(f"question number {i} about the outage") for i in range(10)]
        budget = counter(history[-3:])
        kept = trim_messages(history, max_tokens=budget, token_counter=counter, strategy="last")
        assert kept == history[-3:]


class TestToolCallMirrors:
    def test_an_openai_mirror_counts_a_call_once(self, counter):
        """A call also recorded in additional_kwargs['tool_calls'] costs the same as without the
        mirror."""
        calls = [call("call_1", "read_file", {"path": "api/server.py"})]
        raw = [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"api/server.py"}'},
            }
        ]
        mirrored = AIMessage("", tool_calls=calls, additional_kwargs={"tool_calls": raw})
        assert counter([mirrored]) == counter([AIMessage("", tool_calls=calls)])

    def test_an_anthropic_tool_use_block_counts_a_call_once(self, counter):
        """A call also recorded as a tool_use block costs the same as the plain message."""
        calls = [call("toolu_1", "read_file", {"path": "api/server.py"})]
        blocks = [
            {"type": "text", "text": "Reading the server."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "read_file",
                "input": {"path": "api/server.py"},
            },
        ]
        plain = AIMessage("Reading the server.", tool_calls=calls)
        assert counter([AIMessage(blocks, tool_calls=calls)]) == counter([plain])

    def test_a_call_recorded_only_as_a_tool_use_block_is_counted(self, counter):
        """A tool_use block with no tool_calls entry still costs its name and arguments."""
        block = {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"pattern": "503"}}
        only_block = AIMessage([block])
        assert only_block.tool_calls == []
        assert counter([only_block]) == counter(
            [AIMessage("", tool_calls=[call("toolu_1", "grep", {"pattern": "503"})])]
        )

    def test_a_tool_use_blocks_id_is_counted_once(self, counter):
        """An Anthropic tool_use block's id costs its tokens once, with or without the tool_calls
        entry."""
        block = {
            "type": "tool_use",
            "id": "toolu_01A09q90qw",
            "name": "grep",
            "input": {"pattern": "503"},
        }
        expected = (
            OVERHEAD + n("assistant") + n("grep") + n('{"pattern": "503"}') + n("toolu_01A09q90qw")
        )
        assert counter([AIMessage([block])]) == expected
        assert (
            counter(
                [
                    AIMessage(
                        [block], tool_calls=[call("toolu_01A09q90qw", "grep", {"pattern": "503"})]
                    )
                ]
            )
            == expected
        )

    def test_an_anthropic_tool_result_block_costs_its_json_with_its_id(self, counter):
        """A user message holding a tool_result block costs the block's JSON, whose tool_use_id is
        the call id."""
        block = {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw", "content": "42 rows"}
        expected = OVERHEAD + n("user") + n(json.dumps(block, sort_keys=True, ensure_ascii=False))
        assert counter([HumanMessage([block])]) == expected

    @pytest.mark.parametrize("mirror", ["openai", "anthropic", "mixed"])
    def test_an_agent_run_costs_the_same_whatever_the_mirror(self, counter, mirror):
        """The same run recorded the way each provider integration records it has the same count."""
        assert counter(build_agent_run(40, mirror=mirror)) == counter(build_agent_run(40))


class TestFallback:
    def test_an_unavailable_encoding_warns_once_and_approximates(
        self, only_offline_loads, no_offline_o200k
    ):
        """Without the BPE file, one warning per process and count_tokens_approximately's counts."""
        history = build_agent_run(10)
        with pytest.warns(TokenizerUnavailableWarning) as caught:
            first = TokenCounter(
                "o200k_base"
            )  # o200k on purpose: gpt-4o's counter shares its decision
            counts = [first(history), first(history[:3]), TokenCounter(model="gpt-4o")(history)]
        assert len(caught) == 1
        approximate = count_tokens_approximately
        assert counts == [approximate(history), approximate(history[:3]), approximate(history)]
        assert first.exact is False

    def test_the_warning_names_the_encoding_the_cause_and_the_fallback(self, only_offline_loads):
        """The warning says which encoding failed, why, and what counts instead."""
        with pytest.warns(TokenizerUnavailableWarning) as caught:
            TokenCounter("p50k_base", download=True)([HumanMessage("hi")])
        text = str(caught[0].message)
        assert "'p50k_base'" in text
        assert "ConnectionError" in text
        assert "count_tokens_approximately" in text

    def test_each_unavailable_encoding_warns_once(self, only_offline_loads):
        """Two different unavailable encodings give one warning each."""
        with pytest.warns(TokenizerUnavailableWarning) as caught:
            for name in ("r50k_base", "p50k_base", "r50k_base", "p50k_base"):
                TokenCounter(name)([HumanMessage("hi")])
        assert sorted(str(w.message).split("'")[1] for w in caught) == ["p50k_base", "r50k_base"]

    def test_a_hanging_download_is_abandoned_after_the_timeout(self, hanging_download):
        """A download that never answers costs load_timeout seconds, then counts approximate."""
        counter = TokenCounter("r50k_base", load_timeout=0.05, download=True)
        with pytest.warns(TokenizerUnavailableWarning, match="still loading after 0.05 s"):
            count = counter([HumanMessage("hello there")])
        assert count == count_tokens_approximately([HumanMessage("hello there")])

    def test_a_hanging_download_makes_no_other_load_wait(self, hanging_download):
        """While a download hangs, other encodings give up at once, and loaded ones still count
        exactly."""
        exact = TokenCounter(OFFLINE)
        exact([HumanMessage("warm up")])  # now in tiktoken's memory
        with pytest.warns(TokenizerUnavailableWarning):
            TokenCounter("r50k_base", load_timeout=0.05, download=True)([HumanMessage("hi")])
        with pytest.warns(
            TokenizerUnavailableWarning, match="still hangs"
        ):  # not tried: no 30 s wait
            TokenCounter("p50k_base", load_timeout=30, download=True)([HumanMessage("hi")])
        encodings._LOADED.clear()
        assert TokenCounter(OFFLINE, load_timeout=30).exact is True


class TestNoNetworkByDefault:
    @pytest.fixture
    def network_trap(self, monkeypatch) -> list[str]:
        """tiktoken whose downloads hang for a minute; holds the names whose load reached
        tiktoken."""
        asked: list[str] = []
        real_get_encoding = tiktoken.get_encoding

        def get_encoding(name: str) -> tiktoken.Encoding:
            asked.append(name)
            if name in tiktoken.registry.ENCODINGS:
                return real_get_encoding(name)
            threading.Event().wait(60)
            raise requests.ConnectionError(name)

        monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
        return asked

    def test_an_uncached_encoding_is_never_downloaded_unless_asked(self, network_trap):
        """Without an offline copy or a cached file, the count is approximate at once and tiktoken
        is not asked."""
        message = HumanMessage("hello there")
        with pytest.warns(TokenizerUnavailableWarning) as caught:
            count = TokenCounter("p50k_base")([message])
        assert count == count_tokens_approximately([message])
        assert network_trap == []
        assert len(caught) == 1

    @pytest.mark.parametrize("name", ["o200k_base", "p50k_base"])
    def test_the_warning_is_complete(self, network_trap, no_offline_o200k, name):
        """The warning names the encoding, the cache it looked in, the fallback and both remedies,
        uncut."""
        with pytest.warns(TokenizerUnavailableWarning) as caught:
            TokenCounter(name)([HumanMessage("hi")])
        text = str(caught[0].message)
        assert os.environ["TIKTOKEN_CACHE_DIR"] in text
        assert (
            "count_tokens_approximately" in text
            and "count with cl100k_base, which this package ships" in text
        )
        assert text.endswith(
            f"TokenCounter({name!r}, download=True) into tiktoken's cache (TIKTOKEN_CACHE_DIR)."
        )
        # the package ships only cl100k_base: reinstalling it is never the remedy for another
        # encoding
        assert "reinstall" not in text

    def test_a_cached_encoding_loads_without_download(self, network_trap, monkeypatch):
        """A BPE file in tiktoken's cache is loaded (tiktoken reads it from disk) without
        download=True."""
        cache = os.environ["TIKTOKEN_CACHE_DIR"]
        os.makedirs(cache)
        url = "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken"
        open(os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()), "wb").close()
        monkeypatch.setattr(encodings, "_get_encoding_within", lambda name, timeout: ENCODING)
        assert TokenCounter("p50k_base").encoding is ENCODING

    def test_approximate_is_accepted_like_trim_messages(self):
        """as_token_counter("approximate") is count_tokens_approximately, as trim_messages'
        token_counter="approximate"."""
        assert as_token_counter("approximate") is count_tokens_approximately


class TestOfflineSubstitution:
    @pytest.fixture
    def damaged_copy(self, monkeypatch, tmp_path):
        """The shipped BPE file replaced by one that is not OpenAI's (a damaged install)."""
        damaged = tmp_path / "cl100k_base.tiktoken.xz"
        damaged.write_bytes(lzma.compress(b"IQ== 0\n"))
        monkeypatch.setattr(encodings, "_CL100K_FILE", damaged)
        monkeypatch.setattr(
            encodings, "_bundled_cl100k", encodings._bundled_cl100k.__wrapped__
        )  # read afresh, not from the process's copy

    def test_the_shipped_cl100k_base_is_tiktokens_own(self, monkeypatch):
        """tiktoken's own cl100k_base, handed the shipped file where it would download, is the
        encoding the counter uses: same ranks, pattern, special tokens."""
        from tiktoken_ext import openai_public

        def shipped_file(url: str, expected_hash: str) -> dict[bytes, int]:
            assert (
                url.endswith("/cl100k_base.tiktoken") and expected_hash == encodings.CL100K_SHA256
            )
            return ENCODING._mergeable_ranks

        monkeypatch.setattr(openai_public, "load_tiktoken_bpe", shipped_file)
        theirs = openai_public.cl100k_base()
        assert (theirs["pat_str"], theirs["special_tokens"]) == (
            ENCODING._pat_str,
            ENCODING._special_tokens,
        )
        assert len(ENCODING._mergeable_ranks) == 100_256

    def test_cl100k_base_counts_exactly_with_no_network_and_no_cache(self, tmp_path):
        """In a fresh process whose sockets are refused and whose tiktoken cache is empty,
        cl100k_base counts exactly, warns nothing and writes no cache."""
        cache = tmp_path / "empty-cache"
        cache.mkdir()
        code = (
            "import socket, warnings\n"
            "class Refused(socket.socket):\n"
            "    def connect(self, *a): raise OSError('no network')\n"
            "socket.socket = Refused\n"
            "warnings.simplefilter('error')\n"
            "from langchain_core.messages import HumanMessage\n"
            "from langchain_promptstrat import TokenCounter\n"
            "counter = TokenCounter()\n"
            "print(counter.exact, counter([HumanMessage('The ingestion API returns 503 since the "
            "last release.')]))\n"
        )
        env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache)}
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.split() == [
            "True",
            str(OVERHEAD + n("user") + n("The ingestion API returns 503 since the last release.")),
        ]
        assert list(cache.iterdir()) == []

    def test_cl100k_base_is_downloaded_when_the_shipped_copy_is_damaged(
        self, monkeypatch, damaged_copy
    ):
        """A shipped file that fails its sha256 is not used: cl100k_base loads the usual way and
        still counts exactly."""
        monkeypatch.setattr(tiktoken, "get_encoding", lambda name: ENCODING)
        counter = TokenCounter(download=True)
        assert counter.encoding is ENCODING
        assert counter([HumanMessage("hello")]) == OVERHEAD + n("user") + n("hello")

    def test_cl100k_base_approximates_when_neither_copy_loads(self, nothing_loads, damaged_copy):
        """When both the shipped copy and the download fail, the warning lists both and counts
        approximate."""
        with pytest.warns(TokenizerUnavailableWarning) as caught:
            count = TokenCounter(download=True)([HumanMessage("hello")])
        assert "the bundled copy: ValueError" in str(caught[0].message)
        assert "cl100k_base: ConnectionError" in str(caught[0].message)
        assert "reinstall langchain-promptstrat" in str(caught[0].message)
        assert count == count_tokens_approximately([HumanMessage("hello")])


class TestCache:
    def test_counting_the_same_conversation_twice_encodes_nothing_new(self, counter, encoder_spy):
        """The second count of an unchanged conversation is served from the cache."""
        history = build_agent_run(20, mirror="mixed")
        first = counter(history)
        encoded = len(encoder_spy.texts)
        assert counter(history) == first
        assert len(encoder_spy.texts) == encoded > 0

    def test_appending_a_message_encodes_only_that_message(self, counter, encoder_spy):
        """A conversation that grew by one message costs one message's encoding."""
        history = build_agent_run(20)
        counter(history)
        encoder_spy.texts.clear()
        counter([*history, HumanMessage("Now write the summary.")])
        assert encoder_spy.texts == ["user", "Now write the summary."]

    def test_recreated_messages_hit_the_cache(self, counter, encoder_spy):
        """Equal messages rebuilt as new objects (as a checkpoint load does) are not encoded
        again."""
        history = build_agent_run(10, mirror="openai")
        counter(history)
        encoder_spy.texts.clear()
        rebuilt = [type(m).model_validate(m.model_dump()) for m in history]
        assert counter(rebuilt) == counter(history)
        assert encoder_spy.texts == []

    def test_the_cache_is_bounded(self, encoder_spy):
        """With room for two entries, the least recently counted message is encoded again."""
        counter = TokenCounter(OFFLINE, cache_size=2)
        for text in ("alpha", "beta", "gamma"):
            counter([HumanMessage(text)])
        encoder_spy.texts.clear()
        counter([HumanMessage("gamma")])
        assert encoder_spy.texts == []
        counter([HumanMessage("alpha")])
        assert encoder_spy.texts == ["user", "alpha"]

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(history=st.lists(messages, min_size=1, max_size=6))
    def test_messages_that_differ_never_share_a_count(self, counter, history):
        """Counts through a warm shared cache equal counts computed with no cache at all."""
        uncached = TokenCounter(OFFLINE, cache_size=0)
        for message in history + history[::-1]:
            assert counter.count_message(message) == uncached.count_message(message)


class TestAsTokenCounter:
    def test_none_gives_one_shared_default_counter(self):
        """None gives the process-wide cl100k_base counter, the same object each time so its cache
        carries over."""
        default = as_token_counter(None)
        assert isinstance(default, TokenCounter)
        assert default.encoding_name == "cl100k_base"
        assert as_token_counter() is default

    def test_a_token_counter_is_returned_as_is(self, counter):
        """A TokenCounter is used as it is."""
        assert as_token_counter(counter) is counter

    def test_a_callable_is_returned_as_is(self):
        """Any function taking a message list is used as it is."""
        assert as_token_counter(len) is len

    def test_a_chat_model_counts_with_its_own_method(self):
        """A chat model counts with get_num_tokens_from_messages, here word-splitting its buffer
        strings."""
        seen: list[str] = []

        def token_ids(text: str) -> list[str]:
            seen.append(text)
            return text.split()

        model = ScriptedChatModel([], custom_get_token_ids=token_ids)
        count = as_token_counter(model)((HumanMessage("hello world"), AIMessage("hi")))
        assert seen == ["Human: hello world", "AI: hi"]
        assert count == 3 + 2  # "Human: hello world" splits into 3 words, "AI: hi" into 2

    def test_anything_else_is_rejected(self):
        """An object that cannot count tokens raises ConfigError naming what is accepted."""
        with pytest.raises(ConfigError, match="a TokenCounter, a chat model or a function"):
            as_token_counter(42)


class TestAdditivity:
    @settings(
        max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(first=message_lists, second=message_lists)
    def test_a_concatenation_costs_the_sum_of_its_parts(self, counter, first, second):
        """Exact counts are additive: count(a + b) == count(a) + count(b)."""
        assert counter(first + second) == counter(first) + counter(second)

    @settings(
        max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(first=message_lists, second=message_lists)
    def test_approximate_counts_are_additive_and_match_langchain(
        self, nothing_loads, first, second
    ):
        """Fallback counts are additive too and equal count_tokens_approximately on the whole
        list."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TokenizerUnavailableWarning)
            counter = TokenCounter("p50k_base")
            total = counter(first + second)
        assert total == counter(first) + counter(second)
        assert total == count_tokens_approximately(first + second)


class TestCallIds:
    @settings(
        max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(message=messages)
    def test_ids_add_exactly_what_call_id_tokens_says(self, counter, message):
        """A message costs its count without ids plus call_id_tokens: the ids are counted once,
        however the calls are recorded."""
        without = TokenCounter(OFFLINE, call_ids=False)
        assert counter.count_message(message) == without.count_message(
            message
        ) + tokens.call_id_tokens(message, counter)

    def test_missing_call_id_tokens_is_zero_for_counters_that_count_ids(self, counter):
        """A ceiling adds ids only for a counter that leaves them out, so they are never counted
        twice."""
        ai = AIMessage("", tool_calls=[call("call_0001", "grep", {"p": "x"})])
        output = ToolMessage("found", tool_call_id="call_0001")
        without = TokenCounter(OFFLINE, call_ids=False)

        def plain(messages):
            return sum(len(str(m.content)) for m in messages)

        for message in (ai, output):
            assert tokens.missing_call_id_tokens(message, counter) == 0
            assert tokens.missing_call_id_tokens(message, "approximate") == 0
            assert tokens.missing_call_id_tokens(message, without) == n("call_0001") > 0
            assert (
                tokens.missing_call_id_tokens(message, plain)
                == tokens.call_id_tokens(message, plain)
                > 0
            )
        assert tokens.missing_call_id_tokens(HumanMessage("hi"), without) == 0


class TestOtherCallBlocks:
    @pytest.mark.parametrize("kind", ["tool_call", "function_call"])
    def test_a_call_recorded_as_a_content_block_counts_once(self, kind):
        """A LangChain v1 tool_call or OpenAI Responses function_call block mirroring a call adds
        nothing."""
        from test_messages import with_content_blocks

        counter = TokenCounter(OFFLINE)
        mirrored = with_content_blocks(kind)
        plain = AIMessage("", tool_calls=mirrored.tool_calls)
        assert counter([mirrored]) == counter([plain])
