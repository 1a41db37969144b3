"""The prefix rule of every door (``with_standard_prefixes``) and errors at the text as typed."""

from __future__ import annotations

import pytest

from provenance.errors import QueryError
from provenance.model import CallStep, Workflow
from provenance.stores import open_store
from provenance.stores.union import with_standard_prefixes
from provenance.vocab import PREFIXES


def test_every_standard_prefix_is_declared_once_on_the_first_line() -> None:
    text = "SELECT * WHERE {\n  ?w a pl:Workflow\n}"
    full = with_standard_prefixes(text)
    assert full.endswith(text) and full.count("\n") == text.count("\n")
    for name, iri in PREFIXES.items():
        assert full.count(f"PREFIX {name}: <{iri}>") == 1


def test_a_declared_prefix_keeps_its_own_iri() -> None:
    full = with_standard_prefixes("prefix pl: <urn:mine#> SELECT * { ?w a pl:Workflow }")
    assert "<urn:mine#>" in full and f"<{PREFIXES['pl']}>" not in full


def test_prefix_words_in_strings_and_comments_declare_nothing() -> None:
    text = 'SELECT * { ?s ?p "PREFIX pl: <urn:x>" } # PREFIX wf: <urn:y>'
    full = with_standard_prefixes(text)
    assert f"PREFIX pl: <{PREFIXES['pl']}>" in full and f"PREFIX wf: <{PREFIXES['wf']}>" in full


def test_a_query_without_prefix_lines_answers_and_errors_point_at_the_text_as_typed() -> None:
    with open_store("memory:") as store:
        store.save(Workflow(id="w1", steps=(CallStep(name="reader"),)))
        result = store.query("SELECT (COUNT(*) AS ?n) WHERE { ?w a pl:Workflow }")
        assert int(str(result.rows[0][0])) == 1  # type: ignore[union-attr]
        with pytest.raises(QueryError, match=r"line 1, column (2[0-9])\b") as error:
            store.query("SELECT ?s WHERE { ?s ?p }")
        assert "\n" not in str(error.value) and len(str(error.value)) <= 300
        with pytest.raises(QueryError, match="unknown prefix nope:"):
            store.query("SELECT * WHERE { ?s nope:x ?o }")
        with pytest.raises(QueryError, match="expected a query"):
            store.query("DELETE WHERE { ?s ?p ?o }")
