"""Ranking by what this scope's users did: steps they keep taking after a context come first.

A *context* is the last :data:`CONTEXT` leaves of the current workflow (tool names; ``""`` for
an instruction leaf). For every judged round (:mod:`em_plugin.suggest.acceptance`, or a replayed
step in ``em-plugin eval --online``) the statistics count, per context, the rounds, the tool
the user's next step took, and what it took after each tool shown first. The rule
(docs/suggestions.md, "Learning from acceptance"):

* **promoted and demoted**: over the context's rounds in which the current first suggestion
  ``X`` was shown first, users took some other suggestion ``Y`` ``k`` times and ``X`` ``t``
  times. ``Y`` goes first and ``X`` second when ``k > t`` and a one-sided sign test rejects
  "users take ``X`` and ``Y`` equally often" at :data:`SIGNIFICANCE` (``P(Bin(k + t, 1/2) >= k)``
  below 0.05): the comparison is paired (the same rounds, the same first suggestion), and the
  least evidence that passes is 5 to 0 (6 to 1 does not: 0.0625; 7 to 1 does);
* once a context has :data:`MIN_ROUNDS` rounds, every suggestion with a count says why
  (``"taken 7 of 9 times after this step here"``; a demoted one ``"ignored 5 of 6 times after
  this step here"``).

Statistics belong to one memory, that is one scope: a user's feedback never reaches another
scope's ranking.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from em_plugin.suggest.types import Suggestion
from provenance.errors import ProvenanceError
from provenance.model import CallStep, Workflow

__all__ = ["CONTEXT", "MIN_ROUNDS", "SIGNIFICANCE", "FeedbackStats", "context_of", "sign_test"]

log = logging.getLogger("em_plugin.suggest")

#: Leaves that make a context.
CONTEXT = 2
#: Rounds a context needs before a suggestion says how often it was taken there.
MIN_ROUNDS = 5
#: Level of the sign test that promotes what users took over an ignored first suggestion.
SIGNIFICANCE = 0.05


def context_of(workflow: Workflow) -> tuple[str, ...]:
    """Return the context of a workflow: its last :data:`CONTEXT` leaves' tools (``""``: text)."""
    leaves = workflow.leaves()[-CONTEXT:]
    return tuple(leaf.name if isinstance(leaf, CallStep) else "" for leaf in leaves)


def sign_test(wins: int, losses: int) -> float:
    """Return the one-sided sign test's p-value of ``wins`` against ``losses``.

    Args:
        wins: Rounds the challenger was taken.
        losses: Rounds the incumbent was taken.

    Returns:
        ``P(Bin(wins + losses, 1/2) >= wins)``: how likely so many wins are if both were taken
        equally often.
    """
    n = wins + losses
    return sum(math.comb(n, i) for i in range(wins, n + 1)) / 2**n


@dataclass
class _Counts:
    rounds: int = 0
    taken: Counter[str] = field(default_factory=Counter)
    first: Counter[str] = field(default_factory=Counter)
    # Per tool shown first, what the rounds' next steps took (the paired comparison).
    taken_after_first: dict[str, Counter[str]] = field(default_factory=dict)


class FeedbackStats:
    """One scope's counts of what its users took after each context (the module's rule)."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, ...], _Counts] = {}
        self._lock = threading.Lock()
        #: How many rankings the statistics changed (the first suggestion gave way).
        self.promotions = 0

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
                if taken:
                    counts.taken_after_first.setdefault(shown[0], Counter())[taken] += 1

    def rerank(
        self, context: tuple[str, ...], suggestions: Sequence[Suggestion]
    ) -> list[Suggestion]:
        """Return the suggestions reordered by the context's statistics, each saying why.

        Args:
            context: The current workflow's context.
            suggestions: The chain's suggestions, best first.

        Returns:
            The same suggestions, the first one replaced by what users took instead when the
            sign test says so (the module's rule).
        """
        with self._lock:
            counts = self._counts.get(context)
            if counts is None or not suggestions:
                return list(suggestions)
            rounds, taken = counts.rounds, dict(counts.taken)
            top = suggestions[0].tool or ""
            shown_first = counts.first.get(top, 0)
            after = dict(counts.taken_after_first.get(top, {}))
        out = [
            dataclasses.replace(
                s, why=f"taken {taken[s.tool]} of {rounds} times after this step here"
            )
            if s.tool in taken and rounds >= MIN_ROUNDS
            else s
            for s in suggestions
        ]
        kept = after.get(top, 0)
        # The challenger: what users took most often instead, among the suggestions shown now.
        best = max(
            range(1, len(out)), key=lambda i: (after.get(out[i].tool or "", 0), -i), default=0
        )
        won = after.get(out[best].tool or "", 0) if best else 0
        if not best or won <= kept or sign_test(won, kept) >= SIGNIFICANCE:
            return out
        out.insert(0, out.pop(best))
        out[1] = dataclasses.replace(
            out[1], why=f"ignored {shown_first - kept} of {shown_first} times after this step here"
        )
        with self._lock:
            self.promotions += 1
        return out
