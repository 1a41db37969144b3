"""One contract for every store backend: memory, disk and a real Oxigraph server (DESIGN §5).

The ``store`` fixture (tests/conftest.py) gives an empty WorkflowStore of each backend.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from rdflib import BNode, Literal, URIRef
from rdflib.namespace import DCTERMS

from provenance.errors import QueryError, StoreError, WorkflowNotFound
from provenance.mapping import graph_iri, workflow_iri, workflow_to_triples
from provenance.model import CallStep, FailedCall, InstructionStep, Workflow
from provenance.stores import QueryResult, WorkflowStore
from tests.strategies import _HOSTILE, workflows

HOSTILE = list(_HOSTILE.elements)  # type: ignore[attr-defined]
ID_QUERY = "SELECT ?wf WHERE { ?wf <http://purl.org/dc/terms/identifier> ?id }"


def sample_workflows() -> list[Workflow]:
    """Hand-made workflows covering nesting, sub-agents, failures, revisions and scopes."""
    extract = CallStep(
        name="product_extractor",
        args={"file": "acme.pdf", "pages": [1, 2]},
        output={"ingredients": ["water", "PFOA"]},
        agent="extractor",
        started="2026-11-21T10:00:00+00:00",
        ended="2026-11-21T10:00:02.5+00:00",
    )
    handoff = CallStep(
        name="ask_chemist",
        args={"question": "classify"},
        agent="coordinator",
        steps=(
            CallStep(name="pfas_classifier", args={"smiles": "CCO"}, output=False, agent="chemist"),
        ),
    )
    first = Workflow(
        id="wf-1",
        title="SDS check",
        scope="tenant-a",
        session="thread-1",
        created="2026-11-21T10:00:00+00:00",
        framework="langgraph",
        steps=(
            InstructionStep(text="Extract all ingredients", steps=(extract, handoff), id="i1"),
            InstructionStep(text="Thanks!"),
        ),
        failed=(
            FailedCall(call=CallStep(name="ocr", args={"file": "x"}), error="timeout", parent="0"),
        ),
        revised=(InstructionStep(text="Extract ingredients from the old file", id="i0"),),
        extra={"x_note": "kept"},
    )
    second = Workflow(id="wf-2", scope="tenant-a", steps=(CallStep(name="A1"), CallStep(name="A8")))
    third = Workflow(id="helpdesk/3 [x]|y", scope="user/bob", steps=(CallStep(name="A1"),))
    return [first, second, third]


def flat(text: str) -> str:
    """The text with control characters blanked: ids, scopes and tool names refuse them."""
    return "".join(" " if ord(c) < 32 else c for c in text)


def snapshot(store: WorkflowStore) -> dict[URIRef, frozenset[tuple[object, ...]]]:
    """Every graph of the store with its triples, for before/after comparisons."""
    backend = store.backend
    return {
        name: frozenset(triples) for name, triples in backend.read_graphs(backend.graph_names())
    }


# -- save / load -------------------------------------------------------------------------------


def test_save_load_round_trip(store: WorkflowStore) -> None:
    originals = sample_workflows()
    assert store.save_many(originals) == 3
    for workflow in originals:
        assert store.load(workflow.id) == workflow
    assert store.ids() == sorted(w.id for w in originals)
    assert len(store) == 3
    assert "wf-1" in store and "nope" not in store and 42 not in store


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(workflow=workflows)
def test_hypothesis_round_trip(store: WorkflowStore, workflow: Workflow) -> None:
    store.save(workflow)
    assert store.load(workflow.id) == workflow
    assert store.load(workflow.id, scope=workflow.scope) == workflow


def test_save_replaces_same_id_without_leftovers(store: WorkflowStore) -> None:
    big, other = sample_workflows()[0], sample_workflows()[1]
    store.save_many([big, other])
    small = Workflow(id=big.id, scope="tenant-b", steps=(CallStep(name="only"),))
    store.save(small)
    assert store.load(big.id) == small
    stored = set(next(iter(store.backend.read_graphs([graph_iri(big.id)])))[1])
    assert stored == set(workflow_to_triples(small))
    assert store.load(other.id) == other
    assert store.ids(scope="tenant-b") == [big.id]


def test_batch_with_repeated_id_keeps_the_last(store: WorkflowStore) -> None:
    a = Workflow(id="dup", steps=(CallStep(name="first"),))
    b = Workflow(id="dup", steps=(CallStep(name="second"),))
    assert store.save_many([a, b]) == 1
    assert store.load("dup") == b


def test_load_missing_or_other_scope_is_not_found(store: WorkflowStore) -> None:
    store.save_many(sample_workflows())
    with pytest.raises(WorkflowNotFound, match="nope"):
        store.load("nope")
    with pytest.raises(WorkflowNotFound, match="tenant-b"):
        store.load("wf-1", scope="tenant-b")


# -- listing and scopes ------------------------------------------------------------------------


def test_ids_scopes_and_iteration(store: WorkflowStore) -> None:
    store.save_many(sample_workflows())
    assert store.scopes() == ["tenant-a", "user/bob"]
    assert store.ids(scope="tenant-a") == ["wf-1", "wf-2"]
    assert store.ids(scope="user/bob") == ["helpdesk/3 [x]|y"]
    assert store.ids(scope="nobody") == []
    assert [w.id for w in store.iter_workflows(scope="tenant-a")] == ["wf-1", "wf-2"]
    assert [w.id for w in store.iter_workflows(batch_size=1)] == store.ids()


def test_stats(store: WorkflowStore) -> None:
    assert store.stats()["workflows"] == 0
    store.save_many(sample_workflows())
    stats = store.stats()
    assert stats["workflows"] == 3
    assert stats["scopes"] == {"tenant-a": 2, "user/bob": 1}
    assert stats["tools"] == 6
    assert stats["triples"] == sum(len(workflow_to_triples(w)) for w in sample_workflows())
    assert stats["steps"] > 0


# -- delete ------------------------------------------------------------------------------------


def test_delete(store: WorkflowStore) -> None:
    store.save_many(sample_workflows())
    before = snapshot(store)
    assert store.delete("wf-2") is True
    assert store.delete("wf-2") is False
    assert "wf-2" not in store
    after = snapshot(store)
    del before[graph_iri("wf-2")]
    assert after == before


def test_delete_scope(store: WorkflowStore) -> None:
    store.save_many(sample_workflows())
    assert store.delete_scope("tenant-a") == ["wf-1", "wf-2"]
    assert store.ids() == ["helpdesk/3 [x]|y"]
    assert store.scopes() == ["user/bob"]
    assert store.delete_scope("tenant-a") == []


# -- atomicity ---------------------------------------------------------------------------------


def test_batch_with_unstorable_item_changes_nothing(store: WorkflowStore) -> None:
    store.save_many(sample_workflows())
    before = snapshot(store)
    replacement = Workflow(id="wf-1", steps=(CallStep(name="new"),))
    # A lone surrogate passes the model but cannot be encoded as UTF-8 for the store.
    broken = Workflow(id="bad", steps=(InstructionStep(text="half a pair \ud800"),))
    with pytest.raises(StoreError):
        store.save_many([replacement, broken, Workflow(id="fresh", steps=(CallStep(name="x"),))])
    assert snapshot(store) == before


@pytest.mark.parametrize("replace_existing", [False, True], ids=["new-graphs", "replacing"])
def test_batch_the_backend_rejects_changes_nothing(
    store: WorkflowStore, replace_existing: bool
) -> None:
    store.save_many(sample_workflows())
    before = snapshot(store)
    good = (graph_iri("wf-1") if replace_existing else URIRef("urn:x:fresh"), [_triple("ok")])
    # Passes the client's IRI check (no forbidden character) but is invalid percent-encoding,
    # so Oxigraph's parser rejects the request after part of it was read.
    bad = (URIRef("urn:x:bad"), [(URIRef("http://example.org/%zz"), DCTERMS.title, Literal("x"))])
    with pytest.raises(StoreError):
        store.backend.replace_graphs([good, bad])
    assert snapshot(store) == before


def test_graph_level_replace_and_drop(store: WorkflowStore) -> None:
    backend = store.backend
    g, h = URIRef("urn:x:g"), URIRef("urn:x:h")
    backend.replace_graphs([(g, [_triple("a"), _triple("b")]), (h, iter([_triple("h")]))])
    assert backend.graph_names() == [g, h]
    backend.replace_graphs([(g, [_triple("c")]), (h, [])])  # no triples: the graph goes
    assert backend.graph_names() == [g]
    assert set(backend.triples(g)) == {_triple("c")}
    with pytest.raises(WorkflowNotFound):
        backend.triples(h)
    with pytest.raises(StoreError, match="twice"):
        backend.replace_graphs([(g, []), (g, [])])
    backend.drop_graphs([g, URIRef("urn:x:absent")])
    assert backend.graph_names() == []


# -- hostile values ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_strings_round_trip_and_touch_nothing_else(store: WorkflowStore, text: str) -> None:
    store.save_many(sample_workflows())
    before = snapshot(store)
    hostile = Workflow(
        id=f"wf {flat(text)}",
        title=text,
        scope=flat(text),
        steps=(
            InstructionStep(
                text=text,
                steps=(CallStep(name=f"tool {flat(text)}", args={text: text}, output=text),),
            ),
        ),
        extra={"x_note": text},
    )
    store.save(hostile)
    assert store.load(hostile.id) == hostile
    store.save(hostile)  # again: the replace path (DROP + INSERT DATA text) must keep it too
    assert store.load(hostile.id) == hostile
    assert store.load(hostile.id).title == text  # byte-identical, not just equal after normalising
    after = snapshot(store)
    assert after.pop(graph_iri(hostile.id))
    assert after == before
    assert store.ids(scope=hostile.scope) == [hostile.id]


@pytest.mark.parametrize("text", HOSTILE)
def test_bindings_with_hostile_values(store: WorkflowStore, text: str) -> None:
    store.save_many(sample_workflows())
    hostile = Workflow(id=flat(text), steps=(CallStep(name="A1"),))
    store.save(hostile)
    before = snapshot(store)
    result = store.query(ID_QUERY, {"id": Literal(hostile.id)})
    assert isinstance(result, QueryResult)
    assert result.column("wf") == [workflow_iri(hostile.id)]
    assert len(store.query(ID_QUERY, {"id": Literal(text + "-absent")})) == 0
    assert len(store.query(ID_QUERY, {"?id": text + "-absent"})) == 0  # plain str -> literal
    assert snapshot(store) == before


# -- queries -----------------------------------------------------------------------------------


def test_query_forms(store: WorkflowStore) -> None:
    store.save_many(sample_workflows())
    assert (
        store.query("ASK { ?s <http://purl.org/dc/terms/identifier> ?id }", {"id": "wf-2"}) is True
    )
    graph = store.query(
        "CONSTRUCT { ?wf <urn:x:id> ?id } WHERE { ?wf <http://purl.org/dc/terms/identifier> ?id }"
    )
    assert {str(o) for o in graph.objects()} == {"wf-1", "wf-2", "helpdesk/3 [x]|y"}
    count = store.backend.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert int(count.rows[0][0]) == store.backend.count_triples()


def test_query_restricted_to_scope(store: WorkflowStore) -> None:
    store.save_many(sample_workflows())
    rows = store.query(ID_QUERY, scope="tenant-a")
    assert sorted(rows.column("wf")) == [workflow_iri("wf-1"), workflow_iri("wf-2")]
    graphs = store.query("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }", scope="user/bob")
    assert graphs.column("g") == [graph_iri("helpdesk/3 [x]|y")]
    escape = ID_QUERY.replace("WHERE", f"FROM <{graph_iri('wf-1')}> WHERE")
    assert store.query(escape, scope="user/bob").column("wf") == [workflow_iri("helpdesk/3 [x]|y")]
    assert len(store.query(ID_QUERY, scope="nobody")) == 0


def test_named_queries_with_bindings_and_scope(store: WorkflowStore) -> None:
    store.save_many(sample_workflows())
    using = store.query("workflows-using", {"tool": "A1"})
    assert sorted(str(w) for w in using.column("workflow")) == ["helpdesk/3 [x]|y", "wf-2"]
    in_scope = store.query("workflows-using", {"tool": "A1"}, scope="tenant-a")
    assert [str(w) for w in in_scope.column("workflow")] == ["wf-2"]
    scopes = store.query("scopes")
    assert {str(r["scope"]): int(r["workflows"]) for r in scopes.dicts()} == {
        "tenant-a": 2,
        "user/bob": 1,
    }
    with pytest.raises(QueryError, match="unknown query 'no-such-query'"):
        store.query("no-such-query")


def test_bad_sparql_is_a_query_error(store: WorkflowStore) -> None:
    with pytest.raises(QueryError, match="SPARQL|expected"):
        store.query("SELECT ?s WHERE { ?s ?p }")
    with pytest.raises(QueryError, match="expected a query"):
        store.query("DELETE WHERE { ?s ?p ?o }")
    with pytest.raises(QueryError, match="SELECT"):
        store.backend.select("ASK { ?s ?p ?o }")


@pytest.mark.parametrize(
    ("bindings", "message"),
    [
        ({"not a var": Literal("x")}, "variable name"),
        ({"id": BNode()}, "blank node"),
        ({"id": URIRef("http://example.org/a b")}, "IRI"),
        ({"id": object()}, "cannot bind"),
    ],
)
def test_bad_bindings_are_query_errors(
    store: WorkflowStore, bindings: dict[str, object], message: str
) -> None:
    with pytest.raises(QueryError, match=message):
        store.query(ID_QUERY, bindings)


def test_closed_store_refuses_use(store_spec: str) -> None:
    from provenance.stores import open_store

    workflow_store = open_store(store_spec)
    workflow_store.close()
    with pytest.raises(StoreError, match="closed"):
        workflow_store.ids()


def _triple(text: str) -> tuple[URIRef, URIRef, Literal]:
    return (URIRef("urn:x:s"), DCTERMS.title, Literal(text))
