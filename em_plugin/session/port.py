"""The memory port: what the session layer and the integrations need from an episodic memory.

:class:`~em_plugin.memory.EpisodicMemory` satisfies it; so does any stand-in with the same
methods (tests use small dict-backed ones). Integrations are typed against :class:`MemoryPort`
and call these methods directly, never probing for optional ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from em_plugin.retrieval.reference import Match
    from em_plugin.suggest.types import Suggestion
    from provenance.model import Workflow

__all__ = ["EmbedderPort", "MemoryPort", "WorkflowSource"]


class EmbedderPort(Protocol):
    """Turns texts into unit-norm vectors (one row per text)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; rows are L2-normalised."""
        ...


class WorkflowSource(Protocol):
    """Reads the stored workflows of one scope (the recall tool's second route)."""

    def iter_workflows(self, scope: str | None = None) -> Iterable[Workflow]:
        """Yield the workflows of ``scope``."""
        ...


@runtime_checkable
class MemoryPort(Protocol):
    """The episodic memory as the session layer uses it (one scope per view)."""

    @property
    def scope(self) -> str:
        """The scope this view reads and writes."""
        ...

    @property
    def threshold(self) -> float:
        """The retrieval similarity threshold."""
        ...

    @property
    def store(self) -> WorkflowSource:
        """The workflow store."""
        ...

    @property
    def embedder(self) -> EmbedderPort:
        """The text embedder."""
        ...

    def with_scope(self, scope: str) -> MemoryPort:
        """Return a view of the same memory that reads and writes ``scope``."""
        ...

    def load(self, workflow_id: str) -> Workflow:
        """Load a saved workflow of this scope."""
        ...

    def save(self, workflow: Workflow) -> Workflow:
        """Save (or replace) a workflow; return what was stored."""
        ...

    def retrieve(self, workflow: Workflow) -> list[Match]:
        """Return the memory workflows that match ``workflow``, best first."""
        ...

    def suggest(self, workflow: Workflow, limit: int | None = 3) -> list[Suggestion]:
        """Suggest next steps for ``workflow``."""
        ...

    def record_suggestions(self, session_id: str, suggestions: Sequence[Suggestion]) -> object:
        """Record that ``suggestions`` were shown in ``session_id``."""
        ...

    async def asave(self, workflow: Workflow) -> Workflow:
        """Async :meth:`save`."""
        ...

    async def aretrieve(self, workflow: Workflow) -> list[Match]:
        """Async :meth:`retrieve`."""
        ...

    async def asuggest(self, workflow: Workflow, limit: int | None = 3) -> list[Suggestion]:
        """Async :meth:`suggest`."""
        ...

    async def arecord_suggestions(
        self, session_id: str, suggestions: Sequence[Suggestion]
    ) -> object:
        """Async :meth:`record_suggestions`."""
        ...
