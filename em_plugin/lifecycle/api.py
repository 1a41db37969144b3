"""What :class:`~em_plugin.lifecycle.facade.Lifecycle` does for versions, retirement and procedures.

Functions over the public members of a :class:`~em_plugin.state.engine.MemoryEngine` and a scope;
the active-procedure cache is the lifecycle's own
(:class:`~em_plugin.lifecycle.cache.ProcedureCache`), passed in (docs/lifecycle.md).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from rdflib import Literal, URIRef

from em_plugin.errors import ConfigurationError
from em_plugin.lifecycle.cache import ProcedureCache
from em_plugin.lifecycle.mining import MIN_SUPPORT, Pattern, mine, occurrences, outcomes
from em_plugin.lifecycle.types import PROCEDURE_STATUSES, Procedure, WorkflowVersion
from em_plugin.lifecycle.versions import DEFAULT_AGENT, now
from em_plugin.state.engine import MemoryEngine
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.errors import StoreError, WorkflowNotFound
from provenance.lifecycle import (
    AUTOMATIC_AGENT,
    LifecycleEvent,
    ProcedureRecord,
    procedure_id,
    procedure_iri,
    procedure_triples,
    read_procedure,
    version_id,
    version_of,
)
from provenance.model import CallStep, Workflow
from provenance.vocab import PREFIXES, decode_segment

__all__ = [
    "MAX_CANDIDATES",
    "MAX_SOURCES",
    "MIN_USES",
    "RETIRE_BELOW",
    "history",
    "procedure_suggestions",
    "procedures",
    "record_uses",
    "set_procedure_status",
    "set_retired",
]

#: At most this many mined candidates are kept (the best supported), so that a large store
#: records a bounded number of procedures.
MAX_CANDIDATES = 50
#: Source workflows recorded per procedure (``prov:wasDerivedFrom``); support counts them all.
MAX_SOURCES = 50
#: A procedure is retired when its success rate is below this after :data:`MIN_USES` uses.
RETIRE_BELOW = 0.5
MIN_USES = 5

log = logging.getLogger(__name__)

_PREFIXES = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in PREFIXES.items())
# Per workflow of a scope, the tools whose calls failed in it.
_FAILURES = (
    _PREFIXES
    + """SELECT DISTINCT ?id ?tool WHERE {
  GRAPH ?g {
    ?call a wf:FailedCall ; wf:tool/wf:toolName ?tool .
    ?workflow a pl:Workflow ; dcterms:identifier ?id ; wf:scope ?scope .
  }
}"""
)
# Per workflow of a scope, its outcome (success, failure, abandoned) when recorded.
_OUTCOMES = (
    _PREFIXES
    + """SELECT DISTINCT ?id ?outcome WHERE {
  GRAPH ?g {
    ?workflow a pl:Workflow ; dcterms:identifier ?id ; wf:scope ?scope ;
              prov:wasGeneratedBy ?run .
    ?run wf:outcome ?outcome .
  }
}"""
)


# ------------------------------------------------------------------------------ versions


def history(engine: MemoryEngine, workflow_id: str, scope: str) -> list[WorkflowVersion]:
    """Return a workflow's versions, oldest first (``ID@vN`` names the same history)."""
    base = workflow_id
    parsed = version_of(workflow_id)
    with engine.lock:
        engine.sync(scope)
        if parsed is not None and (scope, workflow_id) in engine.store:
            record, _ = engine.versions.record(parsed[0], scope)
            if record.versions:
                base = parsed[0]
        record, _ = engine.versions.record(base, scope)
        if not record.versions:
            workflow = engine.load(base, scope)  # raises WorkflowNotFound
            return [
                WorkflowVersion(
                    base,
                    1,
                    workflow.created,
                    None,
                    record.retired,
                    record.reason,
                    len(workflow.leaves()),
                )
            ]
    out = []
    for i, item in enumerate(record.versions):
        newest = i == len(record.versions) - 1
        following = None
        if not newest:
            nxt = record.versions[i + 1]
            following = base if i + 1 == len(record.versions) - 1 else version_id(base, nxt.version)
        out.append(
            WorkflowVersion(
                base if newest else version_id(base, item.version),
                item.version,
                item.saved,
                following,
                record.retired and newest,
                record.reason if newest else None,
                item.leaves,
            )
        )
    return out


