"""A SPARQL syntax error names its fault at the line and column of the text as typed."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from provenance.errors import QueryError
from provenance.stores import open_store
from provenance.stores.sparql_errors import syntax_error_message
from provenance.stores.union import with_standard_prefixes


def _oxigraph_says(text: str) -> str:
    full = with_standard_prefixes(text)
    with pytest.raises(SyntaxError) as error:
        ox.Store().query(full)
    return syntax_error_message(text, str(error.value), shift=len(full) - len(text))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("SELECT * WHERE { ?s ?p }", "line 1, column 24: the triple pattern `?s ?p` has no object"),
        (
            "SELECT * WHERE {\n  ?s ?p ?o .\n  ?s ?p\n}",
            "line 4, column 1: the triple pattern `?s ?p` has no object",
        ),
        (
            "SELECT * WHERE { ?s ?p ?o ; ?q }",
            "line 1, column 32: the predicate `?q` after `;` has no object",
        ),
        (
            "SELECT * WHERE {\n  ?s ?p ?o ",
            "line 2, column 11: the text ends before the `{` at line 1, column 16 is closed",
        ),
        ("SELECT * WHERE { ?s ?p ?o } }", "line 1, column 29: this `}` closes no `{`"),
    ],
)
def test_common_faults_are_named_where_they_are(text: str, message: str) -> None:
    assert _oxigraph_says(text) == message


def test_an_unknown_prefix_is_named_at_its_place_with_the_declared_ones() -> None:
    message = _oxigraph_says("SELECT * WHERE {\n  ?s a foo:Bar }")
    assert message.startswith("line 2, column 8: unknown prefix foo: (declared for you: prov:")
    assert "\n" not in message and len(message) <= 300


def test_a_fault_the_text_does_not_explain_names_the_token_and_what_was_expected() -> None:
    message = _oxigraph_says("SELECT * WHERE { ?s ?p ?o FILTER }")
    assert message.startswith("line 1, column ") and "expected" in message
    assert "u{" not in message  # no Unicode ranges of the parser's token list


def test_the_store_reports_the_fault_in_one_line() -> None:
    with open_store("memory:") as store, pytest.raises(QueryError) as error:
        store.query("SELECT ?s WHERE { ?s ?p }")
    assert str(error.value) == (
        "invalid SPARQL: line 1, column 25: the triple pattern `?s ?p` has no object"
    )
