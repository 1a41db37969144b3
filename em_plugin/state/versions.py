"""Versions and retirement of stored workflows (docs/lifecycle.md).

:class:`Versions` is what the engine asks, per write and per catch-up with the store (its cache
of hidden ids, :class:`HiddenIds`, is the lifecycle's: the memory's
:class:`~em_plugin.lifecycle.cache.LifecycleCache` holds it, and the engine keeps no lifecycle
state):

* which ids of a scope are **hidden** from retrieval and suggestions (retired workflows and
  superseded versions ``ID@vN``), cached per scope and re-read whenever the scope's change log
  moved (:meth:`Versions.hidden`, :meth:`Versions.forget`);
* how a batch of saves becomes **versions** (:meth:`Versions.plan`): saving an id that exists
  re-stores the previous content as ``ID@vN`` and writes the workflow's lifecycle record with a
  ``wf:Revision``; an unchanged workflow is not stored again; a save of the same session whose
  leaves are a strict prefix of the stored one's is refused (the stored one is kept: a session
  saved again never loses steps);
* the lifecycle records of a **retirement** or a **restoration**.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from rdflib import URIRef

from provenance.lifecycle import (
    LifecycleEvent,
    VersionRecord,
    WorkflowRecord,
    read_workflow_record,
    version_id,
    workflow_record_iri,
    workflow_record_triples,
)
from provenance.model import CallStep, Workflow
from provenance.stores import WorkflowStore

__all__ = ["DEFAULT_AGENT", "HiddenIds", "SavePlan", "Versions", "leaf_key", "now"]

log = logging.getLogger("em_plugin.memory")

#: The agent recorded for status changes a user asks for through the API or the CLI.
DEFAULT_AGENT = "user"


def now() -> str:
    """Return the current UTC time as ISO 8601 text."""
    return datetime.now(UTC).isoformat()


def leaf_key(workflow: Workflow) -> list[tuple[str, str]]:
    """Return a workflow's leaves as comparable ``(kind, tool or text)`` pairs."""
    return [
        ("call", s.name) if isinstance(s, CallStep) else ("instruction", s.text)
        for s in workflow.leaves()
    ]


@dataclass
class SavePlan:
    """What a batch of saves writes: workflows, lifecycle records, what gets indexed."""

    saves: list[Workflow] = field(default_factory=list)
    """Every workflow to store (new versions and the archived previous ones)."""
    records: list[tuple[URIRef, Any]] = field(default_factory=list)
    """Lifecycle graphs to write in the same transaction."""
    undo: list[tuple[URIRef, Any]] = field(default_factory=list)
    """The same graphs as they were (to put back when indexing fails)."""
    archived: list[tuple[str, str]] = field(default_factory=list)
    """``(scope, id)`` of the archived versions stored by this batch."""
    live: list[Workflow] = field(default_factory=list)
    """The saved workflows to index (not retired)."""
    result: list[Workflow] = field(default_factory=list)
    """What each workflow of the batch is stored as, in batch order."""


class HiddenIds:
    """Per scope, the ids that retrieval skips (retired workflows, superseded versions), as read.

    The lifecycle owns it (:class:`~em_plugin.lifecycle.cache.LifecycleCache`, shared by a memory's
    scope views); :class:`Versions` reads and keeps it current.
    """

    def __init__(self) -> None:
        self._ids: dict[str, set[str]] = {}

    def get(self, scope: str) -> set[str] | None:
        """Return the scope's hidden ids as last read (kept current in place), or ``None``."""
        return self._ids.get(scope)

    def put(self, scope: str, ids: set[str]) -> None:
        """Keep the scope's hidden ids as read now."""
        self._ids[scope] = ids

    def drop(self, scope: str | None = None) -> None:
        """Forget one scope's entry (every scope's with ``None``): re-read at the next use."""
        if scope is None:
            self._ids.clear()
        else:
            self._ids.pop(scope, None)


