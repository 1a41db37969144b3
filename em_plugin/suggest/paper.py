"""The paper's rule as written: retrieved workflows vote for the call after their matched part.

Every workflow the paper's retrieval found (mean step similarity above ``T``) votes, weighted by
its match score, for the first call that follows its matched subsequence; the votes rank the
tools, and each suggestion cites the workflows that voted for it. Nothing retrieved, nothing
suggested: the crew fallback speaks then (paper, Figure 4). This is the reference behaviour of
the ``paper`` chain; the default ``continuation`` chain ranks better on the benchmark files.
"""

from __future__ import annotations

from em_plugin.suggest.base import BaseSuggester, SuggestionRequest, call_text, first
from em_plugin.suggest.types import Evidence, Suggestion

__all__ = ["PaperSuggester"]


class PaperSuggester(BaseSuggester):
    """Ranks the calls that follow the retrieved workflows' matched subsequences."""

    name = "paper"

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Return the voted calls, by total match score (ties: first voted)."""
        view = request.view
        if view is None:
            return []
        votes: dict[str, float] = {}
        cited: dict[str, list[Evidence]] = {}
        texts: dict[str, str] = {}
        for match in request.matches:
            episode = view.episode(match.workflow_id)
            if episode is None:
                continue
            position = next(
                (p for p in range(match.end + 1, len(episode)) if episode.tools[p] is not None),
                None,
            )
            if position is None:
                continue
            tool = episode.tools[position]
            assert tool is not None
            votes[tool] = votes.get(tool, 0.0) + match.score
            context = episode.contexts[position]
            if context and episode.opens_instruction(position):
                texts.setdefault(tool, context)
            cited.setdefault(tool, []).append(
                Evidence(match.workflow_id, position, round(match.score, 6))
            )
        total = sum(votes.values()) or 1.0
        ranked = sorted(votes, key=lambda t: -votes[t])
        return first(
            [
                Suggestion(
                    text=call_text(tool, request.crew, texts.get(tool)),
                    tool=tool,
                    score=votes[tool] / total,
                    source="paper",
                    evidence=tuple(cited[tool]),
                )
                for tool in ranked
            ],
            limit,
        )
