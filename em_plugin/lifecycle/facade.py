"""``Lifecycle``: versions, retirement, outcomes and procedures of one scope (docs/lifecycle.md).

A memory reaches it as ``memory.lifecycle`` (its own scope) and ``memory.with_scope(s).lifecycle``
(another). The work is done by :mod:`em_plugin.lifecycle.api` over the engine's public members;
the lifecycle's own state, per scope the hidden ids and the active procedures, is a
:class:`~em_plugin.lifecycle.cache.LifecycleCache` that a memory and its scope views share, so
the engine keeps none.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from em_plugin.errors import ConfigurationError
from em_plugin.lifecycle import api
from em_plugin.lifecycle.cache import LifecycleCache
from em_plugin.lifecycle.types import Procedure, WorkflowVersion
from em_plugin.state.engine import MemoryEngine
from em_plugin.suggest.types import Suggestion
from provenance.errors import ProvenanceError
from provenance.model import OUTCOMES, Workflow

__all__ = ["Lifecycle"]

log = logging.getLogger("em_plugin.memory")


class Lifecycle:
    """Versions, retirement, outcomes and procedures of one scope of a memory.

    Get one from a memory (``memory.lifecycle``) rather than building it.

    Args:
        engine: The memory's engine.
        scope: The scope it reads and writes.
        cache: The lifecycle's state, shared by the memory's scope views.
    """

    def __init__(self, engine: MemoryEngine, scope: str, *, cache: LifecycleCache) -> None:
        self._engine = engine
        self._procedures = cache.procedures
        self.scope = scope

    # ------------------------------------------------------------------------------ versions

    def history(self, workflow_id: str) -> list[WorkflowVersion]:
        """Return the saved versions of a workflow, oldest first.

        Args:
            workflow_id: The workflow id (an ``ID@vN`` version id gives the same history).

        Returns:
            One :class:`~em_plugin.lifecycle.WorkflowVersion` per save.

        Raises:
            WorkflowNotFound: When no version of it is stored in the scope.
        """
        return api.history(self._engine, workflow_id, self.scope)

    def retire(self, workflow_id: str, *, reason: str, agent: str | None = None) -> bool:
        """Retire a workflow: retrieval and suggestions skip it; its provenance stays.

        Args:
            workflow_id: The workflow id.
            reason: Why (recorded with the ``prov:wasInvalidatedBy`` activity).
            agent: Who retires it (``prov:wasAssociatedWith``); default ``"user"``.

        Returns:
            Whether its status changed (``False`` when it was retired already).

        Raises:
            WorkflowNotFound: When it is not stored in the scope.
            ConfigurationError: When the reason is empty, or the id names an older version.
        """
        return api.set_retired(self._engine, workflow_id, self.scope, reason=reason, agent=agent)

    def restore(self, workflow_id: str, *, agent: str | None = None) -> bool:
        """Undo :meth:`retire`: the workflow is retrieved and suggested again.

        Args:
            workflow_id: The workflow id.
            agent: Who restores it; default ``"user"``.

        Returns:
            Whether its status changed (``False`` when it was not retired).

        Raises:
            WorkflowNotFound: When it is not stored in the scope.
        """
        return api.set_retired(self._engine, workflow_id, self.scope, reason=None, agent=agent)

    # ------------------------------------------------------------------------------ outcomes

    def set_outcome(self, workflow_id: str, outcome: str) -> Workflow:
        """Record how a stored workflow's run ended (``Workflow.outcome``, ``wf:outcome``).

        Suggestions weigh the evidence of failed workflows as failures from the next read on
        (docs/suggestions.md, "Outcomes"); the procedures the workflow runs are recounted.

        Args:
            workflow_id: The workflow's id.
            outcome: ``"success"``, ``"failure"`` or ``"abandoned"``
                (:data:`provenance.model.OUTCOMES`).

        Returns:
            The workflow as stored, with its outcome.

        Raises:
            ConfigurationError: When ``outcome`` is not one of the three (the message lists them).
            WorkflowNotFound: When the scope holds no such workflow.
        """
        if outcome not in OUTCOMES:
            raise ConfigurationError(
                f"outcome must be one of {', '.join(OUTCOMES)}; got {outcome!r}"
            )
        self._engine.sync(self.scope)
        workflow = self._engine.load(workflow_id, self.scope)
        if workflow.outcome == outcome:
            return workflow
        saved = self._engine.write([workflow.replace(outcome=outcome)])
        self.record_uses(saved)
        return saved[0]

    # ------------------------------------------------------------------------------ procedures

    def procedures(self, *, status: str | None = None) -> list[Procedure]:
        """Return the scope's procedures (candidates, active, retired), best supported first.

        Mining runs first: new candidates and changed figures are recorded, and failing
        procedures retired, on the way.

        Args:
            status: Only this status (``"candidate"``, ``"active"``, ``"retired"``).

        Returns:
            The procedures.

        Raises:
            ConfigurationError: On an unknown status (the message lists them).
        """
        return api.procedures(self._engine, self.scope, status=status, cache=self._procedures)

    def accept_procedure(
        self, procedure_id: str, *, name: str, agent: str | None = None
    ) -> Procedure:
        """Make a procedure active under a name (a ``p-plan:Plan`` in the store).

        Args:
            procedure_id: The procedure's id (as :meth:`procedures` lists it).
            name: Its name, shown in suggestions.
            agent: Who accepts it; default ``"user"``.

        Returns:
            The procedure as recorded.

        Raises:
            ConfigurationError: When the id is unknown (the message lists the known ones) or the
                name empty.
        """
        return api.set_procedure_status(
            self._engine, procedure_id, self.scope, status="active", text=name, agent=agent,
            cache=self._procedures,
        )  # fmt: skip

    def retire_procedure(
        self, procedure_id: str, *, reason: str, agent: str | None = None
    ) -> Procedure:
        """Retire a procedure with a reason; it is no longer suggested.

        Args:
            procedure_id: The procedure's id.
            reason: Why.
            agent: Who retires it; default ``"user"``.

        Returns:
            The procedure as recorded.

        Raises:
            ConfigurationError: When the id is unknown or the reason empty.
        """
        return api.set_procedure_status(
            self._engine, procedure_id, self.scope, status="retired", text=reason, agent=agent,
            cache=self._procedures,
        )  # fmt: skip

    def suggestions(self, workflow: Workflow) -> list[Suggestion]:
        """Suggest running an active procedure the current workflow has begun (or nothing).

        Args:
            workflow: The current workflow.

        Returns:
            At most one suggestion, source ``"procedure"``.
        """
        return api.procedure_suggestions(self._engine, self.scope, workflow, self._procedures)

    def put_first(
        self, workflow: Workflow, found: list[Suggestion], *, limit: int | None
    ) -> list[Suggestion]:
        """Put the active procedure the workflow has begun (if any) before ``found``.

        A store failure is logged: a suggestion less, never a failed turn.

        Args:
            workflow: The current workflow.
            found: The chain's suggestions, best first.
            limit: How many to return at most (``None``: all).

        Returns:
            The suggestions, a procedure first.
        """
        try:
            first = self.suggestions(workflow)
        except ProvenanceError as exc:
            log.warning("could not read the active procedures: %s", exc)
            return found
        if not first:
            return found
        merged = [*first, *found]
        return merged if limit is None else merged[:limit]

    def record_uses(self, workflows: Sequence[Workflow]) -> list[str]:
        """Recount the procedures that just-saved workflows run; retire failing ones.

        Each workflow counts in its own scope. A store failure is logged, never raised.

        Args:
            workflows: The workflows as stored.

        Returns:
            The ids of the procedures retired by this call.
        """
        return api.record_uses(self._engine, workflows, self._procedures)
