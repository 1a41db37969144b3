"""Vectorised alignment DP with exactly the tie rules of the reference.

:func:`em_plugin.retrieval.reference.best_alignment` loops in Python over one matrix. The functions
here run the same recurrence on many candidates at once (padded with ``-inf`` columns) and give the
same totals, ends and alignments bit for bit: the running maximum keeps the earliest column
reaching it (strict improvement), the end is the earliest column with the best total, and totals
are float64 sums of the float32 similarities accumulated row by row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Alignment = tuple[float, tuple[int, ...]]


def last_row(sims: np.ndarray) -> np.ndarray:
    """Return the DP's last row: best total of rows ``0..n-1`` with row ``n-1`` on each column.

    Args:
        sims: ``n x B x M`` float64 similarities (``-inf`` in padding columns).
    """
    best = sims[0]
    shifted = np.empty_like(best)
    for j in range(1, len(sims)):
        shifted[:, 0] = -np.inf
        shifted[:, 1:] = best[:, :-1]
        best = np.maximum.accumulate(shifted, axis=1) + sims[j]
    return best


def exact_alignments(sims: Sequence[np.ndarray]) -> list[Alignment | None]:
    """Best alignment of each ``n x m_b`` matrix (same ``n``), as the reference finds it.

    Args:
        sims: Float32 similarity matrices with the same number of rows.

    Returns:
        ``(mean similarity, alignment)`` per matrix, ``None`` where ``m_b < n`` or ``n == 0``.
    """
    out: list[Alignment | None] = [None] * len(sims)
    usable = [b for b, s in enumerate(sims) if 0 < s.shape[0] <= s.shape[1]]
    if not usable:
        return out
    n = sims[usable[0]].shape[0]
    widths = np.array([sims[b].shape[1] for b in usable])
    width = int(widths.max())
    rows = np.full((n, len(usable), width), -np.inf)
    for i, b in enumerate(usable):
        rows[:, i, : widths[i]] = sims[b]
    columns = np.arange(-1, width - 1)
    back = np.empty((n, len(usable), width), dtype=np.int64)
    best = rows[0]
    shifted = np.empty_like(best)
    before = np.empty_like(best)
    for j in range(1, n):
        shifted[:, 0] = -np.inf
        shifted[:, 1:] = best[:, :-1]
        run = np.maximum.accumulate(shifted, axis=1)
        before[:, 0] = -np.inf
        before[:, 1:] = run[:, :-1]
        back[j] = np.maximum.accumulate(np.where(shifted > before, columns, -1), axis=1)
        best = run + rows[j]
    ends = n - 1 + np.argmax(best[:, n - 1 :], axis=1)
    for i, b in enumerate(usable):
        path = [int(ends[i])]
        for j in range(n - 1, 0, -1):
            path.append(int(back[j, i, path[-1]]))
        out[b] = (float(best[i, ends[i]]) / n, tuple(reversed(path)))
    return out


def exact_alignment(sim: np.ndarray) -> Alignment | None:
    """Vectorised :func:`~em_plugin.retrieval.reference.best_alignment` with identical results.

    Args:
        sim: An ``n x m`` similarity matrix.

    Returns:
        ``(mean similarity, alignment)`` or ``None`` when ``m < n`` or ``n == 0``.
    """
    return exact_alignments([sim])[0]
