"""Session views shared by the BeeAI middleware and EM agent.

All memory policy lives in :class:`em_plugin.session.SessionController` and the live sessions in
one :class:`em_plugin.session.SessionRegistry`; this module only adds the read/save helpers the
public classes expose.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from beeai_framework.context import RunContext

from em_plugin.session import SessionController, SessionRegistry
from em_plugin.session.journal import JournaledSessions
from em_plugin.suggest.types import Suggestion
from integrations.beeai._context import explicit_session, scope_of
from integrations.beeai._deployment import deployment_session, linked_session
from provenance.model import Workflow

FRAMEWORK = "beeai"

#: The reply to ``/save`` when the session's journal cannot be read: this process may hold only
#: part of the session, and saving it would replace the whole saved workflow with that part.
UNSYNCED_SAVE = (
    "Could not read this session's journal from the store; nothing was saved "
    "(the workflow saved before is kept). Try /save again."
)


class SessionViews:
    """Read and save the sessions of a :class:`SessionRegistry` (mixed into the public classes)."""

    sessions: SessionRegistry
    journal: JournaledSessions | None

    async def open_run(
        self,
        ctx: RunContext,
        run_input: object,
        *,
        scope: str | None,
        crew: str | None,
        unnamed: Callable[[], str],
    ) -> tuple[SessionController, bool]:
        """Resolve a root run's scope and session, and open the session's controller.

        Args:
            ctx: The root run's context.
            run_input: The run's input (a list of messages may replay a journaled session).
            scope: The integration's configured scope: the run context's comes first, the
                memory's last.
            crew: The crew's name, for a session opened here.
            unnamed: The session of a run that names none and continues none.

        Returns:
            The controller, and whether it holds everything the session captured (``False``
            when the journal could not be read).
        """
        scope = scope_of(ctx, scope, self.sessions.memory)
        session_id = explicit_session(ctx) or deployment_session()
        if not session_id:
            linked = await linked_session(self.journal, self.sessions.isolation, scope, run_input)
            session_id = linked or unnamed()
        if self.journal is not None:
            with self.sessions.isolation.guard("reading the session journal"):
                controller = await asyncio.to_thread(
                    self.journal.open, session_id, scope=scope, crew=crew
                )
                return controller, True
            return self.sessions.get(session_id, scope=scope, crew=crew), False
        return self.sessions.get(session_id, scope=scope, crew=crew), True

    def session(self, session_id: str | None = None) -> SessionController:
        """Return a session's controller (``None``: the most recently used session).

        A session this process has not served is read from the journal (in the memory's
        scope), caught up with what other workers added.

        Raises:
            KeyError: When the session is neither open nor journaled.
        """
        try:
            controller = self.sessions.find(session_id)
        except KeyError:
            if self.journal is None or session_id is None:
                raise
            scope = self.sessions.memory.scope
            if not self.journal.journal.head(scope, session_id):
                raise
            return self.journal.open(session_id, scope=scope, crew=None)
        if self.journal is not None:
            self.journal.sync(controller)
        return controller

    def workflow(self, session_id: str | None = None) -> Workflow:
        """Compile a session's workflow so far (``None``: the most recently used session).

        Raises:
            KeyError: When the session is neither open nor journaled.
        """
        controller = self.session(session_id)
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
            KeyError: When the session is neither open nor journaled.
        """
        controller = self.session(session_id)
        reply = await controller.ahandle_command(controller.save_command) or ""
        self._mark(controller)
        return reply

    def save(self, session_id: str | None = None) -> str:
        """Sync twin of :meth:`asave` (call it outside a running event loop).

        Raises:
            KeyError: When the session is neither open nor journaled.
        """
        controller = self.session(session_id)
        reply = controller.handle_command(controller.save_command) or ""
        self._mark(controller)
        return reply

    def _mark(self, controller: SessionController) -> None:
        if self.journal is not None:
            with self.sessions.isolation.guard("marking the session saved"):
                self.journal.commit(controller)
