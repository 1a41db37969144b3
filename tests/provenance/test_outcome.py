"""Outcomes of workflows and calls: model, Workflow JSON and PROV (docs/provenance-mapping.md)."""

from __future__ import annotations

import json

import pytest
from rdflib import Literal

from provenance import WorkflowFormatError
from provenance.export import export, provjson_to_workflows
from provenance.mapping import graph_to_workflow, workflow_to_graph
from provenance.model import OUTCOMES, CallStep, FailedCall, InstructionStep, Workflow
from provenance.validation import validate_graph
from provenance.vocab import WF, workflow_iri
from provenance.workflow_json import dumps_workflow, loads_workflow, workflow_to_json

FAILED = FailedCall(call=CallStep(name="classify", agent="chem"), error="bad SMILES", parent="0")
WORKFLOW = Workflow(
    id="w-outcome",
    outcome="failure",
    steps=(
        InstructionStep(
            text="Classify PFOA",
            steps=(
                CallStep(name="lookup", agent="chem", outcome="success"),
                CallStep(name="classify", agent="chem", outcome="failure"),
            ),
        ),
    ),
    failed=(FAILED,),
)


def test_outcomes_are_the_three_fixed_values() -> None:
    assert OUTCOMES == ("success", "failure", "abandoned")


@pytest.mark.parametrize("bad", ["ok", "FAILURE", "", 1])
def test_a_bad_outcome_is_refused_listing_the_valid_ones(bad: object) -> None:
    with pytest.raises(WorkflowFormatError, match="success, failure, abandoned"):
        Workflow(id="w", outcome=bad)  # type: ignore[arg-type]
    with pytest.raises(WorkflowFormatError, match="call 'x' outcome must be one of"):
        CallStep(name="x", outcome=bad)  # type: ignore[arg-type]


def test_a_failed_call_reads_as_failure() -> None:
    assert FAILED.call.outcome == "failure"
    assert FailedCall(call=CallStep(name="x", outcome="failure"), error="e") == FailedCall(
        call=CallStep(name="x"), error="e"
    )
    with pytest.raises(WorkflowFormatError, match="outcome must be 'failure'"):
        FailedCall(call=CallStep(name="x", outcome="success"), error="e")


def test_workflow_json_carries_the_outcome_key() -> None:
    obj = workflow_to_json(WORKFLOW)
    assert obj["outcome"] == "failure"
    calls = obj["steps"][0]["steps"]
    assert [c["outcome"] for c in calls] == ["success", "failure"]
    # Implied on a failed call, so not written there.
    assert "outcome" not in obj["failed"][0]
    assert loads_workflow(dumps_workflow(WORKFLOW)) == WORKFLOW


def test_workflow_json_without_outcomes_is_read_and_written_unchanged() -> None:
    line = json.dumps(
        {
            "id": "old",
            "failed": [{"kind": "call", "name": "t", "args": {}, "error": "boom"}],
            "steps": [{"kind": "call", "name": "t", "args": {}}],
        }
    )
    workflow = loads_workflow(line)
    assert workflow.outcome is None
    assert workflow.steps[0].outcome is None  # type: ignore[union-attr]
    assert workflow.failed[0].call.outcome == "failure"
    assert json.loads(dumps_workflow(workflow)) == json.loads(line)


def test_a_bad_outcome_in_workflow_json_is_located() -> None:
    line = json.dumps({"id": "w", "steps": [{"kind": "call", "name": "t", "outcome": "meh"}]})
    with pytest.raises(WorkflowFormatError, match=r"steps\[0\].*success, failure, abandoned"):
        loads_workflow(line)
    with pytest.raises(WorkflowFormatError, match="workflow outcome must be one of"):
        loads_workflow(json.dumps({"id": "w", "outcome": "done", "steps": []}))


def test_prov_carries_outcomes_on_the_run_and_the_calls() -> None:
    graph = workflow_to_graph(WORKFLOW)
    frag = f"{workflow_iri(WORKFLOW.id)}#"
    outcomes = {str(s).removeprefix(frag): str(o) for s, o in graph.subject_objects(WF.outcome)}
    assert outcomes == {
        "run": "failure",
        "exec-0.0": "success",
        "exec-0.1": "failure",
        "exec-f0": "failure",
    }
    assert all(isinstance(o, Literal) for o in graph.objects(None, WF.outcome))
    assert graph_to_workflow(graph) == WORKFLOW
    assert validate_graph(graph) == []


def test_outcomes_survive_prov_json() -> None:
    assert provjson_to_workflows(export([WORKFLOW], "provjson")) == [WORKFLOW]


def test_a_graph_without_outcomes_reads_as_unknown() -> None:
    plain = Workflow(id="w", steps=(CallStep(name="t"),), failed=(FailedCall(CallStep("t"), "e"),))
    graph = workflow_to_graph(plain)
    graph.remove((None, WF.outcome, None))  # a failed call of an older graph has none
    back = graph_to_workflow(graph)
    assert back == plain
    assert back.outcome is None and back.failed[0].call.outcome == "failure"


def test_named_queries_list_outcomes_and_tool_failures() -> None:
    from provenance.stores import open_store

    other = Workflow(id="w-ok", outcome="success", steps=(CallStep(name="lookup"),))
    with open_store("memory:") as store:
        store.save_many([WORKFLOW, other, Workflow(id="w-unknown", steps=(CallStep("x"),))])
        rows = [tuple(map(str, r)) for r in store.query("outcomes")]  # type: ignore[union-attr]
        assert rows == [("w-outcome", "failure", "2", "None"), ("w-ok", "success", "0", "None")]
        only = list(store.query("outcomes", {"outcome": "success"}))  # type: ignore[arg-type]
        assert [str(r[0]) for r in only] == ["w-ok"]
        tools = {str(r[0]): tuple(int(v) for v in r[1:]) for r in store.query("tool-outcomes")}
        # classify: the failed main-tree call and the failed call, in the one failed run
        assert tools["classify"] == (2, 2, 1)
        assert tools["lookup"] == (2, 0, 1)
        assert tools["x"] == (1, 0, 0)
