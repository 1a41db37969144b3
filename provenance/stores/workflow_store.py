"""The workflow-level store: save, load, list, delete and query workflows by id and scope.

:class:`WorkflowStore` keeps one named graph per workflow (``provenance.vocab.graph_iri``) in any
:class:`~provenance.stores.base.GraphStore` backend and converts with :mod:`provenance.mapping`.
It adds nothing to the RDF: the scope of a workflow is the ``wf:scope`` literal its graph already
holds, so every scope question is one SPARQL query over all graphs (never one load per workflow).

**Scope restriction of queries.** ``query(..., scope="s")`` first looks up the graphs whose
workflow has ``wf:scope "s"`` and then runs the query with its dataset narrowed to exactly those
graphs (see :meth:`GraphStore.query`): they form the default graph, ``GRAPH ?g`` ranges over them
only, and ``FROM`` clauses cannot reach further. A query therefore cannot see another scope's
triples, whatever it says; an unknown scope gives empty results.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any

from rdflib import Graph, Literal, URIRef

from provenance.errors import QueryError, WorkflowNotFound
from provenance.mapping import graph_iri, triples_to_workflow, workflow_to_triples
from provenance.model import Workflow
from provenance.stores.base import Bindings, GraphStore, QueryResult
from provenance.vocab import PREFIXES

__all__ = ["WorkflowStore"]

_PREFIXES = "".join(f"PREFIX {prefix}: <{iri}>\n" for prefix, iri in PREFIXES.items())
# ?g ?id ?scope of every stored workflow; bind ?scope to list one scope.
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
    _PREFIXES
    + "SELECT (COUNT(DISTINCT ?name) AS ?n) WHERE { GRAPH ?g { ?t a wf:Tool ; wf:toolName ?name } }"
)
_STEP_COUNT = _PREFIXES + "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s a p-plan:Step } }"
# A bare word (no blank, brace or '?') names a query in provenance/queries/.
_QUERY_NAME = re.compile(r"[A-Za-z_][\w\-]*")


class WorkflowStore:
    """Workflows in a :class:`GraphStore`, one named graph each.

    Args:
        backend: Where the graphs live; the store owns it and closes it in :meth:`close`.

    Example:
        >>> from provenance.stores import open_store
        >>> from provenance.model import CallStep, Workflow
        >>> with open_store("memory:") as store:
        ...     store.save(Workflow(id="w1", steps=(CallStep(name="A1"),), scope="team"))
        ...     store.ids(scope="team"), store.load("w1").steps[0].name
        (['w1'], 'A1')
    """

    def __init__(self, backend: GraphStore) -> None:
        self.backend = backend

    def __repr__(self) -> str:
        return f"WorkflowStore({self.backend!r})"

    # -- writes ------------------------------------------------------------------------------

    def save(self, workflow: Workflow) -> None:
        """Store a workflow, replacing any stored one with the same id, in one transaction.

        Raises:
            StoreError: When the backend fails; the store keeps its previous content.
        """
        self.save_many([workflow])

    def save_many(self, workflows: Iterable[Workflow]) -> int:
        """Store workflows in ONE transaction: afterwards all are stored, or none changed.

        A repeated id in the batch keeps its last workflow (as saving them one by one would).

        Returns:
            The number of workflows stored.

        Raises:
            StoreError: When the backend fails or a value cannot be stored; nothing changes.
        """
        batch = {w.id: w for w in workflows}
        graphs = [(graph_iri(w.id), workflow_to_triples(w)) for w in batch.values()]
        self.backend.replace_graphs(graphs)
        return len(graphs)

    def delete(self, workflow_id: str) -> bool:
        """Delete a workflow; return whether it existed."""
        name = graph_iri(workflow_id)
        if not self.backend.has_graph(name):
            return False
        self.backend.drop_graphs([name])
        return True

    def delete_scope(self, scope: str) -> list[str]:
        """Delete every workflow of a scope in one transaction; return their ids, sorted."""
        index = self._index(scope)
        self.backend.drop_graphs([g for g, _, _ in index])
        return sorted(workflow_id for _, workflow_id, _ in index)

    # -- reads -------------------------------------------------------------------------------

    def load(self, workflow_id: str, scope: str | None = None) -> Workflow:
        """Return the stored workflow.

        Args:
            workflow_id: Its id.
            scope: When given, a workflow of another scope counts as absent.

        Raises:
            WorkflowNotFound: No such workflow (in that scope).
            MappingError: The stored graph does not describe a workflow.
        """
        for _, triples in self.backend.read_graphs([graph_iri(workflow_id)]):
            workflow = triples_to_workflow(triples)
            if scope is None or workflow.scope == scope:
                return workflow
        where = "" if scope is None else f" in scope {scope!r}"
        raise WorkflowNotFound(f"no workflow {workflow_id!r}{where}")

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
        return isinstance(workflow_id, str) and self.backend.has_graph(graph_iri(workflow_id))

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
            scope: Confine the query to that scope's workflow graphs (see module doc).

        Returns:
            A :class:`QueryResult` (SELECT), a bool (ASK) or an rdflib Graph (CONSTRUCT).

        Raises:
            QueryError: Bad SPARQL, an unknown query name or a bad binding.
        """
        sparql = _resolve(sparql_or_name)
        graphs = None if scope is None else [g for g, _, _ in self._index(scope)]
        return self.backend.query(sparql, bindings, graphs=graphs)

    def stats(self) -> dict[str, Any]:
        """Return counts: ``workflows``, ``triples``, ``steps``, ``tools`` (distinct names) and
        ``scopes`` (scope -> number of workflows)."""
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

    def _index(self, scope: str | None) -> list[tuple[URIRef, str, str]]:
        bindings = None if scope is None else {"scope": Literal(scope)}
        rows = self.backend.select(_INDEX, bindings).rows
        return [(URIRef(g), str(i), str(s)) for g, i, s in rows]  # type: ignore[arg-type]

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the backend (releases a disk store's lock)."""
        self.backend.close()

    def __enter__(self) -> WorkflowStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _count(result: QueryResult) -> int:
    value = result.rows[0][0] if result.rows else None
    return int(value) if value is not None else 0  # type: ignore[arg-type]


def _resolve(sparql_or_name: str) -> str:
    """Return query text: the argument itself, or the text of a named query or ``.rq`` file."""
    if not (_QUERY_NAME.fullmatch(sparql_or_name) or sparql_or_name.endswith(".rq")):
        return sparql_or_name
    try:
        from provenance import queries  # imported late: the store works without named queries
    except ImportError as exc:
        raise QueryError(f"no named queries available to resolve {sparql_or_name!r}") from exc
    return queries.query_text(sparql_or_name)
