"""One dataset per query: ad-hoc SPARQL sees the same graphs at every door, each triple once.

``WorkflowStore.query``, ``em-plugin query``, ``em-plugin serve`` and the panel answer ad-hoc
SPARQL over one dataset, made from the registry of graph families
(:mod:`provenance.stores.graph_families`; the contract is docs/sparql.md):

* the **default graph** is the RDF merge of the graphs of the families marked
  ``default_graph`` (the workflow graphs and the lifecycle records: versions, retirements,
  procedures), each triple once;
* the **named graphs** are the graphs of the families marked ``named_graph`` (those, plus the
  suggestion records), so ``GRAPH ?g`` ranges over them; the store's bookkeeping (change logs,
  session journals, the embedder record) stays out;
* ``FROM`` / ``FROM NAMED`` in the text do not widen it; a scope narrows it to that scope's
  graphs;
* the store's **standard prefixes** (:data:`provenance.vocab.PREFIXES`: ``prov``, ``p-plan``,
  ``pl``, ``wf`` ...) are declared for every query that does not declare them itself
  (:func:`with_standard_prefixes`), so ``SELECT * { ?w a pl:Workflow }`` runs as typed.

Oxigraph's own union default graph (``use_default_graph_as_union``, ``oxigraph serve
--union-default-graph``) is a multiset: a triple held by many workflow graphs (a tool's label,
an agent) counts once per graph, so a join through it multiplies the solutions (52 calls of a
tool counted 2,704 times). The graphs are therefore copied into a private in-memory store whose
default graph is the real merge, and the query runs there. The copy is kept while the store's
graphs, its change markers and the size of the graphs no change-log entry announces (suggestion
and procedure records) stay the same, so a series of queries copies once.

The named queries of :mod:`provenance.queries` match inside ``GRAPH ?g`` (or read suggestion
records on purpose) and run in place, without the copy.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

import pyoxigraph as ox
from rdflib import URIRef

from provenance.errors import QueryError
from provenance.stores._sparql import _tokens, bind, query_form
from provenance.stores._terms import nquads
from provenance.stores.graph_families import FAMILIES, WORKFLOWS, family_of
from provenance.stores.sparql_errors import syntax_error_message
from provenance.vocab import PREFIXES

if TYPE_CHECKING:
    from provenance.stores.base import Bindings, GraphStore

__all__ = [
    "WORKFLOW_GRAPH_NAMESPACE",
    "dataset_graphs",
    "is_workflow_graph",
    "union_dataset",
    "union_query",
    "with_standard_prefixes",
    "workflow_graphs",
]

#: Every workflow graph's IRI starts with it; no other graph's does.
WORKFLOW_GRAPH_NAMESPACE = WORKFLOWS.namespace


class WorkflowStore(Protocol):
    """What the union reads of a :class:`~provenance.stores.workflow_store.WorkflowStore`.

    A protocol rather than the class, since the store calls into this module for its queries.
    """

    backend: GraphStore

    def _index(
        self, scope: str | None, workflow_id: str | None = None
    ) -> list[tuple[URIRef, str, str]]: ...

    def markers(self) -> dict[str, tuple[int, str]]: ...


# The copy holds the dataset's graphs only: those of the default-graph families are merged.
_MERGE = (
    "INSERT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } FILTER("
    + " || ".join(f'STRSTARTS(STR(?g), "{f.namespace}")' for f in FAMILIES if f.default_graph)
    + ") }"
)
_cache_lock = threading.Lock()


def with_standard_prefixes(text: str) -> str:
    """Return ``text`` with the store's standard prefixes declared in front (those it lacks).

    The rule of every door (docs/sparql.md): a query may use the prefixes of
    :data:`provenance.vocab.PREFIXES` (``prov``, ``p-plan``, ``pl``, ``wf``, ``dcterms``, ``rdf``,
    ``rdfs``, ``xsd``, ``workflow``, ``graph``, ``tool``, ``agent``, ``scope``, ``suggestion``,
    ``suggestions``) without declaring them; a prefix it declares itself keeps its own IRI. The
    declarations share one line with the start of the query, so an error's line number is the
    line of the text as typed. Works for updates too.

    Args:
        text: SPARQL query or update text.

    Returns:
        The text with the missing declarations in front (unchanged when none is missing).

    Example:
        >>> with_standard_prefixes("PREFIX wf: <urn:x#> SELECT * { ?s wf:p ?o }").count("wf:")
        2
        >>> with_standard_prefixes("ASK { ?w a pl:Workflow }").startswith("PREFIX prov:")
        True
    """
    declared: set[str] = set()
    previous = ""
    for kind, token, _ in _tokens(text):
        if previous == "PREFIX" and kind == "pname":
            declared.add(token.partition(":")[0])
        previous = token.upper() if kind == "word" else ""
    head = " ".join(
        f"PREFIX {name}: <{iri}>" for name, iri in PREFIXES.items() if name not in declared
    )
    return f"{head} {text}" if head else text


def dataset_graphs(store: WorkflowStore, scope: str | None = None) -> tuple[list[Any], list[Any]]:
    """Return the graphs of an ad-hoc query's dataset: ``(default-graph ones, named ones)``.

    Both sorted; the first are among the second (docs/sparql.md).

    Args:
        store: The store.
        scope: Only this scope's graphs (``None``: every scope's).
    """
    default: list[URIRef] = []
    named: list[URIRef] = []
    for name in store.backend.graph_names():
        family = family_of(name)
        if family is None or not family.named_graph:
            continue
        if scope is not None and family.scope_of(str(name)) != scope:
            continue
        named.append(name)
        if family.default_graph:
            default.append(name)
    return default, named


def workflow_graphs(store: WorkflowStore, scope: str | None = None) -> list[URIRef]:
    """Return the names of the store's workflow graphs (of one scope when given), sorted."""
    if scope is None:
        names = store.backend.graph_names()
    else:
        names = [g for g, _, _ in store._index(scope)]
    return sorted(n for n in names if is_workflow_graph(n))


