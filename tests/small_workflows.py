"""Small workflows for memory tests: a saved one with its tools, and the current one."""

from __future__ import annotations

from provenance.model import CallStep, InstructionStep, Workflow


def flow(workflow_id: str, *tools: str) -> Workflow:
    """Return a saved workflow of one instruction whose calls are ``tools``, in order."""
    steps = (InstructionStep(f"work on {workflow_id}", tuple(CallStep(t) for t in tools)),)
    return Workflow(id=workflow_id, steps=steps)


def current(tool: str) -> Workflow:
    """Return the current workflow ``now``: one instruction that has called ``tool``."""
    return Workflow(id="now", steps=(InstructionStep("work on it", (CallStep(tool),)),))
