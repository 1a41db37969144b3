"""The procedural suggester: H-EPM's top next tools after the last call (docs/suggestions.md)."""

from __future__ import annotations

from em_plugin.errors import ConfigurationError
from em_plugin.suggest.base import BaseSuggester, SuggestionRequest, call_text, first, unfamiliar
from em_plugin.suggest.models import PROCEDURAL, ProceduralModel
from em_plugin.suggest.types import Suggestion

__all__ = ["ProceduralSuggester"]


class ProceduralSuggester(BaseSuggester):
    """Suggests the best successors of the last call in the scope's tool-transition graph.

    With no call yet, the successors of the graph's start node (the tools workflows begin with),
    unless the instruction is unlike any stored one (then the crew description speaks, Fig. 4).
    Edges seen under an instruction close to the current one rank first, by similarity; the rest
    by H-EPM weight (see :mod:`em_plugin.suggest.procedural_graph`).

    Args:
        k: How many tools to suggest (H-EPM uses two).
    """

    name = "procedural"
    scope_models = (ProceduralModel(),)

    def __init__(self, k: int = 2) -> None:
        if k < 1:
            raise ConfigurationError(f"k must be >= 1, got {k}")
        self.k = k

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Return at most ``k`` (and ``limit``) transitions from the last call."""
        view = request.view
        if view is None or unfamiliar(request):
            return []
        context = request.query.context if request.query is not None else None
        transitions = view.model(PROCEDURAL).next_tools(request.last_call, context, k=self.k)
        return first(
            [
                Suggestion(
                    text=call_text(t.tool, request.crew),
                    tool=t.tool,
                    score=t.similarity if t.mode == "episodic" and t.similarity else t.weight,
                    source="procedural",
                    evidence=t.evidence,
                )
                for t in transitions
            ],
            limit,
        )
