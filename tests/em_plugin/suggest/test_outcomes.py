"""Outcomes in suggestions: "failed here before" evidence, no ranking on mostly failures, and
``Lifecycle.set_outcome`` (``memory.lifecycle``)."""

from __future__ import annotations

import pytest

from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from em_plugin.suggest.base import SuggestionRequest
from em_plugin.suggest.outcomes import failed_evidence, mostly_failures, weigh_outcomes
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
    assert memory.lifecycle.set_outcome("w1", "failure").outcome == "failure"
    assert memory.load("w1").outcome == "failure"
    with pytest.raises(ConfigurationError, match="success, failure, abandoned"):
        memory.lifecycle.set_outcome("w1", "broken")
    with pytest.raises(WorkflowNotFound):
        memory.lifecycle.set_outcome("nope", "success")


def test_failed_runs_are_said_and_failed_steps_rank_after_the_others(
    memory: EpisodicMemory,
) -> None:
    before = [s.tool for s in memory.suggest(CURRENT)]
    assert before[:2] == ["pfas_classifier", "report_writer"]
    # The runs failed: said, but the steps they took still rank (the run may have failed
    # elsewhere).
    memory.lifecycle.set_outcome("w1", "failure")
    memory.lifecycle.set_outcome("w2", "failure")
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


def _run(workflow_id: str, tool: str, *, failed: bool) -> Workflow:
    """A stored run whose second leaf is ``tool``, failed there when ``failed``."""
    return Workflow(
        id=workflow_id,
        steps=(CallStep("sds_extractor"), CallStep(tool, outcome="failure" if failed else None)),
        outcome="failure" if failed else None,
    )


def _cited(tool: str, *ids: str, source: str = "episodic") -> Suggestion:
    return Suggestion(tool, tool, source=source, evidence=tuple(Evidence(i, 1) for i in ids))  # type: ignore[arg-type]


def test_mostly_failed_steps_move_below_backed_ones_and_only_failed_ones_last() -> None:
    stored = {
        "a1": _run("a1", "a", failed=True),
        "a2": _run("a2", "a", failed=True),
        "a3": _run("a3", "a", failed=False),
        "b1": _run("b1", "b", failed=False),
        "c1": _run("c1", "c", failed=True),
        "d1": _run("d1", "d", failed=False),
    }
    request = SuggestionRequest(CURRENT, load=stored.get)
    ranked = [
        _cited("c", "c1"),  # only failures: after everything
        _cited("a", "a1", "a2", "a3"),  # mostly failures, one success: after b, before p
        _cited("b", "b1"),
        _cited("p", source="pattern"),  # no evidence
        _cited("d", "d1"),  # backed, below a: a goes after it too
        _cited("f", source="fallback"),
    ]
    out = weigh_outcomes(request, ranked)
    assert [s.tool for s in out] == ["b", "p", "d", "a", "f", "c"]
    assert [e.workflow_id for e in out[3].failures] == ["a1", "a2"]
    # Nothing below a mostly failed step is backed: it keeps its place among the evidence-free.
    out = weigh_outcomes(request, [ranked[1], ranked[3], ranked[5]])
    assert [s.tool for s in out] == ["a", "p", "f"]
    # With no failure at all nothing moves (F = 0 figures cannot change).
    clean = [_cited("b", "b1"), _cited("p", source="pattern"), _cited("d", "d1")]
    assert weigh_outcomes(request, clean) == clean
