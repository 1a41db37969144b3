"""Clusters of a scope's instruction contexts: what lets a large scope weigh level 0 quickly.

The continuation model weighs every stored state by its context's cosine with the current
instruction (:mod:`em_plugin.suggest.continuation`). Exactly, that is a product with every
context vector per suggestion: a million vectors (1.6 GB read) at 300,000 workflows. Above a
documented size the model approximates it with these clusters (docs/suggestions.md, "Large
scopes"):

* **Clusters** are spherical k-means centroids (FAISS, trained on a sample, deterministic seed),
  ``round(sqrt(n))`` of them for ``n`` contexts (at most :data:`MAX_CLUSTERS`); every context is
  assigned to its nearest centroid, and contexts added later are assigned when first asked for.
* **A stratified sample** of up to :data:`PER_CLUSTER` contexts per cluster, with a copy of
  their vectors, stands for its cluster: its cosines with the query give the z-score's mean and
  spread (weighted by cluster size) and each cluster's mean vote factor.
* **The clusters nearest the query are probed**: their contexts get their exact cosine.

Ids are the context table's and never change meaning (a table that follows a scope never
reuses an id), so an assignment stays valid; released ids keep theirs.
"""

from __future__ import annotations

import logging
import math
import threading

import numpy as np

from em_plugin.state.episodes import ContextTable

__all__ = ["MAX_CLUSTERS", "PER_CLUSTER", "BackgroundClusters", "ContextClusters"]

_log = logging.getLogger(__name__)

#: Most clusters built (1,024 at a million contexts: about 1,000 contexts each).
MAX_CLUSTERS = 1024
#: Sampled contexts per cluster.
PER_CLUSTER = 16
#: Training points per centroid (FAISS's k-means samples the rest away).
_TRAIN_PER_CLUSTER = 32


