"""Retrieval by the paper's rule (docs/retrieval.md): the brute-force reference implementation.

Step similarity: two instructions give the cosine of their embeddings, two calls give 1 when the
tool names are equal and 0 otherwise, an instruction and a call give 0. A memory workflow ``W_i``
matches the current leaf sequence ``S_c`` (length ``n``) with the best order-preserving subsequence
of ``S_i`` of length ``n``; its score is the mean of the ``n`` step similarities. ``W_i`` is
retrieved when the score is above the threshold.

Ties are broken the same way by every implementation, so that they agree on alignments too: among
alignments with the best total, the one whose last matched position is smallest wins (it leaves
the most continuation); each earlier step then takes the smallest position reaching its best
prefix total. Totals are accumulated left to right in float64 from float32 similarities.

This module is deliberately plain (Python loops over every memory workflow). The fast exact matcher
in :mod:`em_plugin.retrieval.fast` must return the same matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from em_plugin.errors import ConfigurationError
from provenance.model import CallStep, Workflow

DEFAULT_THRESHOLD = 0.65
DEFAULT_MAX_WORKFLOWS = 10


@dataclass(frozen=True)
class Match:
    """A retrieved memory workflow."""

    workflow_id: str
    """The memory workflow's id."""
    score: float
    """Mean step similarity of the best alignment, in [-1, 1]."""
    alignment: tuple[int, ...]
    """For each current leaf, the position of the memory leaf it is matched to."""

    @property
    def end(self) -> int:
        """Position of the last matched memory leaf; the continuation starts after it."""
        return self.alignment[-1]


@dataclass(frozen=True)
class MatchConfig:
    """Retrieval parameters (docs/retrieval.md); all configurable."""

    threshold: float = DEFAULT_THRESHOLD
    """Retrieve when the mean similarity is strictly above this."""
    max_workflows: int = DEFAULT_MAX_WORKFLOWS
    """At most this many matches, best first."""
    exclude_identical: bool = True
    """Skip memory workflows whose leaf sequence equals the current one."""
    require_continuation: bool = True
    """Skip memory workflows whose best alignment ends at their last leaf."""
    window: int | None = None
    """Match only the last ``window`` leaves of the current workflow (``None``: all)."""

    def __post_init__(self) -> None:
        if not -1.0 <= self.threshold <= 1.0:
            raise ConfigurationError(f"threshold must be in [-1, 1], got {self.threshold}")
        if self.max_workflows < 1:
            raise ConfigurationError(f"max_workflows must be >= 1, got {self.max_workflows}")
        if self.window is not None and self.window < 1:
            raise ConfigurationError(f"window must be None or >= 1, got {self.window}")


@dataclass(frozen=True)
class LeafSequence:
    """The leaf sequence of a workflow, reduced to what similarity needs."""

    tools: tuple[str | None, ...]
    """Tool name for call leaves, ``None`` for instruction leaves."""
    texts: tuple[str | None, ...]
    """Instruction text for instruction leaves, ``None`` for call leaves."""
    vectors: np.ndarray
    """Unit-norm float32 embeddings, one row per leaf (zero rows for calls)."""

    def __len__(self) -> int:
        return len(self.tools)

    def key(self) -> tuple[tuple[str | None, str | None], ...]:
        """Identity of the sequence, for exact-duplicate exclusion."""
        return tuple(zip(self.tools, self.texts, strict=True))

    def tail(self, k: int | None) -> LeafSequence:
        """Return the last ``k`` leaves (all of them for ``None``)."""
        if k is None or k >= len(self):
            return self
        return LeafSequence(self.tools[-k:], self.texts[-k:], self.vectors[-k:])


def leaf_texts(workflow: Workflow) -> tuple[tuple[str | None, ...], tuple[str | None, ...]]:
    """Return ``(tools, texts)`` of a workflow's leaves, the inputs of :class:`LeafSequence`."""
    tools: list[str | None] = []
    texts: list[str | None] = []
    for leaf in workflow.leaves():
        if isinstance(leaf, CallStep):
            tools.append(leaf.name)
            texts.append(None)
        else:
            tools.append(None)
            texts.append(leaf.text)
    return tuple(tools), tuple(texts)


def similarity_matrix(current: LeafSequence, memory: LeafSequence) -> np.ndarray:
    """Return the ``len(current) x len(memory)`` float32 step-similarity matrix."""
    sim = (current.vectors @ memory.vectors.T).astype(np.float32)
    cur_instr = np.array([t is None for t in current.tools], dtype=bool)
    mem_instr = np.array([t is None for t in memory.tools], dtype=bool)
    sim[~np.outer(cur_instr, mem_instr)] = 0.0
    for j, tool in enumerate(current.tools):
        if tool is not None:
            sim[j] = np.fromiter((t == tool for t in memory.tools), dtype=np.float32)
    return sim


def best_alignment(sim: np.ndarray) -> tuple[float, tuple[int, ...]] | None:
    """Best order-preserving alignment of all rows to distinct increasing columns.

    Args:
        sim: An ``n x m`` similarity matrix.

    Returns:
        ``(mean similarity, alignment)`` or ``None`` when ``m < n``.
    """
    n, m = sim.shape
    if n == 0 or m < n:
        return None
    neg = float("-inf")
    # best[j][i]: best total of rows 0..j with row j on column i; back[j][i]: column of row j-1.
    best = [[neg] * m for _ in range(n)]
    back = [[-1] * m for _ in range(n)]
    for i in range(m):
        best[0][i] = float(sim[0, i])
    for j in range(1, n):
        run, arg = neg, -1
        for i in range(m):
            if i - 1 >= j - 1 and best[j - 1][i - 1] > run:
                run, arg = best[j - 1][i - 1], i - 1
            if arg >= 0:
                best[j][i] = run + float(sim[j, i])
                back[j][i] = arg
    end, total = -1, neg
    for i in range(n - 1, m):
        if best[n - 1][i] > total:
            end, total = i, best[n - 1][i]
    path = [end]
    for j in range(n - 1, 0, -1):
        path.append(back[j][path[-1]])
    return total / n, tuple(reversed(path))


def reference_match(
    current: LeafSequence,
    memory: Iterable[tuple[str, LeafSequence]],
    config: MatchConfig = MatchConfig(),
) -> list[Match]:
    """Retrieve memory workflows by brute force over every one of them.

    Args:
        current: The current workflow's leaf sequence.
        memory: ``(workflow_id, leaf sequence)`` pairs.
        config: Threshold, limit, exclusions and window.

    Returns:
        At most ``config.max_workflows`` matches, best score first, ties by workflow id.
    """
    query = current.tail(config.window)
    key = current.key()
    found: list[Match] = []
    for workflow_id, leaves in memory:
        if config.exclude_identical and leaves.key() == key:
            continue
        result = best_alignment(similarity_matrix(query, leaves))
        if result is None:
            continue
        score, alignment = result
        if score <= config.threshold:
            continue
        if config.require_continuation and alignment[-1] >= len(leaves) - 1:
            continue
        found.append(Match(workflow_id, score, alignment))
    return rank_matches(found, config.max_workflows)


def rank_matches(matches: Sequence[Match], limit: int) -> list[Match]:
    """Order matches best first (ties by id) and keep ``limit`` of them."""
    return sorted(matches, key=lambda m: (-m.score, m.workflow_id))[:limit]
