"""Time procedure mining (em_plugin/lifecycle/mining.py) on synthetic scopes of N workflows.

Mining reads the step index only and counts windows with numpy. The baseline, run on the same
index in the same process, enumerates every workflow's patterns in Python one by one (the first
implementation); both must find the same recurring patterns, and the ratio is baseline time /
mining time. The step index is built first (fake embedder, not timed):

    python benchmarks/procedure_mining.py 10000 100000
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.lifecycle.mining import MAX_LENGTH, MIN_SUPPORT, mine
from em_plugin.state.scope_index import ScopeIndex
from em_plugin.state.step_index import StepIndex


def _patterns(codes: list[int], max_length: int) -> set[tuple[int, ...]]:
    found: set[tuple[int, ...]] = set()
    run: list[int] = []
    for code in [*codes, -1]:
        if code >= 0:
            run.append(code)
            continue
        for start in range(len(run) - 1):
            for end in range(start + 2, min(len(run), start + max_length) + 1):
                found.add(tuple(run[start:end]))
        run = []
    return found


def per_workflow(index: ScopeIndex) -> int:
    """The baseline: every workflow's patterns enumerated on their own, then counted."""
    ids, lengths, codes, *_ = index.live_leaves()
    where: dict[tuple[int, ...], set[int]] = defaultdict(set)
    start = 0
    for i, length in enumerate(lengths.tolist()):
        for pattern in _patterns(codes[start : start + length].tolist(), MAX_LENGTH):
            where[pattern].add(i)
        start += length
    return sum(1 for found in where.values() if len(found) >= MIN_SUPPORT)


def main() -> None:
    """Build a step index of N synthetic workflows, then time mining and the baseline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", type=int, nargs="+", help="workflow counts")
    args = parser.parse_args()
    for size in args.sizes:
        index = StepIndex(FakeEmbedder(32))
        started = time.perf_counter()
        index.add_many(SyntheticMemory(seed=0).workflows(size), batch_size=5000)
        built = time.perf_counter() - started
        scope = index.scope_index(SCOPE)
        assert scope is not None
        ids, lengths, codes, *_ = scope.live_leaves()
        ends = lengths.cumsum()
        distinct = len({codes[a - n : a].tobytes() for a, n in zip(ends, lengths, strict=True)})
        started = time.perf_counter()
        patterns = mine(scope)
        mined = time.perf_counter() - started
        started = time.perf_counter()
        top = mine(scope, limit=50)  # what memory.lifecycle.procedures() asks for
        bounded = time.perf_counter() - started
        assert [p.tools for p in top] == [p.tools for p in patterns[:50]]
        started = time.perf_counter()
        recurring = per_workflow(scope)
        baseline = time.perf_counter() - started
        print(
            f"{size:>7} workflows, {int(lengths.sum()):>8} leaves, {distinct:>7} distinct leaf "
            f"sequences (index built in {built:.1f} s): mining {mined:.2f} s, "
            f"{len(patterns)} closed patterns (of {recurring} recurring), the best 50 in "
            f"{bounded:.2f} s; "
            f"per-workflow baseline {baseline:.2f} s, ratio {baseline / mined:.2f}x"
        )


if __name__ == "__main__":
    main()
