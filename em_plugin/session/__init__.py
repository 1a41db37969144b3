"""Sessions: what the integrations share to run a chat session with memory.

The policy, controller, live-session registry, the session record every integration stores
(:class:`Turn`, :func:`replay`), the store-backed session journal, fault isolation, scope
resolution, recall text and the memory port.
"""

from __future__ import annotations

from em_plugin.session.controller import SEPARATOR, SessionController, append_text
from em_plugin.session.executor import Failure, MemoryCall
from em_plugin.session.integration import MemoryIntegration
from em_plugin.session.isolation import FaultIsolation
from em_plugin.session.journal import (
    JournaledSessions,
    JournalSession,
    SessionJournal,
    unsaved_sessions,
)
from em_plugin.session.policy import (
    AUTOSAVE_CHOICES,
    DEFAULT_TURN_BUDGET,
    Judge,
    PolicyAttributes,
    PolicyOptions,
    SessionPolicy,
    TurnOutcome,
)
from em_plugin.session.port import MemoryPort
from em_plugin.session.recall import RECALL_DESCRIPTION, prompt_block_text, recall_text
from em_plugin.session.registry import DEFAULT_MAX_SESSIONS, SessionRegistry, require_memory
from em_plugin.session.scope import memory_for_scope, resolve_scope
from em_plugin.session.turns import ToolCall, Turn, merge_turns, replay, turns_from_events

__all__ = [
    "AUTOSAVE_CHOICES",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_TURN_BUDGET",
    "RECALL_DESCRIPTION",
    "SEPARATOR",
    "Failure",
    "FaultIsolation",
    "JournalSession",
    "JournaledSessions",
    "Judge",
    "MemoryCall",
    "MemoryIntegration",
    "MemoryPort",
    "PolicyAttributes",
    "PolicyOptions",
    "SessionController",
    "SessionJournal",
    "SessionPolicy",
    "SessionRegistry",
    "ToolCall",
    "Turn",
    "TurnOutcome",
    "append_text",
    "memory_for_scope",
    "merge_turns",
    "prompt_block_text",
    "recall_text",
    "replay",
    "require_memory",
    "resolve_scope",
    "turns_from_events",
    "unsaved_sessions",
]
