"""The workflow-level store: save, load, list, delete and query workflows by scope and id.

:class:`WorkflowStore` keeps one named graph per workflow (``provenance.vocab.graph_iri``) in any
:class:`~provenance.stores.base.GraphStore` backend and converts with :mod:`provenance.mapping`.
Ids are **per scope**: the graph IRI holds the scope, so the same id (or LangGraph thread id) in
two scopes names two workflows, and nothing one scope does replaces or deletes another's. Every
scope question is one SPARQL query over the ``wf:scope`` literals (never one load per workflow).

The store also owns what lives beside the workflows:

* **change logs** (:mod:`provenance.stores._changes`): each write adds, in the same
  transaction, one small entry graph per scope it touches (sequence number, token, ids), so an
  index knows cheaply whether it is current and what to reload (:meth:`WorkflowStore.marker`,
  :meth:`WorkflowStore.markers`);
* **suggestion records**, one graph per (scope, session) (:meth:`WorkflowStore.record_suggestions`);
* the **derived-data directory** of a disk store (:attr:`WorkflowStore.derived_dir`), where
  indexes and caches built from the store live; erasing a scope must reach them too
  (``docs/state.md``).

A write whose outcome the backend cannot report (a remote server that died mid-request) is
settled by looking for its change-log entry: committed writes return normally, and when the store
cannot be read either, :class:`~provenance.errors.StoreOutcomeUnknown` says so.

**Scope restriction of queries.** ``query(..., scope="s")`` first lists the scope's graphs of
the query dataset (their scope is read from their names, :mod:`provenance.stores.graph_families`)
and then runs the query with its dataset narrowed to exactly those graphs (see
:meth:`GraphStore.query`): ``GRAPH ?g`` ranges over them only, and ``FROM`` clauses cannot reach
further. A query therefore cannot see another scope's triples, whatever it says; an unknown scope
gives empty results.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from rdflib import Graph, Literal, URIRef

from provenance.errors import QueryError, StoreError, StoreOutcomeUnknown, WorkflowNotFound
from provenance.lifecycle import (
    HIDDEN_ALL_QUERY,
    HIDDEN_QUERY,
    PROCEDURE_SCOPES_QUERY,
    PROCEDURES_QUERY,
    SCOPE_GRAPHS_QUERY,
)
from provenance.mapping import triples_to_workflow
from provenance.model import DEFAULT_SCOPE, Workflow
from provenance.stores._cache_dir import CacheSlot, claim_slot, erase_idle_slots
from provenance.stores._changes import (
    CHANGED_QUERY,
    ENTRIES_QUERY,
    ChangeEntry,
    ChangeMarker,
    entry_triples,
    markers_from_rows,
)
from provenance.stores._sparql import bind_each
from provenance.stores._terms import TriplesText
from provenance.stores._text_writer import workflow_to_text
from provenance.stores.base import Bindings, GraphStore, QueryResult
from provenance.stores.graph_families import FAMILIES
from provenance.stores.graph_writes import scope_graphs
from provenance.suggestion_record import suggestion_graph_iri, suggestion_triples
from provenance.vocab import PREFIXES, changes_graph_iri, graph_iri

__all__ = ["ChangeMarker", "JudgedRound", "StagedWrite", "WorkflowStore"]

log = logging.getLogger("provenance.stores")

#: Scopes whose change logs one query reads (a VALUES block of this many literals).
_MARKER_CHUNK = 500

_PREFIXES = "".join(f"PREFIX {prefix}: <{iri}>\n" for prefix, iri in PREFIXES.items())
# ?g ?id ?scope of every stored workflow; bind ?scope to list one scope, ?id to find one id.
_INDEX = (
    _PREFIXES
    + """SELECT ?g ?id ?scope WHERE {
  GRAPH ?g { ?wf a pl:Workflow ; dcterms:identifier ?id ; wf:scope ?scope }
}"""
)
_SCOPE_COUNTS = (
    _PREFIXES
    + """SELECT ?scope (COUNT(DISTINCT ?g) AS ?n) WHERE {
  GRAPH ?g { ?wf a pl:Workflow ; wf:scope ?scope }
} GROUP BY ?scope"""
)
_TOOL_COUNT = (
    _PREFIXES + "SELECT (COUNT(DISTINCT ?name) AS ?n) WHERE { GRAPH ?g { ?t wf:toolName ?name } }"
)
# Properties, not classes: the lean mapping leaves p-plan:Step and wf:Tool implicit.
_STEP_COUNT = (
    _PREFIXES + "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s p-plan:isStepOfPlan ?plan } }"
)
_SCOPE_RECORDS = (
    _PREFIXES + "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?a a wf:Suggestion ; wf:scope ?scope } }"
)
# Every judged round of a scope that says what it learned (suggestion_record.acceptance_triples),
# with its suggestions' ranks and tools.
# wf:rank first: Oxigraph evaluates the OPTIONAL's pattern on its own, then joins; led by
# prov:wasGeneratedBy it read every step of every workflow (1.1-3.7 s on a 10,000-workflow store
# with no round at all, on the first suggestion of every process), led by wf:rank only the
# suggestions (under 10 ms).
_JUDGED_ROUNDS = (
    _PREFIXES
    + """SELECT ?a ?context ?next ?rank ?tool WHERE {
  GRAPH ?g {
    ?a a wf:Suggestion ; wf:scope ?scope ; wf:contextTools ?context .
    OPTIONAL { ?a wf:nextTool ?next }
    OPTIONAL { ?s wf:rank ?rank ; prov:wasGeneratedBy ?a . OPTIONAL { ?s wf:suggestedTool ?tool } }
  }
}"""
)
# A bare word (no blank, brace or '?') names a query in provenance/queries/.
_QUERY_NAME = re.compile(r"[A-Za-z_][\w\-]*")


@dataclass(frozen=True)
class JudgedRound:
    """What one judged suggestion round taught (:meth:`WorkflowStore.judged_rounds`)."""

    context: tuple[str, ...]
    """The tools of the last leaves of the workflow it was shown for (``""``: an instruction)."""
    shown: tuple[str | None, ...]
    """The tools shown, in rank order (``None``: a suggestion without one)."""
    next_tool: str | None
    """The tool the round's next turn took, suggested or not (``None``: no call)."""


