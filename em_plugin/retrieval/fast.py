"""The fast exact matcher: index pruning with a sound upper bound, then vectorised DP.

It returns exactly what :func:`em_plugin.retrieval.reference.reference_match` returns over the same
leaf sequences (same workflows, scores, alignments). Three stages:

1. **Upper bound per memory workflow**, ``UB_i = (1/n) Σ_j max_{s ∈ S_i} sim(c_j, s)``: a call
   leaf adds 1 when its tool occurs in ``W_i`` (tool postings); an instruction leaf adds the best
   cosine among ``W_i``'s instruction texts, read from the top-k of the query text's cosines
   with the scope's distinct texts (one pass over their vectors) and those texts' postings.
   Workflows none of the scanned texts reach get the cosine of the last scanned text, which
   bounds every text not scanned. ``UB_i`` bounds every alignment's mean, so workflows with
   ``UB_i <= T`` (or fewer leaves than the query) are pruned.
2. **Vectorised upper DP** over batches of candidates, best bound first, with per-pair upper
   similarities (those cosines; texts outside the top-k get the k-th value). It bounds the best
   score among alignments that leave a continuation.
3. **Exact verification** in bound order, in small groups: the reference's similarity matrix
   (the same float32 product of the same arrays) and a batched DP with the reference's tie rules
   and float64 accumulation order (:mod:`em_plugin.retrieval.alignment`), until ``max_workflows``
   matches are confirmed and no remaining bound can beat the k-th match (a bound equal to its
   score still can when the id sorts first, since ties are broken by id).

Floating point: numpy's ``einsum``, BLAS and the reference compute a cosine in different
orders. Each is within ``(d + 2)·2⁻²⁴`` of the true value for unit vectors, so every bound is
widened by :func:`similarity_margin`; pruning never drops a workflow the reference would
return. A query of call leaves only needs no widening: sums of 0/1 similarities are exact in
float64.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

import numpy as np

from em_plugin.retrieval.alignment import exact_alignments, last_row
from em_plugin.retrieval.reference import LeafSequence, Match, MatchConfig, rank_matches

__all__ = ["Grown", "MatchIndex", "PostingsView", "fast_match", "similarity_margin"]

#: First top-k per instruction leaf; grown while postings stay within budget.
_FIRST_K = 1024
#: Postings scanned per instruction leaf before falling back to the k-th cosine as bound.
_MIN_BUDGET = 20_000
#: Candidates scored by the first vectorised DP batch; later batches grow 4x.
_FIRST_BATCH = 64
_MAX_BATCH = 4096
#: Largest similarity block (query leaves x candidates x width) scored at once.
_MAX_CELLS = 2_000_000
# Query-row codes that no stored leaf code (int32: tools >= 0, texts < 0) can equal.
_INSTRUCTION = -(2**40)
_UNKNOWN = 2**40


class PostingsView(Protocol):
    """Key -> slots postings (tool ids or text ids to the slots that use them)."""

    def counts(self, keys: np.ndarray) -> np.ndarray:
        """Return how many slots each key has (dead slots included)."""
        ...

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(which, slots)``: each posting's index into ``keys`` and its slot."""
        ...


class Grown(Protocol):
    """A growable array: :meth:`view` is its filled part."""

    def view(self) -> np.ndarray:
        """Return the filled part."""
        ...


