"""Outcomes as evidence: "failed here before", and no ranking on mostly failed evidence.

A suggestion cites stored workflows (:class:`~em_plugin.suggest.types.Evidence`). A cited
workflow is a *failure* for that suggestion when its run failed (``Workflow.outcome ==
"failure"``) or when the suggested tool failed in it: a failed call of that tool
(``Workflow.failed``) or the cited leaf's own outcome ``"failure"``. Such citations become the
suggestion's :attr:`~em_plugin.suggest.types.Suggestion.failures` ("failed here before"), which
the text and JSON of the suggestion show.

A suggestion whose evidence is *mostly* failures (more than half of its cited workflows) never
ranks above one whose evidence is not: :func:`weigh_outcomes` moves it after them, keeping the
order within each group. Scores are left as the suggesters gave them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from em_plugin.suggest.base import SuggestionRequest
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.model import CallStep, Workflow

__all__ = ["failed_evidence", "mostly_failures", "weigh_outcomes"]


def failed_evidence(
    suggestion: Suggestion, load: dict[str, Workflow | None]
) -> tuple[Evidence, ...]:
    """The citations of ``suggestion`` whose workflow failed, or where its tool failed.

    Args:
        suggestion: A suggestion with evidence.
        load: The cited workflows by id (``None`` for one that could not be read).

    Returns:
        The failing citations, in evidence order.
    """
    out = []
    for evidence in suggestion.evidence:
        workflow = load.get(evidence.workflow_id)
        if workflow is not None and _failed_there(workflow, suggestion.tool, evidence.position):
            out.append(evidence)
    return tuple(out)


def _failed_there(workflow: Workflow, tool: str | None, position: int) -> bool:
    if workflow.outcome == "failure":
        return True
    if tool is None:
        return False
    if any(f.call.name == tool for f in workflow.failed):
        return True
    leaves = workflow.leaves()
    leaf = leaves[position] if 0 <= position < len(leaves) else None
    return isinstance(leaf, CallStep) and leaf.name == tool and leaf.outcome == "failure"


def mostly_failures(suggestion: Suggestion) -> bool:
    """Whether more than half of the workflows a suggestion cites are failures for it."""
    cited = {e.workflow_id for e in suggestion.evidence}
    failed = {e.workflow_id for e in suggestion.failures}
    return bool(cited) and 2 * len(failed) > len(cited)


def weigh_outcomes(
    request: SuggestionRequest, suggestions: Sequence[Suggestion]
) -> list[Suggestion]:
    """Attach "failed here before" evidence and move mostly failed suggestions last.

    Args:
        request: The request (its ``load``/``prefetch`` read the cited workflows).
        suggestions: Ranked suggestions.

    Returns:
        The suggestions with :attr:`Suggestion.failures` set, those whose evidence is mostly
        failures after all the others (each group in its given order).
    """
    if request.load is None or not suggestions:
        return list(suggestions)
    ids = list(dict.fromkeys(e.workflow_id for s in suggestions for e in s.evidence))
    if request.prefetch is not None and ids:
        request.prefetch(ids)
    loaded = {i: request.load(i) for i in ids}
    weighed = [
        dataclasses.replace(s, failures=failed) if (failed := failed_evidence(s, loaded)) else s
        for s in suggestions
    ]
    return [s for s in weighed if not mostly_failures(s)] + [
        s for s in weighed if mostly_failures(s)
    ]
