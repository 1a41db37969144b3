"""Time calls of the public API from several threads, for the scale benchmarks.

``benchmarks/ladder.py`` and ``benchmarks/concurrency.py`` time the same way: each call on its
own thread, and the wall time of all of them for the calls per second. Every benchmark prints
the machine's :func:`load_average` beside its figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import numpy as np

_Q = TypeVar("_Q")

__all__ = ["load_average", "summary", "time_calls"]


def time_calls(
    call: Callable[[_Q], object], queries: Sequence[_Q], threads: int
) -> tuple[list[float], float]:
    """Call ``call`` once per query from ``threads`` threads (1: on this one).

    Args:
        call: What is timed, given one query.
        queries: The queries, each asked once.
        threads: How many threads call at once.

    Returns:
        Each call's seconds (in query order) and the wall seconds of all of them.
    """

    def timed(query: _Q) -> float:
        start = time.perf_counter()
        call(query)
        return time.perf_counter() - start

    start = time.perf_counter()
    if threads == 1:
        times = [timed(q) for q in queries]
    else:
        with ThreadPoolExecutor(threads) as pool:
            times = list(pool.map(timed, queries))
    return times, time.perf_counter() - start


def summary(times: Sequence[float], wall: float) -> dict[str, float]:
    """Return p50, p95 and p99 in ms and calls per second (``per_s``) of timed calls."""
    ms = np.asarray(times) * 1000
    return {
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
        "p99": float(np.percentile(ms, 99)),
        "per_s": len(times) / wall,
    }


def load_average() -> str:
    """Return the 1, 5 and 15-minute load averages as ``/proc/loadavg`` gives them.

    Returns:
        The three figures separated by spaces, or ``"?"`` where the file cannot be read.
    """
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"
