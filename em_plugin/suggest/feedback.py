"""Ranking by what this scope's users did: steps they keep taking after a context come first.

A *context* is the last :data:`CONTEXT` leaves of the current workflow (tool names; ``""`` for
an instruction leaf). For every judged round (:mod:`em_plugin.suggest.acceptance`, or a replayed
step in ``em-plugin eval --online``) the statistics count, per context, the rounds, the tool
the user's next step took, and the tool shown first. The rule (docs/suggestions.md, "Learning
from acceptance"), once a context has :data:`MIN_ROUNDS` rounds:

* **promoted and demoted**: when the first suggestion was shown first at least
  :data:`MIN_ROUNDS` times here and taken in under a third of those, the suggestion whose tool
  users took in at least half of the context's rounds goes first, and the ignored one second;
* every suggestion with a count says why (``"taken 7 of 9 times after this step here"``,
  ``"ignored 5 of 6 times after this step here"``).

Statistics belong to one memory, that is one scope: a user's feedback never reaches another
scope's ranking.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from em_plugin.suggest.types import Suggestion
from provenance.errors import ProvenanceError
from provenance.model import CallStep, Workflow

__all__ = ["CONTEXT", "MIN_ROUNDS", "FeedbackStats", "context_of"]

log = logging.getLogger("em_plugin.suggest")

#: Leaves that make a context.
CONTEXT = 2
#: Rounds a context needs before its statistics move a suggestion.
MIN_ROUNDS = 5


def context_of(workflow: Workflow) -> tuple[str, ...]:
    """Return the context of a workflow: its last :data:`CONTEXT` leaves' tools (``""``: text)."""
    leaves = workflow.leaves()[-CONTEXT:]
    return tuple(leaf.name if isinstance(leaf, CallStep) else "" for leaf in leaves)


@dataclass
class _Counts:
    rounds: int = 0
    taken: Counter[str] = field(default_factory=Counter)
    first: Counter[str] = field(default_factory=Counter)
    first_taken: Counter[str] = field(default_factory=Counter)


class FeedbackStats:
    """One scope's counts of what its users took after each context (the module's rule)."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, ...], _Counts] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_store(cls, store: Any, scope: str) -> FeedbackStats:
        """Return a scope's counts as its stored judged rounds say (a memory opened later).

        Every judged round's record keeps its context, the tools shown and the tool its next
        turn took (``wf:contextTools``, ``wf:nextTool``), so a restarted process, another
        worker or the CLI ranks as the memory that judged them did.

        Args:
            store: The memory's workflow store (``judged_rounds``).
            scope: The scope; other scopes' rounds are never read.

        Returns:
            The counts; empty when the store cannot read the records (logged: learning is
            an improvement, never a reason for a suggestion to fail).
        """
        stats = cls()
        try:
            rounds = store.judged_rounds(scope)
        except ProvenanceError:
            log.warning(
                "scope %r: judged rounds unreadable, ranking starts unlearned", scope, exc_info=True
            )
            return stats
        for judged in rounds:
            stats.note(judged.context, judged.shown, judged.next_tool)
        return stats

    def rounds(self) -> int:
        """Return how many judged rounds were counted."""
        with self._lock:
            return sum(counts.rounds for counts in self._counts.values())

    def note(
        self, context: tuple[str, ...], shown: Sequence[str | None], taken: str | None
    ) -> None:
        """Count one judged round.

        Args:
            context: The round's context (:func:`context_of` of the workflow it was shown for).
            shown: The tools shown, in rank order (``None`` for a suggestion without one).
            taken: The tool the user's next step took (shown or not); ``None``: no call.
        """
        with self._lock:
            counts = self._counts.setdefault(context, _Counts())
            counts.rounds += 1
            if taken:
                counts.taken[taken] += 1
            if shown and shown[0]:
                counts.first[shown[0]] += 1
                if taken == shown[0]:
                    counts.first_taken[shown[0]] += 1

    def rerank(
        self, context: tuple[str, ...], suggestions: Sequence[Suggestion]
    ) -> list[Suggestion]:
        """Return the suggestions reordered by the context's statistics, each saying why.

        Args:
            context: The current workflow's context.
            suggestions: The chain's suggestions, best first.

        Returns:
            The same suggestions; with fewer than :data:`MIN_ROUNDS` rounds, unchanged.
        """
        with self._lock:
            counts = self._counts.get(context)
            if counts is None or counts.rounds < MIN_ROUNDS or not suggestions:
                return list(suggestions)
            rounds, taken = counts.rounds, dict(counts.taken)
            first, first_taken = dict(counts.first), dict(counts.first_taken)
        out = [
            dataclasses.replace(
                s, why=f"taken {taken[s.tool]} of {rounds} times after this step here"
            )
            if s.tool in taken
            else s
            for s in suggestions
        ]
        top = out[0].tool or ""
        shown_first, taken_first = first.get(top, 0), first_taken.get(top, 0)
        if len(out) < 2 or shown_first < MIN_ROUNDS or 3 * taken_first >= shown_first:
            return out
        # The first suggestion keeps being ignored here: what users took instead, in half of
        # the rounds, comes first (it moves down one place). Without such an alternative it
        # stays: moving it down alone cost telecom 5 of 122 hits@1 online (docs/suggestions.md).
        best = max(range(len(out)), key=lambda i: (taken.get(out[i].tool or "", 0), -i))
        if best > 0 and 2 * taken.get(out[best].tool or "", 0) >= rounds:
            out.insert(0, out.pop(best))
            ignored = shown_first - taken_first
            out[1] = dataclasses.replace(
                out[1], why=f"ignored {ignored} of {shown_first} times after this step here"
            )
        return out
