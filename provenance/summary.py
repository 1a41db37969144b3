"""One line per stored workflow: id, scope, leaf steps, calls and title (``em-plugin list``).

Example:
    >>> from provenance.model import CallStep, InstructionStep, Workflow
    >>> from provenance.stores import open_store
    >>> with open_store("memory:") as store:
    ...     step = InstructionStep("read it", (CallStep("reader"), CallStep("writer")))
    ...     store.save(Workflow(id="w1", steps=(step,), title="Report"))
    ...     list_workflows(store)
    ([WorkflowSummary(id='w1', scope='default', steps=2, calls=2, title='Report')], 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from provenance.model import CallStep, Workflow

if TYPE_CHECKING:
    from provenance.stores import WorkflowStore

__all__ = ["WorkflowSummary", "list_workflows"]


@dataclass(frozen=True)
class WorkflowSummary:
    """What a listing shows of one workflow."""

    id: str
    """The workflow id (ids are per scope)."""
    scope: str
    """Its scope."""
    steps: int
    """How many leaf steps it has (calls, and instructions without calls)."""
    calls: int
    """How many of them are calls."""
    title: str
    """Its title (empty when it has none)."""

    @classmethod
    def of(cls, workflow: Workflow) -> WorkflowSummary:
        """Summarize one workflow.

        Args:
            workflow: The workflow.

        Returns:
            Its summary.
        """
        leaves = list(workflow.leaves())
        return cls(
            id=workflow.id,
            scope=workflow.scope,
            steps=len(leaves),
            calls=sum(isinstance(s, CallStep) for s in leaves),
            title=workflow.title or "",
        )


def list_workflows(
    store: WorkflowStore, *, scope: str | None = None, limit: int = 0
) -> tuple[list[WorkflowSummary], int]:
    """Summarize the stored workflows in id order, reading no more than ``limit`` of them.

    Args:
        store: The store.
        scope: Only this scope's workflows (default: every scope's).
        limit: At most this many (0: all).

    Returns:
        The summaries, and how many workflows there are in all.
    """
    total = len(store.ids(scope))
    summaries: list[WorkflowSummary] = []
    for workflow in store.iter_workflows(scope):
        if limit and len(summaries) >= limit:
            break
        summaries.append(WorkflowSummary.of(workflow))
    return summaries, total
