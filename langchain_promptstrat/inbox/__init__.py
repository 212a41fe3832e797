"""The inbox: notices a person drops beside a running conversation, delivered to its model once
each.

Modules, lowest first: ``contract`` (the protocols, records and shared rules), ``paths``
(where a directory inbox lies), ``directory`` and ``postgres`` (the two backends),
``locate`` (which inbox serves a run) and ``delivery`` (claim, deliver, acknowledge, in a
LangGraph run or outside one). This file imports nothing, so the CLI's ``inbox`` commands
load neither LangChain nor psycopg; the public names are exported by ``langchain_promptstrat``.
"""
