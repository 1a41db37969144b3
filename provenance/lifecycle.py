"""Lifecycle records: workflow versions, retirement and mined procedures, as PROV.

They live in their own graph namespace, never among the workflow graphs (so they are never
listed as workflows and the union default graph over the workflow graphs leaves them out)::

    id/lifecycle/{scope}/workflow/{id}     the lifecycle record of one workflow of a scope
    id/lifecycle/{scope}/procedure/{pid}   one procedure of a scope

A **workflow record** holds the workflow's versions (the newest is the workflow ``ID`` itself;
older ones are stored as workflows ``ID@v1``, ``ID@v2`` ... linked by ``prov:wasRevisionOf``),
its status (``active`` or ``retired``; a retired workflow ``prov:wasInvalidatedBy`` its
retirement and has a ``prov:invalidatedAtTime``), and every status change as a ``prov:Activity``
with its time and agent (``wf:Revision``, ``wf:Retirement``, ``wf:Restoration``).

A **procedure record** holds a tool sequence mined from repetition (``wf:Procedure``, a
``prov:Entity`` ``prov:wasDerivedFrom`` its source workflows), its support, uses and success rate,
its status (``candidate``, ``active``: then also a ``p-plan:Plan`` with one ``p-plan:Step`` per
tool; ``retired``: ``prov:wasInvalidatedBy``), and its status changes (``wf:ProcedureMining``,
``wf:ProcedureAcceptance``, ``wf:ProcedureRetirement``). See docs/lifecycle.md.

A record graph is rewritten whole on each change: its state triples are regenerated from the
record and its activity triples are carried over, so the history only grows.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rdflib import Literal, URIRef
from rdflib.term import Node

from provenance.errors import MappingError
from provenance.vocab import (
    BASE,
    DCTERMS,
    PPLAN,
    PREFIXES,
    PROV,
    RDF,
    WF,
    XSD,
    agent_iri,
    decode_segment,
    encode_segment,
    tool_iri,
    workflow_iri,
)

__all__ = [
    "AUTOMATIC_AGENT",
    "LIFECYCLE_NAMESPACE",
    "LifecycleEvent",
    "ProcedureRecord",
    "VersionRecord",
    "WorkflowRecord",
    "is_lifecycle_graph",
    "lifecycle_prefix",
    "procedure_id",
    "procedure_iri",
    "procedure_triples",
    "read_procedure",
    "read_workflow_record",
    "version_id",
    "version_of",
    "workflow_record_iri",
    "workflow_record_triples",
    "HIDDEN_ALL_QUERY",
    "HIDDEN_QUERY",
    "PROCEDURES_QUERY",
    "PROCEDURE_SCOPES_QUERY",
    "SCOPE_GRAPHS_QUERY",
]

Triple = tuple[Node, Node, Node]

#: The agent of status changes the memory makes by itself (mining, automatic retirement).
AUTOMATIC_AGENT = "em-plugin"
#: Every lifecycle graph's IRI starts with it, then the scope: ``lifecycle/{scope}/...``.
LIFECYCLE_NAMESPACE = f"{BASE}lifecycle/"

_VERSION = re.compile(r"^(?P<base>.+)@v(?P<n>[1-9][0-9]*)$")
_PREFIXES = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in PREFIXES.items())

# The scope is compared in a FILTER, not matched as ``wf:scope ?scope``: once ``?scope`` is bound
# to its literal (a VALUES block), Oxigraph starts from that pattern, i.e. from every workflow of
# the scope. On Helpdesk's 2,536 train workflows each query took 170-230 ms that way, and a memory
# re-reads the procedures every poll interval before suggesting; from the record types, under
# 1 ms (2026-11-27, loaded machine).

#: ``?id`` of every hidden workflow of ``?scope``: retired ones and superseded versions.
HIDDEN_QUERY = (
    _PREFIXES
    + """SELECT DISTINCT ?id WHERE {
  GRAPH ?g {
    ?record a wf:LifecycleRecord ; wf:scope ?in .
    { ?record wf:status "retired" ; dcterms:identifier ?id }
    UNION { ?record wf:archivedVersion ?id }
  }
  FILTER(sameTerm(?in, ?scope))
}"""
)
#: ``?in ?id`` of every hidden workflow of every scope (what a batch of new scopes reads once).
HIDDEN_ALL_QUERY = (
    _PREFIXES
    + """SELECT DISTINCT ?in ?id WHERE {
  GRAPH ?g {
    ?record a wf:LifecycleRecord ; wf:scope ?in .
    { ?record wf:status "retired" ; dcterms:identifier ?id }
    UNION { ?record wf:archivedVersion ?id }
  }
}"""
)
#: ``?in`` of every scope with a procedure record.
PROCEDURE_SCOPES_QUERY = (
    _PREFIXES + """SELECT DISTINCT ?in WHERE { GRAPH ?g { ?p a wf:Procedure ; wf:scope ?in } }"""
)
#: The graphs of every procedure record of ``?scope``.
PROCEDURES_QUERY = (
    _PREFIXES
    + """SELECT DISTINCT ?g WHERE {
  GRAPH ?g { ?p a wf:Procedure ; wf:scope ?in }
  FILTER(sameTerm(?in, ?scope))
}"""
)
#: Every lifecycle graph of ``?scope`` (what erasing a scope drops).
SCOPE_GRAPHS_QUERY = (
    _PREFIXES
    + """SELECT DISTINCT ?g WHERE {
  GRAPH ?g {
    { ?r a wf:LifecycleRecord } UNION { ?r a wf:Procedure }
    ?r wf:scope ?in
  }
  FILTER(sameTerm(?in, ?scope))
}"""
)


def lifecycle_prefix(scope: str) -> str:
    """Return the IRI every lifecycle graph of a scope starts with."""
    return f"{LIFECYCLE_NAMESPACE}{encode_segment(scope)}/"


def is_lifecycle_graph(name: str) -> bool:
    """Tell whether a graph name is a lifecycle graph's (of any scope)."""
    return str(name).startswith(LIFECYCLE_NAMESPACE)


