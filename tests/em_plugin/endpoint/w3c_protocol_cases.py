"""The 34 cases of the W3C SPARQL 1.1 Protocol test manifest, as data for the endpoint's tests.

Written from the manifest of w3c/rdf-tests (``sparql/sparql11/protocol/manifest.ttl``, the
cases approved on 2012-11-20) and the SPARQL 1.1 Protocol text. Each case is one or more HTTP
requests and the answer each must give: a status class, and for a boolean answer its value.

The manifest sends every request to one URL (``/sparql/``); ``em-plugin serve`` answers queries
at ``/query`` and updates at ``/update``, as the Protocol allows, so each request names the
operation it is. Graph IRIs are placeholders (``{data1}``, ``{test}``): without tokens they are
the manifest's own IRIs; with a token they are graphs of the token's scope, since a token reads
and writes only those. ``CLEAR ALL`` / ``DROP ALL`` become a ``DROP SILENT GRAPH`` of each graph
the case uses with a token, for the same reason.

Not applicable (and why) is said by :data:`NOT_APPLICABLE`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CASES", "GRAPHS", "NOT_APPLICABLE", "Case", "Request"]

#: The graph placeholders and the manifest's IRIs for them.
GRAPHS = {
    "data0": "http://kasei.us/2009/09/sparql/data/data0.rdf",
    "data1": "http://kasei.us/2009/09/sparql/data/data1.rdf",
    "data2": "http://kasei.us/2009/09/sparql/data/data2.rdf",
    "data3": "http://kasei.us/2009/09/sparql/data/data3.rdf",
    "test": "http://example.org/protocol-update-dataset-test/",
    "graphs_test": "http://example.org/protocol-update-dataset-graphs-test/",
    "named_test": "http://example.org/protocol-update-dataset-named-graphs-test/",
    "full_test": "http://example.org/protocol-update-dataset-full-test/",
    "base_test": "http://example.org/protocol-base-test/",
    "people": "http://example/people",
    "addresses": "http://example/addresses",
}

#: Cases of the manifest that a query and update service need not pass, with the reason.
NOT_APPLICABLE: dict[str, str] = {}


@dataclass(frozen=True)
class Request:
    """One HTTP request of a case and the answer it must get."""

    operation: str
    """``query`` or ``update``: the endpoint it goes to."""
    method: str = "POST"
    params: tuple[tuple[str, str], ...] = ()
    """URL parameters; graph placeholders in values are filled in."""
    body: str | None = None
    content_type: str | None = None
    encoding: str = "utf-8"
    status: int = 2
    """The status class: 2 (2xx or 3xx, as the manifest allows both) or 4."""
    boolean: bool | None = None
    """The boolean answer expected (ASK), if any."""
    answer: str | None = None
    """``boolean``, ``tabular`` or ``RDF``: the kind of result format the answer must have."""


@dataclass(frozen=True)
class Case:
    """A manifest case: its name, the graphs it loads first, its requests."""

    name: str
    requests: tuple[Request, ...]
    graph_data: tuple[str, ...] = ()
    clears: tuple[str, ...] = field(default=())
    """With a token, the graphs ``CLEAR ALL`` / ``DROP ALL`` stand for."""


_ASK_12 = "ASK { <{data1}> a ?type . <{data2}> a ?type . }"
_ASK_G12 = "ASK { GRAPH ?g1 { <{data1}> a ?type } GRAPH ?g2 { <{data2}> a ?type } }"
_Q = "application/sparql-query"
_U = "application/sparql-update"
_FORM = "application/x-www-form-urlencoded"
_PREFIXES = "PREFIX dc: <http://purl.org/dc/terms/>\nPREFIX foaf: <http://xmlns.com/foaf/0.1/>\n"
_INSERT_123 = """INSERT DATA {
    GRAPH <{data1}> { <{data1}> a foaf:Document }
    GRAPH <{data2}> { <{data2}> a foaf:Document }
    GRAPH <{data3}> { <{data3}> a foaf:Document }
} ;
"""
_BIB = "<http://purl.org/dc/terms/BibliographicResource>"


def _ask_two_not_three(graph: str) -> str:
    return f"""ASK {{
    GRAPH <{{{graph}}}> {{
        <{{data1}}> a {_BIB} .
        <{{data2}}> a {_BIB} .
    }}
    FILTER NOT EXISTS {{ GRAPH <{{{graph}}}> {{ <{{data3}}> a {_BIB} . }} }}
}}"""


def _true(query: str, params: tuple[tuple[str, str], ...] = ()) -> Request:
    return Request("query", params=params, body=query, content_type=_Q, boolean=True,
                   answer="boolean")  # fmt: skip


CASES: tuple[Case, ...] = (
    Case("query_post_form", (
        Request("query", params=(("default-graph-uri", "{data0}"),), body="query=ASK%20%7B%7D",
                content_type=_FORM, boolean=True, answer="boolean"),
    )),
    Case("query_dataset_default_graphs_get", (
        Request("query", "GET", params=(("query", _ASK_12), ("default-graph-uri", "{data1}"),
                                        ("default-graph-uri", "{data2}")),
                boolean=True, answer="boolean"),
    ), graph_data=("data1", "data2")),
    Case("query_dataset_default_graphs_post", (
        _true(_ASK_12, (("default-graph-uri", "{data1}"), ("default-graph-uri", "{data2}"))),
    ), graph_data=("data1", "data2")),
    Case("query_dataset_named_graphs_post", (
        _true(_ASK_G12, (("named-graph-uri", "{data1}"), ("named-graph-uri", "{data2}"))),
    ), graph_data=("data1", "data2")),
    Case("query_dataset_named_graphs_get", (
        Request("query", "GET", params=(("query", _ASK_G12), ("named-graph-uri", "{data1}"),
                                        ("named-graph-uri", "{data2}")),
                boolean=True, answer="boolean"),
    ), graph_data=("data1", "data2")),
    Case("query_dataset_full", (
        _true("ASK {\n  <{data3}> a ?type\n  GRAPH ?g1 { <{data1}> a ?type }\n"
              "  GRAPH ?g2 { <{data2}> a ?type }\n}",
              (("default-graph-uri", "{data3}"), ("named-graph-uri", "{data1}"),
               ("named-graph-uri", "{data2}"))),
    ), graph_data=("data1", "data2", "data3")),
    Case("query_multiple_dataset", (
        _true("ASK FROM <{data3}> { GRAPH ?g1 { <{data1}> a ?type } "
              "GRAPH ?g2 { <{data2}> a ?type } }",
              (("named-graph-uri", "{data1}"), ("named-graph-uri", "{data2}"))),
    ), graph_data=("data1", "data2", "data3")),
    Case("query_get", (
        Request("query", "GET", params=(("query", "ASK {}"), ("default-graph-uri", "{data0}")),
                boolean=True, answer="boolean"),
    )),
    Case("query_content_type_select", (
        Request("query", params=(("default-graph-uri", "{data0}"),),
                body="SELECT (1 AS ?value) {}", content_type=_Q, answer="tabular"),
    )),
    Case("query_content_type_ask", (
        Request("query", params=(("default-graph-uri", "{data0}"),), body="ASK {}",
                content_type=_Q, answer="boolean"),
    )),
    Case("query_content_type_describe", (
        Request("query", params=(("default-graph-uri", "{data0}"),),
                body="DESCRIBE <http://example.org/>", content_type=_Q, answer="RDF"),
    )),
    Case("query_content_type_construct", (
        Request("query", params=(("default-graph-uri", "{data0}"),),
                body="CONSTRUCT { <s> <p> 1 } WHERE {}", content_type=_Q, answer="RDF"),
    )),
    Case("update_dataset_default_graph", (
        Request("update", params=(("using-graph-uri", "{data1}"),), content_type=_U,
                body=_PREFIXES + "CLEAR ALL ;\nINSERT DATA {\n    GRAPH <{data1}> {\n"
                "        <{data1}> a foaf:Document\n    }\n} ;\nINSERT {\n"
                "    GRAPH <{test}> {\n        ?s a dc:BibliographicResource\n    }\n}\n"
                "WHERE {\n    ?s a foaf:Document\n}"),
        _true(f"ASK {{\n    GRAPH <{{test}}> {{\n        <{{data1}}> a {_BIB}\n    }}\n}}"),
    ), clears=("data1", "test")),
    Case("update_dataset_default_graphs", (
        Request("update", params=(("using-graph-uri", "{data1}"), ("using-graph-uri", "{data2}")),
                content_type=_U,
                body=_PREFIXES + "DROP ALL ;\n" + _INSERT_123 + "INSERT {\n"
                "    GRAPH <{graphs_test}> {\n        ?s a dc:BibliographicResource\n    }\n}\n"
                "WHERE {\n    ?s a foaf:Document\n}"),
        _true(_ask_two_not_three("graphs_test")),
    ), clears=("data1", "data2", "data3", "graphs_test")),
    Case("update_dataset_named_graphs", (
        Request("update", params=(("using-named-graph-uri", "{data1}"),
                                  ("using-named-graph-uri", "{data2}")),
                content_type=_U,
                body=_PREFIXES + "DROP ALL ;\n" + _INSERT_123 + "INSERT {\n"
                "    GRAPH <{named_test}> {\n        ?s a dc:BibliographicResource\n    }\n}\n"
                "WHERE {\n    GRAPH ?g {\n        ?s a foaf:Document\n    }\n}"),
        _true(_ask_two_not_three("named_test")),
    ), clears=("data1", "data2", "data3", "named_test")),
    Case("update_dataset_full", (
        Request("update", params=(("using-graph-uri", "{data1}"),
                                  ("using-named-graph-uri", "{data2}")),
                content_type=_U,
                body=_PREFIXES + "DROP ALL ;\n" + _INSERT_123 + "INSERT {\n"
                "    GRAPH <{full_test}> {\n        ?s <http://example.org/in> ?in\n    }\n}\n"
                "WHERE {\n    {\n        GRAPH ?g { ?s a foaf:Document }\n"
                "        BIND(?g AS ?in)\n    }\n    UNION\n    {\n"
                "        ?s a foaf:Document .\n        BIND(\"default\" AS ?in)\n    }\n}"),
        _true("ASK {\n    GRAPH <{full_test}> {\n"
              "        <{data1}> <http://example.org/in> \"default\" .\n"
              "        <{data2}> <http://example.org/in> <{data2}> .\n    }\n"
              "    FILTER NOT EXISTS {\n        GRAPH <{full_test}> {\n"
              "            <{data3}> ?p ?o\n        }\n    }\n}"),
    ), clears=("data1", "data2", "data3", "full_test")),
    Case("update_post_form", (
        Request("update", body="update=CLEAR+ALL", content_type=_FORM),
    ), clears=("test",)),
    Case("update_post_direct", (
        Request("update", body="CLEAR ALL", content_type=_U),
    ), clears=("test",)),
    Case("update_base_uri", (
        Request("update", content_type=_U,
                body="CLEAR SILENT GRAPH <{base_test}> ;\nINSERT DATA { GRAPH <{base_test}> { "
                "<http://example.org/s> <http://example.org/p> <test> } }"),
        _true("ASK {\n    GRAPH <{base_test}> {\n"
              "        <http://example.org/s> <http://example.org/p> ?o\n"
              "        FILTER (isIRI(?o) && STR(?o) != \"test\")\n    }\n}"),
    )),
    Case("query_post_direct", (
        Request("query", body="ASK {}", content_type=_Q, boolean=True, answer="boolean"),
    )),
    Case("bad_query_method", (
        Request("query", "PUT", params=(("query", "ASK {}"), ("default-graph-uri", "{data0}")),
                content_type=_FORM, status=4),
    )),
    Case("bad_multiple_queries", (
        Request("query", "GET", params=(("query", "ASK {}"), ("query", "SELECT * {}")),
                status=4),
    )),
    Case("bad_query_wrong_media_type", (
        Request("query", body="ASK {}", content_type="text/plain", status=4),
    )),
    Case("bad_query_missing_form_type", (
        Request("query", body="query=ASK%20%7B%7D", status=4),
    )),
    Case("bad_query_missing_direct_type", (
        Request("query", body="ASK {}", status=4),
    )),
    Case("bad_query_non_utf8", (
        Request("query", body="ASK {}", encoding="utf-16",
                content_type="application/sparql-query; charset=UTF-16", status=4),
    )),
    Case("bad_query_syntax", (
        Request("query", "GET", params=(("query", "ASK {"),), status=4),
    )),
    Case("bad_update_get", (
        Request("update", "GET", params=(("update", "CLEAR ALL"),), status=4),
    )),
    Case("bad_multiple_updates", (
        Request("update", body="update=CLEAR%20NAMED&update=CLEAR%20DEFAULT", content_type=_FORM,
                status=4),
    )),
    Case("bad_update_wrong_media_type", (
        Request("update", body="CLEAR NAMED", content_type="text/plain", status=4),
    )),
    Case("bad_update_missing_form_type", (
        Request("update", body="update=CLEAR%20NAMED", status=4),
    )),
    Case("bad_update_non_utf8", (
        Request("update", body="CLEAR NAMED", encoding="utf-16",
                content_type="application/sparql-update; charset=UTF-16", status=4),
    )),
    Case("bad_update_syntax", (
        Request("update", body="update=CLEAR%20XYZ", content_type=_FORM, status=4),
    )),
    Case("bad_update_dataset_conflict", (
        Request("update", params=(("using-named-graph-uri", "{people}"),), content_type=_U,
                body="PREFIX foaf:  <http://xmlns.com/foaf/0.1/>\nWITH <{addresses}>\n"
                "DELETE { ?person foaf:givenName 'Bill' }\n"
                "INSERT { ?person foaf:givenName 'William' }\n"
                "WHERE {\n    ?person foaf:givenName 'Bill'\n}", status=4),
    )),
)  # fmt: skip