class Versions:
    """Versions and retirement of a store's workflows, per scope, over the lifecycle's cache.

    Args:
        store: The workflow store.
        hidden: The cache of hidden ids it reads and keeps current (the lifecycle's).
    """

    def __init__(self, store: WorkflowStore, hidden: HiddenIds) -> None:
        self.store = store
        self._hidden = hidden

    def hidden(self, scope: str) -> set[str]:
        """Return the ids of a scope that retrieval skips (read once, then kept current)."""
        found = self._hidden.get(scope)
        if found is None:
            found = self.store.hidden(scope)
            self._hidden.put(scope, found)
        return found

    def read_ahead(self, scopes: Iterable[str]) -> None:
        """Read the hidden ids of those ``scopes`` not cached yet, in one query for them all.

        A batch that opens many new scopes (a store of many tenants) then costs one query, not
        one per scope (docs/performance.md, "Many tenants").
        """
        missing = [s for s in dict.fromkeys(scopes) if self._hidden.get(s) is None]
        if len(missing) > 1:
            for scope, ids in self.store.hidden_many(missing).items():
                self._hidden.put(scope, ids)

    def forget(self, scope: str | None = None) -> None:
        """Drop the cached hidden ids (of one scope), re-read at the next :meth:`hidden`."""
        self._hidden.drop(scope)

    def record(self, workflow_id: str, scope: str) -> tuple[WorkflowRecord, list[Any]]:
        """Return a workflow's lifecycle record and its graph's triples."""
        name = workflow_record_iri(workflow_id, scope)
        triples = self.store.read_records([name]).get(name, [])
        return read_workflow_record(triples, workflow_id, scope), triples

    def plan(
        self, batch: Sequence[Workflow], old: Mapping[tuple[str, str], Workflow | None]
    ) -> SavePlan:
        """Turn a batch of saves into versions (see the module doc).

        Args:
            batch: The workflows to save (distinct (scope, id)).
            old: The stored workflow of every (scope, id) of the batch that exists.

        Returns:
            What to store, record and index.
        """
        plan = SavePlan()
        for workflow in batch:
            key = (workflow.scope, workflow.id)
            previous = old.get(key)
            hidden = self.hidden(workflow.scope)
            if previous is None:
                plan.saves.append(workflow)
                plan.result.append(workflow)
                if workflow.id not in hidden:
                    plan.live.append(workflow)
                continue
            if previous == workflow:
                plan.result.append(previous)  # unchanged: no new version
                continue
            new, kept = leaf_key(workflow), leaf_key(previous)
            if (
                workflow.session is not None
                and workflow.session == previous.session
                and len(new) < len(kept)
                and kept[: len(new)] == new
            ):
                log.info(
                    "workflow %r: kept the stored version (%d leaves); the new save has only "
                    "its first %d",
                    workflow.id,
                    len(kept),
                    len(new),
                )
                plan.result.append(previous)
                continue
            record, triples = self.record(workflow.id, workflow.scope)
            time = now()
            versions = record.versions or (VersionRecord(1, previous.created, len(kept)),)
            number = versions[-1].version
            archived = previous.replace(id=version_id(workflow.id, number))
            record = replace(
                record, versions=(*versions, VersionRecord(number + 1, time, len(new)))
            )
            event = LifecycleEvent("Revision", time, DEFAULT_AGENT, status="active")
            name = workflow_record_iri(workflow.id, workflow.scope)
            plan.records.append((name, workflow_record_triples(record, triples, event)))
            plan.undo.append((name, triples))
            plan.saves.extend((archived, workflow))
            plan.archived.append((workflow.scope, archived.id))
            plan.result.append(workflow)
            hidden.add(archived.id)
            if not record.retired:
                plan.live.append(workflow)
        return plan

    def retirement(
        self, workflow_id: str, scope: str, *, reason: str | None, agent: str, retire: bool
    ) -> tuple[URIRef, list[Any]] | None:
        """Return the record graph that retires (or restores) a workflow.

        Returns:
            ``(name, triples)``, or ``None`` when the workflow already has that status.
        """
        record, triples = self.record(workflow_id, scope)
        if record.retired == retire:
            return None
        time = now()
        if retire:
            event = LifecycleEvent("Retirement", time, agent, reason=reason, status="retired")
            record = replace(
                record, retired=True, reason=reason, retired_at=time, retired_by=event.token
            )
        else:
            event = LifecycleEvent("Restoration", time, agent, status="active")
            record = replace(record, retired=False, reason=None, retired_at=None, retired_by=None)
        name = workflow_record_iri(workflow_id, scope)
        return name, workflow_record_triples(record, triples, event)
