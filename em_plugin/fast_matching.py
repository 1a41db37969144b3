"""The fast exact matcher: index pruning with a sound upper bound, then vectorised DP.

It returns exactly what :func:`em_plugin.matching.reference_match` returns over the same
leaf sequences (same workflows, scores, alignments). Three stages:

1. **Upper bound per memory workflow**, ``UB_i = (1/n) Σ_j max_{s ∈ S_i} sim(c_j, s)``: a call
   leaf adds 1 when its tool occurs in ``W_i`` (tool postings); an instruction leaf adds the best
   cosine among ``W_i``'s instruction texts, read from a FAISS top-k search over the scope's
   distinct texts and their postings. Workflows none of the scanned texts reach get the cosine
   of the last scanned text, which bounds every text not scanned. ``UB_i`` bounds every
   alignment's mean, so workflows with ``UB_i <= T`` (or fewer leaves than the query) are pruned.
2. **Vectorised upper DP** over batches of candidates, best bound first, with per-pair upper
   similarities (FAISS values; texts outside the top-k get the k-th value). It bounds the best
   score among alignments that leave a continuation.
3. **Exact verification** in bound order with the reference's own similarity matrix and a DP
   with the reference's tie rules and float64 accumulation order, until ``max_workflows``
   matches are confirmed and no remaining bound can reach the k-th score (ties included, since
   ties are broken by id).

Floating point: FAISS, BLAS and the reference compute a cosine in different orders. Each is
within ``(d + 2)·2⁻²⁴`` of the true value for unit vectors, so every bound is widened by
:func:`similarity_margin`; pruning never drops a workflow the reference would return.
"""

from __future__ import annotations

import heapq
from collections import Counter

import numpy as np

from em_plugin.matching import LeafSequence, Match, MatchConfig, rank_matches, similarity_matrix
from em_plugin.scope_index import ScopeIndex

#: First FAISS top-k per instruction leaf; grown while postings stay within budget.
_FIRST_K = 1024
#: Postings scanned per instruction leaf before falling back to the k-th cosine as bound.
_MIN_BUDGET = 20_000
#: Candidates scored by the first vectorised DP batch; later batches grow 4x.
_FIRST_BATCH = 64
_MAX_BATCH = 4096
#: Largest similarity block (query leaves x candidates x width) scored at once.
_MAX_CELLS = 2_000_000


def similarity_margin(dimension: int) -> float:
    """Return the widening that covers float32 rounding between two cosine computations."""
    gamma = 1.01 * (dimension + 2) * 2.0**-24
    return 2.0 * gamma + 1e-9


def exact_alignment(sim: np.ndarray) -> tuple[float, tuple[int, ...]] | None:
    """Vectorised :func:`~em_plugin.matching.best_alignment` with identical results.

    The running maximum keeps the earliest column reaching it (strict improvement), the end is
    the earliest column with the best total, and totals are float64 sums of the float32
    similarities accumulated row by row, as in the reference.

    Args:
        sim: An ``n x m`` similarity matrix.

    Returns:
        ``(mean similarity, alignment)`` or ``None`` when ``m < n`` or ``n == 0``.
    """
    n, m = sim.shape
    if n == 0 or m < n:
        return None
    rows = sim.astype(np.float64)
    columns = np.arange(-1, m - 1)
    back = np.empty((n, m), dtype=np.int64)
    best = rows[0]
    shifted = np.empty(m)
    before = np.empty(m)
    for j in range(1, n):
        shifted[0] = -np.inf
        shifted[1:] = best[:-1]
        run = np.maximum.accumulate(shifted)
        before[0] = -np.inf
        before[1:] = run[:-1]
        back[j] = np.maximum.accumulate(np.where(shifted > before, columns, -1))
        best = run + rows[j]
    end = n - 1 + int(np.argmax(best[n - 1 :]))
    path = [end]
    for j in range(n - 1, 0, -1):
        path.append(int(back[j, path[-1]]))
    return float(best[end]) / n, tuple(reversed(path))


