"""Many tenants through one memory object: RSS, evictions and cold/warm suggestion latency.

Usage::

    python benchmarks/tenants.py [--scopes N] [--per-scope K] [--cache C] [--warm-sample S]
        [--store DIR]

One disk store holds ``N`` scopes (one per tenant) of ``K`` workflows each (default 100,000 of
2), the synthetic workflows of ``em-plugin bench`` (em_plugin/evaluation/synthetic.py) with the
scope set per tenant, saved through one ``EpisodicMemory.save_many`` call in a **child process**
(its peak RSS is printed apart). Then this process opens the store as a server would, one
``EpisodicMemory`` and a ``with_scope`` view per request, with ``$EM_PLUGIN_SCOPE_CACHE=C``
(default: the product's default), and visits every scope twice, in two passes in scope order:
each visit asks for one suggestion (the tenant's current workflow is a prefix of one of its
workflows). With fewer cached scopes than tenants, every visit of both passes finds its scope
unloaded: the first suggestion of a cold scope (read back from its snapshot files, its
suggestion models built again). Every ``N/S``-th visit then asks three times more at once: a
warm scope.
The first ``--baseline-tenants`` of those tenants are each also put alone in a store of one
scope, where the same warm suggestion is timed (the baseline, same process, same run): tenants'
workflows differ in length, so warm times compare tenant by tenant.

Printed: the visit process's peak RSS (``VmHWM``), evictions and reloads of the scope cache,
cold and warm p50/p95, the same tenants' warm p50/p95 in the shared store and alone, and the
ratio of those p50s, the store's
disk, the build rate, and the load average before and after. On stderr, as the run goes: the
build's figures once it is done, and every tenth of each visit pass how far it is.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import numpy as np

from em_plugin.config import SCOPE_CACHE_ENV, scope_cache
from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.evaluation.latency import load_average
from em_plugin.evaluation.synthetic import SyntheticMemory
from provenance.model import Workflow

EMBEDDER = 384
#: Warm suggestions timed at once after a sampled cold one (and per pass for a tenant alone).
REPEATS = 3


def tenant(number: int) -> str:
    """Return the scope name of tenant ``number``."""
    return f"tenant-{number:06d}"


@functools.cache
def _synthetic() -> SyntheticMemory:
    """The generator, made once: making its patterns took longer than a cold suggestion."""
    return SyntheticMemory(0)  # each workflow has its own seed: sharing it changes nothing


def workflows(scopes: int, per_scope: int) -> Iterator[Workflow]:
    """Yield every tenant's workflows, tenant by tenant."""
    data = _synthetic()
    for number in range(scopes):
        for workflow in data.workflows(per_scope, start=number * per_scope):
            yield workflow.replace(scope=tenant(number))


def current(number: int, per_scope: int) -> Workflow:
    """Return tenant ``number``'s current workflow: its first workflow's first leaves."""
    first = next(iter(_synthetic().workflows(1, start=number * per_scope)))
    return first.prefix(2).replace(id="now", scope=tenant(number))


def build(store: Path, scopes: int, per_scope: int) -> dict[str, float]:
    """Save every tenant's workflows through one ``save_many`` call (run in a child process)."""
    from em_plugin.memory import EpisodicMemory

    start = time.perf_counter()
    with EpisodicMemory(store, embedder=FakeEmbedder(EMBEDDER)) as memory:
        memory.save_many(workflows(scopes, per_scope), batch_size=1000)
        evictions = memory.index.evictions
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "rss_mb": _peak_rss_mb(), "evictions": evictions}


def visit(store: Path, scopes: int, per_scope: int, warm_every: int) -> dict[str, object]:
    """Visit every scope twice through ``with_scope`` views of one memory; time suggestions."""
    from em_plugin.memory import EpisodicMemory

    cold: list[float] = []
    warm: dict[int, list[float]] = {}
    empty = 0
    start = time.perf_counter()
    memory = EpisodicMemory(store, embedder=FakeEmbedder(EMBEDDER))
    opened = time.perf_counter() - start
    try:
        for visit_pass in range(2):
            for number in range(scopes):
                if number and number % max(1, scopes // 10) == 0:
                    _progress(visit_pass, number, scopes, start, cold)
                view = memory.with_scope(tenant(number))
                query = current(number, per_scope)
                began = time.perf_counter()
                found = view.suggest(query)
                cold.append(time.perf_counter() - began)
                empty += not found
                for _ in range(REPEATS if number % warm_every == 0 else 0):
                    began = time.perf_counter()
                    view.suggest(query)
                    warm.setdefault(number, []).append(time.perf_counter() - began)
        index = memory.index
        report: dict[str, object] = {
            "open_s": opened,
            "evictions": index.evictions,
            "reloads": index.reloads,
            "loaded": index.loaded(),
            "cache": index.cache_scopes,
            "empty": empty,
        }
    finally:
        memory.close()
    report.update({"cold": cold, "warm": warm, "rss_mb": _peak_rss_mb()})
    return report


def one_scope(tmp: Path, number: int, per_scope: int, calls: int) -> list[float]:
    """Warm suggestion times on a store holding tenant ``number``'s workflows only."""
    from em_plugin.memory import EpisodicMemory

    store = tmp / f"one-scope-{number}"
    times = []
    mine = list(islice(workflows(number + 1, per_scope), number * per_scope, None))
    with EpisodicMemory(store, embedder=FakeEmbedder(EMBEDDER)) as memory:
        memory.save_many(mine)
    with EpisodicMemory(store, embedder=FakeEmbedder(EMBEDDER), scope=tenant(number)) as memory:
        query = current(number, per_scope)
        memory.suggest(query)  # as the shared store's cold call before its warm ones
        for _ in range(calls):
            began = time.perf_counter()
            memory.suggest(query)
            times.append(time.perf_counter() - began)
    return times


def _progress(visit_pass: int, number: int, scopes: int, start: float, cold: list[float]) -> None:
    """Print how far the visits are on stderr: a long run shows where it is before it ends."""
    print(
        f"visits: pass {visit_pass + 1}, {number:,} / {scopes:,} scopes, "
        f"{time.perf_counter() - start:.0f} s, cold p50 / p95 so far {_ms(cold, 50):.2f} / "
        f"{_ms(cold, 95):.2f} ms, peak RSS {_peak_rss_mb():.0f} MB, load {load_average()}",
        file=sys.stderr,
        flush=True,
    )


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _ms(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q)) if values else float("nan")