@dataclass(frozen=True)
class StagedWrite:
    """A batch staged by :meth:`WorkflowStore.stage`, for :meth:`WorkflowStore.commit_staged`."""

    graphs: list[tuple[URIRef, Any]]
    """Every graph the transaction replaces (empty triples drop the graph)."""
    changed: dict[str, frozenset[str]]
    """Per scope, the ids the transaction's change-log entry names."""
    workflows: list[Workflow]
    """The workflows stored (a repeated (scope, id) kept its last)."""


class WorkflowStore:
    """Workflows in a :class:`GraphStore`, one named graph each, ids per scope.

    Args:
        backend: Where the graphs live; the store owns it and closes it in :meth:`close`.

    Example:
        >>> from provenance.stores import open_store
        >>> from provenance.model import CallStep, Workflow
        >>> with open_store("memory:") as store:
        ...     store.save(Workflow(id="w1", steps=(CallStep(name="A1"),), scope="team"))
        ...     store.ids(scope="team"), store.load("w1", scope="team").steps[0].name
        (['w1'], 'A1')
    """

    def __init__(self, backend: GraphStore) -> None:
        self.backend = backend
        self._writing = threading.Lock()
        self._slot: CacheSlot | None = None
        self._slot_claimed = False

    def __repr__(self) -> str:
        return f"WorkflowStore({self.backend!r})"

    @property
    def read_only(self) -> bool:
        """Whether the backend refuses writes."""
        return bool(self.backend.read_only)

    @property
    def derived_dir(self) -> Path | None:
        """The directory for data derived from the store (indexes, caches).

        A disk store's is ``PATH.em-index`` beside ``PATH``. A remote store's is a slot of the
        local cache that this store holds until it is closed (``provenance/stores/_cache_dir.py``),
        so a restarted worker finds its index instead of rebuilding it over HTTP. ``None`` for
        the in-memory store, or when the cache is off or unusable.
        """
        path = self.backend.path
        if path is not None:
            return path.with_name(f"{path.name}.em-index")
        key = self.backend.cache_key
        if key is None:
            return None
        if not self._slot_claimed:
            self._slot_claimed = True
            self._slot = claim_slot(key)
        return None if self._slot is None else self._slot.path

    def refresh(self) -> None:
        """Let a read-only backend see writes committed since it was opened (else no-op)."""
        self.backend.refresh()

    # -- writes ------------------------------------------------------------------------------

    def save(self, workflow: Workflow) -> None:
        """Store a workflow, in one transaction.

        It replaces the stored one with the same scope and id.

        Raises:
            StoreError: When the backend fails; the store keeps its previous content.
        """
        self.save_many([workflow])

    def save_many(self, workflows: Iterable[Workflow]) -> int:
        """Store workflows in ONE transaction: afterwards all are stored, or none changed.

        A repeated (scope, id) in the batch keeps its last workflow (as saving them one by one
        would).

        Returns:
            The number of workflows stored.

        Raises:
            StoreError: When the backend fails or a value cannot be stored; nothing changes.
            StoreOutcomeUnknown: When the backend failed mid-request and the store cannot be
                read to settle whether the batch was committed.
        """
        return len(self.commit(saves=workflows)[1])

    def commit(
        self,
        *,
        saves: Iterable[Workflow] = (),
        deletes: Iterable[tuple[str, str]] = (),
        records: Sequence[tuple[URIRef, Any]] = (),
        touched: Iterable[tuple[str, str]] = (),
    ) -> tuple[dict[str, ChangeMarker], list[Workflow]]:
        """Save and delete workflows in one transaction, with their scopes' change markers.

        Args:
            saves: Workflows to store (a repeated (scope, id) keeps the last).
            deletes: ``(scope, id)`` pairs to delete (absent ones are ignored).
            records: Lifecycle graphs ``(name, triples)`` to write in the same transaction
                (:mod:`provenance.lifecycle`; empty triples drop the graph).
            touched: ``(scope, id)`` pairs whose lifecycle changed: logged as changed, so other
                processes reload them (a retired workflow leaves their indexes).

        Returns:
            The new change marker of every scope touched, and the workflows stored.

        Raises:
            StoreError: As :meth:`save_many`.
            StoreOutcomeUnknown: As :meth:`save_many`.
        """
        staged = self.stage(saves=saves, deletes=deletes, records=records, touched=touched)
        return self.commit_staged(staged), staged.workflows

    def stage(
        self,
        *,
        saves: Iterable[Workflow] = (),
        deletes: Iterable[tuple[str, str]] = (),
        records: Sequence[tuple[URIRef, Any]] = (),
        touched: Iterable[tuple[str, str]] = (),
    ) -> StagedWrite:
        """Do the Python work of a :meth:`commit` now; :meth:`commit_staged` writes it later.

        Reads nothing and writes nothing, so a writer can stage batch k+1 while batch k is
        being written (``EpisodicMemory.save_many``; docs/stores.md). The arguments are those
        of :meth:`commit`.

        Returns:
            The staged write.
        """
        batch = {(w.scope, w.id): w for w in saves}
        gone = [key for key in dict.fromkeys(deletes) if key not in batch]
        changed: dict[str, set[str]] = {}
        for scope, workflow_id in [*batch, *gone, *touched]:
            changed.setdefault(scope, set()).add(workflow_id)
        # Term text straight from the workflows: the backends write text, and building rdflib
        # terms first cost more than the rest of the Python side of a save (docs/stores.md).
        graphs: list[tuple[URIRef, Any]] = [
            (graph_iri(w.id, w.scope), workflow_to_text(w)) for w in batch.values()
        ]
        graphs.extend((graph_iri(i, s), []) for s, i in gone)
        graphs.extend(records)
        self.backend.prepare(graphs)
        return StagedWrite(
            graphs, {s: frozenset(ids) for s, ids in changed.items()}, list(batch.values())
        )

    def commit_staged(self, staged: StagedWrite) -> dict[str, ChangeMarker]:
        """Write a :meth:`stage`-d batch in one transaction, with its change-log entries.

        Safe to call from another thread than the one that staged it; writes of one store
        object are serialised.

        Returns:
            The new change marker of every scope touched.

        Raises:
            StoreError: As :meth:`save_many`.
            StoreOutcomeUnknown: As :meth:`save_many`.
        """
        return self._write(staged.graphs, staged.changed)

    def delete(self, workflow_id: str, scope: str = DEFAULT_SCOPE) -> bool:
        """Delete a workflow of a scope; return whether it existed there."""
        if not self.backend.has_graph(graph_iri(workflow_id, scope)):
            return False
        self.commit(deletes=[(scope, workflow_id)])
        return True

    def delete_scope(self, scope: str) -> list[str]:
        """Erase a scope in one transaction.

        Every graph of the scope in a family erased with it goes
        (:mod:`provenance.stores.graph_families`: workflows, lifecycle records, suggestion
        records, session journals, change log), the log replaced by one entry saying "the whole
        scope changed" (no id of the scope stays in the log).

        Returns:
            The deleted workflow ids, sorted.
        """
        index = self._index(scope)
        erased = [f for f in FAMILIES if f.erased_with_scope]
        drops = {g for g, _, _ in index}
        drops.update(scope_graphs(self.backend, scope, erased))
        # Records found by what they say, not their names: a record of the scope stays nowhere.
        drops.update(self.suggestion_records(scope))
        drops.update(self.lifecycle_graphs(scope))
        self._write([(g, []) for g in sorted(drops)], {scope: None})
        if self.backend.cache_key is not None:
            # Cached indexes of processes that are gone still hold the scope's texts; live
            # ones drop the scope when they next compare change markers.
            erase_idle_slots(self.backend.cache_key)
        return sorted(workflow_id for _, workflow_id, _ in index)

    def _write(
        self,
        graphs: list[tuple[URIRef, Any]],
        changed: Mapping[str, frozenset[str] | None],
    ) -> dict[str, ChangeMarker]:
        """Write graphs plus one new log entry per ``changed`` scope, in one transaction.

        Returns:
            Per scope, the log as this writer knows it: what it read, plus its entry.
        """
        with self._writing:
            return self._write_locked(graphs, changed)

    def _write_locked(
        self,
        graphs: list[tuple[URIRef, Any]],
        changed: Mapping[str, frozenset[str] | None],
    ) -> dict[str, ChangeMarker]:
        # Reading the log and writing its next entry must not interleave with another write of
        # this object (a pipelined save_many writes on its own thread).
        token = uuid.uuid4().hex
        before = self._read_markers(list(changed), ids=False)
        entries = {
            s: ChangeEntry(before[s].sequence + 1, token, ids, everything=ids is None)
            for s, ids in changed.items()
        }
        # The log entries' IRIs are built by provenance.vocab, like the workflows' (trusted).
        graphs = graphs + [
            (changes_graph_iri(s, e.graph), TriplesText.of(entry_triples(s, e), trusted=True))
            for s, e in entries.items()
        ]
        try:
            self.backend.replace_graphs(graphs)
        except StoreError as exc:
            self._settle(exc, entries)
        after = {s: before[s].after(e) for s, e in entries.items()}
        self._trim(after)
        return after

    def _settle(self, exc: StoreError, entries: Mapping[str, ChangeEntry]) -> None:
        """Decide whether a failed write was committed anyway; return if it was, else raise."""
        if not _outcome_may_be_unknown(self.backend, exc):
            raise exc
        try:
            found = [
                self.backend.has_graph(changes_graph_iri(s, e.graph)) for s, e in entries.items()
            ]
        except StoreError as again:
            raise StoreOutcomeUnknown(
                f"{exc}; the store cannot be read to tell whether the write was committed "
                f"({again}). A memory reconciles with the store when it is next used"
            ) from exc
        if all(found):
            log.warning("the store committed a write whose answer was lost: %s", exc)
            return
        raise StoreOutcomeUnknown(
            f"{exc}; the write is not in the store yet, but the server may still commit it. "
            "A memory reconciles with the store when it is next used"
        ) from exc

    def _trim(self, markers: Mapping[str, ChangeMarker]) -> None:
        """Drop the oldest log entries beyond the log's size (a separate, optional write)."""
        old = [changes_graph_iri(s, e.graph) for s, m in markers.items() for e in m.trimmed()]
        if not old:
            return
        try:
            self.backend.replace_graphs([(g, []) for g in old])
        except StoreError as exc:  # the entries are only bookkeeping: the next write retries
            log.warning("could not trim the change log: %s", exc)

    # -- change markers ----------------------------------------------------------------------

    def marker(self, scope: str) -> ChangeMarker:
        """Return a scope's change log with the ids of each entry (empty: no recorded write)."""
        return self._read_markers([scope], ids=True)[scope]

    def position(self, scope: str) -> tuple[int, str]:
        """Return a scope's change-log position ``(sequence, tokens)``.

        One small query, what a reader polls (``(0, "")``: no recorded write).
        """
        return self._read_markers([scope], ids=False)[scope].position

    def markers(self) -> dict[str, tuple[int, str]]:
        """Return ``scope -> position`` of every scope with a change log (one small query)."""
        rows = self.backend.select(ENTRIES_QUERY).rows
        return {s: m.position for s, m in markers_from_rows(rows).items()}

    def _read_markers(self, scopes: Sequence[str], *, ids: bool) -> dict[str, ChangeMarker]:
        # Only these scopes' logs, in one query per chunk: reading every scope's log made each
        # batch of a store with many scopes cost O(scopes in the store) (docs/performance.md,
        # "Many tenants").
        rows: list[tuple[Any, ...]] = []
        changed: list[tuple[Any, ...]] | None = [] if ids else None
        names = list(dict.fromkeys(scopes))
        for start in range(0, len(names), _MARKER_CHUNK):
            values = [Literal(s) for s in names[start : start + _MARKER_CHUNK]]
            rows += self.backend.select(bind_each(ENTRIES_QUERY, "scope", values)).rows
            if changed is not None:
                changed += self.backend.select(bind_each(CHANGED_QUERY, "scope", values)).rows
        found = markers_from_rows(rows, changed)
        return {s: found.get(s) or ChangeMarker(s) for s in scopes}

    # -- suggestion records ------------------------------------------------------------------

    def record_suggestions(
        self,
        session_id: str,
        suggestions: Sequence[Mapping[str, Any]],
        workflow_ids: Sequence[str],
        *,
        scope: str,
        time: str,
        crew: str | None = None,
    ) -> URIRef:
        """Append one round of suggestions to the (scope, session)'s record graph.

        Args:
            session_id: The chat session.
            suggestions: ``Suggestion.to_json()`` dicts, in rank order.
            workflow_ids: The retrieved workflows of the round (``prov:used``).
            scope: The scope of the memory that suggested.
            time: ISO 8601 text naming the round.
            crew: The crew description's name, which fallback suggestions derive from.

        Returns:
            The record graph's IRI.

        Raises:
            MappingError: When a suggestion or the time cannot be recorded.
            StoreError: When the backend fails (the graph keeps its earlier rounds).
        """
        graph = suggestion_triples(
            session_id, suggestions, workflow_ids, time, scope=scope, crew=crew
        )
        name = suggestion_graph_iri(session_id, scope)
        triples = list(graph)
        for _, old in self.backend.read_graphs([name]):
            triples.extend(old)
        self.backend.replace_graphs([(name, triples)])
        return name

    def suggestion_records(self, scope: str) -> list[URIRef]:
        """Return the names of a scope's suggestion record graphs, sorted."""
        rows = self.backend.select(_SCOPE_RECORDS, {"scope": Literal(scope)}).rows
        return sorted(URIRef(str(row[0])) for row in rows)

    def judged_rounds(self, scope: str) -> list[JudgedRound]:
        """Return what a scope's judged suggestion rounds learned, in no particular order.

        Args:
            scope: The scope.

        Returns:
            One :class:`JudgedRound` per round recorded with its context (rounds judged before
            contexts were recorded are left out).
        """
        rows = self.backend.select(_JUDGED_ROUNDS, {"scope": Literal(scope)}).rows
        found: dict[str, tuple[tuple[str, ...], str | None, dict[int, str | None]]] = {}
        for activity, context, next_tool, rank, tool in rows:
            key = str(activity)
            if key not in found:
                try:
                    tools = json.loads(str(context))
                except ValueError:
                    log.warning("round %s: unreadable wf:contextTools %r", key, str(context))
                    continue
                found[key] = (
                    tuple(str(t) for t in tools),
                    None if next_tool is None else str(next_tool),
                    {},
                )
            if rank is not None:
                found[key][2][int(str(rank))] = None if tool is None else str(tool)
        return [
            JudgedRound(context, tuple(shown[r] for r in sorted(shown)), next_tool)
            for context, next_tool, shown in found.values()
        ]

    # -- lifecycle records (provenance/lifecycle.py) --------------------------------------------

    def read_records(self, names: Sequence[URIRef]) -> dict[URIRef, list[Any]]:
        """Return the triples of the lifecycle graphs among ``names`` that exist."""
        return dict(self.backend.read_graphs(list(names)))

    def hidden(self, scope: str) -> set[str]:
        """Return the ids of a scope's retired workflows and superseded versions."""
        rows = self.backend.select(HIDDEN_QUERY, {"scope": Literal(scope)}).rows
        return {str(row[0]) for row in rows}

    def hidden_many(self, scopes: Iterable[str]) -> dict[str, set[str]]:
        """Return :meth:`hidden` of each of ``scopes``, in one query.

        The query reads every scope's lifecycle records, as one :meth:`hidden` does (the scope
        is filtered, not looked up), so a batch of many scopes costs what one scope does.
        """
        found: dict[str, set[str]] = {scope: set() for scope in scopes}
        for scope, workflow_id in self.backend.select(HIDDEN_ALL_QUERY).rows:
            ids = found.get(str(scope))
            if ids is not None:
                ids.add(str(workflow_id))
        return found

    def procedure_scopes(self) -> set[str]:
        """Return the scopes that hold at least one procedure record (one query)."""
        return {str(row[0]) for row in self.backend.select(PROCEDURE_SCOPES_QUERY).rows}

    def procedure_graphs(self, scope: str) -> list[URIRef]:
        """Return the names of a scope's procedure record graphs, sorted."""
        rows = self.backend.select(PROCEDURES_QUERY, {"scope": Literal(scope)}).rows
        return sorted(URIRef(str(row[0])) for row in rows)

    def lifecycle_graphs(self, scope: str) -> list[URIRef]:
        """Return the names of every lifecycle graph of a scope, sorted."""
        rows = self.backend.select(SCOPE_GRAPHS_QUERY, {"scope": Literal(scope)}).rows
        return sorted(URIRef(str(row[0])) for row in rows)

    # -- reads -------------------------------------------------------------------------------

    def load(self, workflow_id: str, scope: str | None = None) -> Workflow:
        """Return the stored workflow.

        Args:
            workflow_id: Its id.
            scope: Its scope. ``None`` finds the id in whichever scope holds it, and refuses an
                id that several scopes hold.

        Raises:
            WorkflowNotFound: No such workflow (in that scope), or an id of several scopes
                without a scope.
            MappingError: The stored graph does not describe a workflow.
        """
        if scope is None:
            found = self._index(None, workflow_id)
            if len(found) > 1:
                scopes = ", ".join(sorted(repr(s) for _, _, s in found))
                raise WorkflowNotFound(
                    f"workflow id {workflow_id!r} is stored in several scopes ({scopes}); "
                    "pass scope= to choose one"
                )
            names = [g for g, _, _ in found]
        else:
            names = [graph_iri(workflow_id, scope)]
        for _, triples in self.backend.read_graphs(names):
            workflow = triples_to_workflow(triples)
            if scope is None or workflow.scope == scope:
                return workflow
        where = "" if scope is None else f" in scope {scope!r}"
        raise WorkflowNotFound(f"no workflow {workflow_id!r}{where}")

    def load_many(self, scope: str, workflow_ids: Iterable[str]) -> Iterator[Workflow]:
        """Yield the stored workflows of a scope among ``workflow_ids`` (absent ones skipped)."""
        names = [graph_iri(i, scope) for i in workflow_ids]
        for _, triples in self.backend.read_graphs(names):
            workflow = triples_to_workflow(triples)
            if workflow.scope == scope:
                yield workflow

    def scopes_of(self, workflow_id: str) -> list[str]:
        """Return the scopes holding a workflow with this id, sorted."""
        return sorted(s for _, _, s in self._index(None, workflow_id))

    def ids(self, scope: str | None = None) -> list[str]:
        """Return the stored workflow ids (of one scope when given), sorted."""
        return sorted(workflow_id for _, workflow_id, _ in self._index(scope))

    def scopes(self) -> list[str]:
        """Return the scopes that hold at least one workflow, sorted."""
        return sorted({scope for _, _, scope in self._index(None)})

    def iter_workflows(
        self, scope: str | None = None, *, batch_size: int = 256
    ) -> Iterator[Workflow]:
        """Yield the stored workflows (of one scope when given) in id order, read in batches."""
        index = sorted(self._index(scope), key=lambda row: row[1])
        for start in range(0, len(index), batch_size):
            names = [g for g, _, _ in index[start : start + batch_size]]
            for _, triples in self.backend.read_graphs(names):
                yield triples_to_workflow(triples)

    def __contains__(self, workflow_id: object) -> bool:
        """Whether any scope holds the id (``(scope, id)`` pairs ask one scope)."""
        if isinstance(workflow_id, tuple) and len(workflow_id) == 2:
            return self.backend.has_graph(graph_iri(workflow_id[1], workflow_id[0]))
        return isinstance(workflow_id, str) and bool(self._index(None, workflow_id))

    def __len__(self) -> int:
        return len(self._index(None))

    def query(
        self,
        sparql_or_name: str,
        bindings: Bindings | None = None,
        scope: str | None = None,
    ) -> QueryResult | bool | Graph:
        """Run SPARQL text or a named query from ``provenance/queries/``.

        Args:
            sparql_or_name: Query text, a query name such as ``"workflows-using"``, or the path
                of a ``.rq`` file (see :mod:`provenance.queries`).
            bindings: Variable values (rdflib terms or plain str/int/float/bool literals); they
                never get spliced into the text.
            scope: Confine the query to that scope's graphs (see module doc).

        Query text runs over the store's query dataset (docs/sparql.md): the standard prefixes
        declared, the default graph the merge of the workflow graphs and lifecycle records,
        each triple once, the named graphs those and the suggestion records (the answer
        ``em-plugin query`` and ``em-plugin serve`` give, :mod:`provenance.stores.union`); the
        named queries run in place.

        Returns:
            A :class:`QueryResult` (SELECT), a bool (ASK) or an rdflib Graph (CONSTRUCT).

        Raises:
            QueryError: Bad SPARQL, an unknown query name or a bad binding.
        """
        sparql = _resolve(sparql_or_name)
        if sparql is sparql_or_name:
            # Ad-hoc text: the query dataset (docs/sparql.md), as every other place a query can
            # be asked answers it (provenance/stores/union.py).
            from provenance.stores.base import result_from_oxigraph
            from provenance.stores.union import union_query

            return result_from_oxigraph(union_query(self, sparql, bindings, scope))
        from provenance.stores.union import dataset_graphs

        # A scope narrows a named query to the scope's graphs of the query dataset, as it
        # narrows ad-hoc text (docs/sparql.md): its workflows, lifecycle and suggestion records.
        graphs = None if scope is None else dataset_graphs(self, scope)[1]
        return self.backend.query(sparql, bindings, graphs=graphs)

    def stats(self) -> dict[str, Any]:
        """Return counts of what the store holds.

        ``workflows``, ``triples``, ``steps``, ``tools`` (distinct names) and ``scopes`` (scope ->
        number of workflows).
        """
        scopes = {
            str(row["scope"]): int(row["n"])  # type: ignore[call-overload]
            for row in self.backend.select(_SCOPE_COUNTS).dicts()
        }
        return {
            "workflows": sum(scopes.values()),
            "triples": self.backend.count_triples(),
            "steps": _count(self.backend.select(_STEP_COUNT)),
            "tools": _count(self.backend.select(_TOOL_COUNT)),
            "scopes": scopes,
        }

    def _index(
        self, scope: str | None, workflow_id: str | None = None
    ) -> list[tuple[URIRef, str, str]]:
        bindings: dict[str, Any] = {}
        if scope is not None:
            bindings["scope"] = Literal(scope)
        if workflow_id is not None:
            bindings["id"] = Literal(workflow_id)
        rows = self.backend.select(_INDEX, bindings or None).rows
        return [(URIRef(g), str(i), str(s)) for g, i, s in rows]  # type: ignore[arg-type]

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the backend (releases a disk store's lock, or a remote store's cache slot)."""
        try:
            self.backend.close()
        finally:
            if self._slot is not None:
                self._slot.release()

    def __enter__(self) -> WorkflowStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _embedded(backend: GraphStore) -> bool:
    from provenance.stores.embedded import OxigraphStore

    return isinstance(backend, OxigraphStore)


def _outcome_may_be_unknown(backend: GraphStore, exc: StoreError) -> bool:
    """Whether a failed write may still have been committed.

    So it may when a request to a server was sent and then lost (not refused, not answered with an
    error status).
    """
    if _embedded(backend):
        return False  # one local transaction: a failure means nothing was written
    cause: BaseException | None = exc.__cause__
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return False
        if isinstance(cause, OSError | TimeoutError) and not _http_status(cause):
            return True
        if type(cause).__module__ == "http.client":
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _http_status(exc: BaseException) -> bool:
    return hasattr(exc, "code") and hasattr(exc, "headers")  # urllib HTTPError: it answered


def _count(result: QueryResult) -> int:
    value = result.rows[0][0] if result.rows else None
    return int(str(value)) if value is not None else 0


def _resolve(sparql_or_name: str) -> str:
    """Return query text: the argument itself, or the text of a named query or ``.rq`` file."""
    if not (_QUERY_NAME.fullmatch(sparql_or_name) or sparql_or_name.endswith(".rq")):
        return sparql_or_name
    try:
        from provenance import queries  # imported late: the store works without named queries
    except ImportError as exc:
        raise QueryError(f"no named queries available to resolve {sparql_or_name!r}") from exc
    return queries.query_text(sparql_or_name)
