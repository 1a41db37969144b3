"""Export: RDF formats read back, PROV-JSON re-imports through `prov` with the same statements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prov.model import ProvDocument
from rdflib import Dataset, Graph
from rdflib.compare import isomorphic

from provenance import ProvenanceError, Workflow
from provenance.export import (
    FORMATS,
    export,
    provjson_to_graph,
    provjson_to_workflows,
    to_prov_document,
)
from provenance.mapping import entail_types, graph_iri, graph_to_workflow, workflow_to_graph
from provenance.vocab import BASE, PROV, RDF
from provenance.workflow_json import loads_workflow
from tests.strategies import workflows

GOLDEN = [
    loads_workflow(json.dumps(json.loads(path.read_text(encoding="utf-8"))))
    for path in sorted((Path(__file__).parent / "golden").glob("*.json"))
]


def by_graph_iri(items: list[Workflow]) -> list[Workflow]:
    return sorted(items, key=lambda w: str(graph_iri(w.id, w.scope)))


def test_turtle_is_the_union_of_the_workflow_graphs() -> None:
    expected = Graph()
    for workflow in GOLDEN:
        expected += entail_types(workflow_to_graph(workflow))
    text = export(GOLDEN, "ttl")
    assert "@prefix wf: <https://w3id.org/em-plugin/ns#>" in text
    assert "brick" not in text  # only the layer's prefixes, not rdflib's defaults
    assert isomorphic(Graph().parse(data=text, format="turtle"), expected)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # rdflib's own TriG/JSON-LD parsers
@pytest.mark.parametrize(("fmt", "rdflib_format"), [("trig", "trig"), ("jsonld", "json-ld")])
def test_named_graph_formats_keep_one_graph_per_workflow(fmt: str, rdflib_format: str) -> None:
    dataset = Dataset()
    dataset.parse(data=export(GOLDEN, fmt), format=rdflib_format)
    for workflow in GOLDEN:
        graph = dataset.graph(graph_iri(workflow.id, workflow.scope))
        assert isomorphic(graph, entail_types(workflow_to_graph(workflow)))
        assert graph_to_workflow(graph) == workflow


def test_graphs_datasets_and_workflows_export_alike() -> None:
    graphs = [workflow_to_graph(w) for w in GOLDEN]
    assert export(graphs, "provjson") == export(GOLDEN, "provjson")
    dump = Dataset()
    for workflow, graph in zip(GOLDEN, graphs, strict=True):
        dump.graph(graph_iri(workflow.id, workflow.scope)).__iadd__(graph)
    assert isomorphic(
        Graph().parse(data=export(dump, "ttl")), Graph().parse(data=export(GOLDEN, "ttl"))
    )


def test_provjson_reimports_with_the_same_prov_statements() -> None:
    text = export(GOLDEN, "provjson")
    assert set(json.loads(text)["bundle"]) == {
        "graph:" + str(graph_iri(w.id, w.scope)).removeprefix(f"{BASE}graph/") for w in GOLDEN
    }
    reimported = ProvDocument.deserialize(content=text, format="json")
    assert reimported == to_prov_document(GOLDEN)
    assert provjson_to_workflows(text) == by_graph_iri(GOLDEN)


def test_single_workflow_provjson_gives_the_workflow_back() -> None:
    for workflow in GOLDEN:
        assert graph_to_workflow(provjson_to_graph(export(workflow, "provjson"))) == workflow


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(workflows, min_size=1, max_size=2, unique_by=lambda w: w.id))
def test_provjson_round_trip(items: list[Workflow]) -> None:
    text = export(items, "provjson")
    assert ProvDocument.deserialize(content=text, format="json") == to_prov_document(items)
    assert provjson_to_workflows(text) == by_graph_iri(items)


def test_provn_is_prov_notation_with_a_bundle_per_workflow() -> None:
    text = export(GOLDEN, "provn")
    assert text.startswith("document")
    assert text.count("bundle graph:") == len(GOLDEN)
    assert "bundle graph:acme-regulatory/session%2Fsess-43" in text
    assert (
        "wasGeneratedBy(" in text and "actedOnBehalfOf(agent:sds_agent, agent:coordinator" in text
    )
    # Qualified associations: the execution, its agent (the user for instructions) and the plan
    # the agent followed (the workflow).
    this = "workflow:session%2Fsess-44"
    assert f"wasAssociatedWith({this}#exec-1-assoc; {this}#exec-1, {this}#user, {this})" in text
    assert "exec-0.0.0, agent:chem_agent, workflow:session%2Fsess-43)" in text


def test_every_exported_node_has_a_prov_class() -> None:
    graph = Graph().parse(data=export(GOLDEN, "ttl"), format="turtle")
    classes = {PROV.Entity, PROV.Activity, PROV.Agent, PROV.Association}
    untyped = {n for n in graph.subjects() if not classes & set(graph.objects(n, RDF.type))}
    assert not untyped


def test_unknown_format_lists_the_valid_ones() -> None:
    with pytest.raises(
        ProvenanceError, match="unknown export format 'xml'; valid: ttl, trig, jsonld"
    ):
        export(GOLDEN, "xml")
    assert FORMATS == ("ttl", "trig", "jsonld", "provjson", "provn")


def test_malformed_provjson_is_a_clear_error() -> None:
    with pytest.raises(ProvenanceError, match="not a PROV-JSON document"):
        provjson_to_graph("{not json")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # rdflib's own TriG/JSON-LD parsers
def test_export_store_writes_every_store_format() -> None:
    from provenance.export import STORE_FORMATS, export_store
    from provenance.model import CallStep
    from provenance.stores import open_store
    from provenance.stores.backup import backup_text

    with open_store("memory:") as store:
        store.save(Workflow(id="w1", steps=(CallStep(name="reader"),), scope="team"))
        store.save(Workflow(id="w2", steps=(CallStep(name="writer"),)))
        lines = export_store(store, format="jsonl", scope="team").splitlines()
        assert [loads_workflow(line).id for line in lines] == ["w1"]
        assert export_store(store, format="nq") == backup_text(store)
        trig = Dataset().parse(data=export_store(store, format="trig"), format="trig")
        assert {graph_iri("w1", "team"), graph_iri("w2", "default")} <= {
            g.identifier for g in trig.graphs()
        }
        assert all(export_store(store, format=fmt) for fmt in STORE_FORMATS)
        with pytest.raises(ProvenanceError, match="valid: jsonl, ttl, trig, jsonld, provjson"):
            export_store(store, format="xml")