class ContextClusters:
    """Centroids, the assignment of every context id, and a stratified sample.

    Built by :meth:`build`; safe to read from several threads (:meth:`cover` takes a lock).

    Args:
        centroids: ``(k, d)`` unit centroids.
        assignment: Cluster of each id in ``[0, len(assignment))``; ``-1``: none (free).
        sample: Sampled ids.
        sample_vectors: Their vectors, ``(len(sample), d)``.
        moments: The assigned vectors' count, sum ``(d,)`` and sum of outer products ``(d, d)``.
    """

    def __init__(
        self,
        centroids: np.ndarray,
        assignment: np.ndarray,
        sample: np.ndarray,
        sample_vectors: np.ndarray,
        moments: tuple[int, np.ndarray, np.ndarray],
    ) -> None:
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self._assignment = np.asarray(assignment, dtype=np.int32)
        self.built_for = len(self._assignment)
        self.sample = np.asarray(sample, dtype=np.int64)
        self.sample_vectors = np.ascontiguousarray(sample_vectors, dtype=np.float32)
        self.sample_clusters = self._assignment[self.sample].astype(np.int64)
        k = len(self.centroids)
        assigned = self._assignment[self._assignment >= 0]
        per_cluster = np.bincount(self.sample_clusters, minlength=k).astype(np.float64)
        # Each sampled context stands for its cluster's share: weight = size / sampled.
        self.sizes = np.bincount(assigned, minlength=k).astype(np.float64)
        self.sample_weights = (self.sizes / np.maximum(per_cluster, 1))[self.sample_clusters]
        self.sampled_per_cluster = per_cluster
        self._lock = threading.Lock()
        self._members = _members(self._assignment, k)
        self._moments = moments

    def __len__(self) -> int:
        return len(self.centroids)

    @classmethod
    def build(cls, vectors: np.ndarray, live: np.ndarray, *, seed: int = 0) -> ContextClusters:
        """Cluster the live rows of ``vectors`` (FAISS spherical k-means) and sample them.

        Args:
            vectors: Unit vectors by id, ``(ids, d)`` float32.
            live: The ids to cluster (the others are assigned ``-1``).
            seed: Seed of the k-means and of the sample.

        Returns:
            The clusters.

        Raises:
            ValueError: When fewer than 2 ids are live.
        """
        import faiss  # the build is rare and large: FAISS's k-means and its BLAS search

        live = np.asarray(live, dtype=np.int64)
        if len(live) < 2:
            raise ValueError(f"clustering needs at least 2 live contexts, got {len(live)}")
        k = min(MAX_CLUSTERS, max(2, int(round(math.sqrt(len(live))))))
        dimension = vectors.shape[1]
        rng = np.random.default_rng(seed)
        train_ids = np.sort(rng.choice(live, min(len(live), k * _TRAIN_PER_CLUSTER), replace=False))
        kmeans = faiss.Kmeans(dimension, k, niter=10, seed=seed, spherical=True, verbose=False)
        kmeans.cp.min_points_per_centroid = 1  # a small scope (tests) is not worth a warning
        kmeans.train(np.ascontiguousarray(vectors[train_ids], dtype=np.float32))
        centroids = np.ascontiguousarray(kmeans.centroids, dtype=np.float32)
        assignment = np.full(len(vectors), -1, dtype=np.int32)
        assignment[live] = _nearest(centroids, vectors, live)
        # Up to PER_CLUSTER ids per cluster, the same ones for the same seed: a random key
        # per live id, the smallest keys of each cluster.
        keys = rng.random(len(live))
        order = np.lexsort((keys, assignment[live]))
        ranked = assignment[live][order]
        starts = np.searchsorted(ranked, ranked, side="left")
        chosen = order[(np.arange(len(order)) - starts) < PER_CLUSTER]
        sample = np.sort(live[chosen])
        return cls(centroids, assignment, sample, vectors[sample], _moments(vectors, live))

    def cover(self, vectors: np.ndarray, live: np.ndarray) -> None:
        """Assign the ids added since the build (``len(vectors)`` ids now; ``live`` among them).

        Args:
            vectors: Unit vectors by id, the table's current rows.
            live: The live ids that are not yet assigned may be among these.
        """
        if len(vectors) <= len(self._assignment):
            return
        with self._lock:
            old = len(self._assignment)
            if len(vectors) <= old:
                return
            grown = np.full(len(vectors), -1, dtype=np.int32)
            grown[:old] = self._assignment
            new = live[live >= old]
            if len(new):
                grown[new] = _nearest(self.centroids, vectors, new)
                count, total, outer = _moments(vectors, new)
                held, held_total, held_outer = self._moments
                self._moments = (held + count, held_total + total, held_outer + outer)
            self._members = _members(grown, len(self.centroids))
            self._assignment = grown

    @property
    def assignment(self) -> np.ndarray:
        """Cluster of each id (``-1``: none); read-only."""
        view = self._assignment.view()
        view.flags.writeable = False
        return view

    def spread(self, query: np.ndarray) -> tuple[float, float]:
        """Return the mean and standard deviation of the assigned contexts' cosines with ``query``.

        From the vectors' first and second moments: ``mean = q . mu``, ``var = q' M q - mean^2``.
        """
        count, total, outer = self._moments
        q = np.asarray(query, dtype=np.float64)
        mean = float(q @ total) / count
        return mean, float(np.sqrt(max(float(q @ outer @ q) / count - mean * mean, 0.0)))

    def nearest(self, query: np.ndarray, count: int) -> np.ndarray:
        """Return the ``count`` clusters whose centroids are nearest ``query`` (ascending ids)."""
        sims = self.centroids @ np.asarray(query, dtype=np.float32)
        count = min(count, len(sims))
        return np.sort(np.argpartition(-sims, count - 1)[:count])

    def members(self, clusters: np.ndarray) -> np.ndarray:
        """Return the ids assigned to ``clusters``, ascending."""
        starts, ids = self._members
        parts = [ids[starts[c] : starts[c + 1]] for c in np.asarray(clusters).tolist()]
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


