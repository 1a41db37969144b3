"""What every suggester receives, and the protocol it implements."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from em_plugin.retrieval.reference import Match
from em_plugin.state.continuation import Query
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.suggest.crew import CrewDescription
from em_plugin.suggest.types import Suggestion
from provenance.model import CallStep, Workflow

__all__ = ["Suggester", "SuggestionRequest", "call_text", "first", "short"]

#: Longest suggestion text taken from an instruction.
MAX_TEXT = 240


@dataclass(frozen=True)
class SuggestionRequest:
    """The current workflow and what memory knows about it."""

    workflow: Workflow
    """The current workflow."""
    matches: tuple[Match, ...] = ()
    """Retrieved memory workflows (the paper's rule), best first."""
    memory: ScopeMemory | None = None
    """The scope's continuation index and procedural graph."""
    query: Query | None = None
    """The current state for the continuation index (leaves, instruction vector)."""
    crew: CrewDescription | None = None
    """The crew, for fallback suggestions and prompts."""
    load: Callable[[str], Workflow | None] | None = None
    """Loads a stored workflow of the scope by id (for prompts); ``None`` when unavailable."""
    prefetch: Callable[[Sequence[str]], None] | None = None
    """Loads several stored workflows at once, so that later ``load`` calls find them (one
    request to a remote store instead of one each); ``None``: ``load`` alone."""
    threshold: float = 0.65
    """The paper's ``T``: a stored workflow is cited as evidence only when its match with the
    current one exceeds it (the memory's retrieval threshold)."""

    @property
    def called(self) -> list[str]:
        """Tools the current workflow called, in order."""
        return [s.name for s in self.workflow.leaves() if isinstance(s, CallStep)]

    @property
    def last_call(self) -> str | None:
        """The current workflow's last call, or ``None``."""
        called = self.called
        return called[-1] if called else None


@runtime_checkable
class Suggester(Protocol):
    """Produces ranked suggestions for a request."""

    name: str
    """Short name, for logs."""

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Return at most ``limit`` suggestions (all for ``None``), best first."""
        ...


def short(text: str, limit: int = MAX_TEXT) -> str:
    """Collapse whitespace and cut ``text`` to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def call_text(tool: str, crew: CrewDescription | None, instruction: str | None = None) -> str:
    """Readable text of a suggested call: the instruction it served, else the tool's purpose."""
    if instruction:
        return short(instruction)
    described = crew.tool(tool) if crew is not None else None
    if described is not None and described.description.strip():
        return short(f"Call {tool}: {described.description}")
    return f"Call {tool}"


def first(suggestions: Sequence[Suggestion], limit: int | None) -> list[Suggestion]:
    """Return the first ``limit`` suggestions (all for ``None``)."""
    return list(suggestions) if limit is None else list(suggestions)[:limit]


DEFAULT_FAMILIAR = 0.35
"""Cosine from which a tool-less instruction counts as like a stored one."""


def unfamiliar(request: SuggestionRequest, familiar: float = DEFAULT_FAMILIAR) -> bool:
    """Whether nothing in memory resembles a request that has made no call yet (paper, Fig. 4).

    True when nothing was retrieved, the current workflow has no call, and its instruction's
    best cosine with the scope's stored instructions is below ``familiar``.
    """
    query, memory = request.query, request.memory
    if request.matches or request.called or query is None or memory is None:
        return False
    if query.context is None:
        return True
    sims = memory.continuation.contexts.similarities(query.context)
    live = sims[~np.isnan(sims)]
    return live.size == 0 or float(live.max()) < familiar
