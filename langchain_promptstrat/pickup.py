"""``inbox_pickup``: the two-phase pickup of a custom loop that stores its own conversation, so a
failed model call loses no notice.

``prepare_prompt`` acknowledges what it delivers at once (at most once); here the loop takes
the notices, calls the model, stores the answer with them, and only then acknowledges::

    with inbox_pickup(history, save_file="agent.chat") as pickup:
        reply = model.invoke(pickup.messages)
        save(history + pickup.notices + [reply])  # your durable store
        pickup.acknowledge()

An exception inside the block acknowledges nothing: the notices come back under the same ids,
and one the stored conversation already holds is acknowledged, not delivered again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from langchain_promptstrat.ceiling import MaxTokens, check_max_tokens
from langchain_promptstrat.inbox.contract import ABORT_FILE, InboxBackend, LeasingInbox
from langchain_promptstrat.inbox.delivery import (
    acknowledge,
    acknowledge_notices,
    notice_ids,
    pick_up,
    prompt_counter,
)
from langchain_promptstrat.inbox.locate import InboxBackendSpec, inbox_for_save_file
from langchain_promptstrat.messages import coerce_messages
from langchain_promptstrat.registry import StrategySpec, prompt_for_model, resolve_strategies
from langchain_promptstrat.settings import Settings
from langchain_promptstrat.strategies.inbox import Inbox
from langchain_promptstrat.strategy import PromptRequest


@dataclass
class InboxPickup:
    """What one two-phase pickup took: the prompt to send, the notices in it, and their
    acknowledgement."""

    messages: list[BaseMessage]
    """The prompt: the strategies applied to the history, the notices at the inbox strategy's
    place."""
    notices: list[BaseMessage]
    """The notices taken (user messages with stable ids), to store with the model's answer."""
    store: InboxBackend | None = field(default=None, repr=False)
    acknowledged: bool = False

    def acknowledge(self) -> int:
        """Record the notices as delivered (call it once the answer and the notices are stored);
        return how many."""
        if self.acknowledged:
            return 0
        self.acknowledged = True
        return acknowledge_notices(self.store, self.notices)


@contextmanager
def inbox_pickup(
    messages: Sequence[BaseMessage] | object,
    strategies: StrategySpec | Sequence[StrategySpec] | None = None,
    *,
    save_file: str | os.PathLike[str] | None = None,
    backend: InboxBackendSpec = None,
    settings: Settings | None = None,
    max_tokens: MaxTokens = None,
) -> Iterator[InboxPickup]:
    """Yield the prompt for ``messages`` with the inbox's notices taken but not yet acknowledged.

    Args:
        messages: the stored conversation (notices it already holds are acknowledged, not delivered
            again).
        strategies: as :func:`~langchain_promptstrat.registry.prepare_prompt`; the notices go where
            the ``inbox`` strategy stands (none: no pickup).
        save_file: the conversation's save file, whose inbox is read.
        backend: where inboxes live; default the ``inbox`` strategy's, else the directory.
        settings: as ``prepare_prompt``.
        max_tokens: the context ceiling, as ``prepare_prompt``.

    Raises:
        InboxAborted: on an ``abort`` file (consumed); the notices taken before it come back at the
            next pickup.
    """
    resolved = resolve_strategies(strategies, settings=settings)
    history = coerce_messages(messages)
    inbox = next((s for s in resolved if isinstance(s, Inbox)), None)
    store = (
        None
        if inbox is None
        else inbox_for_save_file(save_file, backend if backend is not None else inbox.backend)
    )
    notices: list[BaseMessage] = []
    if store is not None:
        count = prompt_counter(resolved)
        taken = pick_up(store, seen=notice_ids(history), settle=False, count=count)
        if taken.aborted:
            if taken.abort_token and isinstance(store, LeasingInbox):
                acknowledge(store, taken.abort_token, ABORT_FILE)
            raise taken.error()
        notices = list(taken.delivered)
    request = PromptRequest(
        max_tokens=check_max_tokens(max_tokens), save_file=save_file, notices=notices
    )
    prompt = prompt_for_model(resolved, history, request)
    yield InboxPickup(prompt, notices, store)