def set_retired(
    engine: MemoryEngine, workflow_id: str, scope: str, *, reason: str | None, agent: str | None
) -> bool:
    """Retire (``reason`` given) or restore (``reason=None``) a workflow.

    Records it, then drops it from (or puts it back in) the index, the suggestion state and
    the copies.

    Returns:
        Whether its status changed.

    Raises:
        WorkflowNotFound: When the scope holds no such workflow.
        ConfigurationError: When the reason is empty, or the id names an older version
            (``ID@vN``).
    """
    retire = reason is not None
    if retire and (not isinstance(reason, str) or not reason.strip()):
        raise ConfigurationError("retire() needs a non-empty reason")
    with engine.lock:
        engine.sync(scope, force=True)
        if (scope, workflow_id) not in engine.store:
            raise WorkflowNotFound(f"no workflow {workflow_id!r} in scope {scope!r}")
        record, _ = engine.versions.record(workflow_id, scope)
        # Hidden without being retired itself: an older version, ID@vN.
        if workflow_id in engine.versions.hidden(scope) and not record.retired:
            raise ConfigurationError(
                f"{workflow_id!r} is an older version; retire or restore the workflow "
                "it belongs to (its id without @vN)"
            )
        change = engine.versions.retirement(
            workflow_id, scope, reason=reason, agent=agent or DEFAULT_AGENT, retire=retire
        )
        if change is None:
            return False
        markers, _ = engine.store.commit(records=[change], touched=[(scope, workflow_id)])
        engine.versions.forget(scope)
        if retire:
            engine.apply(scope, [], [workflow_id])
        else:
            engine.apply(scope, [engine.store.load(workflow_id, scope=scope)])
        engine.advance(markers)
        return True


# ------------------------------------------------------------------------------ procedures


def _stored(engine: MemoryEngine, scope: str) -> dict[str, tuple[ProcedureRecord, list[Any]]]:
    names = engine.store.procedure_graphs(scope)
    out = {}
    for name, triples in engine.store.read_records(names).items():
        record = read_procedure(triples, name)
        out[record.procedure_id] = (record, triples)
    return out


def _failures(engine: MemoryEngine, scope: str) -> tuple[dict[str, set[str]], dict[str, str]]:
    """Per workflow of a scope, the tools whose calls failed in it, and its known outcome.

    The outcome is ``wf:outcome`` on its run.
    """
    scoped = {"scope": Literal(scope)}
    failed: dict[str, set[str]] = {}
    for workflow_id, tool in engine.store.backend.select(_FAILURES, scoped).rows:
        failed.setdefault(str(workflow_id), set()).add(str(tool))
    known = {str(w): str(o) for w, o in engine.store.backend.select(_OUTCOMES, scoped).rows}
    return failed, known


def _public(record: ProcedureRecord) -> Procedure:
    return Procedure(
        id=record.procedure_id,
        name=record.name,
        status=record.status,
        tools=record.tools,
        support=record.support,
        success_rate=record.success_rate,
        sources=record.sources,
        reason=record.reason,
        uses=record.uses,
    )


def _counted(
    record: ProcedureRecord,
    pattern: Pattern,
    failures: dict[str, set[str]],
    recorded: dict[str, str],
    stamp: str,
    events: list[LifecycleEvent],
) -> ProcedureRecord:
    """The record with its pattern's figures, retired when its success rate falls too low.

    Retired (an event added to ``events``) when the success rate is below
    :data:`RETIRE_BELOW` after :data:`MIN_USES` uses.
    """
    uses = outcomes(pattern, failures, recorded)
    updated = record.replace(
        support=pattern.support,
        uses=uses.uses,
        successes=uses.successes,
        sources=pattern.workflows[:MAX_SOURCES],
    )
    rate = updated.success_rate
    if (
        updated.status != "retired"
        and updated.uses >= MIN_USES
        and rate is not None
        and rate < RETIRE_BELOW
    ):
        reason = f"success rate {rate:.2f} below {RETIRE_BELOW} after {updated.uses} uses"
        event = LifecycleEvent(
            "ProcedureRetirement", stamp, AUTOMATIC_AGENT, reason=reason, status="retired"
        )
        events.append(event)
        updated = updated.replace(status="retired", reason=reason, retired_by=event.token)
    return updated


def procedures(
    engine: MemoryEngine, scope: str, *, status: str | None = None, cache: ProcedureCache
) -> list[Procedure]:
    """Mine the scope and return the procedures (of one status), best supported first.

    Records new candidates and changed figures, and retires failing procedures, on the way.
    """
    if status is not None and status not in PROCEDURE_STATUSES:
        raise ConfigurationError(
            f"unknown procedure status {status!r}; choose one of {', '.join(PROCEDURE_STATUSES)}"
        )
    with engine.lock:
        engine.sync(scope)
        index = engine.index.scope_index(scope)
        patterns = mine(index, limit=MAX_CANDIDATES)
        stored = _stored(engine, scope)
        failures, recorded = _failures(engine, scope)
        mined = {procedure_id(scope, p.tools): p for p in patterns}
        for pid, (record, _) in stored.items():
            if pid not in mined:
                mined[pid] = occurrences(index, record.tools)
        writes: list[tuple[URIRef, Any]] = []
        records: list[ProcedureRecord] = []
        stamp = now()
        for pid, pattern in mined.items():
            known, triples = stored.get(pid, (None, []))
            events: list[LifecycleEvent] = []
            if known is None:
                if pattern.support < MIN_SUPPORT:
                    continue
                record = ProcedureRecord(pid, scope, pattern.tools)
                events.append(
                    LifecycleEvent("ProcedureMining", stamp, AUTOMATIC_AGENT, status="candidate")
                )
            else:
                record = known
            updated = _counted(record, pattern, failures, recorded, stamp, events)
            if events or updated != record:
                writes.append(
                    (procedure_iri(pid, scope), procedure_triples(updated, triples, events))
                )
            records.append(updated)
        if writes and not engine.read_only:
            _commit_procedures(engine, scope, writes, cache)
    records.sort(key=lambda r: (-r.support, -len(r.tools), r.tools))
    return [_public(r) for r in records if status is None or r.status == status]