def workflow_record_iri(workflow_id: str, scope: str) -> URIRef:
    """Return the IRI of a workflow's lifecycle record (also the name of its graph)."""
    return URIRef(f"{lifecycle_prefix(scope)}workflow/{encode_segment(workflow_id)}")


def procedure_iri(procedure_id: str, scope: str) -> URIRef:
    """Return the IRI of a procedure (also the name of its record graph)."""
    return URIRef(f"{lifecycle_prefix(scope)}procedure/{encode_segment(procedure_id)}")


def version_id(workflow_id: str, version: int) -> str:
    """Return the id an older version is stored under: ``ID@vN``."""
    return f"{workflow_id}@v{version}"


def version_of(workflow_id: str) -> tuple[str, int] | None:
    """Return ``(ID, N)`` for a version id ``ID@vN``, else ``None``."""
    found = _VERSION.match(workflow_id)
    return (found["base"], int(found["n"])) if found else None


def procedure_id(scope: str, tools: Sequence[str]) -> str:
    """Return the stable id of a scope's procedure with this tool sequence (``p-`` + digest)."""
    text = json.dumps([scope, list(tools)], ensure_ascii=False)
    return "p-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class LifecycleEvent:
    """One status change to record as a ``prov:Activity``.

    Attributes:
        kind: The activity class: ``Revision``, ``Retirement``, ``Restoration``,
            ``ProcedureMining``, ``ProcedureAcceptance`` or ``ProcedureRetirement``.
        time: ISO 8601 time (``xsd:dateTime``).
        agent: The agent's name (``id/agent/{name}``).
        reason: Why, when given.
        status: The status it led to.
    """

    kind: str
    time: str
    agent: str
    reason: str | None = None
    status: str | None = None
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:16])


@dataclass(frozen=True)
class VersionRecord:
    """A version of a workflow: its number and when it was saved."""

    version: int
    saved: str | None = None
    leaves: int = 0


