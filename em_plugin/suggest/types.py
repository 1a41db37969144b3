"""Structured next-step suggestions and the short text appended to a crew's answer.

The value types live in the leaf module :mod:`em_plugin.types` (the per-scope state cites
evidence too); they are re-exported here. See docs/suggestions.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from em_plugin.types import SOURCES, ArgsFrom, Evidence, Suggestion, SuggestionSource

__all__ = [
    "SOURCES",
    "ArgsFrom",
    "Evidence",
    "Suggestion",
    "SuggestionSource",
    "format_suggestions",
]


def format_suggestions(suggestions: Sequence[Suggestion], *, limit: int = 3) -> str:
    """Render the short text appended to an answer.

    Args:
        suggestions: Ranked suggestions.
        limit: How many to show.

    Returns:
        For example ``"Suggested next steps (from 4 similar past workflows):\\n1. ..."``, or an
        empty string when there is nothing to suggest.
    """
    shown = list(suggestions)[:limit]
    if not shown:
        return ""
    # Only evidence of similar workflows (episodic, the paper's rule, an LLM that read the
    # retrieved ones) makes "similar past workflows"; graph statistics don't.
    similar = ("episodic", "llm", "paper")
    workflows = {e.workflow_id for s in shown if s.source in similar for e in s.evidence}
    if workflows:
        plural = "s" if len(workflows) != 1 else ""
        header = f"Suggested next steps (from {len(workflows)} similar past workflow{plural}):"
    elif all(s.source == "fallback" for s in shown):
        header = "Suggested next steps (from the crew's tools):"
    else:
        header = "Suggested next steps:"
    lines = [header]
    for number, suggestion in enumerate(shown, start=1):
        line = f"{number}. {suggestion.text}"
        if suggestion.tool and suggestion.tool not in suggestion.text:
            line += f" [{suggestion.tool}]"
        if suggestion.failures:
            failed = len({e.workflow_id for e in suggestion.failures})
            cited = len({e.workflow_id for e in suggestion.evidence})
            line += f" (failed here before in {failed} of {cited} similar workflows)"
        if suggestion.why:
            line += f" ({suggestion.why})"
        lines.append(line)
    return "\n".join(lines)
