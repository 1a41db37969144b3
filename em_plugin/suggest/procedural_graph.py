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

The graph is an index over the scope's arrays (slots, tools, contexts, call counts); it keeps
only its edge uses, keyed by the scope's slots. The scope tells it of every save and delete
(:meth:`~ProceduralGraph.added`, :meth:`~ProceduralGraph.removed`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

import numpy as np

from em_plugin.errors import ConfigurationError
from em_plugin.state.arrays import GrowArray, gather_index
from em_plugin.state.episodes import ContextTable
from em_plugin.state.scope_index import ScopeIndex
from em_plugin.types import Evidence

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


class ProceduralGraph:
    """One scope's tool-transition graph, an index over the scope's arrays.

    Its slots, tools, contexts and call counts are the scope's
    (:class:`~em_plugin.state.scope_index.ScopeIndex`); it keeps only the edge uses. The
    scope's live slots are indexed in one vectorised pass at construction, and :meth:`added`
    appends a save without rebuilding anything.

    Args:
        scope: The scope's arrays.
        contexts: The scope's context table (vectors of the edges' instruction contexts).
        c: Weight of the efficiency term.
        similarity_threshold: Context cosine from which an edge ranks by similarity.
        textless: Treat every instruction as context 0 (the ``use_text=False`` ablation).

    Raises:
        ConfigurationError: When ``c`` is negative or the threshold is outside [-1, 1].
    """

    def __init__(
        self,
        scope: ScopeIndex,
        contexts: ContextTable | None = None,
        *,
        c: float = DEFAULT_C,
        similarity_threshold: float = DEFAULT_SIMILARITY,
        textless: bool = False,
    ) -> None:
        if c < 0:
            raise ConfigurationError(f"c must be >= 0, got {c}")
        if not -1.0 <= similarity_threshold <= 1.0:
            raise ConfigurationError(
                f"similarity_threshold must be in [-1, 1], got {similarity_threshold}"
            )
        self.scope = scope
        self.contexts = contexts
        self.c = c
        self.similarity_threshold = similarity_threshold
        self.textless = textless
        self._reset()
        self._index(np.flatnonzero(scope.alive.view()))

    def _reset(self) -> None:
        # One row per (workflow, edge) "use": its scope slot, source (-1: start), target, the
        # target's first position under that edge, and the use's distinct contexts (a slice of
        # _use_ctx). Uses are in slot order.
        self._use = {name: GrowArray(np.int64) for name in ("slot", "a", "b", "first")}
        self._ctx_start = GrowArray(np.int64)
        self._ctx_count = GrowArray(np.int64)
        self._use_ctx = GrowArray(np.int32)
        self._dead_uses = 0
        self._built = 0  # uses [0, _built) are in the CSR by source; the rest are a tail
        self._by_source = np.zeros(0, dtype=np.int64)
        self._source_ptr = np.zeros(1, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.scope)

    def __contains__(self, workflow_id: object) -> bool:
        return workflow_id in self.scope.id_slots

    def tools(self) -> list[str]:
        """Every tool that is the target of an edge of a held workflow, in first-seen order."""
        live = self.scope.alive.view()[self._use["slot"].view()]
        names = self.scope.tools
        held = np.bincount(self._use["b"].view()[live], minlength=len(names)) > 0
        return [names[t] for t in np.flatnonzero(held).tolist()]

    # ------------------------------------------------------------------------------ updates

    def added(self, first_slot: int, count: int) -> None:
        """Index the scope's slots ``[first_slot, first_slot + count)``, just stored."""
        self._index(np.arange(first_slot, first_slot + count, dtype=np.int64))

    def _index(self, slots: np.ndarray) -> None:
        """Index the edge uses of scope slots (ascending, after every slot indexed so far)."""
        count = len(slots)
        if count == 0:
            return
        scope = self.scope
        lengths = scope.lengths.view()[slots].astype(np.int64)
        index = gather_index(scope.offsets.view()[slots], lengths)
        tok = scope.codes.view()[index].astype(np.int64)
        ctx = scope.context_codes.view()[index].astype(np.int64)
        if self.textless:
            ctx = np.where(ctx >= 0, 0, -1)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        slot_of = np.repeat(np.arange(count, dtype=np.int64), lengths)
        calls = np.flatnonzero(tok >= 0)
        c_slot, c_tool = slot_of[calls], tok[calls]
        c_pos = calls - starts[c_slot]
        # The previous call of the same workflow; a workflow's first call follows the start.
        previous = np.concatenate(([-1], c_tool[:-1]))[: len(c_tool)]
        previous[np.concatenate(([True], c_slot[1:] != c_slot[:-1]))[: len(c_tool)]] = -1
        # Calls come in (workflow, position) order; a stable sort by (workflow, edge) groups a
        # workflow's uses of an edge with their positions ascending.
        bits = (len(scope.tools) + 1).bit_length()
        if 2 * bits + max(1, count.bit_length()) <= 63:
            edge = (c_slot << (2 * bits)) | ((previous + 1) << bits) | c_tool
            order = np.argsort(edge, kind="stable")
        else:
            order = np.lexsort((c_pos, c_tool, previous, c_slot))
        g_slot, g_a, g_b = c_slot[order], previous[order], c_tool[order]
        g_pos, g_ctx = c_pos[order], ctx[calls][order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (g_slot[1:] != g_slot[:-1]) | (g_a[1:] != g_a[:-1]) | (g_b[1:] != g_b[:-1])
        group = np.cumsum(new) - 1
        heads = np.flatnonzero(new)
        # Uses in (workflow, first position) order: a deterministic layout for any build.
        use_order = np.argsort(g_slot[heads] * (int(lengths.max()) + 1) + g_pos[heads])
        rank = np.empty(len(heads), dtype=np.int64)
        rank[use_order] = np.arange(len(heads))
        heads = heads[use_order]
        with_ctx = g_ctx >= 0
        pairs = np.sort(rank[group[with_ctx]] << 32 | g_ctx[with_ctx])
        pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))[: len(pairs)]]
        pair_use, pair_ctx = pairs >> 32, pairs & 0xFFFFFFFF
        use_base = self._use["slot"].size
        self._ctx_start.extend(
            self._use_ctx.size + np.searchsorted(pair_use, np.arange(len(heads)))
        )
        self._ctx_count.extend(np.bincount(pair_use, minlength=len(heads)))
        self._use_ctx.extend(pair_ctx)
        self._use["slot"].extend(slots[g_slot[heads]])
        self._use["a"].extend(g_a[heads])
        self._use["b"].extend(g_b[heads])
        self._use["first"].extend(g_pos[heads])
        tail = self._use["slot"].size - self._built
        if use_base == 0 or tail > max(4096, self._built // 16):
            self._index_sources()

    def _index_sources(self) -> None:
        sources = self._use["a"].view() + 1  # the start node (-1) first
        self._by_source = np.argsort(sources, kind="stable")
        self._source_ptr = np.zeros(len(self.scope.tools) + 2, dtype=np.int64)
        np.cumsum(
            np.bincount(sources, minlength=len(self.scope.tools) + 1), out=self._source_ptr[1:]
        )
        self._built = len(sources)

    def removed(self, slot: int) -> None:
        """Forget the edge uses of a slot the scope just marked dead."""
        # Uses are appended in slot order and compaction keeps it: a binary search, not a scan.
        slots = self._use["slot"].view()
        self._dead_uses += int(np.searchsorted(slots, slot, "right") - np.searchsorted(slots, slot))
        if self._dead_uses > max(1000, self._use["slot"].size // 2):
            self._compact()

    def _compact(self) -> None:
        """Keep only the live slots' uses (in the same order)."""
        keep = np.flatnonzero(self.scope.alive.view()[self._use["slot"].view()])
        uses = {name: grow.view()[keep].copy() for name, grow in self._use.items()}
        starts, counts = self._ctx_start.view()[keep], self._ctx_count.view()[keep]
        ctx = self._use_ctx.view()[gather_index(starts, counts)].copy()
        self._reset()
        for name, values in uses.items():
            self._use[name].extend(values)
        self._ctx_start.extend(np.concatenate(([0], np.cumsum(counts)[:-1])))
        self._ctx_count.extend(counts)
        self._use_ctx.extend(ctx)
        self._index_sources()

    def _uses_from(self, a: Node) -> np.ndarray:
        """Live uses whose edge starts at ``a``."""
        source = -1 if a is None else self.scope.tool_ids.get(a)
        if source is None:
            return np.zeros(0, dtype=np.int64)
        key = source + 1
        found = (
            self._by_source[self._source_ptr[key] : self._source_ptr[key + 1]]
            if key + 1 < len(self._source_ptr)
            else np.zeros(0, dtype=np.int64)
        )
        tail = self._built + np.flatnonzero(self._use["a"].view()[self._built :] == source)
        found = np.concatenate((found, tail)) if len(tail) else found
        return found[self.scope.alive.view()[self._use["slot"].view()[found]]]

    def _edges(self, a: Node) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(uses, targets, group per use, raw weight per target)`` of ``a``'s out-edges."""
        uses = self._uses_from(a)
        targets, group = np.unique(self._use["b"].view()[uses], return_inverse=True)
        calls = self.scope.calls.view()[self._use["slot"].view()[uses]].astype(np.float64)
        raw = np.bincount(group, minlength=len(targets)) + self.c * np.bincount(
            group, weights=1.0 / calls, minlength=len(targets)
        )
        return uses, targets, group.reshape(-1), raw

    # ------------------------------------------------------------------------------ weights

    def raw_weight(self, a: Node, b: str) -> float:
        """``w'(a, b) = N + c * sum 1/n_k``; 0 when there is no such edge."""
        _, targets, _, raw = self._edges(a)
        found = np.flatnonzero(targets == self.scope.tool_ids.get(b, -2))
        return float(raw[found[0]]) if len(found) else 0.0

    def successors(self, a: Node) -> dict[str, float]:
        """Normalised weights ``w(a, b)`` of ``a``'s out-edges (they sum to 1)."""
        _, targets, _, raw = self._edges(a)
        total = float(raw.sum())
        if total <= 0:
            return {}
        names = self.scope.tools
        return {names[t]: float(w) / total for t, w in zip(targets.tolist(), raw, strict=True)}

    def weight(self, a: Node, b: str) -> float:
        """Normalised weight ``w(a, b)``; 0 when there is no such edge."""
        return self.successors(a).get(b, 0.0)

    def tool_scores(self) -> dict[str, float]:
        """Each tool's total incoming raw weight (how much memory relies on it)."""
        slots = self._use["slot"].view()
        live = self.scope.alive.view()[slots]
        targets = self._use["b"].view()[live]
        calls = self.scope.calls.view()[slots[live]].astype(np.float64)
        names = self.scope.tools
        size = len(names)
        uses = np.bincount(targets, minlength=size)
        scores = uses + self.c * np.bincount(targets, weights=1.0 / calls, minlength=size)
        held = uses > 0
        return {names[t]: float(scores[t]) for t in np.flatnonzero(held).tolist()}

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
        uses, targets, group, raw = self._edges(last)
        total = float(raw.sum())
        if total <= 0:
            return []
        weights = raw / total
        use_sims, has_sim = self._use_similarities(uses, context)
        best = np.full(len(targets), -np.inf)
        np.maximum.at(best, group[has_sim], use_sims[has_sim])
        has_best = np.bincount(group[has_sim], minlength=len(targets)) > 0
        ranked: list[tuple[tuple[bool, float, int], int]] = []
        for i, target in enumerate(targets.tolist()):
            if self.scope.tools[target] in exclude:
                continue
            episodic = bool(has_best[i]) and best[i] >= self.similarity_threshold
            score = -float(best[i]) if episodic else -float(weights[i])
            ranked.append(((not episodic, score, target), i))
        ranked.sort()
        out = []
        for (procedural, _, target), i in ranked[:k]:
            members = np.flatnonzero(group == i)
            out.append(
                Transition(
                    self.scope.tools[target],
                    float(weights[i]),
                    float(best[i]) if has_best[i] else None,
                    "procedural" if procedural else "episodic",
                    self._evidence(uses[members], use_sims[members], has_sim[members], evidence),
                )
            )
        return out

    def _use_similarities(
        self, uses: np.ndarray, context: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per use, its best context cosine with ``context``, and whether it has a context."""
        sims = np.zeros(len(uses), dtype=np.float64)
        counts = self._ctx_count.view()[uses]
        if context is None or self.contexts is None or not len(uses):
            return sims, np.zeros(len(uses), dtype=bool)
        has = counts > 0
        starts = self._ctx_start.view()[uses]
        owner = np.repeat(np.arange(len(uses)), counts)
        ids = self._use_ctx.view()[gather_index(starts, counts)]
        # One product per distinct context (not per use), so that uses sharing a context tie
        # exactly and the tie-breaks (calls, then id) decide.
        values = self.contexts.similarities_of(context, ids)
        best = np.full(len(uses), -np.inf)
        np.maximum.at(best, owner, values.astype(np.float64))
        sims[has] = best[has]
        return sims, has

    def _evidence(
        self, uses: np.ndarray, sims: np.ndarray, has: np.ndarray, limit: int
    ) -> tuple[Evidence, ...]:
        if limit <= 0 or not len(uses):
            return ()
        calls = self.scope.calls.view()[self._use["slot"].view()[uses]]
        scores = np.where(has, sims, 0.0)
        order = np.lexsort((calls, -scores))
        # Ties at the cut are broken by workflow id: keep every use tied with the last one.
        cut = order[: min(limit, len(order))]
        last = cut[-1]
        tied = order[(scores[order] == scores[last]) & (calls[order] == calls[last])]
        pool = np.union1d(cut, tied)
        ids = self.scope.slot_ids
        slots = self._use["slot"].view()[uses]
        firsts = self._use["first"].view()[uses]
        chosen = sorted(
            pool.tolist(),
            key=lambda u: (-float(scores[u]), int(calls[u]), ids[int(slots[u])] or ""),
        )[:limit]
        return tuple(
            Evidence(ids[int(slots[u])] or "", int(firsts[u]), round(float(scores[u]), 6))
            for u in chosen
        )
