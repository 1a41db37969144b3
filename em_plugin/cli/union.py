"""Ad-hoc SPARQL for the command line: the project's prefixes, and a true union default graph.

A query typed at the command line gets two conveniences the named queries do not need:

* the project's prefixes (``prov``, ``p-plan``, ``wf``, ``pl``, ``dcterms``, ``rdf``, ``rdfs``,
  ``xsd``, plus ``workflow``, ``graph``, ``tool``, ``agent``) are declared unless the query
  declares them itself;
* the default graph is the RDF merge of the workflow graphs, each triple once, as
  ``oxigraph serve --union-default-graph`` gives. Oxigraph's own union default graph counts a
  triple once per graph that holds it, so a pattern through a node that many workflows share (a
  tool, an agent) multiplies the solutions: counting the calls of one tool over the τ²-bench
  telecom file gives 1,352 instead of 52. Suggestion records are left out, so the default graph
  is workflows only; ``GRAPH ?g`` still ranges over each workflow graph.

The dataset is copied into a private in-memory Oxigraph store for the query: 12.4 s for the
190k triples of the Helpdesk file (3,804 workflows) on a loaded 2-core machine, where Oxigraph's
own union took 30.8 s for its wrong count (``benchmarks/union_query.py``). The named queries
(``em-plugin query NAME``) match inside ``GRAPH ?g``, skip the copy and run in place.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from provenance.errors import QueryError
from provenance.vocab import PREFIXES

if TYPE_CHECKING:
    from provenance.stores import QueryResult, WorkflowStore

__all__ = ["union_query", "with_prefixes"]

_DECLARED = re.compile(r"\bPREFIX\s+([A-Za-z][\w\-.]*)?\s*:", re.IGNORECASE)
_MAX_ERROR_CHARS = 300
# The named graphs that hold a workflow (suggestion records and store bookkeeping do not).
_WORKFLOW_GRAPHS = (
    "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in PREFIXES.items())
    + "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?w a pl:Workflow ; wf:scope ?scope } }"
)


def with_prefixes(text: str) -> str:
    """Return ``text`` with the project's prefixes declared in front (those it lacks).

    Example:
        >>> with_prefixes("PREFIX wf: <urn:x#> SELECT * { ?s wf:p ?o }").count("PREFIX wf:")
        1
    """
    declared = {name or "" for name in _DECLARED.findall(text)}
    head = "".join(
        f"PREFIX {name}: <{iri}>\n" for name, iri in PREFIXES.items() if name not in declared
    )
    return head + text


def union_query(
    store: WorkflowStore, text: str, bindings: dict[str, Any] | None, scope: str | None
) -> QueryResult | bool | Any:
    """Run ad-hoc SPARQL over the union of the workflow graphs (one scope, or all).

    Args:
        store: The store to read.
        text: The query (SELECT, ASK, CONSTRUCT or DESCRIBE; updates are refused).
        bindings: Variable values (rdflib terms), never spliced into the text.
        scope: Only this scope's workflow graphs (``None``: every workflow).

    Returns:
        A :class:`~provenance.stores.QueryResult`, a bool (ASK) or an rdflib Graph.

    Raises:
        QueryError: Bad SPARQL (the message is shortened), an update, or a bad binding.
    """
    import pyoxigraph as ox
    from rdflib import Literal, URIRef

    from provenance.stores._sparql import bind, query_form
    from provenance.stores._terms import nquads
    from provenance.stores.base import result_from_oxigraph

    text = with_prefixes(text)
    query_form(text)  # refuse updates before copying anything
    found = store.query(_WORKFLOW_GRAPHS, None if scope is None else {"scope": Literal(scope)})
    names = sorted(URIRef(str(row[0])) for row in found)  # type: ignore[union-attr]
    local = ox.Store()
    # read_graphs fetches in batches; the copy keeps every workflow graph under its own name.
    graphs = list(store.backend.read_graphs(names))
    if graphs:
        local.load(nquads(graphs), format=ox.RdfFormat.N_QUADS)
        # The real default graph is a set: each shared triple lands in it once.
        local.update("INSERT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }")
    try:
        result = local.query(bind(text, bindings))
    except SyntaxError as exc:
        raise QueryError(f"invalid SPARQL: {_short(str(exc))}") from None
    except (OSError, RuntimeError, ValueError) as exc:
        raise QueryError(f"the query failed: {_short(str(exc))}") from None
    return result_from_oxigraph(result)


def _short(message: str) -> str:
    # Oxigraph's parse errors end with the list of every expected token (Unicode ranges
    # included); the position and the first words are what a person can act on.
    flat = " ".join(message.split())
    return flat if len(flat) <= _MAX_ERROR_CHARS else flat[: _MAX_ERROR_CHARS - 1] + "…"
