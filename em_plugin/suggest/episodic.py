"""The episodic suggester: what followed similar states in stored workflows (docs/suggestions.md).

Candidates come from the continuation model (:mod:`em_plugin.suggest.continuation`), which
matches the most recent leaves at every stored position, and from the workflows the paper's rule
retrieved (the step right after each one's matched subsequence). Ranking is by the model's
probability; evidence lists the retrieved workflows first, then the best-agreeing stored positions.

By default every tool the model ranks is suggested: at agreement 0 its votes are still weighted
by instruction similarity ("used in workflows with similar instructions"), and on the benchmark
files that ranking fills places better than the procedural graph or the crew's tool list
(telecom hit@3 0.885 vs 0.877, Galaxy 0.502 vs 0.482). ``min_order=1`` keeps only tools
whose stored positions agree with at least the last leaf (or that the current workflow or a
retrieved workflow continues with), leaving the rest to the procedural and fallback suggesters.

With ``retrieved_weight`` > 0, when the retrieved workflows clearly agree (at least 3 of them,
holding two thirds of the votes, on one next tool), ranking blends the model's probability with
their votes. It is off by default (0): on the tau2 files every weight tried cost hit@1
(airline 24 -> 23 at 0.5 gated, telecom 75 -> 67), so the default ranking stays the model's.
The case it was made for (a few stored sessions with the current instruction word for word
outvoting the retrieved workflows) is fixed in the model instead: a vote is weighed by the
instruction its call was made for (docs/suggestions.md, "Instruction text").

Every episodic suggestion cites at least one stored workflow whose match passes ``T`` (the
paper's rule): a retrieved workflow, or a stored position whose score (agreement with the recent
steps and instruction similarity) exceeds it. A tool with no such evidence is not episodic: it is
``"session"`` when only the current workflow's own steps vote for it and ``"pattern"`` otherwise
(the scope's statistics), citing nothing; the step just taken is suggested again only where a
cited stored workflow repeats it (:mod:`em_plugin.suggest.evidence`).

An *unfamiliar* request gets no episodic suggestions at all (paper, Figure 4): nothing was
retrieved, the current workflow has made no call yet, and its instruction is not close (cosine
below ``familiar``) to any stored instruction. The chain then falls through to the crew
description instead of proposing whatever followed unrelated instructions.
"""

from __future__ import annotations

import dataclasses

from em_plugin.errors import ConfigurationError
from em_plugin.suggest.base import (
    DEFAULT_FAMILIAR,
    BaseSuggester,
    SuggestionRequest,
    call_text,
    first,
    short,
    unfamiliar,
)
from em_plugin.suggest.continuation import Candidate
from em_plugin.suggest.evidence import admissible, repeat_needs_support
from em_plugin.suggest.models import CONTINUATION, ContinuationModel
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.model import CallStep

__all__ = ["DEFAULT_RETRIEVED_WEIGHT", "EpisodicSuggester", "cite"]

#: Share of a tool's score that comes from the retrieved workflows' votes (the paper's rule),
#: the rest from the continuation model (see the module doc).
DEFAULT_RETRIEVED_WEIGHT = 0.0