class MatchIndex(Protocol):
    """What the fast matcher reads of one scope's leaf storage (the per-scope state's arrays).

    Slots hold workflows; a slot's leaves are int32 *codes* in one flat array (a call leaf is its
    tool id ``>= 0``, an instruction leaf ``-(text id) - 1``); ``vectors`` is a FAISS index over
    the scope's distinct instruction texts. The matcher only reads these arrays, so retrieval
    stays below the state package that owns them.
    """

    @property
    def dimension(self) -> int:
        """The embedding dimension."""
        ...

    @property
    def texts(self) -> list[str]:
        """The distinct instruction texts (text id -> text)."""
        ...

    @property
    def tool_ids(self) -> dict[str, int]:
        """Tool name -> tool id."""
        ...

    @property
    def slot_ids(self) -> list[str | None]:
        """Per slot, its workflow id (``None``: a dead slot)."""
        ...

    @property
    def vectors(self) -> Any:
        """FAISS index over the texts' unit vectors (row = text id)."""
        ...

    @property
    def offsets(self) -> Grown:
        """Per slot, where its leaves start in :attr:`codes`."""
        ...

    @property
    def lengths(self) -> Grown:
        """Per slot, its leaf count."""
        ...

    @property
    def alive(self) -> Grown:
        """Per slot, whether it holds a live workflow."""
        ...

    @property
    def codes(self) -> Grown:
        """Per leaf, its code (tool id, or ``-(text id) - 1``)."""
        ...

    @property
    def slot_sequences(self) -> Grown:
        """Per slot, its leaf sequence's id in the sequence table."""
        ...

    @property
    def tool_postings(self) -> PostingsView:
        """Tool id -> slots."""
        ...

    @property
    def text_postings(self) -> PostingsView:
        """Text id -> slots."""
        ...

    def __len__(self) -> int:
        """Live workflows."""
        ...

    def table(self) -> np.ndarray:
        """Return the instruction vectors (one row per text)."""
        ...

    def slot_codes(self, slot: int) -> np.ndarray:
        """Return the leaf codes stored in a slot."""
        ...

    def sequence_of(self, leaves: LeafSequence) -> int | None:
        """Return the id of a leaf sequence in the sequence table (``None``: never indexed)."""
        ...


def similarity_margin(dimension: int) -> float:
    """Return the widening that covers float32 rounding between two cosine computations."""
    gamma = 1.01 * (dimension + 2) * 2.0**-24
    return 2.0 * gamma + 1e-9


