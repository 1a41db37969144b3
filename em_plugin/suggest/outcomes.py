"""Outcomes as evidence: "failed here before", and no ranking on mostly failed steps.

A suggestion cites stored workflows (:class:`~em_plugin.suggest.types.Evidence`). A citation is
a *failure* for that suggestion when the suggested step failed there (a failed call of that tool
in the cited workflow, or the cited leaf's own outcome ``"failure"``) or when the cited
workflow's run failed (``Workflow.outcome == "failure"``). Such citations become the suggestion's
:attr:`~em_plugin.suggest.types.Suggestion.failures`, which the text ("failed here before in
2 of 3 similar workflows") and the JSON (``failed_before``) show.

Failures never count as support. A suggestion whose cited workflows are *mostly* ones where
**the step itself failed** never ranks above a suggestion whose citations are not mostly
failures: :func:`weigh_outcomes` moves it after the last of those, and, when *none* of its
citations succeeded (nothing but failures supports it), after every suggestion, the evidence-free
ones (``pattern``, ``procedural``, ``fallback``) included. One that still has a successful
citation keeps its place among the evidence-free suggestions below it: that citation passed
``T``, which they have none of. Every other suggestion keeps its order, and scores are left as
the suggesters gave them; with no failures in memory nothing moves.

A failed *run* is shown but does not move the step: the run may have failed at another step, and
the steps it took are still the best evidence of what comes next (``em-plugin eval
--fail-fraction`` measures both; docs/lifecycle.md gives the figures).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from em_plugin.suggest.base import SuggestionRequest
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.model import CallStep, Workflow

__all__ = ["failed_evidence", "mostly_failures", "weigh_outcomes"]


def failed_evidence(
    suggestion: Suggestion, load: dict[str, Workflow | None], *, steps_only: bool = False
) -> tuple[Evidence, ...]:
    """The citations of ``suggestion`` where its step failed, or whose run failed.

    Args:
        suggestion: A suggestion with evidence.
        load: The cited workflows by id (``None`` for one that could not be read).
        steps_only: Only the citations where the step itself failed.

    Returns:
        The failing citations, in evidence order.
    """
    out = []
    for evidence in suggestion.evidence:
        workflow = load.get(evidence.workflow_id)
        if workflow is None:
            continue
        if _step_failed(workflow, suggestion.tool, evidence.position) or (
            not steps_only and workflow.outcome == "failure"
        ):
            out.append(evidence)
    return tuple(out)


def _step_failed(workflow: Workflow, tool: str | None, position: int) -> bool:
    if tool is None:
        return False
    if any(f.call.name == tool for f in workflow.failed):
        return True
    leaves = workflow.leaves()
    leaf = leaves[position] if 0 <= position < len(leaves) else None
    return isinstance(leaf, CallStep) and leaf.name == tool and leaf.outcome == "failure"


def mostly_failures(suggestion: Suggestion, failures: Sequence[Evidence] | None = None) -> bool:
    """Whether more than half of the workflows a suggestion cites are failures for it.

    Args:
        suggestion: The suggestion.
        failures: The failing citations to count (default: :attr:`Suggestion.failures`).
    """
    cited = {e.workflow_id for e in suggestion.evidence}
    failed = {e.workflow_id for e in (suggestion.failures if failures is None else failures)}
    return bool(cited) and 2 * len(failed) > len(cited)


def weigh_outcomes(
    request: SuggestionRequest, suggestions: Sequence[Suggestion]
) -> list[Suggestion]:
    """Attach "failed here before" evidence; move suggestions whose step mostly failed down.

    Args:
        request: The request (its ``load`` reads the cited workflows; the chain has fetched
            them in one go already).
        suggestions: Ranked suggestions.

    Returns:
        The suggestions with :attr:`Suggestion.failures` set. One whose cited workflows are
        mostly ones where the step failed comes after every suggestion below it whose citations
        are not mostly failures; one with only such citations comes last (see the module doc).
        The others keep their order.
    """
    if request.load is None or not suggestions:
        return list(suggestions)
    ids = list(dict.fromkeys(e.workflow_id for s in suggestions for e in s.evidence))
    loaded = {i: request.load(i) for i in ids}
    weighed: list[Suggestion] = []
    backed: list[bool] = []  # cites workflows that are not mostly failures for it
    partly: list[bool] = []  # mostly failures, but at least one citation succeeded
    last: list[bool] = []  # only failures
    for suggestion in suggestions:
        failed = failed_evidence(suggestion, loaded)
        if failed:
            suggestion = dataclasses.replace(suggestion, failures=failed)
        step_failed = failed_evidence(suggestion, loaded, steps_only=True) if failed else ()
        demoted = mostly_failures(suggestion, step_failed)
        succeeded = {e.workflow_id for e in suggestion.evidence} - {
            e.workflow_id for e in step_failed
        }
        weighed.append(suggestion)
        backed.append(bool(suggestion.evidence) and not demoted)
        partly.append(demoted and bool(succeeded))
        last.append(demoted and not succeeded)
    keys: list[tuple[int, int, int, int]] = []
    for index in range(len(weighed)):
        anchor = index
        if partly[index]:
            # After the last backed suggestion ranked below it (none: it keeps its place).
            below = [j for j in range(index + 1, len(weighed)) if backed[j]]
            anchor = below[-1] if below else index
        keys.append((int(last[index]), anchor, int(anchor != index), index))
    return [weighed[k[-1]] for k in sorted(keys)]