def _runs(workflow: Workflow) -> list[tuple[str, ...]]:
    """A workflow's runs of consecutive call leaves, as mining splits them.

    An instruction leaf ends a run.
    """
    runs: list[tuple[str, ...]] = [()]
    for leaf in workflow.leaves():
        if isinstance(leaf, CallStep):
            runs[-1] = (*runs[-1], leaf.name)
        elif runs[-1]:
            runs.append(())
    return [r for r in runs if r]


def _uses(runs: list[tuple[str, ...]], tools: tuple[str, ...]) -> bool:
    n = len(tools)
    return any(run[i : i + n] == tools for run in runs for i in range(len(run) - n + 1))


def record_uses(
    engine: MemoryEngine, workflows: Sequence[Workflow], cache: ProcedureCache
) -> list[str]:
    """Count the uses just saved of the recorded procedures, and retire failing ones.

    Called after every save (a new workflow, a new version, an outcome set): each recorded,
    not retired procedure whose tools one of ``workflows`` runs gets its figures recounted
    (support, uses, success rate) and the retirement rule applied at once, not at the next
    listing. Scopes with no recorded procedure cost one query in all. A store failure here is
    logged, never raised: the workflows are saved, and the next listing counts them.

    Args:
        engine: The memory's engine (the workflows are already stored and indexed).
        workflows: The workflows as stored.
        cache: The active procedures cached for suggestions (a retired one leaves it).

    Returns:
        The ids of the procedures retired by this call.
    """
    if engine.read_only or not workflows:
        return []
    by_scope: dict[str, list[tuple[str, ...]]] = {}
    for workflow in workflows:
        by_scope.setdefault(workflow.scope, []).extend(_runs(workflow))
    retired: list[str] = []
    if len(by_scope) > 1:  # one query finds the few scopes to recount, not one per scope
        try:
            recorded = engine.store.procedure_scopes()
        except StoreError as exc:
            log.warning("could not list the scopes with procedures: %s", exc)
            return []
        by_scope = {s: runs for s, runs in by_scope.items() if s in recorded}
    for scope, runs in by_scope.items():
        try:
            retired += _record_scope_uses(engine, scope, runs, cache)
        except StoreError as exc:
            log.warning("could not count procedure uses in scope %r: %s", scope, exc)
    return retired


def _record_scope_uses(
    engine: MemoryEngine, scope: str, runs: list[tuple[str, ...]], cache: ProcedureCache
) -> list[str]:
    if not runs:
        return []
    with engine.lock:
        used = {
            pid: pair
            for pid, pair in _stored(engine, scope).items()
            if pair[0].status != "retired" and _uses(runs, pair[0].tools)
        }
        if not used:
            return []
        index = engine.index.scope_index(scope)
        failures, recorded = _failures(engine, scope)
        stamp = now()
        writes: list[tuple[URIRef, Any]] = []
        retired = []
        for pid, (record, triples) in used.items():
            events: list[LifecycleEvent] = []
            updated = _counted(
                record, occurrences(index, record.tools), failures, recorded, stamp, events
            )
            if updated.status == "retired":
                retired.append(pid)
            if events or updated != record:
                writes.append(
                    (procedure_iri(pid, scope), procedure_triples(updated, triples, events))
                )
        if writes:
            _commit_procedures(engine, scope, writes, cache)
    return retired


