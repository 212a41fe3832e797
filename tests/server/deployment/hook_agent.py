"""``create_react_agent`` with :func:`pre_model_hook`, as LangGraph Server serves it (the server
brings the checkpointer)."""

from __future__ import annotations

import os
import warnings

from gate import gate, scripted_model

from langchain_promptstrat import pre_model_hook
from langchain_promptstrat.inbox.postgres import PostgresInboxes

with warnings.catch_warnings():  # langgraph 1.x points create_react_agent users to create_agent
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

if os.environ.get("PROMPTSTRAT_INBOX_DSN"):
    hook = pre_model_hook(backend=PostgresInboxes(os.environ["PROMPTSTRAT_INBOX_DSN"]))
else:
    hook = pre_model_hook(inbox_root=os.environ["PROMPTSTRAT_INBOX_ROOT"])

graph = create_react_agent(scripted_model(), [gate], pre_model_hook=hook)
