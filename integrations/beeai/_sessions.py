"""Session views shared by the BeeAI middleware and EM agent.

All memory policy lives in :class:`em_plugin.session.SessionController` and the live sessions in
one :class:`em_plugin.session.SessionRegistry`; this module only adds the read/save helpers the
public classes expose.
"""

from __future__ import annotations

from em_plugin.session import SessionController, SessionRegistry
from em_plugin.suggest.types import Suggestion
from provenance.model import Workflow

FRAMEWORK = "beeai"


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
