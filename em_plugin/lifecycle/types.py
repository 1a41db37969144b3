"""Lifecycle records users see: workflow versions and mined procedures (docs/lifecycle.md)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROCEDURE_STATUSES", "Procedure", "WorkflowVersion"]

#: The statuses a procedure moves through: mined, accepted by a user, retired.
PROCEDURE_STATUSES = ("candidate", "active", "retired")


@dataclass(frozen=True)
class WorkflowVersion:
    """One saved version of a workflow, as ``memory.lifecycle.history`` lists it."""

    id: str
    """The id that addresses this version: ``ID`` for the newest, ``ID@vN`` for an older one."""
    version: int
    """1 for the first save, then 2, 3 ..."""
    created: str | None
    """ISO 8601 time this version was saved."""
    superseded_by: str | None
    """The id of the version that revised this one (``prov:wasRevisionOf``); ``None`` if newest."""
    retired: bool
    """Whether the workflow is retired (``prov:wasInvalidatedBy``); set on the newest version."""
    reason: str | None
    """Why it was retired, when it is."""
    leaves: int = 0
    """How many leaf steps this version has."""


@dataclass(frozen=True)
class Procedure:
    """A tool sequence that recurs across workflows of a scope (a mined procedure)."""

    id: str
    """Stable id derived from the scope and the tool sequence (``p-`` and a digest)."""
    name: str | None
    """The name a user gave it on acceptance."""
    status: str
    """``"candidate"``, ``"active"`` or ``"retired"``."""
    tools: tuple[str, ...]
    """The tool sequence (consecutive call leaves)."""
    support: int
    """How many distinct workflows contain the sequence."""
    success_rate: float | None
    """Share of its known-outcome uses that succeeded; ``None`` when no outcome is known."""
    sources: tuple[str, ...]
    """The workflows it was derived from (``prov:wasDerivedFrom``), sorted."""
    reason: str | None
    """Why it was retired, when it is."""
    uses: int = 0
    """How many workflows with a known outcome used it."""
