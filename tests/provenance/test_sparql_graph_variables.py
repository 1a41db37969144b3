"""A constant ``GRAPH <g>`` rewritten as a bound variable gives the same solutions.

The rewrite (``provenance.stores._sparql.with_graph_variables``) exists for Virtuoso, which answers
constant graphs wrongly under the pragmas that hide its system graphs. Here each query runs on an
in-memory Oxigraph store as written and as rewritten; the rows must be equal once the added
columns are dropped, and decoys in strings, comments and IRIs must stay untouched.
"""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provenance.stores._sparql import GRAPH_VARIABLE, with_graph_variables

DATA = """
<urn:a> <urn:p> "one" <urn:g1> .
<urn:a> <urn:p> "two" <urn:g1> .
<urn:b> <urn:p> "three" <urn:g2> .
<urn:b> <urn:q> <urn:a> <urn:g2> .
<urn:c> <urn:p> "GRAPH <urn:g1>" .
"""
STORE = ox.Store()
STORE.load(DATA, format=ox.RdfFormat.N_QUADS)

QUERIES = [
    "SELECT ?s ?o WHERE { GRAPH <urn:g1> { ?s ?p ?o } }",
    "SELECT * WHERE { GRAPH <urn:g2> { ?s ?p ?o } }",
    "PREFIX u: <urn:> SELECT * WHERE { GRAPH u:g1 { ?s ?p ?o } }",
    "SELECT (COUNT(*) AS ?n) WHERE { graph <urn:g1> { ?s ?p ?o } }",
    "SELECT DISTINCT ?s WHERE { { GRAPH <urn:g1> { ?s ?p ?o } } UNION { GRAPH <urn:g2> { ?s ?p ?o } } }",  # noqa: E501
    "SELECT ?s ?x WHERE { GRAPH <urn:g2> { ?s <urn:q> ?t } OPTIONAL { GRAPH <urn:g1> { ?t <urn:p> ?x } } }",  # noqa: E501
    "SELECT ?g ?s WHERE { GRAPH ?g { ?s ?p ?o } GRAPH <urn:g2> { ?s ?p2 ?o2 } }",
    "SELECT * WHERE { { SELECT * WHERE { GRAPH <urn:g1> { ?s ?p ?o } } } }",
    'SELECT ?s WHERE { ?s ?p "GRAPH <urn:g1>" } # GRAPH <urn:g2>',
    "ASK { GRAPH <urn:g2> { <urn:b> ?p ?o } }",
    "ASK { GRAPH <urn:nothing> { ?s ?p ?o } }",
    "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH <urn:g1> { ?s ?p ?o } }",
]


def _answer(query: str) -> object:
    result = STORE.query(query)
    if isinstance(result, ox.QueryBoolean):
        return bool(result)
    if isinstance(result, ox.QuerySolutions):
        names = [v.value for v in result.variables]
        keep = [i for i, n in enumerate(names) if not n.startswith(GRAPH_VARIABLE)]
        solutions = [tuple(str(row[i]) for i in keep) for row in result]
        return [names[i] for i in keep], sorted(solutions)
    return sorted(str(t) for t in result)


@pytest.mark.parametrize("query", QUERIES)
def test_the_rewritten_query_has_the_same_answer(query: str) -> None:
    rewritten = with_graph_variables(query)
    assert _answer(rewritten) == _answer(query)


def test_only_constant_graphs_outside_strings_and_comments_are_rewritten() -> None:
    query = 'SELECT * WHERE { GRAPH ?g { ?s ?p "GRAPH <urn:x>" } } # GRAPH <urn:y>'
    assert with_graph_variables(query) == query
    assert with_graph_variables(QUERIES[6]).count(GRAPH_VARIABLE) == 2  # VALUES + GRAPH, once


@settings(max_examples=60, deadline=None)
@given(
    graphs=st.lists(st.sampled_from(["<urn:g1>", "<urn:g2>", "<urn:g3>"]), min_size=1, max_size=4)
)
def test_any_number_of_constant_graphs(graphs: list[str]) -> None:
    query = (
        "SELECT * WHERE { "
        + " ".join(f"OPTIONAL {{ GRAPH {g} {{ ?s ?p ?o }} }}" for g in graphs)
        + " }"
    )
    rewritten = with_graph_variables(query)
    assert rewritten.count("VALUES ") == len(graphs)
    assert _answer(rewritten) == _answer(query)
