"""The live sessions an integration serves: (scope, session id) → :class:`SessionController`.

Every integration object (LangGraph node or middleware, BeeAI middleware or EM agent) keeps one
:class:`SessionRegistry`; the least recently used sessions are dropped first. Two scopes may use
the same session id (e.g. the same LangGraph ``thread_id``) without sharing a session.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from em_plugin.capture.trajectory import Trajectory
from em_plugin.errors import ConfigurationError
from em_plugin.session.controller import SessionController
from em_plugin.session.isolation import FaultIsolation
from em_plugin.session.policy import SessionPolicy
from em_plugin.session.port import MemoryPort
from em_plugin.session.scope import memory_for_scope

__all__ = ["DEFAULT_MAX_SESSIONS", "SessionRegistry", "require_memory"]

DEFAULT_MAX_SESSIONS = 1024


def require_memory(memory: object) -> None:
    """Fail at construction when no memory is given.

    Raises:
        ConfigurationError: When ``memory`` is ``None``.
    """
    if memory is None:
        raise ConfigurationError("memory is required (an em_plugin EpisodicMemory)")


class SessionRegistry:
    """(scope, session id) → :class:`SessionController`, least recently used first out.

    Args:
        memory: The memory; each session gets the view of its scope.
        policy: The settings every session's controller gets.
        framework: The framework name recorded on the sessions' trajectories.
        log: The logger warnings go to.
        max_sessions: How many sessions to keep; the least recently used is dropped first.

    Raises:
        ConfigurationError: On a missing memory or an invalid ``max_sessions``.
    """

    def __init__(
        self,
        memory: MemoryPort,
        policy: SessionPolicy,
        *,
        framework: str,
        log: logging.Logger,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
    ) -> None:
        require_memory(memory)
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise ConfigurationError(f"max_sessions must be an integer >= 1, got {max_sessions!r}")
        self.memory = memory
        self.policy = policy
        self.framework = framework
        self.isolation = FaultIsolation(policy.strict, log)
        self._max = max_sessions
        self._sessions: OrderedDict[tuple[str, str], SessionController] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str, *, scope: str, crew: str | None) -> SessionController:
        """Return the session's controller, opening the session on first use.

        Args:
            session_id: The session.
            scope: The scope the session reads and writes.
            crew: The crew's name, recorded on the session's workflows.

        Returns:
            The controller.
        """
        key = (scope, session_id)
        with self._lock:
            controller = self._sessions.get(key)
            if controller is None:
                controller = SessionController(
                    memory_for_scope(self.memory, scope),
                    Trajectory(session_id, scope=scope, framework=self.framework),
                    self.policy,
                    crew=crew,
                    log=self.isolation.log,
                )
                self._sessions[key] = controller
                while len(self._sessions) > self._max:
                    self._sessions.popitem(last=False)
            self._sessions.move_to_end(key)
            return controller

    def find(self, session_id: str | None = None) -> SessionController:
        """Return an open session's controller (``None``: the most recently used one).

        Raises:
            KeyError: When that session is not open (or none is).
        """
        with self._lock:
            if not self._sessions:
                raise KeyError("no session is open yet: run the agent first")
            if session_id is None:
                return next(reversed(self._sessions.values()))
            for (_, open_id), controller in reversed(self._sessions.items()):
                if open_id == session_id:
                    return controller
            open_ids = ", ".join(sid for _, sid in self._sessions) or "none"
            raise KeyError(f"session {session_id!r} is not open (open: {open_ids})")

    def close(self, session_id: str) -> bool:
        """Forget a session's trajectory, in every scope (its saved workflow stays in memory).

        Returns:
            True when the session was open.
        """
        with self._lock:
            keys = [key for key in self._sessions if key[1] == session_id]
            for key in keys:
                del self._sessions[key]
            return bool(keys)

    @property
    def session_ids(self) -> tuple[str, ...]:
        """Open sessions, least recently used first."""
        with self._lock:
            return tuple(sid for _, sid in self._sessions)

    def isolate(self, action: str, exc: BaseException) -> None:
        """Raise ``exc`` in strict mode; otherwise log a warning and carry on.

        Args:
            action: What failed, for the warning.
            exc: The failure.
        """
        self.isolation.failed(action, exc)
