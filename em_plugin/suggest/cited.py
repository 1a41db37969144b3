"""The memory workflow a suggestion cites, read once: the cited leaf, its ancestors, earlier calls.

Suggestions cite memory workflows by id and leaf position (:class:`~em_plugin.suggest.types.
Evidence`). Lifting a suggestion to the user's level (:mod:`em_plugin.suggest.user_level`) needs
the steps above the cited leaf, and binding its arguments (:mod:`em_plugin.suggest.arguments`)
needs the calls before it with their outputs. :class:`CitedWorkflows` reads each cited workflow
through :attr:`SuggestionRequest.load`, the memory's one read-through cache of parsed workflows
(:mod:`em_plugin.state.workflow_cache`), which drops a workflow whenever it is saved again; here
only each workflow's leaf list is kept, for as long as that cache returns the same object.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from em_plugin.suggest.base import SuggestionRequest
from em_plugin.suggest.types import Evidence
from provenance.model import CallStep, Step, Workflow

__all__ = ["CitedLeaf", "CitedWorkflows"]

#: Workflows kept per chain; enough for every workflow a ranking cites on the benchmark files.
DEFAULT_SIZE = 4096


@dataclass(frozen=True)
class CitedLeaf:
    """A leaf of a memory workflow, with what surrounds it."""

    workflow: Workflow
    """The memory workflow."""
    position: int
    """The leaf's position in the workflow's leaf sequence."""
    step: Step
    """The leaf itself."""
    ancestors: tuple[Step, ...]
    """The steps above it, outermost first."""
    earlier: tuple[CallStep, ...]
    """Leaf calls (at any depth) before it, most recent first."""


_Leaves = list[tuple[Step, tuple[Step, ...]]]


def _leaves(workflow: Workflow) -> _Leaves:
    return [(s, workflow.ancestors(path)) for path, s in workflow.walk() if not s.steps]


class CitedWorkflows:
    """Cited memory workflows, read through the memory's cache, with their leaves.

    Args:
        size: How many leaf lists to keep (least recently used ones go first).
    """

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        # Keyed by the identity of the workflow object the memory's cache returned (kept in the
        # value, so the identity is never reused while the entry lives).
        self._cache: OrderedDict[int, tuple[Workflow, _Leaves]] = OrderedDict()
        self._lock = threading.Lock()

    def leaf(self, request: SuggestionRequest, evidence: Evidence) -> CitedLeaf | None:
        """Return the cited leaf, or ``None`` when the workflow or the position is unknown."""
        workflow, leaves = self._get(request, evidence.workflow_id)
        if workflow is None or not 0 <= evidence.position < len(leaves):
            return None
        step, ancestors = leaves[evidence.position]
        earlier = [s for s, _ in leaves[: evidence.position] if isinstance(s, CallStep)]
        return CitedLeaf(workflow, evidence.position, step, ancestors, tuple(reversed(earlier)))

    def _get(self, request: SuggestionRequest, workflow_id: str) -> tuple[Workflow | None, _Leaves]:
        if request.load is None:
            return None, []
        workflow = request.load(workflow_id)
        if workflow is None:
            return None, []
        key = id(workflow)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached[0] is workflow:
                self._cache.move_to_end(key)
                return workflow, cached[1]
        leaves = _leaves(workflow)
        with self._lock:
            self._cache[key] = (workflow, leaves)
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return workflow, leaves
