"""One answer per query: ad-hoc SPARQL runs over the union of the PROV graphs, each triple once.

``WorkflowStore.query``, ``open_store(DIR).query``, ``em-plugin query`` and ``em-plugin serve``
answer ad-hoc SPARQL over the same dataset:

* the **default graph** is the RDF merge of the *workflow graphs* (the named graphs whose IRI
  starts with the workflow graph namespace, ``graph:``, :func:`provenance.vocab.graph_iri`) and
  the *lifecycle graphs* (versions, retirements, procedures: ``id/lifecycle/{scope}/``,
  :mod:`provenance.lifecycle`), each triple once. A store's other graphs (suggestion records,
  change logs, and whatever other namespaces later hold) stay out unless a query names them;
* ``GRAPH ?g`` ranges over the same graphs;
* ``FROM`` / ``FROM NAMED`` in the text do not widen it; a scope narrows it to that scope.

Oxigraph's own union default graph (``use_default_graph_as_union``, ``oxigraph serve
--union-default-graph``) is a multiset: a triple held by many workflow graphs (a tool's label,
an agent) counts once per graph, so a join through it multiplies the solutions (52 calls of a
tool counted 2,704 times). The graphs are therefore copied into a private in-memory store whose
default graph is the real merge, and the query runs there. The copy is kept while the store's
graphs and change markers stay the same, so a series of queries copies once (every lifecycle
write moves its scope's marker).

The named queries of :mod:`provenance.queries` match inside ``GRAPH ?g`` (or read suggestion
records on purpose) and run in place, without the copy.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

import pyoxigraph as ox
from rdflib import URIRef

from provenance.errors import QueryError
from provenance.lifecycle import is_lifecycle_graph
from provenance.stores._sparql import bind, query_form
from provenance.stores._terms import nquads
from provenance.vocab import PREFIXES

if TYPE_CHECKING:
    from provenance.stores.base import Bindings, GraphStore

__all__ = [
    "WORKFLOW_GRAPH_NAMESPACE",
    "is_workflow_graph",
    "union_dataset",
    "union_query",
    "workflow_graphs",
]

#: Every workflow graph's IRI starts with it; no other graph's does.
WORKFLOW_GRAPH_NAMESPACE = PREFIXES["graph"]


class WorkflowStore(Protocol):
    """What the union reads of a :class:`~provenance.stores.workflow_store.WorkflowStore`.

    A protocol rather than the class, since the store calls into this module for its queries.
    """

    backend: GraphStore

    def _index(
        self, scope: str | None, workflow_id: str | None = None
    ) -> list[tuple[URIRef, str, str]]: ...

    def markers(self) -> dict[str, tuple[int, str]]: ...

    def lifecycle_graphs(self, scope: str) -> list[URIRef]: ...


_MERGE = "INSERT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }"
_cache_lock = threading.Lock()


def workflow_graphs(store: WorkflowStore, scope: str | None = None) -> list[URIRef]:
    """Return the names of the store's workflow graphs (of one scope when given), sorted."""
    if scope is None:
        names = store.backend.graph_names()
    else:
        names = [g for g, _, _ in store._index(scope)]
    return sorted(n for n in names if is_workflow_graph(n))


def _dataset_graphs(store: WorkflowStore, scope: str | None) -> list[URIRef]:
    """The workflow graphs and the lifecycle graphs (of one scope when given), sorted."""
    if scope is None:
        names = [
            n for n in store.backend.graph_names() if is_workflow_graph(n) or is_lifecycle_graph(n)
        ]
        return sorted(names)
    return sorted([*workflow_graphs(store, scope), *store.lifecycle_graphs(scope)])


def union_dataset(store: WorkflowStore, scope: str | None = None) -> tuple[ox.Store, list[Any]]:
    """Return the private store whose default graph is the merge of the PROV graphs.

    Returns:
        The in-memory store (shared by later calls while the store does not change; never
        write to it) and its named graphs (the workflow and lifecycle graphs), for
        ``named_graphs=``.
    """
    names = _dataset_graphs(store, scope)
    key = (scope, tuple(names), tuple(sorted(store.markers().items())))
    with _cache_lock:
        cached = getattr(store, "_union_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
    local = ox.Store()
    graphs = list(store.backend.read_graphs(names))
    if graphs:
        local.load(nquads(graphs), format=ox.RdfFormat.N_QUADS)
        # The real default graph is a set: each shared triple lands in it once.
        local.update(_MERGE)
    named: list[Any] = [ox.NamedNode(str(n)) for n, _ in graphs]
    with _cache_lock:
        store._union_cache = (key, local, named)  # type: ignore[attr-defined]
    return local, named


def union_query(
    store: WorkflowStore,
    text: str,
    bindings: Bindings | None = None,
    scope: str | None = None,
) -> ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples:
    """Run ad-hoc SPARQL over the union of the PROV graphs; return Oxigraph's result.

    Args:
        store: The store to read.
        text: The query (SELECT, ASK, CONSTRUCT or DESCRIBE; updates are refused).
        bindings: Variable values, never spliced into the text.
        scope: Only this scope's workflow and lifecycle graphs (``None``: every scope's).

    Returns:
        The pyoxigraph result (``result_from_oxigraph`` wraps it; a server serializes it).

    Raises:
        QueryError: Bad SPARQL, an update, or a bad binding.
    """
    query_form(text)  # refuse updates before copying anything
    bound = bind(text, bindings)
    local, named = union_dataset(store, scope)
    try:
        return local.query(bound, default_graph=ox.DefaultGraph(), named_graphs=named)
    except SyntaxError as exc:
        raise QueryError(f"invalid SPARQL: {exc}") from None
    except (OSError, RuntimeError, ValueError) as exc:
        raise QueryError(f"the query failed: {exc}") from None


def is_workflow_graph(name: str | URIRef) -> bool:
    """Tell whether a graph name is in the workflow graph namespace."""
    return str(name).startswith(WORKFLOW_GRAPH_NAMESPACE)
