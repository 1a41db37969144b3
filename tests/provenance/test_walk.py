"""The one walk of a step tree: ``walk_steps`` and ``Workflow.walk``/``ancestors``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from provenance.model import CallStep, InstructionStep, Step, Workflow, walk_steps
from tests.strategies import workflows


def _recursive(steps: tuple[Step, ...], prefix: str = "") -> list[tuple[str, Step]]:
    """The walk written the plain recursive way, as the oracle."""
    out: list[tuple[str, Step]] = []
    for i, step in enumerate(steps):
        out.append((f"{prefix}{i}", step))
        out.extend(_recursive(step.steps, f"{prefix}{i}."))
    return out


@settings(max_examples=60, deadline=None)
@given(workflows)
def test_walk_is_depth_first_and_every_path_leads_to_its_step(workflow: Workflow) -> None:
    walked = list(workflow.walk())
    assert walked == _recursive(workflow.steps)
    for path, step in walked:
        assert workflow.step_at(path) is step
        above = workflow.ancestors(path)
        assert len(above) == path.count(".")
        if above:  # the innermost ancestor holds the step
            assert any(s is step for s in above[-1].steps)


def test_prefix_and_subtrees() -> None:
    call = CallStep("handoff", steps=(CallStep("a"), CallStep("b", steps=(CallStep("c"),))))
    assert [(p, s.kind) for p, s in walk_steps(call.steps, prefix="f0.")] == [
        ("f0.0", "call"),
        ("f0.1", "call"),
        ("f0.1.0", "call"),
    ]
    workflow = Workflow(id="w", steps=(InstructionStep("go", (call,)),))
    assert [s.kind for s in workflow.ancestors("0.0.1.0")] == ["instruction", "call", "call"]
    with pytest.raises(KeyError):
        workflow.ancestors("0.5")
