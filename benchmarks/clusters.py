"""A large scope's clustered ranking against the exact one, on a kept ladder store.

Usage::

    python benchmarks/clusters.py STORE [--queries 100] [--probes 8,16] [--approximate-from N]

Opens a store that ``benchmarks/ladder.py --keep DIR`` left (``DIR/store-N``), waits for the
continuation model's context clusters (docs/suggestions.md, "Large scopes"), then for each
``--probes`` value ranks the ladder's first ``--queries`` queries as configured and exactly
(``em_plugin/evaluation/approximation.py``): the shares whose top tool and top-3 set are the
exact model's, the recall@10 of the exact top 10 tools, and the mean ranking time both ways.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.evaluation.approximation import agreement, describe, ranking
from em_plugin.evaluation.latency import load_average
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory


def main() -> None:
    """Parse the command line and print one line per ``--probes`` value."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("store", type=Path, help="a ladder store (DIR/store-N)")
    parser.add_argument("--queries", type=int, default=100, help="queries ranked both ways")
    parser.add_argument("--probes", default="16", help="probed clusters, comma-separated")
    parser.add_argument(
        "--approximate-from",
        type=int,
        default=None,
        help="contexts from which level 0 is approximated (default: the model's)",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    queries = list(SyntheticMemory(0, distinct_texts=True).queries(args.queries))
    print(f"clusters: {args.store}, {args.queries} queries; load average {load_average()}")
    for probes in (int(p) for p in args.probes.split(",") if p.strip()):
        settings = ranking(approximate_from=args.approximate_from, probes=probes)
        memory = EpisodicMemory(
            args.store, embedder=FakeEmbedder(384), scope=SCOPE, ranking=settings
        )
        try:
            memory.suggest(queries[0])  # builds the suggestion models
            found = agreement(memory, SCOPE, queries)
        finally:
            memory.close()
        print(f"probes {probes}: {describe(found)}")
    print(f"load average {load_average()}")


if __name__ == "__main__":
    main()