class EpisodicSuggester(BaseSuggester):
    """Suggests the continuations of matching stored states.

    Args:
        min_order: Agreement (recent leaves) a stored position needs to propose a tool;
            0 suggests every ranked tool.
        familiar: Cosine from which a tool-less instruction counts as like a stored one.
    """

    name = "episodic"
    scope_models = (ContinuationModel(),)

    def __init__(
        self,
        min_order: int = 0,
        familiar: float = DEFAULT_FAMILIAR,
        retrieved_weight: float = DEFAULT_RETRIEVED_WEIGHT,
    ) -> None:
        if min_order < 0:
            raise ConfigurationError(f"min_order must be >= 0, got {min_order}")
        if not -1.0 <= familiar <= 1.0:
            raise ConfigurationError(f"familiar must be in [-1, 1], got {familiar}")
        if not 0.0 <= retrieved_weight <= 1.0:
            raise ConfigurationError(f"retrieved_weight must be in [0, 1], got {retrieved_weight}")
        self.min_order = min_order
        self.familiar = familiar
        self.retrieved_weight = retrieved_weight

    def suggest(self, request: SuggestionRequest, limit: int | None = None) -> list[Suggestion]:
        """Return continuation suggestions, best first."""
        view, query = request.view, request.query
        if view is None or query is None or unfamiliar(request, self.familiar):
            return []
        retrieved, instructions = self._retrieved(request)
        shares = _vote_shares(retrieved)
        weight = self.retrieved_weight if _consensus(retrieved, shares) else 0.0
        last = repeat_needs_support(request)
        out = []
        for candidate in view.model(CONTINUATION).rank(query):
            cited = retrieved.get(candidate.tool, [])
            if candidate.order < self.min_order and not candidate.from_current and not cited:
                continue
            suggestion = self._suggestion(candidate, cited, request)
            if weight:
                # The retrieved workflows (the paper's vote) count in the rank, not only in the
                # evidence: a few near-identical instructions no longer outvote them.
                blended = (1 - weight) * candidate.probability + weight * shares.get(
                    candidate.tool, 0.0
                )
                suggestion = dataclasses.replace(suggestion, score=blended)
            # The rules read every stored position that supports it (a repeat shown by a
            # stored workflow counts even below T); what is cited passes T.
            check = suggestion
            if not suggestion.evidence and candidate.from_current:
                # Checked as what it is, a pattern of this session: it needs no stored workflow,
                # and the session's own loop shows a repeat.
                check = dataclasses.replace(
                    suggestion,
                    source="session",
                    evidence=_session_positions(suggestion.tool, request),
                )
            if not admissible(request, check, last):
                continue
            if not suggestion.evidence:
                suggestion = _unsupported(suggestion, candidate.from_current)
            out.append(suggestion)
        out.sort(key=lambda s: -s.score)  # stable: equal scores keep the model's order
        return first(out + instructions, limit)

    def finish(self, request: SuggestionRequest, found: list[Suggestion]) -> list[Suggestion]:
        """Keep the evidence the paper's rule lets an episodic suggestion cite (:func:`cite`).

        The evidence rules and the lift, which the chain applies first, read every supporting
        position; what is cited passes ``T``.
        """
        return [cite(s, request.threshold) if s.source == "episodic" else s for s in found]

    @staticmethod
    def _retrieved(
        request: SuggestionRequest,
    ) -> tuple[dict[str, list[Evidence]], list[Suggestion]]:
        """Per tool, the retrieved workflows whose matched subsequence it follows.

        Also returns instruction suggestions for retrieved workflows that continue with an
        instruction the crew answered without tools.
        """
        view = request.view
        by_tool: dict[str, list[Evidence]] = {}
        instructions: dict[str, Suggestion] = {}
        # A text step's score: the share of retrieved workflows continuing with it, times their
        # mean match score (like a tool's probability, it is in (0, 1]).
        share = 1.0 / max(len(request.matches), 1)
        for match in request.matches:
            episode = view.episode(match.workflow_id) if view is not None else None
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


def cite(suggestion: Suggestion, threshold: float) -> Suggestion:
    """Keep the evidence the paper's rule allows to cite, relabelling what is left without any.

    Cited are the retrieved workflows (their match passed ``T``) and the stored positions whose
    score (agreement with the recent steps and instruction similarity) exceeds ``T``. An
    episodic suggestion left without such evidence becomes ``"pattern"``. The episodic
    suggester's :meth:`~EpisodicSuggester.finish` applies it, after the chain's evidence rules
    and lift, which read every supporting position.
    """
    kept = tuple(e for e in suggestion.evidence if e.score > threshold)
    if kept == suggestion.evidence:
        return suggestion
    example_from = suggestion.example_from
    if example_from is not None and all(e.workflow_id != example_from for e in kept):
        example_from = None
    return dataclasses.replace(
        suggestion,
        source=suggestion.source if kept else "pattern",
        evidence=kept,
        example_from=example_from,
        example_args=suggestion.example_args if example_from else None,
        args_from=suggestion.args_from if example_from or suggestion.args else None,
    )


def _session_positions(tool: str | None, request: SuggestionRequest) -> tuple[Evidence, ...]:
    """The current workflow's positions where ``tool`` followed the step just taken.

    Used only to check the repeat rule; never cited.
    """
    tools = [s.name if isinstance(s, CallStep) else None for s in request.workflow.leaves()]
    positions = [
        p for p in range(1, len(tools) - 1) if tools[p] == tool and tools[p - 1] == tools[-1]
    ]
    return tuple(Evidence(request.workflow.id, p, 1.0) for p in positions[-3:])


def _unsupported(suggestion: Suggestion, from_current: bool) -> Suggestion:
    """Relabel a suggestion that no stored workflow matching the current one supports.

    ``"session"`` when the current workflow's own steps vote for it (a pattern of this session;
    the session's own workflow is not a past one, so nothing is cited); else ``"pattern"``: what
    tends to follow in the scope's workflows, weighted by instruction similarity, with no match
    passing ``T`` to cite. Neither is labelled episodic.
    """
    return dataclasses.replace(suggestion, source="session" if from_current else "pattern")


#: The retrieved workflows weigh in the rank when at least this many agree on one tool...
CONSENSUS_WORKFLOWS = 3
#: ... holding at least this share of their votes.
CONSENSUS_SHARE = 2 / 3


def _consensus(retrieved: dict[str, list[Evidence]], shares: dict[str, float]) -> bool:
    """Whether the retrieved workflows clearly agree on one next tool (see the module doc)."""
    return any(
        shares.get(tool, 0.0) >= CONSENSUS_SHARE and len(cited) >= CONSENSUS_WORKFLOWS
        for tool, cited in retrieved.items()
    )


def _vote_shares(retrieved: dict[str, list[Evidence]]) -> dict[str, float]:
    """Each tool's share of the retrieved workflows' votes, weighted by match score."""
    votes = {tool: sum(e.score for e in cited) for tool, cited in retrieved.items()}
    total = sum(votes.values())
    return {tool: vote / total for tool, vote in votes.items()} if total > 0 else {}
