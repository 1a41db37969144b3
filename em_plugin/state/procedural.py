"""The procedural memory: H-EPM's tool-transition graph with instruction contexts on its edges.

Nodes are tools (plus a start node, ``None``, before a workflow's first call); an edge ``a -> b``
exists when some stored workflow calls ``b`` right after ``a`` (instruction leaves in between do
not break a transition). Its weight is H-EPM's (Li et al., "Experience-Evolving Multi-Turn
Tool-Use Agent with Hybrid Episodic-Procedural Memory", §4.2)::

    w'(a, b) = N(a, b) + c * sum_k 1 / n_k(a, b)      w(a, b) = w'(a, b) / sum_b' w'(a, b')

where ``N`` counts the workflows with the transition, ``n_k`` is the number of calls of the
``k``-th of them (shorter successful workflows weigh more: the efficiency term) and ``c = 1``.

Each edge keeps the instruction contexts it was seen under (H-EPM's episodic state on edges).
:meth:`ProceduralGraph.next_tools` ranks the successors of the last call: edges whose best
context cosine with the current instruction reaches ``similarity_threshold`` come first, by that
similarity (H-EPM's episodic mode); the others follow by weight (its procedural mode).

The graph is updated incrementally: :meth:`~ProceduralGraph.add` and
:meth:`~ProceduralGraph.remove` keep it in step with saves and deletes.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from em_plugin.errors import ConfigurationError
from em_plugin.state.episodes import ContextTable, Episode
from em_plugin.suggest.types import Evidence

__all__ = ["DEFAULT_C", "DEFAULT_SIMILARITY", "ProceduralGraph", "Transition"]

DEFAULT_C = 1.0
DEFAULT_SIMILARITY = 0.8

Node = str | None


@dataclass(frozen=True)
class Transition:
    """A ranked successor of the last call."""

    tool: str
    """The next tool."""
    weight: float
    """Normalised H-EPM weight ``w(a, b)`` in [0, 1]."""
    similarity: float | None
    """Best cosine between the current instruction and the edge's contexts (None: no context)."""
    mode: Literal["episodic", "procedural"]
    """``episodic`` when ranked by context similarity, ``procedural`` when by weight."""
    evidence: tuple[Evidence, ...] = ()
    """Workflows with the transition and the position of ``tool`` in them."""


@dataclass
class _Use:
    calls: int
    positions: tuple[int, ...]
    contexts: tuple[int, ...]


@dataclass
class _Edge:
    uses: dict[str, _Use] = field(default_factory=dict)
    inverse_sum: float = 0.0

    def raw(self, c: float) -> float:
        return len(self.uses) + c * self.inverse_sum


