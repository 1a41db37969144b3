"""The chat sessions one middleware or EM agent serves, each with its session controller.

All memory policy (commands, autosave, suggestions, suggestion provenance, fault isolation) lives
in :class:`em_plugin.session.SessionController`; this module only maps BeeAI session ids to
controllers and keeps the most recent ones.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from em_plugin.capture.trajectory import Trajectory
from em_plugin.errors import ConfigurationError
from em_plugin.session import SessionController, SessionPolicy
from em_plugin.suggest.types import Suggestion
from integrations.beeai._context import logger, memory_for_scope
from provenance.model import Workflow

FRAMEWORK = "beeai"


def require_memory(memory: Any) -> None:
    """Fail at construction when no memory is given.

    Raises:
        ConfigurationError: When ``memory`` is ``None``.
    """
    if memory is None:
        raise ConfigurationError("memory is required (an em_plugin EpisodicMemory)")


class SessionRegistry:
    """Session id → :class:`SessionController`, least recently used first out.

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        policy: The settings every session's controller gets.
        max_sessions: How many sessions to keep; the least recently used is dropped first.

    Raises:
        ConfigurationError: On a missing memory or an invalid ``max_sessions``.
    """

    def __init__(self, memory: Any, policy: SessionPolicy, *, max_sessions: int) -> None:
        require_memory(memory)
        if not isinstance(max_sessions, int) or max_sessions < 1:
            raise ConfigurationError(f"max_sessions must be an integer >= 1, got {max_sessions!r}")
        self.memory = memory
        self.policy = policy
        self._max = max_sessions
        self._sessions: OrderedDict[str, SessionController] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str, *, scope: str, crew: str | None) -> SessionController:
        """Return the session's controller, opening the session on first use.

        Args:
            session_id: The session.
            scope: The scope a new session reads and writes (an open session keeps its own).
            crew: The crew's name, recorded on the session's workflows.

        Returns:
            The controller.
        """
        with self._lock:
            controller = self._sessions.get(session_id)
            if controller is None:
                controller = SessionController(
                    memory_for_scope(self.memory, scope),
                    Trajectory(session_id, scope=scope, framework=FRAMEWORK),
                    self.policy,
                    crew=crew,
                    log=logger,
                )
                self._sessions[session_id] = controller
                while len(self._sessions) > self._max:
                    self._sessions.popitem(last=False)
            self._sessions.move_to_end(session_id)
            return controller

    def find(self, session_id: str | None = None) -> SessionController:
        """Return an open session's controller (``None``: the most recently used one).

        Raises:
            KeyError: When that session is not open (or none is).
        """
        with self._lock:
            if session_id is None:
                if not self._sessions:
                    raise KeyError("no session is open yet: run the agent first")
                return next(reversed(self._sessions.values()))
            try:
                return self._sessions[session_id]
            except KeyError:
                open_ids = ", ".join(self._sessions) or "none"
                raise KeyError(f"session {session_id!r} is not open (open: {open_ids})") from None

    def close(self, session_id: str) -> bool:
        """Forget a session's trajectory (its saved workflow stays in memory).

        Returns:
            True when the session was open.
        """
        with self._lock:
            return self._sessions.pop(session_id, None) is not None

    @property
    def session_ids(self) -> tuple[str, ...]:
        """Open sessions, least recently used first."""
        with self._lock:
            return tuple(self._sessions)

    def isolate(self, action: str, exc: BaseException) -> None:
        """Raise ``exc`` in strict mode; otherwise log a warning and carry on.

        Args:
            action: What failed, for the warning ("recording a BeeAI start event").
            exc: The failure.
        """
        if self.policy.strict:
            raise exc
        logger.warning(
            "episodic memory: %s failed (%s: %s); the crew's answer is unchanged",
            action,
            type(exc).__name__,
            exc,
            exc_info=exc,
        )


class SessionViews:
    """Read and save the sessions of a :class:`SessionRegistry` (mixed into the public classes)."""

    sessions: SessionRegistry

    def session(self, session_id: str | None = None) -> SessionController:
        """Return an open session's controller (``None``: the most recently used session).

        Raises:
            KeyError: When the session is not open.
        """
        return self.sessions.find(session_id)

    def workflow(self, session_id: str | None = None) -> Workflow:
        """Compile a session's workflow so far (``None``: the most recently used session).

        Raises:
            KeyError: When the session is not open.
        """
        controller = self.sessions.find(session_id)
        return controller.trajectory.compile(crew=controller.crew)

    def suggestions(self, session_id: str | None = None) -> tuple[Suggestion, ...]:
        """Return the suggestions last shown in a session (``None``: the most recent one).

        Raises:
            KeyError: When the session is not open.
        """
        return self.sessions.find(session_id).last_suggestions

    async def asave(self, session_id: str | None = None) -> str:
        """Save a session's workflow now, as ``/save`` does; return the reply text.

        Raises:
            KeyError: When the session is not open.
        """
        controller = self.sessions.find(session_id)
        return await controller.ahandle_command(controller.save_command) or ""

    def save(self, session_id: str | None = None) -> str:
        """Sync twin of :meth:`asave` (call it outside a running event loop).

        Raises:
            KeyError: When the session is not open.
        """
        controller = self.sessions.find(session_id)
        return controller.handle_command(controller.save_command) or ""