def union_dataset(store: WorkflowStore, scope: str | None = None) -> tuple[ox.Store, list[Any]]:
    """Return the private store whose default graph is the merge of the default-graph families.

    Returns:
        The in-memory store (shared by later calls while the store does not change; never
        write to it) and its named graphs, for ``named_graphs=``.
    """
    default, names = dataset_graphs(store, scope)
    unlogged = [n for n in names if not _logged(n)]
    key = (scope, tuple(names), tuple(sorted(store.markers().items())), _size(store, unlogged))
    with _cache_lock:
        cached = getattr(store, "_union_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
    local = ox.Store()
    graphs = list(store.backend.read_graphs(names))
    if graphs:
        local.load(nquads(graphs), format=ox.RdfFormat.N_QUADS)
        # The real default graph is a set: each shared triple lands in it once.
        if default:
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
    """Run ad-hoc SPARQL over the store's query dataset; return Oxigraph's result.

    The standard prefixes are declared for it (:func:`with_standard_prefixes`).

    Args:
        store: The store to read.
        text: The query (SELECT, ASK, CONSTRUCT or DESCRIBE; updates are refused).
        bindings: Variable values, never spliced into the text.
        scope: Only this scope's graphs (``None``: every scope's).

    Returns:
        The pyoxigraph result (``result_from_oxigraph`` wraps it; a server serializes it).

    Raises:
        QueryError: Bad SPARQL (the message gives the position in the text as typed, in one
            line), an update, or a bad binding.
    """
    query_form(text)  # refuse updates before copying anything
    full = with_standard_prefixes(text)
    bound = bind(full, bindings)
    local, named = union_dataset(store, scope)
    try:
        return local.query(bound, default_graph=ox.DefaultGraph(), named_graphs=named)
    except SyntaxError as exc:
        message = syntax_error_message(text, str(exc), shift=len(full) - len(text))
        raise QueryError(f"invalid SPARQL: {message}") from None
    except (OSError, RuntimeError, ValueError) as exc:
        raise QueryError(f"the query failed: {exc}") from None


def is_workflow_graph(name: str | URIRef) -> bool:
    """Tell whether a graph name is in the workflow graph namespace."""
    return str(name).startswith(WORKFLOW_GRAPH_NAMESPACE)


def _logged(name: URIRef) -> bool:
    family = family_of(name)
    return family is not None and family.logged


def _size(store: WorkflowStore, names: list[URIRef]) -> int:
    """How many triples ``names`` hold: what tells a cached copy of them is stale."""
    if not names:
        return 0
    rows = store.backend.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", graphs=names).rows
    return int(str(rows[0][0])) if rows and rows[0][0] is not None else 0