class ProceduralGraph:
    """One scope's tool-transition graph.

    Args:
        contexts: The scope's context table (vectors of the edges' instruction contexts).
        c: Weight of the efficiency term.
        similarity_threshold: Context cosine from which an edge ranks by similarity.

    Raises:
        ConfigurationError: When ``c`` is negative or the threshold is outside [-1, 1].
    """

    def __init__(
        self,
        contexts: ContextTable | None = None,
        *,
        c: float = DEFAULT_C,
        similarity_threshold: float = DEFAULT_SIMILARITY,
    ) -> None:
        if c < 0:
            raise ConfigurationError(f"c must be >= 0, got {c}")
        if not -1.0 <= similarity_threshold <= 1.0:
            raise ConfigurationError(
                f"similarity_threshold must be in [-1, 1], got {similarity_threshold}"
            )
        self.contexts = contexts
        self.c = c
        self.similarity_threshold = similarity_threshold
        self._out: dict[Node, dict[str, _Edge]] = {}
        self._edges_of: dict[str, list[tuple[Node, str]]] = {}
        self._order: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._edges_of)

    def __contains__(self, workflow_id: object) -> bool:
        return workflow_id in self._edges_of

    def tools(self) -> list[str]:
        """Every tool that is the target of an edge, in first-seen order."""
        return sorted(self._order, key=self._order.__getitem__)

    # ------------------------------------------------------------------------------ updates

    def add(self, episode: Episode, context_ids: Sequence[int] | None = None) -> None:
        """Add a workflow's transitions (replacing the workflow if it is already in the graph).

        Args:
            episode: The workflow's episode.
            context_ids: Context id per leaf (from the scope's :class:`ContextTable`).
        """
        self.remove(episode.workflow_id)
        ids = list(context_ids) if context_ids is not None else [-1] * len(episode)
        calls = [(i, t) for i, t in enumerate(episode.tools) if t is not None]
        grouped: dict[tuple[Node, str], list[int]] = {}
        previous: Node = None
        for position, tool in calls:
            grouped.setdefault((previous, tool), []).append(position)
            previous = tool
        for (a, b), positions in grouped.items():
            edge = self._out.setdefault(a, {}).setdefault(b, _Edge())
            contexts = tuple(sorted({ids[p] for p in positions if ids[p] >= 0}))
            edge.uses[episode.workflow_id] = _Use(len(calls), tuple(positions), contexts)
            edge.inverse_sum += 1.0 / len(calls)
            self._order.setdefault(b, len(self._order))
        self._edges_of[episode.workflow_id] = list(grouped)

    def remove(self, workflow_id: str) -> bool:
        """Remove a workflow's transitions; return whether it was in the graph."""
        edges = self._edges_of.pop(workflow_id, None)
        if edges is None:
            return False
        for a, b in edges:
            edge = self._out[a][b]
            use = edge.uses.pop(workflow_id)
            edge.inverse_sum -= 1.0 / use.calls
            if not edge.uses:
                del self._out[a][b]
                if not self._out[a]:
                    del self._out[a]
        return True

    # ------------------------------------------------------------------------------ weights

    def raw_weight(self, a: Node, b: str) -> float:
        """``w'(a, b) = N + c * sum 1/n_k``; 0 when there is no such edge."""
        edge = self._out.get(a, {}).get(b)
        return edge.raw(self.c) if edge is not None else 0.0

    def successors(self, a: Node) -> dict[str, float]:
        """Normalised weights ``w(a, b)`` of ``a``'s out-edges (they sum to 1)."""
        raw = {b: e.raw(self.c) for b, e in self._out.get(a, {}).items()}
        total = sum(raw.values())
        return {b: w / total for b, w in raw.items()} if total > 0 else {}

    def weight(self, a: Node, b: str) -> float:
        """Normalised weight ``w(a, b)``; 0 when there is no such edge."""
        return self.successors(a).get(b, 0.0)

    def tool_scores(self) -> dict[str, float]:
        """Each tool's total incoming raw weight (how much memory relies on it)."""
        scores: dict[str, float] = {}
        for edges in self._out.values():
            for b, edge in edges.items():
                scores[b] = scores.get(b, 0.0) + edge.raw(self.c)
        return scores

    # ------------------------------------------------------------------------------ ranking

    def next_tools(
        self,
        last: Node,
        context: np.ndarray | None = None,
        *,
        k: int = 2,
        exclude: Collection[str] = (),
        evidence: int = 3,
    ) -> list[Transition]:
        """Rank the successors of ``last`` (``None``: the first call of a workflow).

        Args:
            last: The last call's tool.
            context: Unit vector of the current instruction; ``None`` ranks by weight only.
            k: How many to return (H-EPM suggests two).
            exclude: Tools not to return.
            evidence: Workflows cited per transition.

        Returns:
            At most ``k`` transitions, best first.
        """
        weights = self.successors(last)
        ranked = []
        for tool, weight in weights.items():
            if tool in exclude:
                continue
            edge = self._out[last][tool]
            sims = self._use_similarities(edge, context)
            best = max(sims.values()) if sims else None
            mode: Literal["episodic", "procedural"] = (
                "episodic"
                if best is not None and best >= self.similarity_threshold
                else "procedural"
            )
            ranked.append(
                Transition(tool, weight, best, mode, self._evidence(edge, sims, evidence))
            )
        ranked.sort(
            key=lambda t: (
                t.mode != "episodic",
                -(t.similarity or 0.0) if t.mode == "episodic" else -t.weight,
                self._order.get(t.tool, 0),
            )
        )
        return ranked[:k]

    def _use_similarities(self, edge: _Edge, context: np.ndarray | None) -> dict[str, float]:
        if context is None or self.contexts is None:
            return {}
        sims = {}
        for workflow_id, use in edge.uses.items():
            if use.contexts:
                vectors = np.stack([self.contexts.vector(i) for i in use.contexts])
                sims[workflow_id] = float(np.max(vectors @ context))
        return sims

    def _evidence(self, edge: _Edge, sims: dict[str, float], limit: int) -> tuple[Evidence, ...]:
        chosen = sorted(
            edge.uses.items(), key=lambda item: (-sims.get(item[0], 0.0), item[1].calls, item[0])
        )[:limit]
        return tuple(
            Evidence(workflow_id, use.positions[0], round(sims.get(workflow_id, 0.0), 6))
            for workflow_id, use in chosen
        )