@dataclass(frozen=True)
class WorkflowRecord:
    """The lifecycle state of one workflow of a scope."""

    workflow_id: str
    scope: str
    versions: tuple[VersionRecord, ...] = ()
    """Every version, oldest first; the last is the workflow ``ID`` itself."""
    retired: bool = False
    reason: str | None = None
    retired_at: str | None = None
    retired_by: str | None = None
    """The token of the retirement activity."""

    @property
    def current(self) -> int:
        """The number of the newest version (1 when never revised)."""
        return self.versions[-1].version if self.versions else 1


@dataclass(frozen=True)
class ProcedureRecord:
    """A mined procedure of a scope, as stored."""

    procedure_id: str
    scope: str
    tools: tuple[str, ...]
    status: str = "candidate"
    name: str | None = None
    support: int = 0
    uses: int = 0
    successes: int = 0
    sources: tuple[str, ...] = ()
    reason: str | None = None
    retired_by: str | None = None

    @property
    def success_rate(self) -> float | None:
        """Successful uses over uses; ``None`` before any use."""
        return self.successes / self.uses if self.uses else None

    def replace(self, **changes: Any) -> ProcedureRecord:
        """Return a copy with fields changed."""
        return replace(self, **changes)


# ----------------------------------------------------------------------------------- writing


def _time(value: str) -> Literal:
    return Literal(value, datatype=XSD.dateTime)


def _activity(record: URIRef, event: LifecycleEvent, used: URIRef) -> list[Triple]:
    node = URIRef(f"{record}#act-{event.token}")
    agent = agent_iri(event.agent)
    out: list[Triple] = [
        (node, RDF.type, PROV.Activity),
        (node, RDF.type, WF[event.kind]),
        (node, PROV.startedAtTime, _time(event.time)),
        (node, PROV.endedAtTime, _time(event.time)),
        (node, PROV.wasAssociatedWith, agent),
        (node, PROV.used, used),
        (agent, RDF.type, PROV.Agent),
        (agent, WF.agentName, Literal(event.agent)),
    ]
    if event.agent == AUTOMATIC_AGENT:
        out.append((agent, RDF.type, PROV.SoftwareAgent))
    if event.reason is not None:
        out.append((node, WF.reason, Literal(event.reason)))
    if event.status is not None:
        out.append((node, WF.status, Literal(event.status)))
    return out


def _history(triples: Iterable[Triple], record: URIRef) -> list[Triple]:
    """The activity triples of an existing record graph (kept when it is rewritten)."""
    prefix = f"{record}#act-"
    agents = {
        t[2] for t in triples if str(t[0]).startswith(prefix) and t[1] == PROV.wasAssociatedWith
    }
    return [t for t in triples if str(t[0]).startswith(prefix) or t[0] in agents]


