"""Outcomes in suggestions: "failed here before" evidence, no ranking on mostly failures, and
``EpisodicMemory.set_outcome``."""

from __future__ import annotations

import pytest

from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.outcomes import failed_evidence, mostly_failures
from em_plugin.suggest.types import Evidence, Suggestion, format_suggestions
from provenance import WorkflowNotFound
from provenance.model import CallStep, FailedCall, InstructionStep, Workflow


def _workflow(
    workflow_id: str, then: str, outcome: str | None = None, step: str | None = None
) -> Workflow:
    calls = (CallStep("sds_extractor"), CallStep(then, outcome=step))
    return Workflow(
        id=workflow_id,
        steps=(InstructionStep("classify the ingredients of the SDS", calls),),
        outcome=outcome,
    )


CURRENT = Workflow(
    id="now",
    steps=(InstructionStep("classify the ingredients of this SDS", (CallStep("sds_extractor"),)),),
)


@pytest.fixture
def memory() -> EpisodicMemory:
    memory = EpisodicMemory(store="memory:", embedder="fake")
    memory.save_many(
        [
            _workflow("w1", "pfas_classifier"),
            _workflow("w2", "pfas_classifier"),
            _workflow("w3", "report_writer"),
        ]
    )
    yield memory
    memory.close()


def test_set_outcome_is_stored_and_checked(memory: EpisodicMemory) -> None:
    assert memory.load("w1").outcome is None
    assert memory.set_outcome("w1", "failure").outcome == "failure"
    assert memory.load("w1").outcome == "failure"
    with pytest.raises(ConfigurationError, match="success, failure, abandoned"):
        memory.set_outcome("w1", "broken")
    with pytest.raises(WorkflowNotFound):
        memory.set_outcome("nope", "success")


def test_failed_runs_are_said_and_failed_steps_rank_after_the_others(
    memory: EpisodicMemory,
) -> None:
    before = [s.tool for s in memory.suggest(CURRENT)]
    assert before[:2] == ["pfas_classifier", "report_writer"]
    # The runs failed: said, but the steps they took still rank (the run may have failed
    # elsewhere).
    memory.set_outcome("w1", "failure")
    memory.set_outcome("w2", "failure")
    ranked = memory.suggest(CURRENT)
    assert [s.tool for s in ranked][:2] == ["pfas_classifier", "report_writer"]
    assert {e.workflow_id for e in ranked[0].failures} == {"w1", "w2"}
    assert "(failed here before in 2 of 2 similar workflows)" in format_suggestions(ranked)
    # The step itself failed in both: it ranks after the step that did not.
    memory.save_many(
        [_workflow(w, "pfas_classifier", "failure", step="failure") for w in ("w1", "w2")]
    )
    after = memory.suggest(CURRENT)
    assert [s.tool for s in after][:2] == ["report_writer", "pfas_classifier"]
    failed = after[1]
    assert {e.workflow_id for e in failed.failures} == {"w1", "w2"}
    assert mostly_failures(failed) and not after[0].failures
    assert failed.to_json()["failed_before"][0]["workflow_id"] in {"w1", "w2"}


def test_one_failure_among_several_says_so_but_keeps_the_rank(memory: EpisodicMemory) -> None:
    memory.save(_workflow("w4", "pfas_classifier"))
    memory.save(_workflow("w1", "pfas_classifier", step="failure"))
    ranked = memory.suggest(CURRENT)
    assert ranked[0].tool == "pfas_classifier"
    assert [e.workflow_id for e in ranked[0].failures] == ["w1"]
    assert not mostly_failures(ranked[0])


def test_a_failed_call_of_the_tool_is_a_failure_there() -> None:
    tried = Workflow(
        id="t",
        steps=(CallStep("sds_extractor"), CallStep("report_writer")),
        failed=(FailedCall(CallStep("pfas_classifier"), "timeout", parent=None),),
    )
    suggestion = Suggestion("Classify", "pfas_classifier", evidence=(Evidence("t", 1),))
    assert failed_evidence(suggestion, {"t": tried}) == (Evidence("t", 1),)
    other = Suggestion("Report", "report_writer", evidence=(Evidence("t", 1),))
    assert failed_evidence(other, {"t": tried}) == ()
