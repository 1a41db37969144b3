"""Workflow <-> PROV RDF mapping: lossless round trips, IRIs, structure, golden files, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.compare import graph_diff, isomorphic

from provenance import Workflow, read_jsonl
from provenance.errors import MappingError
from provenance.mapping import (
    entail_types,
    graph_iri,
    graph_to_workflow,
    scope_and_id_from_graph_iri,
    triples_to_workflow,
    workflow_id_from_graph_iri,
    workflow_iri,
    workflow_to_graph,
    workflow_to_triples,
)
from provenance.model import walk_steps
from provenance.vocab import DCTERMS, PL, PPLAN, PROV, RDF, WF, agent_iri, bind_prefixes
from provenance.workflow_json import loads_workflow
from tests.data_files import benchmark_file
from tests.provenance.test_queries import _to_ox
from tests.strategies import workflows

GOLDEN = Path(__file__).parent / "golden"


def golden_workflows() -> list[tuple[str, Workflow]]:
    return [
        (path.stem, loads_workflow(json.dumps(json.loads(path.read_text(encoding="utf-8")))))
        for path in sorted(GOLDEN.glob("*.json"))
    ]


def step_path(node: URIRef) -> str:
    return str(node).rsplit("#step-", 1)[1]


# -- round trips -------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows)
def test_graph_round_trip_is_lossless(workflow: Workflow) -> None:
    assert graph_to_workflow(workflow_to_graph(workflow)) == workflow


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows)
def test_round_trip_through_oxigraph_is_lossless(workflow: Workflow) -> None:
    # Oxigraph canonicalises typed literals (e.g. "+00:00" -> "Z"); the mapping must not care.
    # ox.NamedNode also checks that every IRI the mapping writes is a valid IRI.
    store = ox.Store()
    store.extend(
        ox.Quad(_to_ox(s), _to_ox(p), _to_ox(o), ox.NamedNode(str(graph_iri(workflow.id))))
        for s, p, o in workflow_to_triples(workflow)
    )
    triples = [(_from_ox(q.subject), _from_ox(q.predicate), _from_ox(q.object)) for q in store]
    assert triples_to_workflow(triples) == workflow


@pytest.mark.parametrize("name", ["helpdesk", "galaxy_iwc", "tau2_retail", "tau2_telecom"])
def test_real_workflows_round_trip(name: str) -> None:
    originals = read_jsonl(benchmark_file(f"{name}.jsonl"))[:40]
    assert [graph_to_workflow(workflow_to_graph(w)) for w in originals] == originals


def test_mapping_is_deterministic_and_has_no_blank_nodes() -> None:
    for _, workflow in golden_workflows():
        first, second = workflow_to_triples(workflow), workflow_to_triples(workflow)
        assert first == second
        assert not any(isinstance(term, BNode) for triple in first for term in triple)


# -- IRIs --------------------------------------------------------------------------------------


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1))
def test_graph_iri_is_reversible(workflow_id: str) -> None:
    iri = graph_iri(workflow_id)
    ox.NamedNode(str(iri))
    assert "/" not in str(iri).rsplit("/graph/", 1)[1]
    assert workflow_id_from_graph_iri(iri) == workflow_id


@settings(max_examples=50, deadline=None)
@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1),
)
def test_scoped_graph_iri_is_reversible(scope: str, workflow_id: str) -> None:
    iri = graph_iri(workflow_id, scope)
    assert scope_and_id_from_graph_iri(iri) == (scope, workflow_id)
    assert workflow_id_from_graph_iri(iri) == workflow_id


def test_iri_scheme() -> None:
    assert str(workflow_iri("tau2/telecom/[x]|y z")) == (
        "https://w3id.org/em-plugin/id/workflow/tau2%2Ftelecom%2F%5Bx%5D%7Cy%20z"
    )
    assert str(graph_iri("..")) == "https://w3id.org/em-plugin/id/graph/%2E%2E"
    assert workflow_id_from_graph_iri(graph_iri("..")) == ".."
    assert str(agent_iri("chemist agent")) == "https://w3id.org/em-plugin/id/agent/chemist%20agent"


@pytest.mark.parametrize(
    "iri",
    [
        "https://w3id.org/em-plugin/id/workflow/w1",
        "https://w3id.org/em-plugin/id/graph/",
        "https://w3id.org/em-plugin/id/graph/a/b/c",
        "https://w3id.org/em-plugin/id/graph/default/b",  # the default scope has the short form
        "https://w3id.org/em-plugin/id/graph/a/",
        "https://w3id.org/em-plugin/id/graph/a%2fb",  # not the canonical (upper-case) escape
        "https://w3id.org/em-plugin/id/graph/%FF",
    ],
)
def test_graph_iri_errors(iri: str) -> None:
    with pytest.raises(MappingError, match="not a workflow graph IRI"):
        workflow_id_from_graph_iri(iri)


# -- structure ---------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(workflows)
def test_plan_order_and_next_call_chain(workflow: Workflow) -> None:
    graph = workflow_to_graph(workflow)
    steps = {step_path(s): s for s in graph.subjects(PPLAN.isStepOfPlan, workflow_iri(workflow.id))}
    walked = [path for path, _ in workflow.walk()]
    assert sorted(steps, key=lambda p: int(graph.value(steps[p], WF.seq))) == walked
    for path, node in steps.items():
        assert int(graph.value(node, WF.depth)) == path.count(".")
        execution = graph.value(predicate=PPLAN.correspondsToStep, object=node)
        assert execution == URIRef(str(node).replace("#step-", "#exec-"))
        assert int(graph.value(execution, WF.index)) == int(path.rsplit(".", 1)[-1]) + 1
    call_leaves = [p for p, s in workflow.walk() if s.kind == "call" and not s.steps]
    pairs = {(step_path(a), step_path(b)) for a, b in graph.subject_objects(WF.nextCall)}
    assert pairs == set(zip(call_leaves, call_leaves[1:], strict=False))


def test_golden_pfas_session_prov_structure() -> None:
    workflow = dict(golden_workflows())["pfas-session"]
    graph = workflow_to_graph(workflow)
    wf = workflow_iri(workflow.id)
    assert set(graph.objects(wf, RDF.type)) == {PL.Workflow, PPLAN.Plan, PROV.Plan, PROV.Entity}
    # Plan steps are P-Plan steps and entities, not plans of their own.
    for step in graph.subjects(PPLAN.isStepOfPlan, wf):
        assert {PPLAN.Step, PROV.Entity} <= set(graph.objects(step, RDF.type))
        assert (step, RDF.type, PROV.Plan) not in graph
    assert graph.value(wf, WF.scope) == Literal("acme-regulatory")
    # the sub-agent of the handoff acts on behalf of the coordinator
    assert (agent_iri("sds_agent"), PROV.actedOnBehalfOf, agent_iri("coordinator")) in graph
    # with the implied classes added, every node is typed with a PROV-O class
    entailed = entail_types(workflow_to_graph(workflow))
    assert {PROV.Plan, PROV.Entity, PPLAN.Plan} <= set(entailed.objects(wf, RDF.type))
    prov_classes = {PROV.Entity, PROV.Activity, PROV.Agent, PROV.Association}
    for node in set(entailed.subjects()):
        assert prov_classes & set(entailed.objects(node, RDF.type)), node
    # outputs are generated by their call, instruction texts are used by their instruction
    for output in graph.subjects(PROV.wasGeneratedBy, None):
        if output != wf:
            execution = graph.value(output, PROV.wasGeneratedBy)
            assert (execution, RDF.type, WF.FunctionCall) in graph


def test_the_user_and_the_agents_are_associated_with_the_plan_they_followed() -> None:
    workflow = dict(golden_workflows())["pfas-session"]
    graph = workflow_to_graph(workflow)
    user = URIRef(f"{workflow_iri(workflow.id)}#user")
    assert set(graph.objects(user, RDF.type)) == {PROV.Person, PROV.Agent}
    associated = 0
    for path, step in workflow.walk():
        execution = URIRef(f"{workflow_iri(workflow.id)}#exec-{path}")
        association = graph.value(execution, PROV.qualifiedAssociation)
        agent = user if step.kind == "instruction" else step.agent and agent_iri(step.agent)
        if agent is None:
            assert association is None
            continue
        associated += 1
        assert graph.value(association, PROV.agent) == agent
        # The plan the agent followed is the workflow; the step is the execution's own link.
        assert graph.value(association, PROV.hadPlan) == workflow_iri(workflow.id)
        assert graph.value(execution, PPLAN.correspondsToStep) == URIRef(
            str(execution).replace("#exec-", "#step-")
        )
        # The shortcut beside the qualified association, naming the same agent.
        assert list(graph.objects(execution, PROV.wasAssociatedWith)) == [agent]
        assert (association, RDF.type, PROV.Association) in graph
    assert associated == sum(1 for _ in workflow.walk())


@settings(max_examples=25, deadline=None)
@given(workflows)
def test_the_graph_is_lean(workflow: Workflow) -> None:
    graph = workflow_to_graph(workflow)
    standard = (str(PROV), str(PPLAN))
    for node in set(graph.subjects()):
        types = {t for t in graph.objects(node, RDF.type) if not str(t).startswith(standard)}
        # Failed calls and revised instructions keep their base class, which readers select on.
        assert len(types - {WF.FailedCall, WF.RevisedInstruction}) <= 1, node
    # Every PROV-O and P-Plan class the ontology implies is written: a store answers standard
    # PROV and P-Plan queries as the (entailed) exports do.
    prov_types = {(s, o) for s, o in graph.subject_objects(RDF.type) if str(o).startswith(standard)}
    entailed = entail_types(workflow_to_graph(workflow))
    assert prov_types == {
        (s, o) for s, o in entailed.subject_objects(RDF.type) if str(o).startswith(standard)
    }
    assert not list(graph.triples((None, DCTERMS.hasPart, None)))
    assert not list(graph.triples((None, PPLAN.isPrecededBy, None)))
    # the tool name is written once per workflow, whatever the number of calls
    assert len(list(graph.triples((None, WF.toolName, None)))) == len(
        {s.name for _, s in workflow.walk() if s.kind == "call"}
        | {f.call.name for f in workflow.failed}
        | {s.name for f in workflow.failed for _, s in walk_steps(f.call.steps) if s.kind == "call"}
        | {s.name for r in workflow.revised for _, s in walk_steps(r.steps) if s.kind == "call"}
    )


def test_graphs_written_before_the_lean_mapping_still_read() -> None:
    # The earlier mapping also wrote dcterms:hasPart, prov:wasAssociatedWith, the tool on every
    # execution and FINISHED statuses; stores keep such graphs.
    workflow = dict(golden_workflows())["pfas-session"]
    graph = workflow_to_graph(workflow)
    # ... and no PROV-O classes but prov:Person and prov:SoftwareAgent.
    for node, class_ in list(graph.subject_objects(RDF.type)):
        if str(class_).startswith(str(PROV)) and class_ not in (PROV.Person, PROV.SoftwareAgent):
            graph.remove((node, RDF.type, class_))
    graph.remove((None, PROV.wasAssociatedWith, None))
    for execution, association in list(graph.subject_objects(PROV.qualifiedAssociation)):
        agent = graph.value(association, PROV.agent)
        graph.remove((execution, PROV.qualifiedAssociation, association))
        graph.remove((association, None, None))
        graph.add((execution, PROV.wasAssociatedWith, agent))
    for child, parent in list(graph.subject_objects(DCTERMS.isPartOf)):
        graph.add((parent, DCTERMS.hasPart, child))
        graph.remove((child, DCTERMS.isPartOf, parent))
    for execution, step in list(graph.subject_objects(PPLAN.correspondsToStep)):
        tool = graph.value(step, WF.tool)
        if tool is not None:
            graph.add((execution, WF.tool, tool))
        graph.add((execution, PL.status, Literal("FINISHED")))
    assert graph_to_workflow(graph) == workflow


def test_golden_failed_call_and_revision() -> None:
    cases = dict(golden_workflows())
    graph = workflow_to_graph(cases["failed-call"])
    (failed,) = graph.subjects(RDF.type, WF.FailedCall)
    assert graph.value(failed, PL.status) == Literal("ERRORED")
    assert graph.value(failed, WF.error) == Literal("ValueError: invalid SMILES 'PFOA'")
    assert graph.value(failed, PPLAN.correspondsToStep) is None
    assert str(graph.value(failed, DCTERMS.isPartOf)).endswith("#exec-0.0")
    # No plan step, but its agent followed the workflow's plan all the same.
    association = graph.value(failed, PROV.qualifiedAssociation)
    assert graph.value(association, PROV.agent) == agent_iri("chem_agent")
    assert graph.value(association, PROV.hadPlan) == workflow_iri(cases["failed-call"].id)

    graph = workflow_to_graph(cases["revision"])
    (revising, revised) = next(iter(graph.subject_objects(PROV.wasRevisionOf)))
    assert graph.value(revising, PROV.value) == Literal("Actually, use mushrooms instead")
    assert graph.value(revised, PROV.value) == Literal("Suggest a recipe with chicken")
    assert not list(graph.subjects(WF.instructionText, Literal("Suggest a recipe with chicken")))


# -- golden files ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "workflow"), golden_workflows(), ids=lambda v: str(v)[:20])
def test_golden_files(name: str, workflow: Workflow, request: pytest.FixtureRequest) -> None:
    path = GOLDEN / f"{name}.ttl"
    graph = workflow_to_graph(workflow)
    if request.config.getoption("--update-golden"):
        path.write_text(graph.serialize(format="turtle"), encoding="utf-8")
    expected = Graph().parse(path, format="turtle")
    if not isomorphic(graph, expected):
        _, missing, extra = graph_diff(expected, graph)
        pytest.fail(
            f"{path.name} differs (rerun with --update-golden if intended):\n"
            f"missing: {sorted(missing)[:5]}\nextra: {sorted(extra)[:5]}"
        )
    assert graph_to_workflow(expected) == workflow


# -- errors ------------------------------------------------------------------------------------


def _without(graph: Graph, predicate: URIRef, subject: URIRef | None = None) -> Graph:
    out = bind_prefixes(Graph())
    out += graph
    out.remove((subject, predicate, None))
    return out


def test_errors_name_the_node_and_property() -> None:
    workflow = dict(golden_workflows())["pfas-session"]
    graph = workflow_to_graph(workflow)
    wf = workflow_iri(workflow.id)
    with pytest.raises(MappingError, match="no workflow"):
        graph_to_workflow(Graph())
    with pytest.raises(MappingError, match=r"has no dcterms:identifier"):
        graph_to_workflow(_without(graph, DCTERMS.identifier))
    with pytest.raises(MappingError, match=r"has no wf:toolName"):
        graph_to_workflow(_without(graph, WF.toolName))
    with pytest.raises(MappingError, match=r"has no prov:wasGeneratedBy"):
        graph_to_workflow(_without(graph, PROV.wasGeneratedBy, wf))
    broken = _without(graph, PROV.value)
    with pytest.raises(MappingError, match=r"has no prov:value"):
        graph_to_workflow(broken)
    bad_json = _without(graph, PROV.value)
    for subject in set(graph.subjects(PROV.value, None)):
        bad_json.add((subject, PROV.value, Literal("{not json", datatype=RDF.JSON)))
    with pytest.raises(MappingError, match="is not JSON"):
        graph_to_workflow(bad_json)


def test_two_workflows_in_one_graph_are_refused() -> None:
    graph = Graph()
    for workflow in golden_workflows()[:2]:
        graph += workflow_to_graph(workflow[1])
    with pytest.raises(MappingError, match="2 workflows .*session/sess-4.*one named graph"):
        graph_to_workflow(graph)


def test_invalid_workflow_values_become_mapping_errors() -> None:
    workflow = dict(golden_workflows())["revision"]
    graph = workflow_to_graph(workflow)
    wf = workflow_iri(workflow.id)
    graph.set((wf, DCTERMS.created, Literal("yesterday")))
    graph.set((wf, WF.createdText, Literal("yesterday")))
    with pytest.raises(MappingError, match="invalid workflow.*not an ISO 8601"):
        graph_to_workflow(graph)


# -- helpers -----------------------------------------------------------------------------------


def _from_ox(term: object) -> URIRef | Literal:
    if isinstance(term, ox.NamedNode):
        return URIRef(term.value)
    assert isinstance(term, ox.Literal)
    datatype = term.datatype.value
    if datatype == "http://www.w3.org/2001/XMLSchema#string":
        return Literal(term.value)
    return Literal(term.value, datatype=URIRef(datatype))
