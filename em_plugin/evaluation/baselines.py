"""The simple next-tool baselines of the benchmark README, and the paper's rule as written.

Both n-gram baselines read a leaf sequence as tokens (a call is its tool name, an instruction
leaf is one shared token) and count, over the memory workflows, which call follows each context
of the last ``k`` tokens:

* **bigram** (``max_order=1``): rank the calls that followed the last token, by count;
* **longest suffix** (``max_order=4``): the same for the last 4 tokens, then the last 3, 2, 1
  (each level adds the calls not ranked yet).

Both then append every call by overall frequency (as a target, i.e. not counting first leaves).
Ties keep the order in which the memory first showed them (Python's ``Counter.most_common``).
With these rules the benchmark data's published baseline figures are reproduced exactly
(docs/evaluation.md).

:func:`paper_rule` is the paper's retrieval applied as written: every retrieved workflow votes,
weighted by its score, for the call that follows its matched subsequence; the bigram ranking
fills the rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from em_plugin.errors import ConfigurationError
from em_plugin.retrieval.reference import Match
from em_plugin.state.episodes import Episode
from provenance.model import CallStep, Workflow

__all__ = ["NgramBaseline", "bigram", "longest_suffix", "paper_rule", "tokens"]

_INSTRUCTION = "\x00instruction"


def tokens(workflow: Workflow) -> list[str]:
    """Return a workflow's leaf tokens: tool names, and one shared token for instructions."""
    return [s.name if isinstance(s, CallStep) else _INSTRUCTION for s in workflow.leaves()]


class NgramBaseline:
    """Back-off n-gram ranking of the next call.

    Args:
        max_order: Longest context (number of preceding leaves) that is counted.

    Raises:
        ConfigurationError: When ``max_order`` is below 1.
    """

    def __init__(self, max_order: int) -> None:
        if max_order < 1:
            raise ConfigurationError(f"max_order must be >= 1, got {max_order}")
        self.max_order = max_order
        self._table: dict[tuple[str, ...], Counter[str]] = {}
        self._unigram: Counter[str] = Counter()

    def fit(self, workflows: Iterable[Workflow]) -> NgramBaseline:
        """Count the memory workflows' transitions; return ``self``."""
        for workflow in workflows:
            sequence = tokens(workflow)
            for j in range(1, len(sequence)):
                if sequence[j] == _INSTRUCTION:
                    continue
                self._unigram[sequence[j]] += 1
                for k in range(1, min(self.max_order, j) + 1):
                    context = tuple(sequence[j - k : j])
                    self._table.setdefault(context, Counter())[sequence[j]] += 1
        return self

    def rank(self, context: Sequence[str]) -> list[str]:
        """Rank next calls after a token context (from :func:`tokens`)."""
        ranked: dict[str, None] = {}
        for k in range(min(self.max_order, len(context)), 0, -1):
            counts = self._table.get(tuple(context[len(context) - k :]))
            if counts:
                ranked.update((tool, None) for tool, _ in counts.most_common())
        ranked.update((tool, None) for tool, _ in self._unigram.most_common())
        return list(ranked)


def bigram(workflows: Iterable[Workflow]) -> NgramBaseline:
    """Fit the bigram baseline."""
    return NgramBaseline(1).fit(workflows)


def longest_suffix(workflows: Iterable[Workflow]) -> NgramBaseline:
    """Fit the longest-suffix (up to 4 leaves) baseline."""
    return NgramBaseline(4).fit(workflows)


def paper_rule(
    matches: Sequence[Match], episodes: dict[str, Episode], fill: Sequence[str]
) -> list[str]:
    """Rank by the paper's rule as written: score-weighted votes of retrieved workflows.

    Args:
        matches: The retrieved workflows with their alignments.
        episodes: Episodes of the memory workflows, by id.
        fill: The ranking that fills the places after the voted tools (the bigram's).

    Returns:
        The voted tools by total score (ties: first voted), then ``fill``.
    """
    votes: dict[str, float] = {}
    for match in matches:
        episode = episodes.get(match.workflow_id)
        if episode is None:
            continue
        following = (t for t in episode.tools[match.end + 1 :] if t is not None)
        tool = next(following, None)
        if tool is not None:
            votes[tool] = votes.get(tool, 0.0) + match.score
    ranked = dict.fromkeys(sorted(votes, key=lambda t: -votes[t]))
    ranked.update(dict.fromkeys(fill))
    return list(ranked)