def set_procedure_status(
    engine: MemoryEngine,
    procedure_id_: str,
    scope: str,
    *,
    status: str,
    text: str,
    agent: str | None,
    cache: ProcedureCache,
) -> Procedure:
    """Accept or retire a procedure.

    Accept: ``status="active"``, ``text`` the name; retire: ``text`` the reason.
    """
    what = "name" if status == "active" else "reason"
    if not isinstance(text, str) or not text.strip():
        raise ConfigurationError(f"a procedure needs a non-empty {what}")
    with engine.lock:
        stored = _stored(engine, scope)
        if procedure_id_ not in stored:
            procedures(engine, scope, cache=cache)  # mined but not recorded yet
            stored = _stored(engine, scope)
        if procedure_id_ not in stored:
            known = ", ".join(sorted(stored)) or "none"
            raise ConfigurationError(
                f"no procedure {procedure_id_!r} in scope {scope!r} (known: {known}); "
                "`em-plugin procedures` lists them"
            )
        record, triples = stored[procedure_id_]
        if status == "active":
            event = LifecycleEvent(
                "ProcedureAcceptance", now(), agent or DEFAULT_AGENT, status=status
            )
            updated = record.replace(status="active", name=text, reason=None, retired_by=None)
        else:
            event = LifecycleEvent(
                "ProcedureRetirement", now(), agent or DEFAULT_AGENT, reason=text, status=status
            )
            updated = record.replace(status="retired", reason=text, retired_by=event.token)
        name = procedure_iri(procedure_id_, scope)
        graph = procedure_triples(updated, triples, [event])
        _commit_procedures(engine, scope, [(name, graph)], cache)
    return _public(updated)


def _commit_procedures(
    engine: MemoryEngine, scope: str, writes: list[tuple[URIRef, Any]], cache: ProcedureCache
) -> None:
    """Write procedure record graphs, moving the scope's change marker.

    The marker moves so that every copy of the store's PROV graphs (the union that ad-hoc
    SPARQL reads, ``provenance/stores/union.py``, in this process and in others) sees the new
    records; the procedures' ids are logged as changed, which no workflow index holds.
    """
    touched = [(scope, _procedure_id_of(name)) for name, _ in writes]
    markers, _ = engine.store.commit(records=writes, touched=touched)
    cache.drop(scope)
    engine.advance(markers)


def _procedure_id_of(name: URIRef) -> str:
    return decode_segment(str(name).rsplit("/", 1)[-1])


# ------------------------------------------------------------------------------ suggestions


def active_procedures(
    engine: MemoryEngine, scope: str, cache: ProcedureCache
) -> list[ProcedureRecord]:
    """Return the scope's active procedures, re-read when the cache has none current."""
    found = cache.get(scope)
    if found is None:
        found = [r for r, _ in _stored(engine, scope).values() if r.status == "active"]
        cache.put(scope, found)
    return found


def _position(
    engine: MemoryEngine, scope: str, workflow_id: str, tools: tuple[str, ...], k: int
) -> int:
    """The leaf position of the procedure's ``k``-th tool in a source workflow (0 if unknown)."""
    try:
        leaves = engine.index.leaves(workflow_id, scope).tools
    except KeyError:  # retired or deleted since the procedure was recorded
        return 0
    for start in range(len(leaves) - len(tools) + 1):
        if tuple(leaves[start : start + len(tools)]) == tools:
            return start + k
    return 0


def procedure_suggestions(
    engine: MemoryEngine, scope: str, workflow: Workflow, cache: ProcedureCache
) -> list[Suggestion]:
    """Suggest running an active procedure as a whole when the current workflow has begun it.

    The current workflow's last call leaves must equal the first ``k >= 1`` tools of an active
    procedure (longest ``k`` first, then support); the suggestion names the procedure, its
    next tool and the rest of its tools, with its source workflows as evidence.
    """
    trail: list[str] = []
    for leaf in reversed(workflow.leaves()):
        if not isinstance(leaf, CallStep):
            break
        trail.insert(0, leaf.name)
    if not trail:
        return []
    # Read on every suggestion: the cached records need no lock (a dict read), so concurrent
    # suggestions do not queue for the exclusive lock here; a stale entry is read again.
    active = cache.get(scope)
    if active is None:
        with engine.lock:
            active = active_procedures(engine, scope, cache)
    if not active:
        return []
    best: tuple[int, int, ProcedureRecord] | None = None
    for record in active:
        tools = record.tools
        for k in range(min(len(tools) - 1, len(trail)), 0, -1):
            if tuple(trail[-k:]) == tools[:k]:
                if best is None or (k, record.support) > best[:2]:
                    best = (k, record.support, record)
                break
    if best is None:
        return []
    k, _, record = best
    rest = " → ".join(record.tools[k:])
    rate = record.success_rate
    with engine.lock.shared:
        # Retired (or deleted) workflows are never evidence, whatever the last mining saw.
        live = [w for w in record.sources if (scope, w) in engine.index][:5]
        evidence = tuple(
            Evidence(w, _position(engine, scope, w, record.tools, k), rate or 0.0) for w in live
        )
    if not evidence:
        return []
    return [
        Suggestion(
            text=f"next: run *{record.name or record.procedure_id}* ({rest})",
            tool=record.tools[k],
            score=float(rate if rate is not None else 1.0),
            source="procedure",
            evidence=evidence,
            detail=record.tools,
        )
    ]