class _Query:
    """The query side of one match: leaf kinds, tool ids and per-text upper cosines."""

    def __init__(self, query: LeafSequence, scope: ScopeIndex) -> None:
        self.n = len(query)
        self.tool_ids = np.array(
            [scope.tool_ids.get(t, -1) if t is not None else -2 for t in query.tools], np.int64
        )
        distinct: dict[str, int] = {}
        self.text_row = np.full(self.n, -1, dtype=np.int64)
        for j, text in enumerate(query.texts):
            if query.tools[j] is None:
                self.text_row[j] = distinct.setdefault(text or "", len(distinct))
        first = [int(np.flatnonzero(self.text_row == r)[0]) for r in range(len(distinct))]
        self.text_vectors = np.ascontiguousarray(query.vectors[first], dtype=np.float32)
        self.text_count = np.bincount(self.text_row[self.text_row >= 0], minlength=len(distinct))
        # upper[r, t]: upper cosine of distinct query text r and scope text t; column U: calls.
        self.upper = np.zeros((len(distinct), len(scope.texts) + 1), dtype=np.float32)


def _upper_bounds(q: _Query, scope: ScopeIndex, margin: float) -> np.ndarray:
    """Return ``UB_i`` per slot (stage 1) and fill ``q.upper`` for stage 2."""
    slots = len(scope.slot_ids)
    total = np.zeros(slots, dtype=np.float64)
    tools = Counter(t for t in q.tool_ids.tolist() if t >= 0)
    if tools:
        keys = np.fromiter(tools, np.int64)
        which, hit = scope.tool_postings.lookup(keys)
        weights = np.fromiter(tools.values(), np.float64)[which]
        total += np.bincount(hit, weights=weights, minlength=slots)
    texts = scope.vectors.ntotal
    if len(q.text_count) == 0 or texts == 0:
        return total / q.n
    budget = max(_MIN_BUDGET, slots // 4)
    k = min(texts, _FIRST_K)
    while True:
        cosines, ids = scope.vectors.search(q.text_vectors, k)
        sizes = scope.text_postings.counts(ids.ravel()).reshape(ids.shape)
        cuts = np.maximum(1, (np.cumsum(sizes, axis=1) <= budget).sum(axis=1))
        grow = (cuts == k) & (cosines[:, -1] > 0)
        if k == texts or not grow.any():
            break
        k = min(texts, 8 * k)
    for r in range(len(q.text_count)):
        tail = cosines[r, -1] if k < texts else -np.inf
        q.upper[r, :-1] = tail
        q.upper[r, ids[r]] = cosines[r]
        cut = int(cuts[r])
        radius = cosines[r, cut] if cut < k else tail
        bound = np.full(slots, max(float(radius), 0.0), dtype=np.float64)
        which, hit = scope.text_postings.lookup(ids[r, :cut])
        np.maximum.at(bound, hit, np.maximum(cosines[r, :cut], 0.0)[which].astype(np.float64))
        total += q.text_count[r] * bound
    return total / q.n


def _upper_scores(
    q: _Query, scope: ScopeIndex, slots: np.ndarray, config: MatchConfig, margin: float
) -> np.ndarray:
    """Stage 2: an upper bound of each candidate's reference score (``-inf`` if impossible).

    Candidates are scored in groups of similar length, so padding stays small and the
    ``n x group x width`` similarity block stays within :data:`_MAX_CELLS`.
    """
    lengths = scope.lengths.view()[slots].astype(np.int64)
    order = np.argsort(lengths, kind="stable")
    upper = np.empty(len(slots))
    start = 0
    while start < len(order):
        width = int(lengths[order[start]])
        stop = start + 1
        while stop < len(order):
            wider = int(lengths[order[stop]])
            if wider > 2 * width + 32 or q.n * (stop + 1 - start) * wider > _MAX_CELLS:
                break
            stop += 1
        group = order[start:stop]
        upper[group] = _upper_group(q, scope, slots[group], lengths[group], config)
        start = stop
    return upper + margin


def _upper_group(
    q: _Query, scope: ScopeIndex, slots: np.ndarray, lengths: np.ndarray, config: MatchConfig
) -> np.ndarray:
    width = int(lengths.max())
    columns = np.arange(width)
    valid = columns < lengths[:, None]
    index = np.where(valid, scope.offsets.view()[slots][:, None] + columns, 0)
    codes = scope.codes.view()[index]
    text_index = np.where(codes < 0, -codes.astype(np.int64) - 1, q.upper.shape[1] - 1)
    sims = np.empty((q.n, len(slots), width))
    for j in range(q.n):
        if q.text_row[j] >= 0:
            sims[j] = q.upper[q.text_row[j]][text_index]
        else:
            sims[j] = codes == q.tool_ids[j]
    sims[:, ~valid] = -np.inf
    best = sims[0]
    shifted = np.empty_like(best)
    for j in range(1, q.n):
        shifted[:, 0] = -np.inf
        shifted[:, 1:] = best[:, :-1]
        best = np.maximum.accumulate(shifted, axis=1) + sims[j]
    last = lengths[:, None] - (1 if config.require_continuation else 0)
    ends = (columns >= q.n - 1) & (columns < last)
    return np.where(ends, best, -np.inf).max(axis=1) / q.n


def _verify(query: LeafSequence, scope: ScopeIndex, slot: int, config: MatchConfig) -> Match | None:
    """Stage 3: the reference's decision for one candidate, computed exactly."""
    leaves = scope.leaves(slot)
    result = exact_alignment(similarity_matrix(query, leaves))
    if result is None:
        return None
    score, alignment = result
    if score <= config.threshold:
        return None
    if config.require_continuation and alignment[-1] >= len(leaves) - 1:
        return None
    return Match(scope.slot_ids[slot] or "", score, alignment)


def _batches(order: np.ndarray) -> list[np.ndarray]:
    out, start, size = [], 0, _FIRST_BATCH
    while start < len(order):
        out.append(order[start : start + size])
        start += size
        size = min(_MAX_BATCH, 4 * size)
    return out


def fast_match(
    current: LeafSequence, scope: ScopeIndex | None, config: MatchConfig | None = None
) -> list[Match]:
    """Retrieve from one scope exactly as :func:`~em_plugin.matching.reference_match` would.

    Args:
        current: The current workflow's leaf sequence (vectors from the scope's embedder).
        scope: The scope's index; ``None`` for an empty scope.
        config: Threshold, limit, exclusions and window.

    Returns:
        At most ``config.max_workflows`` matches, best score first, ties by workflow id.
    """
    config = config or MatchConfig()
    query = current.tail(config.window)
    if len(query) == 0 or scope is None or len(scope) == 0:
        return []
    margin = similarity_margin(scope.dimension)
    q = _Query(query, scope)
    bounds = _upper_bounds(q, scope, margin)
    possible = scope.alive.view() & (scope.lengths.view() >= q.n)
    candidates = np.flatnonzero(possible & (bounds + margin > config.threshold))
    order = candidates[np.argsort(-bounds[candidates], kind="stable")]
    identical = scope.lookup_codes(current) if config.exclude_identical else None
    limit = config.max_workflows
    found: list[Match] = []
    top: list[float] = []  # min-heap of the best `limit` confirmed scores
    for batch in _batches(order):
        if len(top) == limit and bounds[batch[0]] + margin < top[0]:
            break
        upper = _upper_scores(q, scope, batch, config, margin)
        for i in np.argsort(-upper, kind="stable").tolist():
            if upper[i] <= config.threshold or (len(top) == limit and upper[i] < top[0]):
                break
            slot = int(batch[i])
            if identical is not None and np.array_equal(scope.slot_codes(slot), identical):
                continue
            match = _verify(query, scope, slot, config)
            if match is None:
                continue
            found.append(match)
            if len(top) < limit:
                heapq.heappush(top, match.score)
            elif match.score > top[0]:
                heapq.heapreplace(top, match.score)
    return rank_matches(found, limit)
