"""Bindings never change a query's structure: values become one escaped term in a VALUES block.

Properties are checked by running the bound query on an in-memory Oxigraph store: whatever the
value (tests/strategies.py's hostile strings included), it comes back byte-identical, and decoy
braces, keywords and quotes in the query's IRIs, comments and strings do not move the block.
"""

from __future__ import annotations

from typing import Any

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rdflib import Graph, Literal, URIRef

from provenance.errors import QueryError
from provenance.stores import OxigraphStore, QueryResult
from provenance.stores._sparql import bind, bind_each, query_form
from provenance.stores._terms import TermError, nquads, term_text
from tests.strategies import texts

STORE = OxigraphStore()  # empty: every row below comes from the VALUES block alone
one_line = texts.map(lambda s: s.replace("\n", " ").replace("\r", " "))
# Characters an IRI path may hold unescaped, keywords included; the IRI gets a '#' fragment too.
iri_safe = st.text(alphabet="abcXYZ019-._~:/?@!$&'()*+,;=WHEREselectCONSTRUCT", max_size=20)
langs = st.sampled_from(["en", "en-GB", "de-1996", "zh-Hant-TW"])


def rows(query: str, bindings: dict[str, Any]) -> list[tuple[Any, ...]]:
    result = STORE.query(query, bindings)
    assert isinstance(result, QueryResult)
    return result.rows


@settings(max_examples=150, deadline=None)
@given(value=texts)
def test_literal_values_come_back_byte_identical(value: str) -> None:
    assert rows("SELECT ?v WHERE { }", {"v": Literal(value)}) == [(Literal(value),)]


@settings(max_examples=60, deadline=None)
@given(value=texts, lang=langs)
def test_language_and_typed_literals(value: str, lang: str) -> None:
    tagged, typed = Literal(value, lang=lang), Literal(value, datatype=URIRef("urn:x:type"))
    ((a, b),) = rows("SELECT ?a ?b WHERE { }", {"a": tagged, "b": typed})
    assert str(a) == value and a.language.lower() == lang.lower()
    assert str(b) == value and b.datatype == URIRef("urn:x:type")


@settings(max_examples=100, deadline=None)
@given(value=texts, decoy=one_line, iri=iri_safe)
def test_decoys_in_prologue_comments_and_strings(value: str, decoy: str, iri: str) -> None:
    query = (
        f"PREFIX construct: <http://example.org/{iri}#WHERE>\n"
        f"# {decoy} {{ WHERE CONSTRUCT }}\n"
        f"SELECT ?v ?k ?where WHERE {{ BIND({term_text(Literal(decoy))} AS ?k) }}"
    )
    assert rows(query, {"v": Literal(value)}) == [(Literal(value), Literal(decoy), None)]


@settings(max_examples=50, deadline=None)
@given(value=texts, decoy=texts.filter(lambda s: "'" not in s and "\\" not in s))
def test_long_strings_and_operators_before_the_group(value: str, decoy: str) -> None:
    query = f"SELECT ?v (IF(1<2, '''{decoy}''', \"}}\") AS ?k) WHERE {{ }}"
    assert rows(query, {"v": Literal(value)}) == [(Literal(value), Literal(decoy))]


@settings(max_examples=50, deadline=None)
@given(value=texts)
def test_construct_template_is_skipped(value: str) -> None:
    query = "CONSTRUCT { ?s <urn:x:p> ?v } WHERE { BIND(<urn:x:s> AS ?s) }"
    graph = STORE.construct(query, {"v": Literal(value)})
    assert isinstance(graph, Graph)
    assert set(graph) == {(URIRef("urn:x:s"), URIRef("urn:x:p"), Literal(value))}


def test_subselect_group_is_wrapped() -> None:
    query = "SELECT ?v WHERE { SELECT ?v WHERE { } }"
    assert rows(query, {"v": Literal("x")}) == [(Literal("x"),)]
    assert "{ SELECT" in bind(query, {"v": Literal("x")}).replace("{  SELECT", "{ SELECT")


def test_bound_variable_needs_no_projection() -> None:
    # pyoxigraph's substitutions refuse this query; the VALUES block does not.
    query = "SELECT ?x WHERE { BIND(CONCAT(?v, '!') AS ?x) }"
    assert rows(query, {"v": Literal("hi")}) == [(Literal("hi!"),)]


def test_ask_and_filters_see_the_binding() -> None:
    assert STORE.ask('ASK { FILTER(?v = "x") }', {"v": "x"}) is True
    assert STORE.ask('ASK { FILTER(?v = "x") }', {"v": "y"}) is False


@pytest.mark.parametrize(
    "query",
    ["DESCRIBE <urn:x:a>", "INSERT DATA { <urn:x:a> <urn:x:b> <urn:x:c> }", "nothing here"],
)
def test_queries_without_a_where_group_are_refused(query: str) -> None:
    with pytest.raises(QueryError):
        bind(query, {"v": Literal("x")}) if query.startswith("DESCRIBE") else query_form(query)


def test_no_bindings_leaves_the_query_alone() -> None:
    assert bind("SELECT * { ?s ?p ?o }", None) == "SELECT * { ?s ?p ?o }"
    assert bind("SELECT * { ?s ?p ?o }", {}) == "SELECT * { ?s ?p ?o }"


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=30))
def test_an_iri_is_one_token_or_refused(text: str) -> None:
    try:
        token = term_text(URIRef(text))
    except TermError:
        return
    try:
        parsed = list(ox.parse(f"{token} <urn:x:p> <urn:x:o> .\n", ox.RdfFormat.N_TRIPLES))
    except SyntaxError:
        return  # a stricter IRI rule (e.g. percent-encoding) refused it: still no injection
    assert [q.subject.value for q in parsed] == [text]


@settings(max_examples=150, deadline=None)
@given(values=st.lists(texts, min_size=1, max_size=4))
def test_nquads_keep_every_value_in_its_own_triple(values: list[str]) -> None:
    triples = [(URIRef(f"urn:x:s{i}"), URIRef("urn:x:p"), Literal(v)) for i, v in enumerate(values)]
    document = nquads([(URIRef("urn:x:g"), triples)])
    parsed = list(ox.parse(document, ox.RdfFormat.N_QUADS))
    assert [q.object.value for q in parsed] == values
    assert {q.graph_name.value for q in parsed} == {"urn:x:g"}


def test_query_records_are_json_ready_in_column_order() -> None:
    from decimal import Decimal

    from rdflib import BNode, Literal, URIRef

    from provenance.stores import QueryResult

    result = QueryResult(
        ("iri", "n", "share", "flag", "text", "unbound"),
        [
            (
                URIRef("urn:w1"),
                Literal(3),
                Literal(Decimal("0.5")),
                Literal(True),
                Literal("3"),
                None,
            )
        ],
    )
    assert result.records() == [
        {"iri": "urn:w1", "n": 3, "share": 0.5, "flag": True, "text": "3", "unbound": None}
    ]
    (record,) = QueryResult(("b",), [(BNode("x"),)]).records()
    assert record == {"b": "x"}


def test_bind_each_binds_one_row_per_value() -> None:
    text = bind_each("SELECT ?s WHERE { ?s ?p ?o }", "o", [Literal('x"'), Literal("y")])
    assert text == 'SELECT ?s WHERE { VALUES ?o { "x\\"" "y" } ?s ?p ?o }'
    with pytest.raises(QueryError):
        bind_each("SELECT ?s WHERE { ?s ?p ?o }", "o-x", [Literal("x")])
