"""Level 0 of the continuation model in a large scope: text weights from context clusters.

Exactly, level 0 weighs every stored state by ``exp(beta * clip(z))`` of its context's cosine
with the current instruction: a product with every context vector of the scope per ranking
(:mod:`em_plugin.suggest.continuation`). From ``ContinuationConfig.approximate_from`` contexts,
the model reads :class:`~em_plugin.state.context_clusters.ContextClusters` instead
(docs/suggestions.md, "Large scopes"):

* the z-score's mean and spread come from the clusters' stratified sample, each sampled
  context weighing its cluster's size over the sampled count;
* the ``probes`` clusters nearest the query are weighed exactly, context by context;
* every other cluster's states get the cluster's mean factor (over its sampled contexts), by
  ``(cluster, tool, later request)`` sums that are kept between rankings.

:class:`ClusteredFactor` answers ``factor[ids]`` like the exact model's array, so the higher
agreement levels, exclusions and evidence read it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from em_plugin.state.context_clusters import ContextClusters
from em_plugin.state.episodes import ContextTable

__all__ = ["ClusterLayout", "ClusteredFactor", "clustered_factor"]

#: Lookups at least this long read a dense factor per id (built once per ranking).
_DENSE_FROM = 50_000
#: Largest key space of the (cluster, tool, later) sums counted densely.
_DENSE_SUMS = 1 << 22
#: Contexts outside the probed clusters a lookup weighs exactly (more: their clusters' means).
_EXACT_UP_TO = 20_000
#: The same for the states an agreement level >= 1 counts (:meth:`ClusteredFactor.prefetch`):
#: a level's votes decide the ranking, the evidence's weights only which positions are cited.
_COUNTED_UP_TO = 400_000


class ClusteredFactor:
    """The vote factor per context id, as ``factor[ids]`` (``-1``: no context, factor 1).

    Exact for the contexts of the probed clusters and for any lookup of at most
    :data:`_EXACT_UP_TO` other contexts (the states a ranking weighs one by one: agreement
    levels >= 1, evidence); a larger lookup gives the others their cluster's mean factor.

    Args:
        clusters: The clusters (covering every context id).
        contexts: The context table.
        query: The current instruction's unit vector.
        shape: ``(mean, spread, beta, cap)``: ``factor = exp(beta * clip((cos - mean) / spread,
            -cap, cap))``.
        means: Per cluster, the mean factor of its sampled contexts, and the same of the
            factors raised to the later-request power.
        fallback: ``(factor, later factor)`` of an unassigned context: the sample's means.
        probed: The probed clusters.
    """

    def __init__(
        self,
        clusters: ContextClusters,
        contexts: ContextTable,
        query: np.ndarray,
        shape: tuple[float, float, float, float],
        means: tuple[np.ndarray, np.ndarray],
        fallback: tuple[float, float],
        probed: np.ndarray,
    ) -> None:
        self.clusters = clusters
        self.assignment = clusters.assignment
        self._contexts, self._query, self._shape = contexts, query, shape
        self.mean_factor, self.mean_later = means
        self.fallback = fallback
        self.probed = probed
        # By cluster, with two rows after the clusters: "no context" (factor 1, at index -2
        # once ``assignment`` is extended by -2 for id -1) and "unassigned" (index -1).
        self._by_cluster = np.concatenate((self.mean_factor, [1.0, fallback[0]]))
        self._assigned = np.append(self.assignment, -2)
        self._dense: np.ndarray | None = None
        self.exact_ids = np.zeros(0, np.int64)
        self.exact = np.zeros(0)
        self._cosines = np.zeros(0)  # of exact_ids: the evidence scores read them
        self._add_exact(clusters.members(probed))

    def factor_of(self, cosines: np.ndarray) -> np.ndarray:
        """Return the factors of cosines (``nan``: released, as cosine 0)."""
        mean, spread, beta, cap = self._shape
        return np.exp(beta * np.clip((np.nan_to_num(cosines) - mean) / spread, -cap, cap))

    def __getitem__(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) >= _DENSE_FROM:
            return self._dense_factor()[ids]
        unique, inverse = np.unique(ids, return_inverse=True)
        known = self._exact_of(unique)
        missing = unique[np.isnan(known) & (unique >= 0)]
        if 0 < len(missing) <= _EXACT_UP_TO:
            self._add_exact(missing)
            known = self._exact_of(unique)
        out = np.where(np.isnan(known), self._by_cluster[self._assigned[unique]], known)
        return out[inverse]

    def prefetch(self, ids: np.ndarray) -> None:
        """Compute the exact factors of the contexts ``ids`` (up to ``_COUNTED_UP_TO`` new ones).

        An agreement level's votes are counted with them even when the level holds more
        states than a lookup weighs exactly (after two instructions: most of the scope).
        """
        unique = np.unique(np.asarray(ids, dtype=np.int64))
        unique = unique[unique >= 0]
        missing = unique[np.isnan(self._exact_of(unique))]
        if 0 < len(missing) <= _COUNTED_UP_TO:
            self._add_exact(missing)

    def cosine(self, context_id: int) -> float:
        """Return the exact cosine of a context with the query (an evidence score's part)."""
        ids = np.array([context_id], dtype=np.int64)
        if np.isnan(self._exact_of(ids)[0]):
            self._add_exact(ids)
        return float(self._exact_of(ids, self._cosines)[0])

    def _exact_of(self, ids: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
        """Return the exact factors (or ``values``) known for ``ids`` (``nan``: not computed)."""
        values = self.exact if values is None else values
        out = np.full(len(ids), np.nan)
        if len(self.exact_ids):
            at = np.minimum(np.searchsorted(self.exact_ids, ids), len(self.exact_ids) - 1)
            hit = self.exact_ids[at] == ids
            out[hit] = values[at[hit]]
        return out

    def _add_exact(self, ids: np.ndarray) -> None:
        """Compute the exact factors of ``ids`` (none known yet) and keep them."""
        if not len(ids):
            return
        cosines = self._contexts.similarities_of(self._query, ids)
        merged = np.concatenate((self.exact_ids, ids))
        order = np.argsort(merged, kind="stable")
        self.exact_ids = merged[order]
        self.exact = np.concatenate((self.exact, self.factor_of(cosines)))[order]
        self._cosines = np.concatenate((self._cosines, cosines))[order]
        self._dense = None

    def _dense_factor(self) -> np.ndarray:
        dense = self._dense
        if dense is None:
            dense = self._by_cluster[self._assigned]  # the last entry is id -1's: factor 1
            dense[self.exact_ids] = self.exact
            self._dense = dense
        return dense

    def by_cluster(self, power_later: bool) -> np.ndarray:
        """Return the factor per layout row: clusters, then no context, then unassigned.

        Probed clusters are 0: their states are weighed one by one.
        """
        means = self.mean_later if power_later else self.mean_factor
        rows = np.concatenate((means, [1.0, self.fallback[1 if power_later else 0]]))
        rows[self.probed] = 0.0
        return rows


def clustered_factor(
    clusters: ContextClusters,
    contexts: ContextTable,
    query: np.ndarray,
    *,
    beta: float,
    cap: float,
    power: float,
    probes: int,
) -> ClusteredFactor | None:
    """Return the approximate vote factors of a query (``None``: the sample has no spread).

    Args:
        clusters: The scope's context clusters (covering every context id).
        contexts: The context table.
        query: The current instruction's unit vector.
        beta: ``context_weight``.
        cap: ``z_cap``.
        power: ``next_request_weight``.
        probes: Clusters weighed exactly.
    """
    query = np.asarray(query, dtype=np.float32)
    sims = np.einsum("ij,j->i", clusters.sample_vectors, query).astype(np.float64)
    weights = clusters.sample_weights
    total = float(weights.sum())
    mean, spread = clusters.spread(query)
    if spread < 1e-9:
        return None
    sampled = np.exp(beta * np.clip((sims - mean) / spread, -cap, cap))
    later = sampled**power
    k = len(clusters)
    counts = np.maximum(clusters.sampled_per_cluster, 1)
    mean_factor = np.bincount(clusters.sample_clusters, weights=sampled, minlength=k) / counts
    mean_later = np.bincount(clusters.sample_clusters, weights=later, minlength=k) / counts
    fallback = (float(weights @ sampled) / total, float(weights @ later) / total)
    return ClusteredFactor(
        clusters,
        contexts,
        query,
        (mean, spread, beta, cap),
        (mean_factor, mean_later),
        fallback,
        clusters.nearest(query, probes),
    )


@dataclass(frozen=True)
class ClusterLayout:
    """Level 0's groups by cluster: sums per ``(cluster, tool, later)`` and runs per cluster.

    Layout rows are the clusters, then "no context" (row ``k``), then "unassigned" (``k + 1``).

    Attributes:
        rows: Per sum, its layout row.
        tools: Per sum, its tool.
        later: Per sum, whether its votes answered a later request.
        sums: Per sum, the states it counts.
        starts: Group runs: the groups of layout row ``r`` are ``groups[starts[r]:starts[r+1]]``.
        groups: Group indices by layout row.
        group_sums: Per group, the sum that counts it.
    """

    rows: np.ndarray
    tools: np.ndarray
    later: np.ndarray
    sums: np.ndarray
    starts: np.ndarray
    groups: np.ndarray
    group_sums: np.ndarray

    @classmethod
    def of(
        cls,
        assignment: np.ndarray,
        k: int,
        tools: np.ndarray,
        contexts: np.ndarray,
        later: np.ndarray,
        sizes: np.ndarray,
    ) -> ClusterLayout:
        """Lay out level 0's groups (``tools``, state ``contexts``, ``later``, ``sizes``)."""
        cluster = np.where(contexts >= 0, assignment[np.maximum(contexts, 0)], k)
        cluster = np.where(cluster < 0, k + 1, cluster).astype(np.int64)
        width = int(tools.max(initial=0)) + 1
        keys = (cluster * width + tools) * 2 + later
        span = (k + 2) * width * 2
        if span <= _DENSE_SUMS:  # a bincount over every possible key, not a sort of the groups
            dense = np.bincount(keys, weights=sizes, minlength=span)
            held = np.bincount(keys, minlength=span) > 0
            unique = np.flatnonzero(held)
            position = np.cumsum(held) - 1
            inverse, sums = position[keys], dense[unique]
        else:
            unique, inverse = np.unique(keys, return_inverse=True)
            sums = np.bincount(inverse, weights=sizes, minlength=len(unique))
        # Layout rows fit 16 bits: a stable radix sort.
        order = np.argsort(cluster.astype(np.uint16), kind="stable")
        starts = np.zeros(k + 3, dtype=np.int64)
        np.cumsum(np.bincount(cluster, minlength=k + 2), out=starts[1:])
        pairs = unique // 2
        return cls(pairs // width, pairs % width, unique % 2, sums, starts, order, inverse)

    def groups_of(self, rows: np.ndarray) -> np.ndarray:
        """Return the groups of layout rows."""
        parts = [self.groups[self.starts[r] : self.starts[r + 1]] for r in rows.tolist()]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def counts(
        self, factor: ClusteredFactor, size: int, excluded_groups: np.ndarray | None
    ) -> np.ndarray:
        """Return the unprobed clusters' weighted votes per tool (probed ones count 0).

        Args:
            factor: The ranking's factors.
            size: Tools (the bincount's length).
            excluded_groups: Groups to take one state from per occurrence (an excluded
                workflow's own states), or ``None``.
        """
        sums = self.sums
        if excluded_groups is not None and len(excluded_groups):
            sums = sums.copy()  # integer counts: an excluded vote leaves an exact 0
            np.subtract.at(sums, self.group_sums[excluded_groups], 1)
        weights = np.where(
            self.later == 1,
            factor.by_cluster(True)[self.rows],
            factor.by_cluster(False)[self.rows],
        )
        return np.bincount(self.tools, weights=sums * weights, minlength=size)
