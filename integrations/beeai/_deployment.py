"""Where a served BeeAI run's session comes from: the conversation id the deployment already has.

BeeAI's servers (A2A, ACP, the OpenAI-compatible Responses API) keep one conversation memory per
conversation id in a ``MemoryManager``; before each run they fetch it with
``init_agent_memory(agent, manager, conversation_id)``, in the task that then runs the agent.
:class:`SessionMemoryManager` wraps any manager and, on that fetch, notes the id in a context
variable that the memory middleware (and the EM agent) read: the A2A context id, the ACP session
id, the Responses API ``conversation``. Pass it as the server's ``memory_manager``::

    server = A2AServer(config=..., memory_manager=SessionMemoryManager())

Zed's ACP adapter (stdio) fetches a session's memory once, when the session is created; the
prompts that follow are found by the session id the adapter keeps for the prompt it serves.

Clients that replay the whole history instead (OpenAI chat completions) have no id: there the
session is found from the history itself (:func:`message_pairs`,
:func:`em_plugin.session.journal.conversation_digest`).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from beeai_framework.backend import AnyMessage, AssistantMessage, UserMessage
from beeai_framework.memory import BaseMemory
from beeai_framework.serve import MemoryManager
from beeai_framework.serve.utils import UnlimitedMemoryManager

from em_plugin.session.isolation import FaultIsolation
from em_plugin.session.journal import JournaledSessions, conversation_digest
from integrations.beeai._sanitize import strip_suggestions

__all__ = [
    "SessionMemoryManager",
    "answer_link",
    "deployment_session",
    "linked_session",
    "message_pairs",
]

_SESSION: ContextVar[str | None] = ContextVar("em_plugin_beeai_deployment_session", default=None)
_ACP_ZED_AGENT = "beeai_framework.adapters.acp_zed.serve.agent"


def deployment_session() -> str | None:
    """Return the conversation id the serving deployment named for the current request, if any.

    That is the id a :class:`SessionMemoryManager` noted, else the session of the prompt that
    BeeAI's Zed ACP adapter is serving (it knows its session id with any manager).
    """
    return _SESSION.get() or _acp_zed_session()


def _acp_zed_session() -> str | None:
    """The ACP session id of the prompt BeeAI's Zed adapter is serving, if it serves one.

    The adapter (``beeai_framework.adapters.acp_zed``) sets it in a context variable of its
    agent module around each ``session/prompt``, so the run it starts sees it; the manager is
    not asked then (its fetch ran when the session was created, in another request). The module
    is looked up, never imported: a process that does not serve ACP has not loaded it.
    """
    module = sys.modules.get(_ACP_ZED_AGENT)
    active = getattr(module, "_active_session", None)
    if not isinstance(active, ContextVar):
        return None
    value = active.get(None)
    return value if isinstance(value, str) and value.strip() else None


class SessionMemoryManager(MemoryManager):
    """A BeeAI serve ``MemoryManager`` that tells the episodic memory each request's conversation.

    It stores conversation memories exactly as the manager it wraps does.

    Args:
        inner: The manager that keeps the memories (default: BeeAI's ``UnlimitedMemoryManager``,
            what the servers use when given none).
    """

    def __init__(self, inner: MemoryManager | None = None) -> None:
        self.inner: MemoryManager = inner if inner is not None else UnlimitedMemoryManager()

    async def set(self, key: str, value: BaseMemory) -> None:
        """Store a conversation's memory (and note ``key`` as the current conversation)."""
        _note(key)
        await self.inner.set(key, value)

    async def get(self, key: str) -> BaseMemory:
        """Return a conversation's memory (and note ``key`` as the current conversation)."""
        _note(key)
        return await self.inner.get(key)

    async def contains(self, key: str) -> bool:
        """Tell whether a conversation has a memory."""
        return await self.inner.contains(key)


def _note(key: Any) -> None:
    if isinstance(key, str) and key.strip():
        _SESSION.set(key)


def message_pairs(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """Return ``("message", text)`` for a conversation's user and assistant messages with text.

    Roles are left out on purpose: BeeAI's chat-completions server turns the assistant messages
    a client replays into user messages, so only the texts identify a history.

    Args:
        messages: BeeAI messages (others are ignored).

    Returns:
        The pairs, in order.
    """
    pairs: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, UserMessage | AssistantMessage):
            text = message.text
            if text.strip():
                pairs.append(("message", text))
    return pairs


def history_of(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """Return the messages before the last user message (the history a client replayed)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            return list(messages[:index])
    return []


async def linked_session(
    journal: JournaledSessions | None, isolation: FaultIsolation, scope: str, run_input: object
) -> str | None:
    """Return the session whose last turn ended with the history ``run_input`` replays, if any.

    Args:
        journal: The sessions' journal (``None``: sessions are not journaled, none is found).
        isolation: Logs (or, strict, raises) a failure to read the journal.
        scope: The scope the session is in.
        run_input: The run's input; only a list of messages replays a history.

    Returns:
        The session id, or ``None``.
    """
    if journal is None or not isinstance(run_input, list):
        return None
    history = message_pairs(history_of(run_input))
    if not history:
        return None
    digest = conversation_digest(history)
    linked: str | None = None
    with isolation.guard("finding the conversation's session"):
        linked = await asyncio.to_thread(journal.journal.find_link, scope, digest)
    return linked


def answer_link(conversation: Sequence[tuple[str, str]], answer: str) -> str:
    """Return the digest of the history a client replays after this turn: its input and answer.

    Args:
        conversation: The turn's input as :func:`message_pairs` (the memory's text removed).
        answer: The answer the client read (its suggestions block is left out).

    Returns:
        The digest :func:`linked_session` finds the session by.
    """
    return conversation_digest([*conversation, ("message", strip_suggestions(answer))])
