"""``PromptStrategyMiddleware``: the strategies as a ``langchain.agents.create_agent`` middleware.

``create_agent`` has no pre-model hook, so the work is split across two hooks of the
installed ``AgentMiddleware``: ``before_model`` (a graph node, the one that may jump to the
end) picks up the inbox, and ``wrap_model_call`` / ``awrap_model_call`` rewrite the model
request's messages; the state is never compacted. Without an ``inbox`` strategy there is
nothing to pick up, so the middleware registers no ``before_model`` node at all.
``ModelRequest.messages`` excludes the system message, which ``create_agent`` keeps in
``request.system_message`` and prepends itself.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Final, Literal, Optional, cast

from langchain_promptstrat.extras import install_hint  # before the optional import: its error names the extra

try:
    from langchain.agents.middleware.types import (
        AgentMiddleware,
        AgentState,
        ExtendedModelResponse,
        ModelRequest,
        ModelResponse,
        OmitFromInput,
        PrivateStateAttr,
        hook_config,
    )
except ImportError as exc:  # langchain is the optional "agents" extra
    raise ImportError(f"PromptStrategyMiddleware needs langchain>=1.0: {install_hint('agents')}") from exc
from langchain_core.messages import AnyMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import run_in_executor
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import NotRequired

from langchain_promptstrat.adapters.langgraph import read_back_tool
from langchain_promptstrat.messages import PAGE_CHARS
from langchain_promptstrat.ceiling import MaxTokens, check_max_tokens
from langchain_promptstrat.errors import ConfigError, InboxError
from langchain_promptstrat.inbox.contract import LeasingInbox
from langchain_promptstrat.inbox.delivery import acknowledge_notices, notice_id, notice_ids, settle_when_stored
from langchain_promptstrat.inbox.graph_delivery import InboxSource, StoredNoticeIds, has_checkpointer, stored_reader
from langchain_promptstrat.inbox.locate import InboxBackendSpec
from langchain_promptstrat.registry import StrategySpec, prompt_for_model, resolve_strategies
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.epoch_stable import CarriedReplay
from langchain_promptstrat.strategies.inbox import Inbox
from langchain_promptstrat.strategy import PromptStrategy

__all__ = ["ABORT_KEY", "ANSWERED_KEY", "PENDING_KEY", "REPLAY_KEY", "PromptStrategyMiddleware", "PromptStratState"]

ABORT_KEY: Final = "promptstrat_abort"
"""State key holding the inbox abort that ended the run (``on_abort="end"``), until the next model call."""

PENDING_KEY: Final = "promptstrat_pending_notices"
"""Private state key carrying unpersisted inbox notices from ``before_model`` to the next model request."""

ANSWERED_KEY: Final = "promptstrat_answered_notices"
"""Private state key holding the ids of unpersisted notices a model call has answered, written in the same
step as the answer: the next pickup acknowledges them instead of delivering them again (the one-call twin of
finding a persisted notice in ``messages``)."""

REPLAY_KEY: Final = "promptstrat_replay"
"""Private state key holding the default strategy's replay after the last model call (:class:`CarriedReplay`), checkpointed
with the conversation: a process that meets the thread for the first time resumes from it instead of replaying the history."""

OnAbort = Literal["interrupt", "end", "raise"]


def _run_config(given: RunnableConfig | None = None) -> RunnableConfig | None:
    """Return the run's config: the one create_agent handed the hook, else LangGraph's ``get_config()``, else None.

    create_agent passes ``before_model`` its node's config because the hook takes a
    ``config`` argument; a model call has only ``get_config()``, which Python 3.10 cannot
    answer in async code (asyncio tasks take a context only from 3.11 on), so an async
    agent's model requests there are rewritten without the config: no report events and
    no save file for the strategies.
    """
    if given is not None:
        return given
    try:
        return get_config()
    except RuntimeError:
        return None


class PromptStratState(AgentState):
    """The agent state plus the middleware's inbox keys and the default strategy's carried replay."""

    promptstrat_abort: NotRequired[Annotated[dict[str, Any] | None, OmitFromInput]]
    promptstrat_pending_notices: NotRequired[Annotated[list[AnyMessage] | None, PrivateStateAttr]]
    promptstrat_answered_notices: NotRequired[Annotated[list[str] | None, PrivateStateAttr]]
    promptstrat_replay: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]]


class PromptStrategyMiddleware(AgentMiddleware[PromptStratState, Any]):
    """Applies prompt strategies to every model request of a ``create_agent`` agent; the state keeps full fidelity.

    ``on_abort`` says what an inbox ``abort`` file does: ``"interrupt"`` (a LangGraph
    interrupt, resumable with ``Command(resume=...)``; needs a checkpointer, else
    :class:`InboxAborted` is raised with a note saying so), ``"end"`` (the run ends through
    the agent's jump-to-end route, the abort recorded under ``promptstrat_abort``), or
    ``"raise"`` (:class:`InboxAborted`). Inbox notices join ``messages``
    (``persist_inbox=True``, the default) or reach exactly one model request
    (``persist_inbox=False``); those consumed before an ``"end"`` abort are listed in its
    record and wait for the next run's first model request. With a checkpointer a notice
    is acknowledged only once the checkpointer has *stored* a checkpoint holding it (read
    back, in every durability mode: ``"async"``, the default, writes behind the run), the
    persisted notice in ``messages``, the one-call notice's id among the answered ones; a
    crash before that delivers it again, under the same message id. One-call notices wait
    in private state until a model call answers them, and their ids go into private state
    (:data:`ANSWERED_KEY`) in the same step as the answer, so a crash before the
    acknowledgement is settled by the next pickup, not by a second model call. Without a
    checkpointer a notice is acknowledged once the model call that received it has
    returned. The
    default strategy keeps each request under a
    context ceiling: ``max_tokens`` (tokens, or ``("fraction", 0.8)`` of the model's input
    window), else ``PROMPTSTRAT_MAX_TOKENS``, else ``request.model``'s window from its
    LangChain profile minus room for the reply, else 111,616 tokens; the request's system
    message and tool schemas count against it. Other
    arguments as :func:`pre_model_hook`. Without an ``inbox`` strategy the middleware adds
    no ``before_model`` node, so the agent takes no extra step or checkpoint per model call.
    On Python 3.10 an async agent's model call cannot reach the run's config, so there the
    strategies' reports are logged but not dispatched as ``promptstrat`` events.

    ``cache_breakpoints=True`` marks Anthropic ``cache_control`` breakpoints where the
    strategies know the prompt is stable (system, previous and current compaction edges,
    tail), only when the request's model is a ``ChatAnthropic``: other providers' requests
    stay byte-identical. Alone, it marks where ``AnthropicPromptCachingMiddleware`` would
    (system, last tool, the top-level ``cache_control`` setting for the tail) plus one edge
    (two without tools); listed after that middleware (so it runs inside it), it sees its
    ``cache_control`` setting and adds a single edge; listed before it, that middleware
    re-marks the same three places. Never more than four in all, in either order.

    ``read_back=True`` (the default) gives the agent the ``read_back`` tool
    (:func:`~langchain_promptstrat.adapters.langgraph.read_back_tool`), which every
    shortened output's handle and the compaction notice name; its schema is one of the
    request's tools, so it counts against the ceiling. Its answers hold at most a fifth of a
    ``max_tokens`` given in tokens (at 4 characters a token; 12,000 characters otherwise, a
    fifth of a 16,000-token ceiling). Turned off, the handles still name it.
    """

    state_schema = PromptStratState
    on_abort: OnAbort
    strategies: list[PromptStrategy]

    def __new__(
        cls, strategies: StrategySpec | Sequence[StrategySpec] | None = None, *, settings: Settings | None = None, **_: Any
    ) -> PromptStrategyMiddleware:
        """Return the middleware, of a class without a ``before_model`` node when its strategies hold no inbox.

        ``create_agent`` gives every middleware class that overrides ``before_model`` a graph
        node: one more step and checkpoint per model call, for nothing when there is no
        inbox to pick up. The strategies are resolved here, once, and kept for ``__init__``.
        """
        resolved = resolve_strategies(strategies, settings=settings)
        chosen: type[PromptStrategyMiddleware] = cls
        if cls is PromptStrategyMiddleware and not any(isinstance(s, Inbox) for s in resolved):
            chosen = _PromptStrategyCompactionMiddleware
        middleware = object.__new__(chosen)
        middleware.strategies = resolved
        return middleware

    def __init__(
        self,
        strategies: StrategySpec | Sequence[StrategySpec] | None = None,
        *,
        inbox_root: str | os.PathLike[str] | None = None,
        persist_inbox: bool = True,
        on_abort: OnAbort = "interrupt",
        settings: Settings | None = None,
        backend: InboxBackendSpec = None,
        max_tokens: MaxTokens = None,
        cache_breakpoints: bool = False,
        read_back: bool = True,
    ) -> None:
        """Build the middleware over the strategies :meth:`__new__` resolved from ``strategies`` and ``settings``."""
        if on_abort not in ("interrupt", "end", "raise"):
            raise ConfigError(f"on_abort={on_abort!r} is not one of 'interrupt', 'end', 'raise'")
        self.persist_inbox, self.on_abort = persist_inbox, on_abort
        self.max_tokens = check_max_tokens(max_tokens)
        # a page is at most a fifth of a ceiling given in tokens (4 characters a token); else PAGE_CHARS, a fifth of 16,000
        page = min(PAGE_CHARS, self.max_tokens * 4 // 5) if isinstance(self.max_tokens, int) else PAGE_CHARS
        self.tools = [read_back_tool(page)] if read_back else []
        self._inbox = InboxSource(self.strategies, inbox_root, backend, self.max_tokens)
        self._unacknowledged: set[str] = set()
        """Ids of the notices this middleware handed over and has not yet seen through a model call."""
        self.cache_breakpoints = cache_breakpoints
        if cache_breakpoints:
            from langchain_promptstrat.strategies.cache_breakpoints import wrap_for_breakpoints

            # system, last tool and tail are marked where AnthropicPromptCachingMiddleware marks
            # them (system_message's last block, the last tool's extras, the top-level
            # cache_control setting), so that middleware re-marking them adds nothing in
            # whichever order the two are listed; the messages get the edges only
            self._marking_alone = wrap_for_breakpoints(self.strategies, system=False, tail=False, limit=2)
            self._marking_composed = wrap_for_breakpoints(self.strategies, system=False, tail=False, limit=1)

    # Optional[...], not "| None": LangGraph injects the node's config only when this annotation's text
    # reads RunnableConfig or Optional[RunnableConfig]
    @hook_config(can_jump_to=["end"])
    def before_model(
        self, state: PromptStratState, runtime: Runtime, config: Optional[RunnableConfig] = None
    ) -> dict[str, Any] | None:
        """Return the inbox's notices as a state update (persisted, or pending for the next request), or the jump to the end."""
        config = _run_config(config)
        if config is None:  # checked before the pickup, so no notice is taken and then lost
            raise InboxError(
                "the inbox needs the run's config, which create_agent did not hand the hook and LangGraph's "
                "get_config() could not find (Python 3.10 does not pass it into async code); run the agent "
                "with invoke/stream, or use Python 3.11+"
            )
        update: dict[str, Any] = {ABORT_KEY: None} if state.get(ABORT_KEY) else {}
        waiting: Any = state.get(PENDING_KEY) or []
        stored: Any = state.get("messages") or []
        answered = list(state.get(ANSWERED_KEY) or [])
        known = (notice_ids(stored) if self.persist_inbox else frozenset()) | frozenset(answered)
        durable = has_checkpointer(config)  # acknowledged once stored; without, after the model call
        _, delivery = self._inbox.deliver(
            config,
            on_abort="return" if self.on_abort == "end" else self.on_abort,
            seen=StoredNoticeIds(config, known, (ANSWERED_KEY,)) if durable else known,
            held=notice_ids(waiting) | (known if durable else frozenset()),
            settle=False,
            stored=stored_reader(config) if durable and self.persist_inbox else None,
        )
        if answered:  # the pickup acknowledged those stored; keep the others, for the next one
            update[ANSWERED_KEY] = self._still_in_flight(config, answered) or None
        if not durable:
            self._unacknowledged.update(m.id for m in delivery.notices if m.id)
        if delivery.notices and self.persist_inbox:
            update["messages"] = delivery.notices
        elif delivery.notices:  # keep what a run that ended before its model call left pending
            update[PENDING_KEY] = [*(state.get(PENDING_KEY) or []), *delivery.notices]
        if delivery.abort is not None:
            update.update({"jump_to": "end", ABORT_KEY: delivery.abort})
        return update or None

    @hook_config(can_jump_to=["end"])
    async def abefore_model(
        self, state: PromptStratState, runtime: Runtime, config: Optional[RunnableConfig] = None
    ) -> dict[str, Any] | None:
        """Run :meth:`before_model` off the event loop (it reads the disk and waits on a LangGraph task)."""
        return await run_in_executor(None, self.before_model, state, runtime, config)

    def _marking(self, request: ModelRequest) -> tuple[Any, dict[str, Any]]:
        """Return the strategies for this request and the request overrides breakpoints add (none unless Anthropic)."""
        from langchain_promptstrat.strategies.cache_breakpoints import (
            DEFAULT_CACHE_CONTROL,
            is_anthropic_model,
            mark_cache_control,
        )

        if not self.cache_breakpoints or not is_anthropic_model(request.model):
            return self.strategies, {}
        if request.model_settings.get("cache_control"):  # AnthropicPromptCachingMiddleware ran before this one
            return self._marking_composed, {}
        overrides: dict[str, Any] = {"model_settings": {**request.model_settings, "cache_control": dict(DEFAULT_CACHE_CONTROL)}}
        system = request.system_message
        marked = mark_cache_control(system) if system is not None else None
        if marked is not None:
            overrides["system_message"] = marked
        last = request.tools[-1] if request.tools else None
        if isinstance(last, BaseTool):  # the breakpoint AnthropicPromptCachingMiddleware puts on the tool schemas
            tagged = last.model_copy(update={"extras": {**(last.extras or {}), "cache_control": dict(DEFAULT_CACHE_CONTROL)}})
            overrides["tools"] = [*request.tools[:-1], tagged]
            return self._marking_composed, overrides
        return self._marking_alone, overrides

    def _still_in_flight(self, config: RunnableConfig, answered: list[str]) -> list[str]:
        """Return the ids among ``answered`` whose claims are still unacknowledged (all of them when the inbox is unreachable)."""
        store = self._inbox.store(config)
        if not isinstance(store, LeasingInbox):
            return []
        try:
            claimed = {notice_id(lease.token) for lease in store.in_flight()}
        except OSError:
            return answered
        return [nid for nid in answered if nid in claimed]

    def _rewrite(self, request: ModelRequest) -> tuple[ModelRequest, list[AnyMessage], CarriedReplay]:
        """Return the request with its messages rewritten, the unpersisted notices it now carries, and the replay to carry."""
        config = _run_config()
        state = cast(PromptStratState, request.state)  # state_schema adds the keys
        pending = state.get(PENDING_KEY) or []
        save_file = self._inbox.save_file(config) if self._inbox.needed and config is not None else None
        strategies, overrides = self._marking(request)
        system: list[BaseMessage] = [request.system_message] if request.system_message is not None else []
        carried = CarriedReplay(state.get(REPLAY_KEY))
        bounds: dict[str, Any] = {
            "max_tokens": self.max_tokens, "model": request.model, "tools": list(request.tools or []), "system": system, "carried": carried,
        }
        prompt = prompt_for_model(strategies, request.messages, pending, save_file=save_file, config=config, request=bounds)
        # the strategies return the concrete message classes AnyMessage names, typed as BaseMessage
        return request.override(messages=cast("list[AnyMessage]", prompt), **overrides), list(pending), carried

    def _after_answer(self, request: ModelRequest, pending: list[AnyMessage], carried: CarriedReplay) -> Command[Any] | None:
        """Return the state update that goes with the model's answer: the notices acknowledged, the replay carried."""
        update = self._acknowledge(request, pending)
        if carried.value is None or carried.value is cast(PromptStratState, request.state).get(REPLAY_KEY):
            return update
        values = dict(update.update) if update is not None and isinstance(update.update, dict) else {}
        return Command(update={**values, REPLAY_KEY: carried.value})

    def _acknowledge(self, request: ModelRequest, pending: list[AnyMessage]) -> Command[Any] | None:
        """Record as delivered the notices this model call received, and return the state update that goes with its answer.

        The model has returned, so they reached a model. Unpersisted notices (``pending``)
        are acknowledged whoever picked them up (a process resuming a checkpoint did not),
        and their ids go into :data:`ANSWERED_KEY` in the same step as the answer, so a
        crash before this acknowledgement is settled by the next pickup, never by a second
        model call.
        """
        shown = {m.id for m in request.messages}
        pending = [m for m in pending if m.id in shown]  # one the strategies left out is claimed still: sent again
        received = [m for m in request.messages if m.id in self._unacknowledged] if self._unacknowledged else []
        ids = {m.id for m in received}
        received += [m for m in pending if m.id not in ids]
        config = _run_config()
        if received and has_checkpointer(config) and config is not None:  # once the answer's checkpoint is stored
            settle_when_stored(self._inbox.store(config), received, stored_reader(config, (ANSWERED_KEY,)))
        elif received:
            acknowledge_notices(self._inbox.store(config), received)
        self._unacknowledged.difference_update(m.id for m in received)
        if not cast(PromptStratState, request.state).get(PENDING_KEY):
            return None
        earlier = cast(PromptStratState, request.state).get(ANSWERED_KEY) or []
        answered = [*earlier, *(m.id for m in pending if m.id and m.id not in earlier)]
        return Command(update={PENDING_KEY: None, ANSWERED_KEY: answered or None})

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse:
        """Return the model's answer to the request with its messages rewritten by the strategies.

        The inbox notices in the request are acknowledged only once the model has answered.
        """
        request, pending, carried = self._rewrite(request)
        response = handler(request)
        update = self._after_answer(request, pending, carried)
        return ExtendedModelResponse(response, update) if update else response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | ExtendedModelResponse:
        """Async twin of :meth:`wrap_model_call`: the same rewrite and acknowledgement, off the event loop."""
        request, pending, carried = await run_in_executor(None, self._rewrite, request)
        response = await handler(request)
        update = await run_in_executor(None, self._after_answer, request, pending, carried)
        return ExtendedModelResponse(response, update) if update else response


class _PromptStrategyCompactionMiddleware(PromptStrategyMiddleware):
    """A :class:`PromptStrategyMiddleware` without an inbox: it only rewrites model requests, with no ``before_model`` node."""

    # create_agent registers the hook only when the class attribute is not AgentMiddleware's own
    before_model = AgentMiddleware.before_model  # type: ignore[assignment]
    abefore_model = AgentMiddleware.abefore_model  # type: ignore[assignment]

    @property
    def name(self) -> str:
        """Return ``"PromptStrategyMiddleware"``, the name create_agent traces and checks for duplicates."""
        return PromptStrategyMiddleware.__name__
