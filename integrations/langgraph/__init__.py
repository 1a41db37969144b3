"""LangGraph / LangChain integration of the episodic memory (docs/capture.md).

- :func:`with_episodic_memory`: a crew with the memory in one call (node, router, capture);
- :class:`EpisodicMemoryNode`: the node added after the crew (``graph.add_node("episodic_memory",
  node)``); it keeps each turn's calls (every depth, from the run hierarchy) in the graph's
  checkpointed state, answers ``/save`` without the crew and shows suggestions after the crew's
  answer, as its own message that the crew's model never reads (:func:`reply_text` joins the
  two for display);
- :class:`TrajectoryRecorder`: the same capture, kept per session for inspection;
- :class:`EpisodicMemoryMiddleware`: the same for ``langchain.agents.create_agent``, with optional
  prompt injection (``inject=True``);
- :func:`recall_workflows_tool`: a tool agents call to look past workflows up;
- :func:`crew_description`: a crew description from a graph's tools, for the fallback suggester.

The session is the LangGraph ``thread_id``; the scope comes from the run's context or config
(``scope``). Memory failures never break the host graph unless
``policy=SessionPolicy(strict=True)`` (:class:`em_plugin.SessionPolicy` holds every session
setting). Streamed runs get the suggestions as the custom event :data:`SUGGESTIONS_EVENT`.

The helpers this package exported before (``message_text``, ``is_handoff``, ``TRACE_KEY``, ...)
left ``__all__`` in this release: importing them from here still works and warns
(docs/api.md).
"""

from em_plugin._deprecation import moved_names as _moved_names

try:
    import langchain.agents as _langchain_agents  # noqa: F401
    import langgraph.graph as _langgraph_graph  # noqa: F401
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'integrations.langgraph needs LangGraph and LangChain: pip install "em-plugin[langgraph]"'
    ) from _exc

from integrations.langgraph import _chat  # noqa: F401 - registers its chat-model adapter
from integrations.langgraph._memory_messages import SUGGESTIONS_EVENT, reply_text
from integrations.langgraph._middleware import EpisodicMemoryMiddleware
from integrations.langgraph._node import EpisodicMemoryNode
from integrations.langgraph._recorder import TrajectoryRecorder
from integrations.langgraph._tools import crew_description, recall_workflows_tool
from integrations.langgraph._wiring import with_episodic_memory

__all__ = [
    "EpisodicMemoryMiddleware",
    "EpisodicMemoryNode",
    "SUGGESTIONS_EVENT",
    "TrajectoryRecorder",
    "crew_description",
    "recall_workflows_tool",
    "reply_text",
    "with_episodic_memory",
]

# Dropped from __all__ in this release: still importable from here, with a DeprecationWarning.
__getattr__ = _moved_names(
    "integrations.langgraph",
    {
        "CAPTURE_KEY": "integrations.langgraph._turns",
        "TRACE_KEY": "integrations.langgraph._trace",
        "EpisodicAgentState": "integrations.langgraph._middleware",
        "EpisodicMemoryState": "integrations.langgraph._turns",
        "append_to_message": "integrations.langgraph._node",
        "crew_view": "integrations.langgraph._memory_messages",
        "is_handoff": "integrations.langgraph._messages",
        "is_memory_traffic": "integrations.langgraph._memory_messages",
        "memory_kind": "integrations.langgraph._memory_messages",
        "message_text": "integrations.langgraph._messages",
        "tools_of": "integrations.langgraph._tools",
        "trajectory_from_messages": "integrations.langgraph._messages",
    },
)
