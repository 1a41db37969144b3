"""Updates are bounded to the graphs a grant may write; queries may not use SERVICE."""

from __future__ import annotations

import pytest

from em_plugin.access import READ, READ_WRITE, AccessDenied, Grant, check_query, check_update
from provenance.vocab import graph_iri

A = str(graph_iri("w1", "a"))
A2 = str(graph_iri("w2", "a"))
B = str(graph_iri("w1", "b"))
WRITER = Grant("writer", frozenset({"a"}), READ_WRITE)


def test_allowed_updates_report_their_graphs() -> None:
    graphs = check_update(
        f"INSERT {{ GRAPH <{A2}> {{ ?s ?p ?o }} }} WHERE {{ GRAPH <{A}> {{ ?s ?p ?o }} }} ;"
        f" WITH <{A}> DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o }} ; COPY <{A}> TO <{A2}>",
        WRITER,
    )
    assert graphs.writes == {A, A2} and graphs.reads == {A}


@pytest.mark.parametrize(
    "update",
    [
        f"INSERT DATA {{ GRAPH <{B}> {{ <urn:s> <urn:p> 1 }} }}",
        f"INSERT {{ GRAPH <{A}> {{ ?s ?p ?o }} }} WHERE {{ GRAPH <{A}> {{ ?s ?p ?o }}"
        f" FILTER EXISTS {{ GRAPH <{B}> {{ ?s ?p ?o }} }} }}",
        f"INSERT {{ GRAPH <{A}> {{ ?s ?p ?o }} }} WHERE {{ {{ SELECT * WHERE"
        " { GRAPH ?g { ?s ?p ?o } } } }",
        f"INSERT {{ GRAPH <{A}> {{ ?s ?p ?o }} }} WHERE {{ GRAPH <{A}> {{ ?s ?p ?o }}"
        " MINUS { ?s ?p ?o } }",
        "CLEAR NAMED",
        f"ADD DEFAULT TO <{A}>",
        f"WITH <{B}> INSERT {{ ?s ?p 1 }} WHERE {{ GRAPH <{A}> {{ ?s ?p ?o }} }}",
    ],
)
def test_unbounded_or_foreign_updates_are_403(update: str) -> None:
    with pytest.raises(AccessDenied) as denied:
        check_update(update, WRITER)
    assert denied.value.status == 403


def test_a_read_grant_updates_nothing_and_bad_text_is_400() -> None:
    with pytest.raises(AccessDenied, match="read-only"):
        check_update(f"DROP GRAPH <{A}>", Grant("r", frozenset({"a"}), READ))
    with pytest.raises(AccessDenied) as denied:
        check_update("DROP", WRITER)
    assert denied.value.status == 400
    with pytest.raises(AccessDenied) as denied:
        check_query("SELECT")
    assert denied.value.status == 400
    check_query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }")
    with pytest.raises(AccessDenied, match="SERVICE"):
        check_query("ASK { FILTER EXISTS { SERVICE <http://x/q> { ?s ?p ?o } } }")


def test_the_remote_backends_replace_is_read_exactly() -> None:
    from provenance.mapping import workflow_to_triples
    from provenance.model import CallStep, InstructionStep, Workflow
    from provenance.stores._terms import replace_update

    workflow = Workflow(
        id="w2", scope="a", steps=(InstructionStep("x }; DROP ALL", (CallStep("t"),)),)
    )
    graphs = [(graph_iri("w2", "a"), list(workflow_to_triples(workflow)))]
    update = replace_update(graphs, [graph_iri("w2", "a"), graph_iri("w1", "a")])
    assert check_update(update, WRITER).writes == {A, A2}
    foreign = replace_update(graphs, [graph_iri("w1", "b")])
    with pytest.raises(AccessDenied, match="may not write"):
        check_update(foreign, WRITER)


