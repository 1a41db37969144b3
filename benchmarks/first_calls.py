"""Single-threaded retrieve and suggest on a ladder store, and a query's first retrieval.

Usage::

    python benchmarks/first_calls.py STORE [--queries N] [--saves S]

``STORE`` is a ladder store (``python benchmarks/ladder.py --keep DIR`` keeps them as
``DIR/store-N``; work on a fresh copy each run: the memory opens it writable and its embedding
cache keeps the query texts). After one suggestion (the models built), it times each query's
first retrieval (its texts embedded and stored in the embedding cache), then two passes of
``retrieve`` and two of ``suggest`` over the queries, then ``S`` times a ``save`` of a new
workflow (a new id) and the ``suggest`` after it. Run it once per checkout, one after the
other (``PYTHONPATH=<checkout>``: the script reads only the public API), to compare two versions
in the same minutes. Prints one JSON line: per phase ``[p50, p90, p99, mean]`` in ms, and the
load average.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.evaluation.latency import load_average
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory
from provenance.model import Workflow


def measure(store: Path, queries: int, saves: int) -> dict[str, Any]:
    """Open the store and time the phases (see the module doc)."""
    memory = EpisodicMemory(store, embedder=FakeEmbedder(384), scope=SCOPE)
    asked = list(SyntheticMemory(0, distinct_texts=True).queries(queries))
    made = SyntheticMemory(1, distinct_texts=True).workflows(saves)
    new = [dataclasses.replace(w, id=f"first-calls-{i}") for i, w in enumerate(made)]
    out: dict[str, Any] = {"load": load_average().split()}
    try:
        memory.suggest(asked[0])  # the models built, outside the timing
        out["retrieve_first"] = _timed(memory.retrieve, asked[1:], passes=1)
        out["retrieve"] = _timed(memory.retrieve, asked, passes=2)
        out["suggest"] = _timed(memory.suggest, asked, passes=2)
        saved, after = [], []
        for workflow, query in zip(new, itertools.cycle(asked)):
            saved.append(_timed(memory.save, [workflow], passes=1)[-1])
            after.append(_timed(memory.suggest, [query], passes=1)[-1])
        out["save"], out["suggest_after_save"] = _summary(saved), _summary(after)
    finally:
        memory.close()
    return out


def _timed(call: Callable[[Workflow], object], queries: list[Workflow], passes: int) -> list[float]:
    times = []
    for _ in range(passes):
        for query in queries:
            start = time.perf_counter()
            call(query)
            times.append((time.perf_counter() - start) * 1000)
    return _summary(times)


def _summary(times: list[float]) -> list[float]:
    ms = np.asarray(times)
    summary = [float(np.percentile(ms, q)) for q in (50, 90, 99)] + [float(ms.mean())]
    return [round(value, 1) for value in summary]


def main() -> None:
    """Parse the command line and print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("store", type=Path, help="a ladder store (a fresh copy)")
    parser.add_argument("--queries", type=int, default=64, help="queries per pass")
    parser.add_argument("--saves", type=int, default=20, help="saves, each then a suggestion")
    args = parser.parse_args()
    print(json.dumps(measure(args.store, args.queries, args.saves)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
