"""Structured next-step suggestions and the short text appended to a crew's answer (DESIGN §8)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

SuggestionSource = Literal["episodic", "procedural", "llm", "fallback"]
SOURCES: tuple[SuggestionSource, ...] = ("episodic", "procedural", "llm", "fallback")


@dataclass(frozen=True)
class Evidence:
    """Where a suggestion came from: a memory workflow and a leaf position in it."""

    workflow_id: str
    """The memory workflow's id."""
    position: int
    """0-based position of the suggested leaf in that workflow's leaf sequence."""
    score: float = 0.0
    """How strongly this workflow supported the suggestion (e.g. its match score)."""


@dataclass(frozen=True)
class Suggestion:
    """A proposed next step."""

    text: str
    """Readable next step, e.g. an instruction the user could give."""
    tool: str | None = None
    """The tool the step would call, when known."""
    args: Mapping[str, Any] | None = None
    """Typical arguments, when known."""
    score: float = 0.0
    """Ranking score; higher is better, comparable within one source."""
    source: SuggestionSource = "episodic"
    """Which suggester produced it."""
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)
    """Memory workflows and positions the suggestion came from."""

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object used by ``--json`` output and the integrations."""
        return {
            "tool": self.tool,
            "text": self.text,
            "args": dict(self.args) if self.args is not None else None,
            "score": round(float(self.score), 6),
            "source": self.source,
            "evidence": [
                {"workflow_id": e.workflow_id, "position": e.position, "score": round(e.score, 6)}
                for e in self.evidence
            ],
        }


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
    # Only retrieval (episodic) evidence makes "similar past workflows"; graph statistics don't.
    workflows = {e.workflow_id for s in shown if s.source == "episodic" for e in s.evidence}
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
        lines.append(line)
    return "\n".join(lines)
