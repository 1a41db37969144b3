"""SHACL shapes: every mapped workflow conforms, broken graphs are reported readably."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from rdflib import Graph, Literal, URIRef

from provenance import Workflow
from provenance.mapping import workflow_iri, workflow_to_graph
from provenance.suggestion_record import suggestion_triples
from provenance.validation import validate_graph
from provenance.vocab import DCTERMS, PL, PPLAN, PROV, RDF, WF, bind_prefixes
from provenance.workflow_json import loads_workflow
from tests.strategies import workflows

GOLDEN = Path(__file__).parent / "golden"
PFAS = loads_workflow(json.dumps(json.loads((GOLDEN / "pfas-session.json").read_text())))
FAILED = loads_workflow(json.dumps(json.loads((GOLDEN / "failed-call.json").read_text())))


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.json")), ids=lambda p: p.stem)
def test_golden_workflows_conform(path: Path) -> None:
    workflow = loads_workflow(json.dumps(json.loads(path.read_text(encoding="utf-8"))))
    assert validate_graph(workflow_to_graph(workflow)) == []


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows)
def test_mapped_workflows_conform(workflow: Workflow) -> None:
    assert validate_graph(workflow_to_graph(workflow)) == []


def test_suggestion_graph_conforms() -> None:
    graph = suggestion_triples(
        "sess-1",
        [{"text": "Classify", "tool": "pfas_classifier", "score": 0.8, "evidence": []}],
        ["session/sess-42"],
        "2025-06-02T10:06:00Z",
    )
    assert validate_graph(graph) == []


def _step(graph: Graph, path: str) -> URIRef:
    return URIRef(f"{workflow_iri(PFAS.id)}#step-{path}")


def _exec(graph: Graph, path: str) -> URIRef:
    return URIRef(f"{workflow_iri(PFAS.id)}#exec-{path}")


def _drop_index(g: Graph) -> None:
    g.remove((_exec(g, "1"), WF.index, None))


def _duplicate_index(g: Graph) -> None:
    g.set((_exec(g, "1"), WF.index, Literal(1)))


def _bad_status(g: Graph) -> None:
    g.set((_exec(g, "0.0"), PL.status, Literal("DONE")))


def _errored_without_error(g: Graph) -> None:
    g.set((_exec(g, "0.0"), PL.status, Literal("ERRORED")))


def _call_without_tool(g: Graph) -> None:
    g.remove((_step(g, "1.0"), WF.tool, None))


def _empty_instruction(g: Graph) -> None:
    g.set((_step(g, "1"), WF.instructionText, Literal("")))


def _no_identifier(g: Graph) -> None:
    g.remove((workflow_iri(PFAS.id), DCTERMS.identifier, None))


def _orphan_execution(g: Graph) -> None:
    g.remove((_exec(g, "1.0"), PPLAN.correspondsToStep, None))


def _not_a_date(g: Graph) -> None:
    g.set((workflow_iri(PFAS.id), DCTERMS.created, Literal("soon")))


def _next_call_from_handoff(g: Graph) -> None:
    g.add((_step(g, "0.0"), WF.nextCall, _step(g, "1.0")))


def _wrong_depth(g: Graph) -> None:
    g.set((_step(g, "1.0"), WF.depth, Literal(0)))


def _indexed_argument(g: Graph) -> None:
    (argument, _) = next(iter(g.subject_objects(WF.argName)))
    g.add((argument, WF.index, Literal(1)))


def _instruction_without_user(g: Graph) -> None:
    association = g.value(_exec(g, "1"), PROV.qualifiedAssociation)
    g.remove((association, PROV.agent, None))
    g.add((association, PROV.agent, _exec(g, "0")))


def _unqualified_association(g: Graph) -> None:
    g.add((_exec(g, "1.0"), PROV.wasAssociatedWith, URIRef(f"{workflow_iri(PFAS.id)}#user")))


def _untyped_activity(g: Graph) -> None:
    g.remove((_exec(g, "1.0"), RDF.type, PROV.Activity))


def _two_plans(g: Graph) -> None:
    association = g.value(_exec(g, "1.0"), PROV.qualifiedAssociation)
    g.add((association, PROV.hadPlan, _step(g, "1")))


BREAKAGES: list[tuple[Callable[[Graph], None], str]] = [
    (_drop_index, "workflow:session%2Fsess-42#exec-1 [wf:index]: Less than 1 values"),
    (_duplicate_index, "share wf:index 1"),
    (_bad_status, '#exec-0.0 [pl:status]: Value Literal("DONE") not in list'),
    (_errored_without_error, "an ERRORED execution needs a wf:error message"),
    (_call_without_tool, "#step-1.0 [wf:tool]: Less than 1 values"),
    (_wrong_depth, "plan step depth is not its execution's nesting depth: "),
    (_indexed_argument, "arguments are ordered by their IRI (-arg-<n>), not wf:index"),
    (_instruction_without_user, "an instruction is associated with the user, a prov:Person"),
    (_unqualified_association, "must name the agent of the qualified association"),
    (_untyped_activity, "does not contain a value in the set: ['prov:Activity']"),
    (_two_plans, "#exec-1.0 [prov:qualifiedAssociation]"),
    (_empty_instruction, "#step-1 [wf:instructionText]: String length not >= "),
    (_no_identifier, "[dcterms:identifier]: Less than 1 values"),
    (_orphan_execution, "has no plan step: https://w3id.org/em-plugin/id/workflow/session%2Fsess"),
    (_not_a_date, "[dcterms:created]: Value is not Literal with datatype xsd:dateTime"),
    (_next_call_from_handoff, "wf:nextCall must link call leaves"),
]


@pytest.mark.parametrize(
    ("breakage", "expected"), BREAKAGES, ids=lambda v: getattr(v, "__name__", "")
)
def test_broken_graphs_are_reported(breakage: Callable[[Graph], None], expected: str) -> None:
    graph = bind_prefixes(Graph())
    graph += workflow_to_graph(PFAS)
    breakage(graph)
    violations = validate_graph(graph)
    assert any(expected in line for line in violations), violations


def test_failed_call_kept_in_plan_is_reported() -> None:
    graph = workflow_to_graph(FAILED)
    (failed,) = graph.subjects(RDF.type, WF.FailedCall)
    graph.add((failed, PPLAN.correspondsToStep, URIRef(f"{workflow_iri(FAILED.id)}#step-0.0.0")))
    violations = validate_graph(graph)
    assert any("#exec-f0 [p-plan:correspondsToStep]: More than 0 values" in v for v in violations)


def test_validate_workflows_keeps_the_conforming_and_counts_progress() -> None:
    from provenance.validation import validate_workflows

    seen: list[tuple[str, int, int]] = []
    kept, errors = validate_workflows(
        [(1, PFAS), (4, FAILED)], file="f.jsonl", progress=lambda *a: seen.append(a)
    )
    assert [(n, w.id) for n, w in kept] == [(1, PFAS.id), (4, FAILED.id)] and errors == []
    assert seen == [("shapes", 1, 2), ("shapes", 2, 2)]


def test_validate_workflows_locates_a_violation_in_its_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import provenance.validation as validation
    from provenance.errors import WorkflowFormatError

    # A Workflow always maps to a conforming graph; a shapes file that grew stricter does not.
    found = [f"problem {i}" for i in range(5)]
    monkeypatch.setattr(
        validation, "validate_graph", lambda g: found if (None, None, None) in g else []
    )
    with pytest.raises(WorkflowFormatError, match=r"^f.jsonl:7: violates the SHACL shapes: "):
        validation.validate_workflows([(7, PFAS)], file="f.jsonl")
    kept, errors = validation.validate_workflows([(7, PFAS)], file="f.jsonl", skip_invalid=True)
    assert kept == [] and [e.line for e in errors] == [7]
    assert str(errors[0]).endswith("problem 0; problem 1; problem 2 (+2 more)")


def test_validate_store_checks_the_graphs_as_stored() -> None:
    from provenance.mapping import graph_iri
    from provenance.stores import open_store
    from provenance.validation import validate_store

    with open_store("memory:") as store:
        store.save(PFAS.replace(scope="team"))
        store.save(FAILED)
        assert validate_store(store) == (2, [])
        name = graph_iri(PFAS.id, "team")
        graph = store.backend.triples(name)
        step = next(s for s, p, _ in graph if p == WF.index)
        store.backend.replace_graphs([(name, [*graph, (step, WF.index, Literal(99))])])
        checked, problems = validate_store(store, scope="team")
    assert checked == 1 and problems and all(w == PFAS.id for w, _ in problems)
