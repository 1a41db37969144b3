"""The per-scope models suggesters declare: what the state layer builds and keeps up to date.

A suggester that needs an index of its own over a scope's stored workflows (the continuation
model, the H-EPM graph, or a new one) declares it as a :class:`ScopeModelSpec`: a name and a
``build`` function. The scope's :class:`~em_plugin.state.scope_memory.ScopeMemory` builds every
declared model over the scope's arrays on first use (:class:`ModelScope`), and then tells each
of every save (:meth:`ScopeModel.added`) and delete (:meth:`ScopeModel.removed`); a suggester
reads its model back with ``request.view.model(name)``. The state layer knows the protocol
only, never a suggester (docs/extending.md, "A suggester with a model of its own").

Nothing of a model is persisted: a scope read back from its snapshot builds its models again,
from the arrays alone, on first use (docs/state.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from em_plugin.state.episodes import ContextTable, Episode
from em_plugin.state.scope_index import ScopeIndex

__all__ = ["ModelScope", "Query", "ScopeModel", "ScopeModelSpec"]


class ScopeModel(Protocol):
    """A model over one scope's stored workflows, told of every change to them."""

    def added(self, first_slot: int, count: int) -> None:
        """Index the scope's slots ``[first_slot, first_slot + count)``, just stored."""
        ...

    def removed(self, slot: int) -> None:
        """Forget the workflow of a slot the scope just marked dead."""
        ...


@runtime_checkable
class ScopeModelSpec(Protocol):
    """A suggester's declaration of the per-scope model it reads."""

    name: str
    """The model's name, unique in a memory (``view.model(name)`` returns it)."""

    def build(self, scope: ModelScope) -> ScopeModel:
        """Build the model over a scope's live workflows (called once per scope state)."""
        ...


@dataclass(frozen=True)
class ModelScope:
    """What a model is built over: one scope's arrays and its instruction contexts.

    The arrays (:class:`~em_plugin.state.scope_index.ScopeIndex`) hold every stored workflow
    of the scope in a *slot*; a removed or replaced workflow leaves a dead slot. Slots are never
    reused, so a model may key what it keeps by slot.
    """

    arrays: ScopeIndex
    """The scope's arrays (slots, tools, per-leaf codes, contexts and args)."""
    contexts: ContextTable
    """The scope's instruction contexts with their vectors, shared by its models."""
    textless: bool = False
    """The ``use_text=False`` ablation: every instruction is the same text (context 0)."""

    def live_slots(self) -> list[int]:
        """Return the slots of the workflows stored now, in save order."""
        return np.flatnonzero(self.arrays.alive.view()).tolist()

    def workflow_id(self, slot: int) -> str | None:
        """Return the id of a slot's workflow (``None``: the slot is dead)."""
        return self.arrays.slot_ids[slot]

    def episode(self, slot: int) -> Episode:
        """Return a slot's workflow as leaves: tools, instruction contexts, args (dead too)."""
        return self.arrays.episode(slot)


@dataclass(frozen=True)
class Query:
    """The current state: its leaves and its instruction context."""

    tools: tuple[str | None, ...]
    """Tool per current leaf, ``None`` for instruction leaves."""
    context: np.ndarray | None = None
    """Unit vector of the current instruction context, ``None`` when there is none."""
    exclude: frozenset[str] = frozenset()
    """Stored workflow ids that must not vote (e.g. an earlier save of the same session)."""