class BackgroundClusters:
    """A context table's clusters, built on a thread when first due, rebuilt as it doubles.

    Until a build is done :meth:`get` returns ``None`` (the caller stays exact). A failed build
    is logged and tried again only once the table holds twice as many ids.
    """

    def __init__(self) -> None:
        self._clusters: ContextClusters | None = None
        self._rewrites = -1
        self._thread: threading.Thread | None = None
        self._retry_from = 0
        self._lock = threading.Lock()

    def get(self, table: ContextTable, *, start: bool = True) -> ContextClusters | None:
        """Return clusters covering every id of ``table`` (``None``: none built for it yet).

        Args:
            table: The context table (its vectors and held ids).
            start: Start a build when one is due (none yet, a released id reused, or twice
                the ids the clusters were built for).
        """
        clusters = self._clusters
        fresh = clusters is not None and self._rewrites == table.rewrites
        due = clusters is None or not fresh or table.capacity > 2 * clusters.built_for
        if start and due:
            self._start(table)
        if clusters is None or not fresh:
            return None
        if table.capacity > len(clusters.assignment):
            clusters.cover(table.rows(), table.live_ids())
        return clusters

    def wait(self, timeout: float | None = None) -> None:
        """Wait up to ``timeout`` s for a running build."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _start(self, table: ContextTable) -> None:
        with self._lock:
            running = self._thread is not None and self._thread.is_alive()
            if running or table.capacity < self._retry_from:
                return
            self._thread = threading.Thread(
                target=self._build,
                args=(table.rows(), table.live_ids(), table.rewrites),
                name="em-plugin context clusters",
                daemon=True,
            )
            self._thread.start()

    def _build(self, rows: np.ndarray, live: np.ndarray, rewrites: int) -> None:
        try:
            clusters = ContextClusters.build(rows, live)
        except Exception:  # noqa: BLE001 - a failed build leaves the caller exact, never failing
            _log.warning(
                "clustering a large scope's contexts failed: ranking stays exact until the "
                "scope holds twice as many",
                exc_info=True,
            )
            self._retry_from = 2 * len(rows)
            return
        self._clusters, self._rewrites = clusters, rewrites


def _nearest(centroids: np.ndarray, vectors: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Return the nearest centroid of each id's vector (by inner product), in chunks."""
    import faiss

    index = faiss.IndexFlatIP(centroids.shape[1])
    index.add(centroids)
    out = np.empty(len(ids), dtype=np.int32)
    chunk = 16_384  # a chunk's gathered rows are 25 MB at 384 dimensions, not the whole table
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        _, found = index.search(np.ascontiguousarray(vectors[part], dtype=np.float32), 1)
        out[start : start + len(part)] = found[:, 0]
    return out


def _moments(vectors: np.ndarray, ids: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """Return the count, sum and sum of outer products of the vectors of ``ids`` (float64)."""
    dimension = vectors.shape[1]
    total, outer = np.zeros(dimension), np.zeros((dimension, dimension))
    for start in range(0, len(ids), 16_384):  # 50 MB of float64 rows at a time
        part = vectors[ids[start : start + 16_384]].astype(np.float64)
        total += part.sum(axis=0)
        outer += part.T @ part
    return len(ids), total, outer


def _members(assignment: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the assignment as CSR: ``(starts, ids)``, ids of cluster ``c`` in a run."""
    assigned = np.flatnonzero(assignment >= 0)
    clusters = assignment[assigned]
    # Cluster ids fit 16 bits: numpy's stable sort of them is a radix sort (a million ids in
    # milliseconds, run again whenever saves add contexts).
    order = np.argsort(clusters.astype(np.uint16), kind="stable")
    starts = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(clusters, minlength=k), out=starts[1:])
    return starts, assigned[order]
