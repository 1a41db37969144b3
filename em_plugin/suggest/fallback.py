"""The deterministic fallback: the crew's tools ranked by the procedural graph.

See docs/suggestions.md.

Used when memory has nothing closer to offer. Tools the current workflow has not used yet come
first (they are what the crew could still do), each group ordered by how much stored workflows
rely on the tool (its incoming H-EPM weight), then by the crew's own order. Without a crew
description, the tools known to the scope's memory are ranked the same way.

The step just taken is never suggested again here (the fallback has no workflow to show that it
repeats), nor is a tool only a sub-agent behind a handoff can call. A suggestion's score is
``1 / rank``: positive, and in the order of the ranking (which the graph weights decide).
"""

from __future__ import annotations

from em_plugin.suggest.base import BaseSuggester, SuggestionRequest, call_text, first
from em_plugin.suggest.evidence import repeat_needs_support
from em_plugin.suggest.models import PROCEDURAL, ProceduralModel
from em_plugin.suggest.types import Suggestion
from em_plugin.suggest.user_level import handoff_routes

__all__ = ["FallbackSuggester"]


class FallbackSuggester(BaseSuggester):
    """Ranks the crew's (or memory's) tools; needs no model and no similar workflow."""

    name = "fallback"
    scope_models = (ProceduralModel(),)

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Return the ranked tools as suggestions."""
        view = request.view
        scores = view.model(PROCEDURAL).tool_scores() if view is not None else {}
        if request.crew is not None and request.crew.tool_names:
            tools = list(request.crew.tool_names)
        elif view is not None:
            tools = view.tools()
        else:
            tools = []
        last, internal = repeat_needs_support(request), handoff_routes(request.crew)
        tools = [t for t in tools if t != last and t not in internal]
        used = set(request.called)
        order = {tool: i for i, tool in enumerate(tools)}
        ranked = sorted(tools, key=lambda t: (t in used, -scores.get(t, 0.0), order[t]))
        return first(
            [
                Suggestion(
                    text=call_text(tool, request.crew),
                    tool=tool,
                    score=1.0 / rank,
                    source="fallback",
                )
                for rank, tool in enumerate(ranked, start=1)
            ],
            limit,
        )
