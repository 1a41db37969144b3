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
(``scope``). Memory failures never break the host graph unless ``strict=True``.
"""

from __future__ import annotations

try:
    import langchain.agents  # noqa: F401
    import langgraph.graph  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'integrations.langgraph needs LangGraph and LangChain: pip install "em-plugin[langgraph]"'
    ) from exc

from integrations.langgraph import _chat  # noqa: F401 - registers its chat-model adapter
from integrations.langgraph._memory_messages import (
    SUGGESTIONS_EVENT,
    crew_view,
    is_memory_traffic,
    memory_kind,
    reply_text,
)
from integrations.langgraph._messages import is_handoff, message_text, trajectory_from_messages
from integrations.langgraph._middleware import (
    TRACE_KEY,
    EpisodicAgentState,
    EpisodicMemoryMiddleware,
)
from integrations.langgraph._node import EpisodicMemoryNode, append_to_message
from integrations.langgraph._recorder import TrajectoryRecorder
from integrations.langgraph._tools import crew_description, recall_workflows_tool, tools_of
from integrations.langgraph._turns import CAPTURE_KEY, EpisodicMemoryState
from integrations.langgraph._wiring import with_episodic_memory

__all__ = [
    "CAPTURE_KEY",
    "SUGGESTIONS_EVENT",
    "TRACE_KEY",
    "EpisodicAgentState",
    "EpisodicMemoryMiddleware",
    "EpisodicMemoryNode",
    "EpisodicMemoryState",
    "TrajectoryRecorder",
    "append_to_message",
    "crew_description",
    "crew_view",
    "is_handoff",
    "is_memory_traffic",
    "memory_kind",
    "message_text",
    "recall_workflows_tool",
    "reply_text",
    "tools_of",
    "trajectory_from_messages",
    "with_episodic_memory",
]
