"""The endpoint's reading of SPARQL text and of protocol requests, without a server."""

from __future__ import annotations

import pytest

from em_plugin.endpoint import ProtocolError, pick_media_type, read_request
from em_plugin.endpoint.sparql_text import declares_dataset, query_form, with_base, with_using
from provenance.stores.union import with_standard_prefixes


def test_using_goes_before_each_operations_where_only() -> None:
    update = (
        'INSERT DATA { GRAPH <g> { <s> <p> "WHERE { }" } } ; '
        "DELETE WHERE { ?s ?p ?o } ; "
        "INSERT { GRAPH <t> { ?s a <C> } } WHERE { ?s a <D> # WHERE in a comment\n }"
    )
    out = with_using(update, ["http://a/"], ["http://b/"])
    assert out.count("USING <http://a/> USING NAMED <http://b/> WHERE") == 1
    assert '"WHERE { }"' in out and "DELETE WHERE" in out
    assert with_using(update, [], []) == update


def test_dataset_clauses_base_and_form_are_read_outside_groups_only() -> None:
    assert declares_dataset("WITH <g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }")
    assert not declares_dataset('INSERT DATA { <s> <p> "USING WITH" }')
    assert with_base("SELECT * { <s> ?p ?o }", "http://h/query").startswith("BASE <http://h/query>")
    assert with_base("BASE <x:> SELECT * {}", "http://h/") == "BASE <x:> SELECT * {}"
    construct = with_standard_prefixes("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    assert query_form(construct) == "CONSTRUCT"


def test_prefixes_are_declared_once_and_keep_the_users_own() -> None:
    text = with_standard_prefixes("PREFIX pl: <urn:mine#> SELECT * { ?s a pl:X }")
    assert text.count("PREFIX pl:") == 1 and "PREFIX prov:" in text
    assert text.count("\n") == 0


@pytest.mark.parametrize(
    ("method", "target", "headers", "body", "status"),
    [
        ("PUT", "/query?query=ASK%7B%7D", {}, b"", 405),
        ("GET", "/update?update=CLEAR%20ALL", {}, b"", 405),
        ("POST", "/query", {}, b"ASK {}", 415),
        ("POST", "/query", {"Content-Type": "text/plain"}, b"ASK {}", 415),
        ("POST", "/query", {"Content-Type": "application/sparql-query; charset=UTF-16"},
         "ASK {}".encode("utf-16"), 415),
        ("POST", "/query", {"Content-Type": "application/sparql-query"}, b"\xff\xfeA", 400),
        ("GET", "/query?query=ASK%7B%7D&query=ASK%7B%7D", {}, b"", 400),
        ("POST", "/update?using-graph-uri=http%3A%2F%2Fa%2F",
         {"Content-Type": "application/sparql-update"}, b"WITH <g> DELETE {} WHERE {}", 400),
        ("GET", "/nowhere", {}, b"", 404),
    ],
)  # fmt: skip
def test_requests_the_protocol_refuses(
    method: str, target: str, headers: dict[str, str], body: bytes, status: int
) -> None:
    with pytest.raises(ProtocolError) as refused:
        read_request(method, target, headers, body)
    assert refused.value.status == status
    if status == 405:
        assert refused.value.allow in ("GET, POST", "POST")


def test_a_get_without_a_query_asks_for_the_description_and_forms_merge_url_params() -> None:
    assert read_request("GET", "/query", {}, b"").text is None
    request = read_request(
        "POST",
        "/query/?default-graph-uri=http%3A%2F%2Fa%2F",
        {"Content-Type": "application/x-www-form-urlencoded"},
        b"query=ASK%20%7B%7D&named-graph-uri=http%3A%2F%2Fb%2F",
    )
    assert (request.text, request.default_graphs, request.named_graphs) == (
        "ASK {}",
        ("http://a/",),
        ("http://b/",),
    )


def test_accept_is_read_with_its_q_values() -> None:
    offered = ("text/turtle", "application/n-triples", "application/rdf+xml")
    assert pick_media_type(None, offered) == "text/turtle"
    assert pick_media_type("application/rdf+xml;q=0.5, application/n-triples", offered) == (
        "application/n-triples"
    )
    assert pick_media_type("text/html, */*;q=0.1", offered) == "text/turtle"
    with pytest.raises(ProtocolError) as refused:
        pick_media_type("image/png", offered)
    assert refused.value.status == 406
