"""The inbox: notices a person drops beside a running conversation, delivered to its model once each.

One module per concern, lowest first (each imports only those above it):

* ``owners``: who holds a claim (host, process, start time) and whether it is alive.
* ``paths``: where a conversation's directory inbox lies (the sibling rule, thread ids).
* ``contract``: what every backend keeps (``InboxBackend``, ``LeasingInbox``,
  ``InboxProvider``) and the records that cross it (``Claimed``, ``InboxEntry``, ``Lease``).
* ``notices``: the rules every backend applies alike to a notice (name, bytes, limits).
* ``files``, ``claims``, ``directory``: the directory backend (``DirectoryInbox``): careful
  system calls, the claims directory of in-flight leases, and the store that uses them.
* ``posting``: ``post_to_inbox`` and ``request_abort``, one call for a writer.
* ``postgres_sql``, ``postgres_connection``, ``postgres``: the PostgreSQL backend
  (``PostgresInbox``, ``PostgresInboxes``): its SQL, its database handle, the store.
* ``locate``: which inbox serves a run (``backend=``, ``configurable.save_file`` or
  ``thread_id``).
* ``delivery``: claim, deliver, acknowledge (``pick_up``): notices become user messages.
* ``graph_delivery``: the same inside a LangGraph run (``InboxSource``, ``deliver_inbox``):
  the pickup as a task, acknowledged once the checkpointer stored it, an abort as an interrupt.

The ``inbox`` strategy (:mod:`langchain_promptstrat.strategies.inbox`) and the LangGraph
and middleware adapters build on ``locate``, ``delivery`` and ``graph_delivery``; nothing
here imports them. This file imports nothing, so ``import langchain_promptstrat.inbox.directory``
(the CLI's ``inbox`` commands) loads neither LangChain nor psycopg; the public names are
exported by ``langchain_promptstrat``.
"""
