"""What a suggester is, what it receives, and the read-only view of a scope it may read.

A suggester (:class:`Suggester`) turns a :class:`SuggestionRequest` into ranked
:class:`~em_plugin.suggest.types.Suggestion` objects. The request carries the current workflow,
the retrieved matches and a :class:`ScopeView`: the few read-only questions a suggester may ask
of a scope's state (episodes, instruction similarities, and the per-scope models the suggesters
declare). A new suggester subclasses :class:`BaseSuggester` and implements
:meth:`~BaseSuggester.suggest`; one that needs an index of its own over the scope declares it in
:attr:`~BaseSuggester.scope_models` (:class:`~em_plugin.state.scope_models.ScopeModelSpec`), and
one whose suggestions need a last step after the chain's common ones overrides
:meth:`~BaseSuggester.finish`. The recipes are in docs/extending.md; the contract kit
(:mod:`em_plugin.suggest.contract`) checks a new one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from em_plugin.retrieval.reference import Match
from em_plugin.state.episodes import Episode
from em_plugin.state.scope_models import Query, ScopeModelSpec
from em_plugin.suggest.crew import CrewDescription
from em_plugin.suggest.types import Suggestion
from provenance.model import CallStep, Workflow

__all__ = [
    "BaseSuggester",
    "ScopeView",
    "Suggester",
    "SuggestionRequest",
    "call_text",
    "first",
    "short",
]


class ScopeView(Protocol):
    """The read-only questions a suggester may ask of one scope's stored workflows.

    The memory's per-scope state satisfies it; a test may pass any object with these methods.
    Nothing here writes: a suggester never changes memory.
    """

    def episode(self, workflow_id: str) -> Episode | None:
        """Return a stored workflow's leaves (tools, instruction contexts, args), or ``None``."""
        ...

    def routes(self, workflow_id: str) -> dict[str, str] | None:
        """Return a stored workflow's handoff routes (sub-agent tool -> handoff tool).

        ``None``: not stored, or stored before routes were kept.
        """
        ...

    def version(self, workflow_id: str) -> tuple[int, int] | None:
        """Return a token that changes whenever the workflow is saved again (``None``: absent)."""
        ...

    def instruction_similarities(self, vector: np.ndarray) -> np.ndarray:
        """Return the cosine of ``vector`` with each stored instruction (``nan``: released)."""
        ...

    def tools(self) -> list[str]:
        """Return the tools the scope's stored workflows called."""
        ...

    def model(self, name: str) -> Any:
        """Return the scope's per-scope model ``name``, as a suggester declared it.

        Raises:
            ConfigurationError: When no suggester of the memory declared it.
        """
        ...


#: Longest suggestion text taken from an instruction.
MAX_TEXT = 240


@dataclass(frozen=True)
class SuggestionRequest:
    """The current workflow and what memory knows about it."""

    workflow: Workflow
    """The current workflow."""
    matches: tuple[Match, ...] = ()
    """Retrieved memory workflows (the paper's rule), best first."""
    view: ScopeView | None = None
    """The scope's stored workflows, read-only (``None``: nothing stored to read)."""
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
    window: int | None = None
    """The last leaves ``matches`` are for: the configured window, or a shorter one when that
    matched nothing (:mod:`em_plugin.retrieval.window`); ``None``: the whole workflow."""

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
    """Produces ranked suggestions for a request.

    Subclass :class:`BaseSuggester` rather than implementing every member by hand.
    """

    name: str
    """Short name, for logs and :attr:`Suggestion.source <em_plugin.suggest.types.Suggestion>`."""
    remote: bool
    """Whether a call is slow and reads only the request (a chat model): the chain then calls
    it outside the memory's lock, and awaits :meth:`asuggest` from async code."""

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Return at most ``limit`` suggestions (all for ``None``), best first.

        Raises:
            SuggestionError: When this suggester cannot answer; the chain logs it and goes on.
        """
        ...

    async def asuggest(
        self, request: SuggestionRequest, limit: int | None = None
    ) -> list[Suggestion]:
        """Async twin of :meth:`suggest`."""
        ...


class BaseSuggester(ABC):
    """A :class:`Suggester` with defaults: local (``remote = False``), ``asuggest`` = ``suggest``.

    Subclasses set :attr:`name` and implement :meth:`suggest`; a remote one sets
    ``remote = True`` and overrides :meth:`asuggest` with a real async call.
    """

    name: str = "custom"
    remote: bool = False
    scope_models: tuple[ScopeModelSpec, ...] = ()
    """The per-scope models this suggester reads (``request.view.model(name)``); the memory's
    scopes build them and keep them up to date (:mod:`em_plugin.state.scope_models`)."""

    @abstractmethod
    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Return at most ``limit`` suggestions (all for ``None``), best first."""

    def finish(self, request: SuggestionRequest, found: list[Suggestion]) -> list[Suggestion]:
        """Return this suggester's suggestions after the chain's common steps (as they are).

        The chain calls it on what this suggester found, once the evidence rules, the lift to
        the user's level and argument binding have read every supporting position; the
        episodic suggester keeps only the evidence the paper's rule lets it cite.
        """
        return found

    async def asuggest(
        self, request: SuggestionRequest, limit: int | None = None
    ) -> list[Suggestion]:
        """Call :meth:`suggest` (a local suggester answers at once)."""
        return self.suggest(request, limit)


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
    query, view = request.query, request.view
    if request.matches or request.called or query is None or view is None:
        return False
    if query.context is None:
        return True
    sims = view.instruction_similarities(query.context)
    live = sims[~np.isnan(sims)]
    return live.size == 0 or float(live.max()) < familiar
