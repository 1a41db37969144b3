"""The episodic suggester: what followed similar states in stored workflows (docs/suggestions.md).

Candidates come from the continuation model (:mod:`em_plugin.state.continuation`), which matches the
most recent leaves at every stored position, and from the workflows the paper's rule retrieved
(the step right after each one's matched subsequence). Ranking is by the model's probability;
evidence lists the retrieved workflows first, then the best-agreeing stored positions.

By default every tool the model ranks is suggested: at agreement 0 its votes are still weighted
by instruction similarity ("used in workflows with similar instructions"), and on the benchmark
files that ranking fills places better than the procedural graph or the crew's tool list
(telecom hit@3 0.885 vs 0.877, Galaxy 0.502 vs 0.482). ``min_order=1`` keeps only tools
whose stored positions agree with at least the last leaf (or that the current workflow or a
retrieved workflow continues with), leaving the rest to the procedural and fallback suggesters.

Every episodic suggestion cites at least one stored workflow. A tool only the current
workflow's own steps vote for (nothing stored supports it) is labelled ``"session"`` and cites
the current workflow's positions instead; the step just taken is suggested again only where a
cited stored workflow repeats it (:mod:`em_plugin.suggest.evidence`).

An *unfamiliar* request gets no episodic suggestions at all (paper, Figure 4): nothing was
retrieved, the current workflow has made no call yet, and its instruction is not close (cosine
below ``familiar``) to any stored instruction. The chain then falls through to the crew
description instead of proposing whatever followed unrelated instructions.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from em_plugin.errors import ConfigurationError
from em_plugin.suggest.base import (
    DEFAULT_FAMILIAR,
    SuggestionRequest,
    call_text,
    first,
    short,
    unfamiliar,
)
from em_plugin.suggest.evidence import admissible, repeat_needs_support
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.model import CallStep

if TYPE_CHECKING:  # em_plugin.state imports em_plugin.suggest.types: no cycle at run time
    from em_plugin.state.continuation import Candidate

__all__ = ["EpisodicSuggester"]


class EpisodicSuggester:
    """Suggests the continuations of matching stored states.

    Args:
        min_order: Agreement (recent leaves) a stored position needs to propose a tool;
            0 suggests every ranked tool.
        familiar: Cosine from which a tool-less instruction counts as like a stored one.
    """

    name = "episodic"

    def __init__(self, min_order: int = 0, familiar: float = DEFAULT_FAMILIAR) -> None:
        if min_order < 0:
            raise ConfigurationError(f"min_order must be >= 0, got {min_order}")
        if not -1.0 <= familiar <= 1.0:
            raise ConfigurationError(f"familiar must be in [-1, 1], got {familiar}")
        self.min_order = min_order
        self.familiar = familiar

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Return continuation suggestions, best first."""
        memory, query = request.memory, request.query
        if memory is None or query is None or unfamiliar(request, self.familiar):
            return []
        retrieved, instructions = self._retrieved(request)
        last = repeat_needs_support(request)
        out = []
        for candidate in memory.continuation.rank(query):
            cited = retrieved.get(candidate.tool, [])
            if candidate.order < self.min_order and not candidate.from_current and not cited:
                continue
            suggestion = self._suggestion(candidate, cited, request)
            if not suggestion.evidence and candidate.from_current:
                suggestion = _from_session(suggestion, request)
            if admissible(request, suggestion, last):
                out.append(suggestion)
                if limit is not None and len(out) >= limit:
                    break  # the instructions would come after these anyway
        return first(out + instructions, limit)

    @staticmethod
    def _retrieved(
        request: SuggestionRequest,
    ) -> tuple[dict[str, list[Evidence]], list[Suggestion]]:
        """Per tool, the retrieved workflows whose matched subsequence it follows.

        Also returns instruction suggestions for retrieved workflows that continue with an
        instruction the crew answered without tools.
        """
        memory = request.memory
        by_tool: dict[str, list[Evidence]] = {}
        instructions: dict[str, Suggestion] = {}
        # A text step's score: the share of retrieved workflows continuing with it, times their
        # mean match score (like a tool's probability, it is in (0, 1]).
        share = 1.0 / max(len(request.matches), 1)
        for match in request.matches:
            episode = memory.episode(match.workflow_id) if memory is not None else None
            nxt = match.end + 1
            if episode is None or nxt >= len(episode):
                continue
            cited = Evidence(match.workflow_id, nxt, round(match.score, 6))
            tool = episode.tools[nxt]
            if tool is not None:
                by_tool.setdefault(tool, []).append(cited)
                continue
            text = episode.contexts[nxt]
            if text and text not in instructions:
                instructions[text] = Suggestion(
                    short(text), None, None, share * match.score, "episodic", (cited,)
                )
            elif text:
                old = instructions[text]
                instructions[text] = Suggestion(
                    old.text, None, None, old.score + share * match.score, "episodic",
                    (*old.evidence, cited),
                )  # fmt: skip
        return by_tool, list(instructions.values())

    @staticmethod
    def _suggestion(
        candidate: Candidate, cited: list[Evidence], request: SuggestionRequest
    ) -> Suggestion:
        seen = {e.workflow_id for e in cited}
        evidence = tuple(cited) + tuple(e for e in candidate.evidence if e.workflow_id not in seen)
        return Suggestion(
            text=call_text(candidate.tool, request.crew, candidate.instruction),
            tool=candidate.tool,
            score=candidate.probability,
            source="episodic",
            evidence=evidence,
            # Past values, never values to use: the chain binds what the current workflow's
            # data flow supports (em_plugin.suggest.arguments).
            example_args=candidate.args,
            example_from=evidence[0].workflow_id if candidate.args and evidence else None,
            args_from="example" if candidate.args else None,
        )


def _from_session(suggestion: Suggestion, request: SuggestionRequest) -> Suggestion:
    """Relabel a tool only the current workflow's own steps support (no stored workflow does).

    Its source becomes ``"session"`` and its evidence the current workflow's positions where
    the tool followed the step just taken: a pattern of this session, not a memory.
    """
    tools = [s.name if isinstance(s, CallStep) else None for s in request.workflow.leaves()]
    positions = [
        p
        for p in range(1, len(tools) - 1)
        if tools[p] == suggestion.tool and tools[p - 1] == tools[-1]
    ]
    evidence = tuple(Evidence(request.workflow.id, p, 1.0) for p in positions[-3:])
    return dataclasses.replace(suggestion, source="session", evidence=evidence)
