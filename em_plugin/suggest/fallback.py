"""The deterministic fallback: the crew's tools ranked by the procedural graph (DESIGN §8).

Used when memory has nothing closer to offer. Tools the current workflow has not used yet come
first (they are what the crew could still do), each group ordered by how much stored workflows
rely on the tool (its incoming H-EPM weight), then by the crew's own order. Without a crew
description, the tools known to the scope's memory are ranked the same way.
"""

from __future__ import annotations

from em_plugin.suggest.base import SuggestionRequest, call_text, first
from em_plugin.suggest.types import Suggestion

__all__ = ["FallbackSuggester"]


class FallbackSuggester:
    """Ranks the crew's (or memory's) tools; needs no model and no similar workflow."""

    name = "fallback"

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Return the ranked tools as suggestions."""
        memory = request.memory
        scores = memory.graph.tool_scores() if memory is not None else {}
        if request.crew is not None and request.crew.tool_names:
            tools = list(request.crew.tool_names)
        elif memory is not None:
            tools = memory.graph.tools()
        else:
            tools = []
        used = set(request.called)
        top = max(scores.values(), default=0.0) or 1.0
        order = {tool: i for i, tool in enumerate(tools)}
        ranked = sorted(tools, key=lambda t: (t in used, -scores.get(t, 0.0), order[t]))
        return first(
            [
                Suggestion(
                    text=call_text(tool, request.crew),
                    tool=tool,
                    score=scores.get(tool, 0.0) / top,
                    source="fallback",
                )
                for tool in ranked
            ],
            limit,
        )
