"""Calls per second of suggest and retrieve from 1, 8 and 64 threads on one memory object.

Usage::

    python benchmarks/concurrency.py STORE [--queries N]

``STORE`` is a ladder store (``python benchmarks/ladder.py --keep DIR`` keeps them as
``DIR/store-N``; work on a copy: the memory opens it writable). Run it once per checkout, one
after the other (``PYTHONPATH=<checkout>``), to compare two versions of the memory's locking in
the same minutes: on a shared machine only the ratios within a run compare. Prints one JSON
line: per operation and thread count, ``[p50 ms, p99 ms, calls per second]``, and the load
average.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.evaluation.latency import load_average, summary, time_calls
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory
from provenance.model import Workflow

THREADS = (1, 8, 64)


def measure(store: Path, queries: int) -> dict[str, Any]:
    """Open the store and time suggest and retrieve at every thread count."""
    memory = EpisodicMemory(store, embedder=FakeEmbedder(384), scope=SCOPE)
    asked = list(SyntheticMemory(0, distinct_texts=True).queries(queries))
    out: dict[str, Any] = {"load": load_average().split()}
    try:
        for query in asked[:8]:
            memory.suggest(query)  # models built and query texts embedded, outside the timing
        for name in ("suggest", "retrieve"):
            call: Callable[[Workflow], object] = getattr(memory, name)
            for threads in THREADS:
                out[f"{name}@{threads}"] = _run(call, asked, threads)
    finally:
        memory.close()
    return out


def _run(call: Callable[[Workflow], object], queries: list[Workflow], threads: int) -> list[float]:
    found = summary(*time_calls(call, queries, threads))
    return [round(found["p50"], 1), round(found["p99"], 1), round(found["per_s"], 1)]


def main() -> None:
    """Parse the command line and print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("store", type=Path, help="a ladder store (a copy)")
    parser.add_argument("--queries", type=int, default=64, help="calls per setting")
    args = parser.parse_args()
    print(json.dumps(measure(args.store, args.queries)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
