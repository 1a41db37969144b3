"""The published ontology declares every wf:/pl: term the layer uses, each under PROV-O."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from rdflib import OWL, RDFS, Graph, URIRef

from provenance import Workflow
from provenance.mapping import workflow_to_graph
from provenance.queries import list_queries
from provenance.suggestion_record import suggestion_triples
from provenance.vocab import PL, PL_NS, PROV, RDF, WF, WF_NS
from provenance.workflow_json import loads_workflow
from tests.strategies import workflows

ONTOLOGY = Graph().parse(
    data=resources.files("provenance").joinpath("ontology.ttl").read_text(encoding="utf-8"),
    format="turtle",
)
KINDS = (OWL.Class, OWL.ObjectProperty, OWL.DatatypeProperty)
DECLARED = {
    term
    for kind in KINDS
    for term in ONTOLOGY.subjects(RDF.type, kind)
    if str(term).startswith((WF_NS, PL_NS))
}
PROV_CLASSES = {PROV.Entity, PROV.Activity, PROV.Agent, PROV.Plan}


def ours(term: object) -> bool:
    return isinstance(term, URIRef) and str(term).startswith((WF_NS, PL_NS))


def used_terms(graph: Graph) -> tuple[set[URIRef], set[URIRef]]:
    """Return (classes, properties) of our namespaces used in a graph."""
    classes = {o for o in graph.objects(None, RDF.type) if ours(o)}
    properties = {p for p in graph.predicates() if ours(p)}
    return classes, properties  # type: ignore[return-value]


def assert_declared(classes: set[URIRef], properties: set[URIRef]) -> None:
    for term in classes:
        assert (term, RDF.type, OWL.Class) in ONTOLOGY, f"{term} is not declared as owl:Class"
    for term in properties:
        kinds = set(ONTOLOGY.objects(term, RDF.type))
        assert kinds & {OWL.ObjectProperty, OWL.DatatypeProperty}, f"{term} is not declared"


def test_every_declared_term_is_labelled_and_commented() -> None:
    assert len(DECLARED) > 40
    for term in DECLARED:
        assert ONTOLOGY.value(term, RDFS.label) is not None, term
        assert len(str(ONTOLOGY.value(term, RDFS.comment) or "")) > 20, term


def test_vocab_module_and_ontology_list_the_same_terms() -> None:
    in_code = {WF[name] for name in WF.__annotations__} | {PL[name] for name in PL.__annotations__}
    assert in_code == DECLARED


def test_every_class_specialises_a_prov_class() -> None:
    for term in ONTOLOGY.subjects(RDF.type, OWL.Class):
        if ours(term):
            ancestors = set(ONTOLOGY.transitive_objects(term, RDFS.subClassOf))
            assert ancestors & PROV_CLASSES, f"{term} is not under a PROV-O class"


def test_terms_of_golden_graphs_and_suggestions_are_declared() -> None:
    for path in sorted((Path(__file__).parent / "golden").glob("*.json")):
        workflow = loads_workflow(json.dumps(json.loads(path.read_text(encoding="utf-8"))))
        assert_declared(*used_terms(workflow_to_graph(workflow)))
    suggestions = suggestion_triples(
        "s", [{"text": "t", "tool": "x", "score": 1, "source": "episodic"}], ["w"], "2025-01-01"
    )
    assert_declared(*used_terms(suggestions))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows)
def test_terms_of_mapped_workflows_are_declared(workflow: Workflow) -> None:
    assert_declared(*used_terms(workflow_to_graph(workflow)))


def test_terms_in_shapes_and_queries_are_declared() -> None:
    texts = [resources.files("provenance").joinpath("shapes.ttl").read_text(encoding="utf-8")]
    texts += [query.text for query in list_queries()]
    for text in texts:
        body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        for prefix, local in re.findall(r"(?<![\w-])(wf|pl):([A-Za-z]\w*)", body):
            term = URIRef((WF_NS if prefix == "wf" else PL_NS) + local)
            assert term in DECLARED, f"{prefix}:{local} is not declared in ontology.ttl"