class _Query:
    """The query side of one match: leaf kinds, tool ids and per-text upper cosines."""

    def __init__(self, query: LeafSequence, scope: MatchIndex) -> None:
        self.n = len(query)
        self.tool_ids = np.array(
            [_INSTRUCTION if t is None else scope.tool_ids.get(t, _UNKNOWN) for t in query.tools],
            np.int64,
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


class _Nearest:
    """The scope texts nearest each query text, best first, for any ``k``.

    The cosines with every stored text are computed once, in one pass over the vectors, and
    each ``k`` is a partial sort of them. A FAISS top-``k`` search scanned every vector again
    for each ``k`` the budget grew to (three scans of 280,000 vectors at 300,000 workflows),
    and kept a heap of ``k`` entries per text (most of its time at 10,000 workflows). The
    cosines differ from FAISS's in the last bits only (a float32 sum in another order), which
    the bounds' margin covers (:func:`similarity_margin`).
    """

    def __init__(self, scope: MatchIndex, vectors: np.ndarray) -> None:
        table = scope.table()
        # einsum, not BLAS: a matrix-vector product this small is memory-bound, and BLAS
        # threads on a busy machine made it 5-20x slower (docs/state.md).
        self.cosines = np.stack([np.einsum("ij,j->i", table, v) for v in vectors])
        self.negated = -self.cosines

    def top(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Return the ``k`` best cosines and text ids per query text, best first (ties by id)."""
        texts = self.cosines.shape[1]
        ids = (
            np.argpartition(self.negated, k - 1, axis=1)[:, :k]
            if k < texts
            else np.broadcast_to(np.arange(texts), self.cosines.shape)
        )
        values = np.take_along_axis(self.negated, ids, axis=1)
        order = np.lexsort((ids, values), axis=1)
        ids = np.take_along_axis(ids, order, axis=1).astype(np.int64)
        return np.take_along_axis(self.cosines, ids, axis=1), ids


def _upper_bounds(q: _Query, scope: MatchIndex) -> np.ndarray:
    """Return ``UB_i`` per slot (stage 1) and fill ``q.upper`` for stage 2."""
    slots = len(scope.slot_ids)
    total = np.zeros(slots, dtype=np.float64)
    tools = Counter(t for t in q.tool_ids.tolist() if 0 <= t < _UNKNOWN)
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
    nearest = _Nearest(scope, q.text_vectors)
    while True:
        cosines, ids = nearest.top(k)
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
    q: _Query, scope: MatchIndex, slots: np.ndarray, config: MatchConfig, margin: float
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
    q: _Query, scope: MatchIndex, slots: np.ndarray, lengths: np.ndarray, config: MatchConfig
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
    best = last_row(sims)
    last = lengths[:, None] - (1 if config.require_continuation else 0)
    ends = (columns >= q.n - 1) & (columns < last)
    return np.where(ends, best, -np.inf).max(axis=1) / q.n


def _exact_sims(q: _Query, query: LeafSequence, scope: MatchIndex, slot: int) -> np.ndarray:
    """The reference's :func:`~em_plugin.retrieval.reference.similarity_matrix`, bit for bit.

    The instruction block is the very same product of the very same arrays the reference
    computes (the query's vectors and the memory workflow's vectors with zero rows for calls),
    so the float32 values are identical; the masks and call rows only depend on codes.
    """
    codes = scope.slot_codes(slot)
    instr = codes < 0
    vectors = np.zeros((len(codes), scope.dimension), dtype=np.float32)
    vectors[instr] = scope.table()[-codes[instr].astype(np.int64) - 1]
    sim = (query.vectors @ vectors.T).astype(np.float32)
    sim[~np.outer(q.tool_ids == _INSTRUCTION, instr)] = 0.0
    calls = np.flatnonzero(q.tool_ids != _INSTRUCTION)
    sim[calls] = codes[None, :] == q.tool_ids[calls, None]
    return sim


def _verify(
    q: _Query, query: LeafSequence, scope: MatchIndex, slots: list[int], config: MatchConfig
) -> list[Match]:
    """Stage 3: the reference's decisions for a group of candidates, computed exactly."""
    results = exact_alignments([_exact_sims(q, query, scope, slot) for slot in slots])
    found = []
    for slot, result in zip(slots, results, strict=True):
        if result is None or result[0] <= config.threshold:
            continue
        score, alignment = result
        if config.require_continuation and alignment[-1] >= int(scope.lengths.view()[slot]) - 1:
            continue
        found.append(Match(scope.slot_ids[slot] or "", score, alignment))
    return found


class _TopK:
    """The best ``limit`` confirmed matches so far, and whether a bound can still enter."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.found: list[Match] = []
        self.kth: tuple[float, str] | None = None

    def add(self, matches: list[Match]) -> None:
        self.found.extend(matches)
        if len(self.found) >= self.limit:
            self.found = rank_matches(self.found, self.limit)
            last = self.found[-1]
            self.kth = (last.score, last.workflow_id)

    def below(self, bound: float) -> bool:
        """True when no workflow whose score is at most ``bound`` can enter."""
        return self.kth is not None and bound < self.kth[0]

    def loses_tie(self, bound: float, workflow_id: str) -> bool:
        """True when a score of at most ``bound`` cannot beat the k-th match, ties by id."""
        return self.kth is not None and bound <= self.kth[0] and workflow_id > self.kth[1]


def _batches(order: np.ndarray) -> list[np.ndarray]:
    out, start, size = [], 0, _FIRST_BATCH
    while start < len(order):
        out.append(order[start : start + size])
        start += size
        size = min(_MAX_BATCH, 4 * size)
    return out


def fast_match(
    current: LeafSequence, scope: MatchIndex | None, config: MatchConfig | None = None
) -> list[Match]:
    """Retrieve from one scope exactly as the reference matcher would.

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
    q = _Query(query, scope)
    # Sums of 0/1 call similarities are exact in float64: no widening when there is no cosine.
    margin = similarity_margin(scope.dimension) if (q.text_row >= 0).any() else 0.0
    bounds = _upper_bounds(q, scope)
    possible = scope.alive.view() & (scope.lengths.view() >= q.n)
    candidates = np.flatnonzero(possible & (bounds + margin > config.threshold))
    order = candidates[np.argsort(-bounds[candidates], kind="stable")]
    # The current sequence's entry in the sequence table: a slot is identical iff it points to it.
    identical = scope.sequence_of(current) if config.exclude_identical else None
    sequences = scope.slot_sequences.view()
    top = _TopK(config.max_workflows)
    group = max(16, config.max_workflows)
    for batch in _batches(order):
        if top.below(float(bounds[batch[0]]) + margin):
            break
        upper = _upper_scores(q, scope, batch, config, margin)
        ranked = np.argsort(-upper, kind="stable").tolist()
        pending: list[int] = []
        for position, i in enumerate(ranked):
            bound = float(upper[i])
            stop = bound <= config.threshold or top.below(bound)
            slot = int(batch[i])
            if not stop and not top.loses_tie(bound, scope.slot_ids[slot] or ""):
                if identical is None or int(sequences[slot]) != identical:
                    pending.append(slot)
            if pending and (stop or len(pending) == group or position == len(ranked) - 1):
                top.add(_verify(q, query, scope, pending, config))
                pending = []
            if stop:
                break
    return rank_matches(top.found, config.max_workflows)
