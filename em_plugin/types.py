"""Value types shared by the engine's packages: suggestions and the evidence they cite.

A leaf module: it imports nothing from ``em_plugin`` (the per-scope state cites evidence with
:class:`Evidence`, the suggesters build :class:`Suggestion` objects from it), so every package
may import it without an import cycle. :mod:`em_plugin.suggest.types` re-exports these names.
See docs/suggestions.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["SOURCES", "ArgsFrom", "Evidence", "Suggestion", "SuggestionSource"]

#: Which suggester produced a suggestion: an open string, so that custom suggesters name
#: themselves; the built-in ones use :data:`SOURCES`.
SuggestionSource = str
SOURCES: tuple[str, ...] = (
    "episodic",
    "fallback",
    "llm",
    "paper",
    "pattern",
    "procedural",
    "procedure",
    "session",
)

#: Where a suggestion's arguments come from (see :attr:`Suggestion.args_from`).
ArgsFrom = Literal["current", "example", "mixed"]


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
    """Arguments to use, bound to outputs of the current workflow (data flow); ``None`` when
    no argument could be bound."""
    score: float = 0.0
    """Ranking score; higher is better, comparable within one source."""
    source: SuggestionSource = "episodic"
    """Which suggester produced it."""
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)
    """Memory workflows and positions the suggestion came from."""
    detail: tuple[str, ...] = ()
    """The tools that served the suggested instruction in past workflows (sub-agents' tools
    included), when the suggestion is an instruction at the user's level."""
    example_args: Mapping[str, Any] | None = None
    """Past argument values that could not be bound to the current workflow: an example of
    the call's shape, never values to use."""
    example_from: str | None = None
    """The memory workflow :attr:`example_args` come from."""
    args_from: ArgsFrom | None = None
    """``"current"``: every argument is bound from the current workflow (:attr:`args`);
    ``"example"``: only past values are known (:attr:`example_args`); ``"mixed"``: some of each;
    ``None``: no arguments known."""
    failures: tuple[Evidence, ...] = ()
    """The cited workflows where this step failed before (the run failed, or the tool did);
    a suggestion whose citations are mostly failures ranks after the others
    (:mod:`em_plugin.suggest.outcomes`)."""
    why: str | None = None
    """What this scope's users did after the current step, when it moved the suggestion
    (``"taken 7 of 9 times after this step here"``, :mod:`em_plugin.suggest.feedback`)."""

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object used by ``--json`` output and the integrations.

        ``why`` is there only when this scope's users moved the suggestion (:attr:`why`).
        """
        found = {
            "tool": self.tool,
            "text": self.text,
            "args": dict(self.args) if self.args is not None else None,
            "score": round(float(self.score), 6),
            "source": self.source,
            "evidence": [
                {"workflow_id": e.workflow_id, "position": e.position, "score": round(e.score, 6)}
                for e in self.evidence
            ],
            "detail": list(self.detail),
            "args_from": self.args_from,
            "example_args": dict(self.example_args) if self.example_args is not None else None,
            "example_from": self.example_from,
            "failed_before": [
                {"workflow_id": e.workflow_id, "position": e.position} for e in self.failures
            ],
        }
        if self.why is not None:
            found["why"] = self.why
        return found