@pytest.mark.parametrize(
    "update",
    [
        f"INSERT DATA {{ GRAPH <{A}> {{ <urn:s> <urn:p> 1 }} }} ; DROP ALL ;"
        f" INSERT DATA {{ GRAPH <{A}> {{ <urn:s> <urn:p> 1 }} }}",
        f"INSERT DATA {{ GRAPH <{A}> {{ <urn:s> <urn:p> 1 }} }} # }}\n ; DROP GRAPH <{B}> ;"
        f" INSERT DATA {{ GRAPH <{A}> {{ <urn:s> <urn:p> 1 }}",
        "INSERT DATA { GRAPH _:b { <urn:s> <urn:p> 1 } }",
        "INSERT DATA { { <urn:s> <urn:p> 1 } }",
        f"DELETE {{ GRAPH ?g {{ ?s ?p ?o }} }} WHERE {{ VALUES ?g {{ <{A}> <{B}> }}"
        " GRAPH ?g { ?s ?p ?o } } ; INSERT DATA { }",
        f"DELETE {{ GRAPH ?g {{ ?s ?p ?o }} }} WHERE {{ VALUES ?g {{ <{A}> UNDEF }}"
        " GRAPH ?g { ?s ?p ?o } }",
        f"INSERT {{ GRAPH ?g {{ ?s ?p ?o }} }} WHERE {{ VALUES ?g {{ <{A}> }}"
        " GRAPH ?g { ?s ?p ?o OPTIONAL { GRAPH ?h { ?s ?p ?x } } } }",
        f"INSERT {{ GRAPH ?g {{ ?s ?p ?o }} }} WHERE {{ VALUES ?g {{ <{A}> }}"
        f" GRAPH ?g {{ ?s ?p ?o FILTER EXISTS {{ GRAPH <{B}> {{ ?s ?p ?o }} }} }} }}",
    ],
)
def test_smuggling_past_the_replace_form_is_refused(update: str) -> None:
    with pytest.raises(AccessDenied) as denied:
        check_update(update, WRITER)
    assert denied.value.status in (400, 403)


def test_a_brace_in_a_literal_stays_data() -> None:
    update = f'INSERT DATA {{ GRAPH <{A}> {{ <urn:s> <urn:p> "}} ; DROP ALL ; INSERT DATA {{" }} }}'
    assert check_update(update, WRITER).writes == {A}


def test_graph_variable_bounded_by_using_named_reads_only_the_listed_graphs() -> None:
    where = f"INSERT {{ GRAPH <{A2}> {{ ?s a <urn:C> }} }} USING NAMED <{A}> "
    graphs = check_update(where + "WHERE { GRAPH ?g { ?s a <urn:D> } }", WRITER)
    assert graphs.reads == {A} and graphs.writes == {A2}
    with pytest.raises(AccessDenied, match="read"):  # the bound names another scope's graph
        check_update(
            f"INSERT {{ GRAPH <{A2}> {{ ?s a <urn:C> }} }} USING NAMED <{B}> "
            "WHERE { GRAPH ?g { ?s a <urn:D> } }",
            WRITER,
        )
    with pytest.raises(AccessDenied, match="variables"):  # USING alone leaves ?g unbounded
        check_update(
            f"INSERT {{ GRAPH <{A2}> {{ ?s a <urn:C> }} }} USING <{A}> "
            "WHERE { GRAPH ?g { ?s a <urn:D> } }",
            WRITER,
        )


@pytest.mark.parametrize(
    ("update", "fault"),
    [
        (
            f"INSERT DATA {{ GRAPH <{A}> {{ <urn:s> <urn:p> <urn:o> }}",
            "line 1, column 91: the text ends before the `{` at line 1, column 13 is closed",
        ),
        (
            f"INSERT DATA {{ GRAPH <{A}> {{\n<urn:s> <urn:p> }} }}",
            "line 2, column 17: the triple pattern `<urn:s> <urn:p>` has no object",
        ),
    ],
)
def test_an_update_that_does_not_parse_is_named_at_its_fault_not_at_char_0(
    update: str, fault: str
) -> None:
    with pytest.raises(AccessDenied) as error:
        check_update(update, WRITER)
    assert error.value.status == 400
    assert str(error.value) == f"the update does not parse: {fault}"