def main() -> None:
    """Parse the command line, build the store in a child process, visit it, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scopes", type=int, default=100_000)
    parser.add_argument("--per-scope", type=int, default=2)
    parser.add_argument("--cache", type=int, default=None, help="scopes kept loaded")
    parser.add_argument("--warm-sample", type=int, default=2000, help="warm visits timed")
    parser.add_argument(
        "--baseline-tenants", type=int, default=20, help="warm tenants also timed alone"
    )
    parser.add_argument("--store", type=Path, default=None, help="reuse or keep this store")
    parser.add_argument("--_build", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cache is not None:
        os.environ[SCOPE_CACHE_ENV] = str(args.cache)
    if args._build:
        print(json.dumps(build(args.store, args.scopes, args.per_scope)))
        return
    tmp = Path(tempfile.mkdtemp(prefix="em-tenants-"))
    store = args.store or tmp / "store"
    load_before = load_average()
    try:
        built = None
        if not store.exists():
            command = [sys.executable, __file__, "--_build", "--store", str(store)]
            command += ["--scopes", str(args.scopes), "--per-scope", str(args.per_scope)]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"building the store failed: {done.stderr[-2000:]}")
            built = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"build done: {built}, load {load_average()}", file=sys.stderr, flush=True)
        disk = _bytes(store) + _bytes(store.with_name(f"{store.name}.em-index"))
        warm_every = max(1, args.scopes // max(1, args.warm_sample))
        seen = visit(store, args.scopes, args.per_scope, warm_every)
        warm_by_tenant = seen["warm"]
        assert isinstance(warm_by_tenant, dict)
        # The same tenants, each alone in a store of its own: warm calls compared tenant by
        # tenant (tenants' workflows differ in length, so only the same ones compare).
        matched = sorted(warm_by_tenant)[: args.baseline_tenants]
        alone = {n: one_scope(tmp, n, args.per_scope, len(warm_by_tenant[n])) for n in matched}
    finally:
        if args.store is None:
            shutil.rmtree(tmp, ignore_errors=True)
    cold = seen["cold"]
    assert isinstance(cold, list)
    warm = [t for times in warm_by_tenant.values() for t in times]
    shared = [t for n in matched for t in warm_by_tenant[n]]
    baseline = [t for n in matched for t in alone[n]]
    workflows_total = args.scopes * args.per_scope
    print(f"tenants: {args.scopes:,} scopes x {args.per_scope} workflows, one memory object")
    print(f"load average before / after: {load_before} / {load_average()}")
    print(f"scope cache (scopes kept loaded): {seen['cache'] or scope_cache()}")
    if built is not None:
        rate = workflows_total / built["seconds"]
        print(
            f"build (child process): {built['seconds']:.0f} s, {rate:.0f} wf/s, "
            f"peak RSS {built['rss_mb']:.0f} MB, evictions {built['evictions']:,}"
        )
    print(f"disk: {disk / 1e6:.0f} MB ({disk / workflows_total / 1e3:.1f} KB per workflow)")
    print(f"open: {seen['open_s']:.2f} s")
    print(
        f"visits: {len(cold):,} (every scope twice) + {len(warm):,} warm repeats; "
        f"{seen['empty']:,} visits got no suggestion"
    )
    print(f"peak RSS while visiting: {seen['rss_mb']:.0f} MB")
    print(f"evictions: {seen['evictions']:,}   reloads: {seen['reloads']:,}")
    print(f"{'suggestion':<30} {'p50 ms':>8} {'p95 ms':>8}")
    print(f"{'cold scope (first suggestion)':<30} {_ms(cold, 50):>8.2f} {_ms(cold, 95):>8.2f}")
    print(f"{'warm scope':<30} {_ms(warm, 50):>8.2f} {_ms(warm, 95):>8.2f}")
    print(f"the same {len(matched)} tenants, warm:")
    print(f"{'  in the shared store':<30} {_ms(shared, 50):>8.2f} {_ms(shared, 95):>8.2f}")
    print(f"{'  each alone in a store':<30} {_ms(baseline, 50):>8.2f} {_ms(baseline, 95):>8.2f}")
    print(f"warm shared / alone p50: {_ms(shared, 50) / _ms(baseline, 50):.2f}")


if __name__ == "__main__":
    main()
