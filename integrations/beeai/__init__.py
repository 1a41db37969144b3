"""BeeAI integration of the episodic memory (docs/capture.md).

- :class:`EpisodicMemoryMiddleware`: register it on a coordinator run (``.middleware(mw)``) or on
  the coordinator (``middlewares=[mw]``); it captures tool calls at every depth of the crew
  (sub-agents behind ``HandoffTool`` nest under the handoff), answers ``/save`` and ``/suggest``
  without the crew and shows suggestions after the crew's unchanged answer (never in the crew's
  memory; streamed runs get them as their own ``episodic_memory_suggestions`` event);
- :class:`EpisodicMemoryAgent`: the paper's EM agent in front of a crew; it forwards each
  instruction verbatim and answers with the crew's unchanged result plus the suggestions;
- :func:`recall_workflows_tool`: a tool agents call to look past workflows up;
- :func:`crew_description`: a crew description from a coordinator and its handoff sub-agents;
- :class:`SessionMemoryManager`: the ``memory_manager`` to give BeeAI's servers (A2A, ACP, the
  OpenAI-compatible Responses API) so each conversation id is the memory's session
  (``docs/deploy.md``).

The session is ``session_id`` in the run's context, else the serving deployment's conversation
id, else the session whose history the input replays (chat completions), else the one given to
the constructor, else the coordinator's memory (a script's one conversation); each turn is
journaled in the memory's store, so any worker continues it. The scope is ``scope`` in the run's
context, else the constructor's, else the memory's. Memory failures never break the crew unless
``policy=SessionPolicy(strict=True)`` (:class:`em_plugin.SessionPolicy` holds every session
setting). Streamed runs get the suggestions as a :class:`SuggestionsEvent` named
:data:`SUGGESTIONS_EVENT`. :mod:`integrations.beeai.testing` holds an offline scripted chat model.

The names this package exported before beside these (``RecallWorkflowsTool``,
``EpisodicMemoryAgentOutput``, ``CallRecorder``, ...) left ``__all__`` in this release: importing
them from here still works and warns (docs/api.md).
"""

from em_plugin._deprecation import moved_names as _moved_names

try:
    import beeai_framework.agents.requirement as _requirement  # noqa: F401
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'integrations.beeai needs the BeeAI framework: pip install "em-plugin[beeai]"'
    ) from _exc

from integrations.beeai import _chat  # noqa: F401 - registers its chat-model adapter
from integrations.beeai._agent import EpisodicMemoryAgent
from integrations.beeai._context import SUGGESTIONS_EVENT, SuggestionsEvent
from integrations.beeai._deployment import SessionMemoryManager
from integrations.beeai._middleware import EpisodicMemoryMiddleware
from integrations.beeai._tools import crew_description, recall_workflows_tool

__all__ = [
    "EpisodicMemoryAgent",
    "EpisodicMemoryMiddleware",
    "SUGGESTIONS_EVENT",
    "SessionMemoryManager",
    "SuggestionsEvent",
    "crew_description",
    "recall_workflows_tool",
]

# Dropped from __all__ in this release: still importable from here, with a DeprecationWarning.
__getattr__ = _moved_names(
    "integrations.beeai",
    {
        "RECALL_DESCRIPTION": "integrations.beeai._tools",
        "CallRecorder": "integrations.beeai._capture",
        "EpisodicMemoryAgentOutput": "integrations.beeai._agent",
        "RecallInput": "integrations.beeai._tools",
        "RecallWorkflowsTool": "integrations.beeai._tools",
        "deployment_session": "integrations.beeai._deployment",
        "instruction_text": "integrations.beeai._capture",
    },
)
