"""list_workflows: one summary per stored workflow, in id order, at most a limit of them."""

from __future__ import annotations

from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from provenance.summary import WorkflowSummary, list_workflows


def test_summaries_count_leaves_and_calls_per_scope() -> None:
    with open_store("memory:") as store:
        nested = InstructionStep("plan", (CallStep("a"), InstructionStep("think")))
        store.save(Workflow(id="b", steps=(nested, CallStep("c")), title="Two", scope="team"))
        store.save(Workflow(id="a", steps=(CallStep("x"),), scope="team"))
        store.save(Workflow(id="z", steps=(CallStep("y"),)))
        summaries, total = list_workflows(store, scope="team")
        assert total == 2
        assert summaries == [
            WorkflowSummary(id="a", scope="team", steps=1, calls=1, title=""),
            WorkflowSummary(id="b", scope="team", steps=3, calls=2, title="Two"),
        ]
        limited, total = list_workflows(store, limit=1)
        assert total == 3 and len(limited) == 1
