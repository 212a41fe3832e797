"""``PromptStrategyMiddleware``: the strategies as a ``langchain.agents.create_agent`` middleware.

``before_model`` (a graph node, which may jump to the end) picks up the inbox; ``wrap_model_call``
rewrites the request's messages through :func:`~langchain_promptstrat.registry.prompt_for_model`,
the one apply path, and carries the default's replay in the state. ``CompactionMiddleware``, for a
list without the inbox, has no ``before_model`` node.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Final, Literal, cast

from langchain_promptstrat.extras import (
    install_hint,
)  # before the optional import: its error names the extra

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
    raise ImportError(
        f"PromptStrategyMiddleware needs langchain>=1.0: {install_hint('agents')}"
    ) from exc
from langchain_core.messages import AnyMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import run_in_executor
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import NotRequired

from langchain_promptstrat.adapters.inbox_source import InboxSource
from langchain_promptstrat.adapters.langgraph import read_back_tool
from langchain_promptstrat.ceiling import MaxTokens, check_max_tokens
from langchain_promptstrat.errors import ConfigError, InboxError
from langchain_promptstrat.inbox.contract import LeasingInbox
from langchain_promptstrat.inbox.delivery import (
    StoredNoticeIds,
    acknowledge_notices,
    has_checkpointer,
    notice_id,
    notice_ids,
    settle_when_stored,
    stored_reader,
)
from langchain_promptstrat.inbox.locate import InboxBackendSpec
from langchain_promptstrat.messages import PAGE_CHARS
from langchain_promptstrat.registry import StrategySpec, prompt_for_model, resolve_strategies
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.cache_breakpoints import (
    DEFAULT_CACHE_CONTROL,
    is_anthropic_model,
    mark_cache_control,
    wrap_for_breakpoints,
)
from langchain_promptstrat.strategies.epoch_stable import CarriedReplay
from langchain_promptstrat.strategies.inbox import Inbox
from langchain_promptstrat.strategy import PromptRequest, PromptStrategy

__all__ = [
    "ABORT_KEY",
    "ANSWERED_KEY",
    "PENDING_KEY",
    "REPLAY_KEY",
    "CompactionMiddleware",
    "PromptStrategyMiddleware",
    "PromptStratState",
]

ABORT_KEY: Final = "promptstrat_abort"
"""State key holding the inbox abort that ended the run (``on_abort="end"``), until the next model
call."""
PENDING_KEY: Final = "promptstrat_pending_notices"
"""Private state key carrying unpersisted notices from ``before_model`` to the next model
request."""
ANSWERED_KEY: Final = "promptstrat_answered_notices"
"""Private state key: ids of unpersisted notices a model call answered, written with the answer; the
next pickup acknowledges them."""
REPLAY_KEY: Final = "promptstrat_replay"
"""Private state key: the default strategy's :class:`CarriedReplay` after the last model call, so a
new process resumes from it."""

OnAbort = Literal["interrupt", "end", "raise"]


def _run_config() -> RunnableConfig | None:
    """Return the run's config from LangGraph's ``get_config()``; None where it finds none (async
    code on Python 3.10)."""
    try:
        return get_config()
    except RuntimeError:
        return None


class PromptStratState(AgentState):
    """The agent state plus the middleware's inbox keys and the default strategy's carried
    replay."""

    promptstrat_abort: NotRequired[Annotated[dict[str, Any] | None, OmitFromInput]]
    promptstrat_pending_notices: NotRequired[Annotated[list[AnyMessage] | None, PrivateStateAttr]]
    promptstrat_answered_notices: NotRequired[Annotated[list[str] | None, PrivateStateAttr]]
    promptstrat_replay: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]]


class PromptStrategyMiddleware(AgentMiddleware[PromptStratState, Any]):
    """Applies prompt strategies to every model request of a ``create_agent`` agent; the state keeps
    full fidelity.

    Its ``before_model`` node picks up the inbox; a list without the inbox needs no node:
    :class:`CompactionMiddleware` has none, and this class warns that its node is idle. A notice
    is acknowledged once a stored checkpoint holds it (in ``messages``, or its id under
    :data:`ANSWERED_KEY`), without a checkpointer once the model answered (docs/inbox.md). On
    Python 3.10 an async model call cannot reach the run's config: no ``promptstrat`` events.

    Args:
        strategies: names, instances or callables; default ``PROMPT_STRATEGY``, else the default
            list.
        inbox_root: the inbox is ``<inbox_root>/<thread_id>.inbox`` (default
            ``$PROMPTSTRAT_INBOX_ROOT``), or the run's ``save_file``'s.
        persist_inbox: notices join ``messages``; ``False``: each reaches exactly one model request.
        on_abort: ``"interrupt"`` (resumable; without a checkpointer :class:`InboxAborted`),
            ``"end"``
            (the run ends, the abort under :data:`ABORT_KEY`) or ``"raise"``.
        settings: the settings the strategies are built with.
        backend: where inboxes live (``PostgresInboxes(dsn)``); default the ``Inbox`` strategy's.
        max_tokens: the ceiling, tokens or ``("fraction", 0.8)`` of the model's window; system
            message and tools count.
        cache_breakpoints: mark Anthropic ``cache_control`` breakpoints, for a ``ChatAnthropic``
            only (docs/agents.md).
        read_back: add the ``read_back`` tool, its pages a fifth of a ``max_tokens`` in tokens (4
            characters a token);
            ``False``: no tool, and no stub or notice names it (``read_back_handles`` off).
    """

    state_schema = PromptStratState
    on_abort: OnAbort
    strategies: list[PromptStrategy]

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
        if on_abort not in ("interrupt", "end", "raise"):
            raise ConfigError(f"on_abort={on_abort!r} is not one of 'interrupt', 'end', 'raise'")
        resolved = resolve_strategies(strategies, settings=settings)
        # without the read_back tool no stub or notice may name it (a copy; an object given is kept)
        self.strategies = (
            resolved if read_back else [s.without_read_back_handles() for s in resolved]
        )
        if type(self).before_model is PromptStrategyMiddleware.before_model and not any(
            isinstance(s, Inbox) for s in self.strategies
        ):
            warnings.warn(
                "the strategy list has no inbox, so PromptStrategyMiddleware's before_model node "
                "picks up nothing at each model call; CompactionMiddleware applies the same "
                "strategies without the node",
                RuntimeWarning,
                stacklevel=2,
            )
        self.persist_inbox, self.on_abort = persist_inbox, on_abort
        self.max_tokens = check_max_tokens(max_tokens)
        page = (
            min(PAGE_CHARS, self.max_tokens * 4 // 5)
            if isinstance(self.max_tokens, int)
            else PAGE_CHARS
        )
        self.tools = [read_back_tool(page)] if read_back else []
        self._inbox = InboxSource(self.strategies, inbox_root, backend, self.max_tokens)
        self._unacknowledged: set[str] = set()
        """Ids of the notices this middleware handed over and has not yet seen through a model
        call."""
        self.cache_breakpoints = cache_breakpoints
        if cache_breakpoints:
            # the messages get the edges only: system, last tool and tail are marked where
            # AnthropicPromptCachingMiddleware marks them, so its re-marking adds nothing
            self._marking_alone = wrap_for_breakpoints(
                self.strategies, system=False, tail=False, limit=2
            )
            self._marking_composed = wrap_for_breakpoints(
                self.strategies, system=False, tail=False, limit=1
            )

    # Optional[...], not "| None": LangGraph injects the node's config only when the annotation
    # reads so
    @hook_config(can_jump_to=["end"])
    def before_model(
        self, state: PromptStratState, runtime: Runtime, config: RunnableConfig | None = None
    ) -> dict[str, Any] | None:
        """Return the inbox's notices as a state update (persisted, or pending for the next
        request), or the jump to the end."""
        config = (
            config if config is not None else _run_config()
        )  # the node's own, when create_agent hands it
        if config is None:  # checked before the pickup, so no notice is taken and then lost
            raise InboxError(
                "the inbox needs the run's config, which create_agent did not hand the hook and "
                "LangGraph's "
                "get_config() could not find (Python 3.10 does not pass it into async code); run "
                "the agent "
                "with invoke/stream, or use Python 3.11+"
            )
        update: dict[str, Any] = {ABORT_KEY: None} if state.get(ABORT_KEY) else {}
        waiting: Any = state.get(PENDING_KEY) or []
        answered = list(state.get(ANSWERED_KEY) or [])
        known = (
            notice_ids(state.get("messages") or []) if self.persist_inbox else frozenset()
        ) | frozenset(answered)
        durable = has_checkpointer(
            config
        )  # acknowledged once stored; without, after the model call
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
            update[PENDING_KEY] = [*waiting, *delivery.notices]
        if delivery.abort is not None:
            update.update({"jump_to": "end", ABORT_KEY: delivery.abort})
        return update or None

    @hook_config(can_jump_to=["end"])
    async def abefore_model(
        self, state: PromptStratState, runtime: Runtime, config: RunnableConfig | None = None
    ) -> dict[str, Any] | None:
        """Run :meth:`before_model` off the event loop (it reads the disk and waits on a LangGraph
        task)."""
        return await run_in_executor(None, self.before_model, state, runtime, config)

    def _marking(self, request: ModelRequest) -> tuple[Any, dict[str, Any]]:
        """Return the strategies for this request and the request overrides breakpoints add (none
        unless Anthropic)."""
        if not self.cache_breakpoints or not is_anthropic_model(request.model):
            return self.strategies, {}
        if request.model_settings.get(
            "cache_control"
        ):  # AnthropicPromptCachingMiddleware ran before this one
            return self._marking_composed, {}
        overrides: dict[str, Any] = {
            "model_settings": {
                **request.model_settings,
                "cache_control": dict(DEFAULT_CACHE_CONTROL),
            }
        }
        marked = (
            mark_cache_control(request.system_message)
            if request.system_message is not None
            else None
        )
        if marked is not None:
            overrides["system_message"] = marked
        last = request.tools[-1] if request.tools else None
        if isinstance(
            last, BaseTool
        ):  # the breakpoint AnthropicPromptCachingMiddleware puts on the tool schemas
            tagged = last.model_copy(
                update={
                    "extras": {**(last.extras or {}), "cache_control": dict(DEFAULT_CACHE_CONTROL)}
                }
            )
            overrides["tools"] = [*request.tools[:-1], tagged]
            return self._marking_composed, overrides
        return self._marking_alone, overrides

    def _still_in_flight(self, config: RunnableConfig, answered: list[str]) -> list[str]:
        """Return the ids among ``answered`` whose claims are still unacknowledged (all of them when
        the inbox is unreachable)."""
        store = self._inbox.store(config)
        try:
            claimed = (
                {notice_id(lease.token) for lease in store.in_flight()}
                if isinstance(store, LeasingInbox)
                else set()
            )
        except OSError:
            return answered
        return [nid for nid in answered if nid in claimed]

    def _rewrite(
        self, request: ModelRequest
    ) -> tuple[ModelRequest, list[AnyMessage], CarriedReplay]:
        """Return the request with its messages rewritten, the unpersisted notices it now carries,
        and the replay to carry."""
        config = _run_config()
        state = cast(PromptStratState, request.state)  # state_schema adds the keys
        pending = state.get(PENDING_KEY) or []
        save_file = (
            self._inbox.save_file(config) if self._inbox.enabled and config is not None else None
        )
        strategies, overrides = self._marking(request)
        system: list[BaseMessage] = (
            [request.system_message] if request.system_message is not None else []
        )
        carried = CarriedReplay(state.get(REPLAY_KEY))
        call = PromptRequest(
            model=request.model,
            tools=list(request.tools or []),
            system=system,
            max_tokens=self.max_tokens,
            carried=carried,
            save_file=save_file,
            config=config,
            notices=pending,
        )
        prompt = prompt_for_model(strategies, request.messages, call)
        # the strategies return the concrete message classes AnyMessage names, typed as BaseMessage
        return (
            request.override(messages=cast("list[AnyMessage]", prompt), **overrides),
            list(pending),
            carried,
        )

    def _after_answer(
        self, request: ModelRequest, pending: list[AnyMessage], carried: CarriedReplay
    ) -> Command[Any] | None:
        """Return the state update that goes with the model's answer, the notices it received
        acknowledged and the replay carried.

        The ids of unpersisted notices (``pending``) go into :data:`ANSWERED_KEY` with the answer,
        so a crash before the acknowledgement is settled by the next pickup, never by a second model
        call.
        """
        state = cast(PromptStratState, request.state)
        shown = {m.id for m in request.messages}
        pending = [
            m for m in pending if m.id in shown
        ]  # one the strategies left out is claimed still: sent again
        received = (
            [m for m in request.messages if m.id in self._unacknowledged]
            if self._unacknowledged
            else []
        )
        ids = {m.id for m in received}
        received += [m for m in pending if m.id not in ids]
        config = _run_config()
        if (
            received and config is not None and has_checkpointer(config)
        ):  # once the answer's checkpoint is stored
            settle_when_stored(
                self._inbox.store(config), received, stored_reader(config, (ANSWERED_KEY,))
            )
        elif received:
            acknowledge_notices(self._inbox.store(config), received)
        self._unacknowledged.difference_update(m.id for m in received)
        update: dict[str, Any] = {}
        if state.get(PENDING_KEY):
            earlier = state.get(ANSWERED_KEY) or []
            update = {
                PENDING_KEY: None,
                ANSWERED_KEY: [*earlier, *(m.id for m in pending if m.id and m.id not in earlier)]
                or None,
            }
        if carried.value is not None and carried.value is not state.get(REPLAY_KEY):
            update[REPLAY_KEY] = carried.value
        return Command(update=update) if update else None

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse:
        """Return the model's answer to the request rewritten by the strategies; its notices are
        acknowledged once it answered."""
        request, pending, carried = self._rewrite(request)
        response = handler(request)
        update = self._after_answer(request, pending, carried)
        return ExtendedModelResponse(response, update) if update else response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | ExtendedModelResponse:
        """Async twin of :meth:`wrap_model_call`: the same rewrite and acknowledgement, off the
        event loop."""
        request, pending, carried = await run_in_executor(None, self._rewrite, request)
        response = await handler(request)
        update = await run_in_executor(None, self._after_answer, request, pending, carried)
        return ExtendedModelResponse(response, update) if update else response


class CompactionMiddleware(PromptStrategyMiddleware):
    """A :class:`PromptStrategyMiddleware` for a strategy list without the inbox: it rewrites model
    requests and adds no graph node.

    ``create_agent`` gives a middleware a ``before_model`` node (a step, and a checkpoint, per
    model call) when its class defines one; this class has none, as it picks up no inbox.

    Args:
        strategies: names, instances or callables, without the ``inbox``; default
            ``PROMPT_STRATEGY``, else the default list (which holds the inbox, so give one).
        settings: the settings the strategies are built with.
        max_tokens: the ceiling, tokens or ``("fraction", 0.8)`` of the model's window; system
            message and tools count.
        cache_breakpoints: mark Anthropic ``cache_control`` breakpoints, for a ``ChatAnthropic``
            only (docs/agents.md).
        read_back: add the ``read_back`` tool; ``False``: no tool, and no stub names it.

    Raises:
        ConfigError: The list holds the inbox, whose pickup needs the ``before_model`` node.
    """

    # create_agent registers the hook only when the class attribute is not AgentMiddleware's own
    before_model = AgentMiddleware.before_model  # type: ignore[assignment]
    abefore_model = AgentMiddleware.abefore_model  # type: ignore[assignment]

    def __init__(
        self,
        strategies: StrategySpec | Sequence[StrategySpec] | None = None,
        *,
        settings: Settings | None = None,
        max_tokens: MaxTokens = None,
        cache_breakpoints: bool = False,
        read_back: bool = True,
    ) -> None:
        super().__init__(
            strategies,
            settings=settings,
            max_tokens=max_tokens,
            cache_breakpoints=cache_breakpoints,
            read_back=read_back,
        )
        if self._inbox.enabled:
            raise ConfigError(
                "CompactionMiddleware has no before_model node, which the inbox's pickup needs: "
                "use PromptStrategyMiddleware for a strategy list with the inbox"
            )
