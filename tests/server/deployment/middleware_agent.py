"""``create_agent`` with :class:`PromptStrategyMiddleware`, as LangGraph Server serves it (the
server brings the checkpointer)."""

from __future__ import annotations

import os

from gate import gate, scripted_model
from langchain.agents import create_agent

from langchain_promptstrat import PromptStrategyMiddleware
from langchain_promptstrat.inbox.postgres import PostgresInboxes

if os.environ.get("PROMPTSTRAT_INBOX_DSN"):  # several replicas: one PostgreSQL inbox for them all
    middleware = PromptStrategyMiddleware(
        backend=PostgresInboxes(os.environ["PROMPTSTRAT_INBOX_DSN"])
    )
else:  # one server: an absolute directory, <root>/<thread_id>.inbox
    middleware = PromptStrategyMiddleware(inbox_root=os.environ["PROMPTSTRAT_INBOX_ROOT"])

graph = create_agent(scripted_model(), [gate], middleware=[middleware])