def workflow_record_triples(
    record: WorkflowRecord,
    old: Iterable[Triple] = (),
    event: LifecycleEvent | None = None,
) -> list[Triple]:
    """Return the record graph of a workflow: its state, the old activities and ``event``.

    Args:
        record: The new state.
        old: The triples of the stored record graph (its activities are kept).
        event: The status change to add.

    Returns:
        The triples of the record graph.
    """
    node = workflow_record_iri(record.workflow_id, record.scope)
    current = workflow_iri(record.workflow_id)
    out = _history(list(old), node)
    add = out.append
    add((node, RDF.type, WF.LifecycleRecord))
    add((node, RDF.type, PROV.Entity))
    add((node, DCTERMS.identifier, Literal(record.workflow_id)))
    add((node, WF.scope, Literal(record.scope)))
    add((node, WF.status, Literal("retired" if record.retired else "active")))
    add((node, WF.version, Literal(record.current)))
    add((node, PROV.wasDerivedFrom, current))
    # The workflows named here are typed here too, so that the graph is PROV on its own (the
    # `prov` package reads only typed nodes) as well as in the union with the workflow graphs.
    add((current, RDF.type, PROV.Entity))
    previous: URIRef | None = None
    for item in record.versions:
        newest = item is record.versions[-1]
        vid = record.workflow_id if newest else version_id(record.workflow_id, item.version)
        iri = current if newest else workflow_iri(vid)
        version = URIRef(f"{node}#v{item.version}")
        add((node, DCTERMS.hasPart, version))
        add((version, RDF.type, PROV.Entity))
        add((version, WF.version, Literal(item.version)))
        add((version, DCTERMS.identifier, Literal(vid)))
        add((version, WF.leafCount, Literal(item.leaves)))
        add((version, PROV.specializationOf, iri))
        add((iri, RDF.type, PROV.Entity))
        if item.saved is not None:
            add((version, WF.savedAt, _time(item.saved)))
        if not newest:
            add((node, WF.archivedVersion, Literal(vid)))
        if previous is not None:
            add((iri, PROV.wasRevisionOf, previous))
        previous = iri
    if record.retired:
        if record.reason is not None:
            add((node, WF.reason, Literal(record.reason)))
        if record.retired_by is not None:
            add((current, PROV.wasInvalidatedBy, URIRef(f"{node}#act-{record.retired_by}")))
        if record.retired_at is not None:
            add((current, PROV.invalidatedAtTime, _time(record.retired_at)))
    if event is not None:
        used = current
        if event.kind == "Revision" and len(record.versions) > 1:
            used = workflow_iri(version_id(record.workflow_id, record.versions[-2].version))
            add((URIRef(f"{node}#act-{event.token}"), PROV.generated, current))
        out.extend(_activity(node, event, used))
    return out


def procedure_triples(
    record: ProcedureRecord,
    old: Iterable[Triple] = (),
    events: Sequence[LifecycleEvent] = (),
) -> list[Triple]:
    """Return the record graph of a procedure: its state, the old activities and ``events``."""
    node = procedure_iri(record.procedure_id, record.scope)
    old = list(old)
    out = _history(old, node)
    add = out.append
    add((node, RDF.type, WF.Procedure))
    add((node, RDF.type, PROV.Entity))
    add((node, DCTERMS.identifier, Literal(record.procedure_id)))
    add((node, WF.scope, Literal(record.scope)))
    add((node, WF.status, Literal(record.status)))
    add((node, WF.toolSequence, Literal(json.dumps(list(record.tools)), datatype=RDF.JSON)))
    add((node, WF.support, Literal(record.support)))
    add((node, WF.uses, Literal(record.uses)))
    add((node, WF.successes, Literal(record.successes)))
    if record.success_rate is not None:
        add((node, WF.successRate, Literal(record.success_rate, datatype=XSD.double)))
    if record.name is not None:
        add((node, DCTERMS.title, Literal(record.name)))
    if record.reason is not None:
        add((node, WF.reason, Literal(record.reason)))
    for source in record.sources:
        add((node, PROV.wasDerivedFrom, workflow_iri(source)))
        add((workflow_iri(source), RDF.type, PROV.Entity))
    if record.status == "active":
        add((node, RDF.type, PROV.Plan))
        add((node, RDF.type, PPLAN.Plan))
        previous: URIRef | None = None
        for i, tool in enumerate(record.tools):
            step = URIRef(f"{node}#step-{i}")
            add((step, RDF.type, PPLAN.Step))
            add((step, RDF.type, PROV.Entity))
            add((step, PPLAN.isStepOfPlan, node))
            add((step, WF.index, Literal(i + 1)))
            add((step, WF.tool, tool_iri(tool)))
            add((tool_iri(tool), RDF.type, PROV.Entity))
            add((tool_iri(tool), WF.toolName, Literal(tool)))
            if previous is not None:
                add((step, PPLAN.isPrecededBy, previous))
            previous = step
    if record.status == "retired" and record.retired_by is not None:
        add((node, PROV.wasInvalidatedBy, URIRef(f"{node}#act-{record.retired_by}")))
    kinds = {e.kind for e in events}
    kept = [t for t in old if t[0] == node and t[1] in _KEPT]
    if "ProcedureRetirement" in kinds or record.status != "retired":
        kept = [t for t in kept if t[1] != PROV.invalidatedAtTime]
    out.extend(kept)
    for event in events:
        out.extend(_activity(node, event, node))
        if event.kind == "ProcedureMining":
            out.append((node, PROV.wasGeneratedBy, URIRef(f"{node}#act-{event.token}")))
        if event.kind == "ProcedureRetirement":
            out.append((node, PROV.invalidatedAtTime, _time(event.time)))
    return out


