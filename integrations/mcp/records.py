"""What the tools read and answer: Workflow JSON in, JSON summaries of workflows out.

Every answer is a JSON object (the SDK sends it as structured content and as text), so an
assistant reads it as it is and a program parses it. Workflows are named by id and scope, with
the URIs of their resources (:mod:`integrations.mcp.resources`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from em_plugin.memory import EpisodicMemory
from em_plugin.session.recall import instruction_matches
from integrations.mcp.errors import MemoryToolError
from integrations.mcp.resources import workflow_uris
from provenance.errors import WorkflowFormatError
from provenance.model import CallStep, InstructionStep, Step, Workflow
from provenance.workflow_json import workflow_from_json

__all__ = ["parse_workflow", "recall", "step_label", "workflow_summary"]

_CURRENT_ID = "current"


def parse_workflow(value: Any, *, what: str = "workflow") -> tuple[Workflow, str | None]:
    """Read a tool's Workflow JSON argument (an object, or its text).

    A workflow so far may leave out ``id`` (it is then ``"current"``).

    Returns:
        The workflow, and the scope its JSON names (``None`` when it names none).

    Raises:
        MemoryToolError: Not JSON, or not a workflow (the message names the key and the spec).
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise MemoryToolError(f"{what} is not JSON: {exc.msg} at column {exc.colno}") from None
    if isinstance(value, Mapping) and "id" not in value:
        value = {"id": _CURRENT_ID, **value}
    named = value.get("scope") if isinstance(value, Mapping) else None
    try:
        return workflow_from_json(value), named if isinstance(named, str) else None
    except WorkflowFormatError as exc:
        raise MemoryToolError(
            f"{what} is not Workflow JSON ({exc}); give {{'steps': [{{'kind': 'instruction', "
            "'text': ...}, {'kind': 'call', 'name': ...}]}} as docs/workflow-json.md describes"
        ) from None


def step_label(step: Step) -> str:
    """A leaf step in a few words: the tool's name, or the instruction's text."""
    if isinstance(step, CallStep):
        return step.name
    text = " ".join(step.text.split())
    return text if len(text) <= 80 else text[:77] + "..."


def workflow_summary(workflow: Workflow) -> dict[str, Any]:
    """A stored workflow as a listing shows it: id, title, counts, outcome and resource URIs."""
    leaves = workflow.leaves()
    return {
        "id": workflow.id,
        "scope": workflow.scope,
        "title": workflow.title or "",
        "steps": len(leaves),
        "calls": sum(isinstance(s, CallStep) for s in leaves),
        "outcome": workflow.outcome,
        "created": workflow.created,
        "resources": workflow_uris(workflow.scope, workflow.id),
    }


def recall(
    memory: EpisodicMemory, *, query: str | None, workflow: Workflow | None, limit: int
) -> list[dict[str, Any]]:
    """Return the scope's workflows most similar to a task (in words) or a workflow so far.

    A workflow is retrieved by the paper's rule (its leaves aligned with stored leaves). A task
    in words is also compared with every stored instruction, at any depth, since instructions
    that have calls under them are not leaves and the rule alone would not see them.

    Raises:
        MemoryToolError: Neither or both of ``query`` and ``workflow`` are given.
    """
    if (query is None) == (workflow is None):
        raise MemoryToolError("give either query (the task in words) or workflow (Workflow JSON)")
    if query is not None and not query.strip():
        raise MemoryToolError("query must describe the task in words, not be empty")
    probe = workflow or Workflow(id=_CURRENT_ID, steps=(InstructionStep(text=str(query)),))
    probe = probe.replace(scope=memory.scope)
    scores = {m.workflow_id: m.score for m in memory.retrieve(probe)}
    if query is not None:
        for workflow_id, score, _ in instruction_matches(memory, query):
            scores[workflow_id] = max(score, scores.get(workflow_id, score))
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
    found = {w.id: w for w in memory.store.load_many(memory.scope, [i for i, _ in ranked])}
    out = []
    for workflow_id, score in ranked:
        stored = found.get(workflow_id)
        if stored is None:  # deleted since it was indexed
            continue
        out.append(
            {
                "workflow_id": workflow_id,
                "similarity": round(float(score), 4),
                "title": stored.title or "",
                "steps": [step_label(s) for s in stored.leaves()],
                "resources": workflow_uris(memory.scope, workflow_id),
            }
        )
    return out
