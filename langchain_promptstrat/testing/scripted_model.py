"""A chat model that replays a fixed script of answers and records every prompt it is sent, for
tests, notebooks and benchmarks.

It binds tools and works with ``create_agent`` and ``create_react_agent``. Must not reach
the network; an answer depends only on the script and the thread's call number (or, for a
step that is a function, on its prompt), so a run replays identically.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.runnables.config import ensure_config
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from langchain_promptstrat.errors import ConfigError
from langchain_promptstrat.testing.text_pools import WORDS

__all__ = ["DEFAULT_FINAL_ANSWER", "ScriptStep", "ScriptedChatModel"]

DEFAULT_FINAL_ANSWER = "done"
"""What :class:`ScriptedChatModel` answers once its script is exhausted."""

# AIMessage | str | dict[str, Any] | BaseException | a function of the prompt, see ScriptedChatModel
ScriptStep = Any
_Step = AIMessage | BaseException | Callable[[list[BaseMessage]], Any]


@dataclass
class _ScriptState:
    """Mutable replay state, shared by every binding and copy of one model (deep copies too); a
    server calls it from several threads."""

    positions: dict[str | None, int] = field(default_factory=dict)
    """The next script step of each thread id (None: calls made outside any thread)."""
    calls: list[list[BaseMessage]] = field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __deepcopy__(self, memo: dict[int, Any]) -> _ScriptState:
        return self


def _run_thread_id(
    run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None,
) -> str | None:
    """Return the run's ``configurable.thread_id``, or None outside a thread; from the call's
    metadata when the config is not in context (async, Python 3.10)."""
    thread = (ensure_config().get("configurable") or {}).get("thread_id")
    if thread is None and run_manager is not None:
        thread = (run_manager.metadata or {}).get("thread_id")
    return None if thread is None else str(thread)


def _numbered(kind: str, prefix: str, n: int) -> str:
    return f"{kind}_{prefix}_{n:04d}" if prefix else f"{kind}_{n:04d}"


def _normalize_step(step: Any, counter: list[int], prefix: str = "") -> _Step:
    """Return the AIMessage (or exception) one script step stands for; missing call ids numbered
    from ``counter`` (the call's script position)."""
    if isinstance(step, BaseException) or (callable(step) and not isinstance(step, AIMessage)):
        return step  # a function of the prompt: normalized when it is called
    if isinstance(step, str):
        return AIMessage(content=step)
    if isinstance(step, dict):
        step = _message_of(step)
    if not isinstance(step, AIMessage):
        raise ConfigError(
            f"a script step must be an AIMessage, a str, a {{'tool_calls': [...]}} dict or an "
            f"exception, got {type(step).__name__}"
        )
    calls = []
    for tc in step.tool_calls:
        counter[0] += 1
        calls.append({**tc, "id": tc.get("id") or _numbered("call", prefix, counter[0])})
    return step if calls == step.tool_calls else step.model_copy(update={"tool_calls": calls})


def _message_of(step: dict[str, Any]) -> AIMessage:
    """Return the AIMessage a ``{"tool_calls": [{"name", "args", "id"?}], "content"?, "id"?}`` step
    stands for."""
    unknown = set(step) - {"tool_calls", "content", "id"}
    if unknown:
        raise ConfigError(
            f"script step has unknown keys {sorted(unknown)}; expected 'tool_calls', 'content', "
            "'id'"
        )
    calls = []
    for spec in step.get("tool_calls") or []:
        if not isinstance(spec, dict) or "name" not in spec:
            raise ConfigError(f"tool call spec needs a 'name': {spec!r}")
        extra = set(spec) - {"name", "args", "id"}
        if extra:
            raise ConfigError(f"tool call spec has unknown keys {sorted(extra)}")
        calls.append(
            {
                "name": spec["name"],
                "args": dict(spec.get("args") or {}),
                "id": spec.get("id"),
                "type": "tool_call",
            }
        )
    return AIMessage(content=step.get("content", ""), tool_calls=calls, id=step.get("id"))


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays a fixed script of answers and records every prompt.

    Each call answers the next step: an ``AIMessage`` (a copy), a ``str`` (a final answer), a
    dict ``{"tool_calls": [{"name", "args", "id"?}], "content"?}``, an exception (raised), or a
    function of the prompt returning one of those. Then ``final_answer``, so a loop ends. Each
    ``configurable.thread_id`` plays the script from its own position (calls outside a thread
    share one). Ids missing from the script are ``ai_<prefix>_0001`` / ``call_<prefix>_0001``
    by script position; ``id_prefix`` is random per instance (a model rebuilt after a restart
    adds to a stored conversation instead of replacing its messages), ``""`` for plain ids.
    ``calls`` and ``call_kwargs`` record each call's messages and keywords, shared by every
    binding and copy of the model; :meth:`reset` replays from the start. Thread-safe.
    """

    script: list[Any] = Field(default_factory=list)
    """The steps to replay, see the class docstring."""
    final_answer: str = DEFAULT_FINAL_ANSWER
    """Text answered once the script is exhausted."""
    cache: Any = False
    """Never cache: a cache hit would skip the script position."""
    id_prefix: str = Field(default_factory=lambda: uuid.uuid4().hex[:10])
    """What makes this instance's message and tool-call ids its own; random by default, ``""`` for
    plain ids."""
    usage: Callable[[list[BaseMessage]], Any] | None = None
    """The ``usage_metadata`` each answer reports, from the prompt it answers (None: no usage), as a
    provider bills."""

    _steps: list[_Step] = PrivateAttr(default_factory=list)
    _state: _ScriptState = PrivateAttr(default_factory=_ScriptState)

    def __init__(self, script: Sequence[ScriptStep] | None = None, /, **kwargs: Any) -> None:
        """Build a model replaying ``script`` (positional or keyword)."""
        if script is not None:
            if "script" in kwargs:
                raise ConfigError("script given both positionally and as a keyword")
            kwargs["script"] = list(script)
        super().__init__(**kwargs)
        counter = [0]
        self._steps = [_normalize_step(step, counter, self.id_prefix) for step in self.script]

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """Return the message lists the model was sent, one per call, in order."""
        return self._state.calls

    @property
    def call_kwargs(self) -> list[dict[str, Any]]:
        """Return the keyword arguments (tools, tool_choice, ...) of each call, aligned with
        ``calls``."""
        return self._state.call_kwargs

    @property
    def cursor(self) -> int:
        """Return how many calls the model has answered so far, all threads together."""
        return len(self._state.calls)

    def position(self, thread_id: str | None = None) -> int:
        """Return how many steps of the script ``thread_id`` has played (None: the calls made
        outside any thread)."""
        return self._state.positions.get(thread_id, 0)

    @property
    def exhausted(self) -> bool:
        """Return whether every position in use (the shared one before any call) is past the
        script."""
        positions = list(self._state.positions.values()) or [0]
        return all(p >= len(self._steps) for p in positions)

    def reset(self) -> None:
        """Rewind the script to its first step in every thread and forget the recorded calls."""
        with self._state.lock:
            self._state.positions.clear()
            self._state.calls.clear()
            self._state.call_kwargs.clear()

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Return a binding of this model with ``tools`` in OpenAI format (``create_react_agent``
        reads them so from a pre-bound model)."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _next_message(
        self, messages: list[BaseMessage], kwargs: dict[str, Any], thread: str | None
    ) -> AIMessage:
        state = self._state
        with state.lock:
            state.calls.append(list(messages))
            state.call_kwargs.append(dict(kwargs))
            index = state.positions.get(thread, 0)
            state.positions[thread] = index + 1
        step = (
            self._steps[index] if index < len(self._steps) else AIMessage(content=self.final_answer)
        )
        if callable(step) and not isinstance(step, (AIMessage, BaseException)):
            step = _normalize_step(step(messages), [1000 * (index + 1)], self.id_prefix)
        if isinstance(step, BaseException):
            raise step
        if not isinstance(step, AIMessage):
            raise ConfigError(
                "a script step's function must return an answer (a message, str, dict or "
                "exception), not a function"
            )
        message = step.model_copy(
            deep=True
        )  # a copy: agent frameworks set .name and the like on what we return
        if message.id is None:
            message.id = _numbered("ai", self.id_prefix, index + 1)
        if self.usage is not None:
            message.usage_metadata = self.usage(messages)
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._next_message(messages, kwargs, _run_thread_id(run_manager))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # no executor hop: keeps the positions' order identical to the await order
        message = self._next_message(messages, kwargs, _run_thread_id(run_manager))
        return ChatResult(generations=[ChatGeneration(message=message)])

    @classmethod
    def long_run(
        cls,
        n_tool_calls: int,
        *,
        tool_name: str | Sequence[str] = "fetch",
        parallel: int = 1,
        seed: int = 0,
        repeat_rate: float = 0.08,
        final_answer: str = DEFAULT_FINAL_ANSWER,
        id_prefix: str | None = None,
    ) -> ScriptedChatModel:
        """Return a model scripted to make ``n_tool_calls`` calls, ``parallel`` per answer, then
        answer ``final_answer``.

        Each call's args are ``{"query": str, "page": int}`` (:func:`make_sized_tool`'s), drawn
        from ``seed``; about ``repeat_rate`` of them repeat an earlier call (a new id). Several
        ``tool_name`` values: each call picks one. ``id_prefix`` as in the class (None: random).
        """
        if n_tool_calls < 0:
            raise ConfigError(f"n_tool_calls must be >= 0, got {n_tool_calls}")
        if parallel < 1:
            raise ConfigError(f"parallel must be >= 1, got {parallel}")
        if not 0.0 <= repeat_rate <= 1.0:
            raise ConfigError(f"repeat_rate must be in [0, 1], got {repeat_rate}")
        names = [tool_name] if isinstance(tool_name, str) else list(tool_name)
        if not names:
            raise ConfigError("tool_name must name at least one tool")
        rng = random.Random(f"promptstrat:long_run:{seed}")
        history: list[tuple[str, dict[str, Any]]] = []
        script: list[Any] = []
        for made in range(0, n_tool_calls, parallel):
            step_calls: list[dict[str, Any]] = []
            for _ in range(min(parallel, n_tool_calls - made)):
                if (
                    history and rng.random() < repeat_rate
                ):  # args of str and int: each step copies them
                    name, args = rng.choice(history)
                else:
                    name = rng.choice(names)
                    query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))
                    args = {"query": query, "page": rng.randint(0, 9)}
                step_calls.append({"name": name, "args": args})
            history.extend((c["name"], c["args"]) for c in step_calls)
            script.append({"tool_calls": step_calls})
        return cls(
            script,
            final_answer=final_answer,
            **({} if id_prefix is None else {"id_prefix": id_prefix}),
        )