# Facts about a procedure node that only an activity adds, kept when the state is rewritten.
_KEPT = (PROV.wasGeneratedBy, PROV.invalidatedAtTime)


# ----------------------------------------------------------------------------------- reading


def _objects(triples: Iterable[Triple], subject: Node, predicate: URIRef) -> list[Node]:
    return [o for s, p, o in triples if s == subject and p == predicate]


def _one(triples: Iterable[Triple], subject: Node, predicate: URIRef) -> Any:
    found = _objects(triples, subject, predicate)
    return found[0].toPython() if found else None  # type: ignore[attr-defined]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def read_workflow_record(triples: Sequence[Triple], workflow_id: str, scope: str) -> WorkflowRecord:
    """Return the state a workflow record graph holds (a fresh record when it is empty)."""
    node = workflow_record_iri(workflow_id, scope)
    if not triples:
        return WorkflowRecord(workflow_id, scope)
    versions = []
    prefix = f"{node}#v"
    for s in {t[0] for t in triples if str(t[0]).startswith(prefix)}:
        number = _one(triples, s, WF.version)
        if number is None:
            raise MappingError(f"lifecycle record {node} has a version without a number")
        versions.append(
            VersionRecord(
                int(number),
                _text(_one(triples, s, WF.savedAt)),
                int(_one(triples, s, WF.leafCount) or 0),
            )
        )
    versions.sort(key=lambda v: v.version)
    current = workflow_iri(workflow_id)
    retired = _one(triples, node, WF.status) == "retired"
    invalidation = _objects(triples, current, PROV.wasInvalidatedBy)
    return WorkflowRecord(
        workflow_id,
        scope,
        tuple(versions),
        retired=retired,
        reason=_one(triples, node, WF.reason) if retired else None,
        retired_at=_text(_one(triples, current, PROV.invalidatedAtTime)) if retired else None,
        retired_by=str(invalidation[0]).rsplit("#act-", 1)[-1] if invalidation else None,
    )


def read_procedure(triples: Sequence[Triple], name: URIRef) -> ProcedureRecord:
    """Return the procedure a record graph holds.

    Raises:
        MappingError: When the graph holds no procedure.
    """
    pid = _one(triples, name, DCTERMS.identifier)
    scope = _one(triples, name, WF.scope)
    tools = _one(triples, name, WF.toolSequence)
    if pid is None or scope is None or tools is None:
        raise MappingError(f"graph {name} holds no procedure")
    if isinstance(tools, str):
        tools = json.loads(tools)
    invalidation = _objects(triples, name, PROV.wasInvalidatedBy)
    sources = sorted(
        decode_segment(str(o).rsplit("/", 1)[-1])
        for o in _objects(triples, name, PROV.wasDerivedFrom)
    )
    return ProcedureRecord(
        procedure_id=str(pid),
        scope=str(scope),
        tools=tuple(str(t) for t in tools),
        status=str(_one(triples, name, WF.status) or "candidate"),
        name=_one(triples, name, DCTERMS.title),
        support=int(_one(triples, name, WF.support) or 0),
        uses=int(_one(triples, name, WF.uses) or 0),
        successes=int(_one(triples, name, WF.successes) or 0),
        sources=tuple(sources),
        reason=_one(triples, name, WF.reason),
        retired_by=str(invalidation[0]).rsplit("#act-", 1)[-1] if invalidation else None,
    )
