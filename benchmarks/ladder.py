"""The scale ladder: ingest, disk, RSS, cold open and latency percentiles at several sizes.

Usage::

    python benchmarks/ladder.py [--sizes 10000,100000,300000] [--calls N] [--reference R]
        [--keep DIR] [--approximate-from CONTEXTS]

For each size, on the default disk store (fake 384-d embedder: the figures measure the store
and the index, not the model), with the synthetic workflows of ``em-plugin bench`` made with
``distinct_texts=True`` (em_plugin/evaluation/synthetic.py: every task instruction names its
ticket, so its text is distinct; the follow-ups repeat as in a real log; the distinct-text
count is printed):

* **floor**: ``pyoxigraph.Store(DIR).bulk_load`` of the same workflows' N-Quads, batch by batch
  (each batch's text made before its call; only the calls are timed), in a fresh directory:
  the engine alone (benchmarks/ingest_floor.py measures it the same way);
* **ingest**: ``EpisodicMemory.save_many`` calls of ten batches of 1000 (pipelined; a call
  returns what it stored, so one call over everything would hold every workflow) in a **child
  process**, whose peak RSS (``VmHWM``) is the size's peak RSS: the ingest and every latency
  phase below run in it;
* **latency**, in that child after the ingest: ``save`` (a new workflow each call),
  ``retrieve`` and ``suggest`` on ``--calls`` current workflows, single-threaded, then from 8
  and from 64 threads calling the same memory object (each call timed on its thread), then
  ``asuggest`` from 8 and from 64 asyncio tasks: p50 / p95 / p99 in ms and calls per second;
* **fast = reference**: the fast matcher and the brute-force reference on ``--reference``
  queries (same workflows, alignments and scores within 1e-6);
* **clusters**: with ``--approximate-from N`` (off by default, as in the continuation model),
  in a scope of N contexts or more level 0 of the continuation model is approximated by
  context clusters built on a thread after the first suggestion (docs/suggestions.md, "Large
  scopes"): the run waits for them (their build time is printed), then ranks the ``--calls``
  queries both ways and prints how often the approximation's top tool and top 3 equal the
  exact model's, and its recall@10 of the exact top 10 tools. The latency phases below run
  with the approximation;
* **cold open**: a new process opens the store and asks for one suggestion
  (``python -m em_plugin.evaluation.bench --cold``);
* **disk** per leaf step: the store and its derived data after the cold open.

Long phases show a progress bar (on stderr). The load average is printed before and after each
size: the figures are from a shared machine unless it says otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.evaluation.approximation import agreement, describe, ranking
from em_plugin.evaluation.bench import CALL_BATCHES
from em_plugin.evaluation.latency import load_average, summary, time_calls
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from provenance.model import Workflow
from provenance.stores._terms import nquads
from provenance.stores._text_writer import workflow_to_text
from provenance.vocab import graph_iri

BATCH = 1000
CONCURRENCY = (8, 64)
OPS = ("save", "retrieve", "suggest")


def data() -> SyntheticMemory:
    """The ladder's generator: the bench's workflows, every task instruction's text distinct."""
    return SyntheticMemory(0, distinct_texts=True)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


def _batches(workflows: Iterator[Workflow], size: int) -> Iterator[list[Workflow]]:
    while batch := list(islice(workflows, size)):
        yield batch


def floor(size: int, directory: Path) -> float:
    """Seconds the store engine alone takes to bulk-load the workflows' N-Quads."""
    store = ox.Store(str(directory))
    seconds = 0.0
    with _progress() as bar:
        task = bar.add_task(f"{size:,}: bulk_load floor", total=size)
        for batch in _batches(data().workflows(size), BATCH):
            text = nquads([(graph_iri(w.id, w.scope), workflow_to_text(w)) for w in batch])
            body = text.encode()
            start = time.perf_counter()
            store.bulk_load(body, format=ox.RdfFormat.N_QUADS, lenient=True)
            seconds += time.perf_counter() - start
            bar.advance(task, len(batch))
    del store
    return seconds


# ------------------------------------------------------------------------------ the child


def product(
    size: int, store: Path, calls: int, reference: int, approximate_from: int | None
) -> dict[str, Any]:
    """Ingest, then time every operation; run in a child process (its peak RSS is reported)."""
    from em_plugin.memory import EpisodicMemory

    memory = EpisodicMemory(
        store,
        embedder=FakeEmbedder(384),
        scope=SCOPE,
        ranking=ranking(approximate_from=approximate_from),
    )
    report: dict[str, Any] = {}
    try:
        with _progress() as bar:
            task = bar.add_task(f"{size:,}: save_many", total=size)
            start = time.perf_counter()
            for first in range(0, size, BATCH * CALL_BATCHES):  # see CALL_BATCHES
                count = min(BATCH * CALL_BATCHES, size - first)
                memory.save_many(
                    data().workflows(count, start=first),
                    batch_size=BATCH,
                    progress=partial(_advance, bar, task, first),
                )
                _note(
                    f"{size:,}: {first + count:,} saved in {time.perf_counter() - start:.0f} s, "
                    f"RSS {_rss_mb()} MB, peak {_peak_rss_mb()} MB"
                )
            report["ingest_s"] = time.perf_counter() - start
        report["ingest_rss_mb"] = _peak_rss_mb()
        _note(f"{size:,}: ingest {report['ingest_s']:.0f} s, peak RSS {report['ingest_rss_mb']} MB")
        stats = memory.index.stats().get(SCOPE, {})
        report["leaves"] = int(stats.get("leaf_steps", 0))
        report["distinct_texts"] = int(stats.get("texts", 0))
        scope = memory.index.scope_index(SCOPE)
        if scope is not None:
            # Instruction leaves (answered without a tool) and the task instructions that
            # called tools (the leaves' contexts): their texts, and how many are distinct.
            codes, contexts = scope.codes.view(), scope.context_codes.view()
            report["instruction_leaves"] = int((codes < 0).sum())
            report["distinct_contexts"] = len(scope.contexts)
            report["context_leaves"] = int((contexts >= 0).sum())
        queries = list(data().queries(calls))
        start = time.perf_counter()
        memory.suggest(queries[0])  # the suggestion models are built once, outside the timing
        first = time.perf_counter() - start
        _note(f"{size:,}: first suggestion {first:.2f} s, peak RSS {_peak_rss_mb()} MB")
        report["clusters"] = agreement(memory, SCOPE, queries)
        _note(f"{size:,}: clusters {json.dumps(report['clusters'])}")
        report["identical"] = _identical(memory, queries[:reference])
        report["latency"] = _latencies(memory, queries, size)
    finally:
        memory.close()
    report["rss_mb"] = _peak_rss_mb()
    return report


def _note(line: str) -> None:
    """Print a phase's figures on stderr as it ends (a long run that is stopped keeps them)."""
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def _advance(bar: Progress, task: TaskID, first: int, done: int) -> None:
    bar.update(task, completed=first + done)


def _identical(memory: Any, queries: Sequence[Workflow]) -> bool:
    index = memory.index
    for query in queries:
        fast = index.match(query, scope=SCOPE)
        slow = index.match(query, scope=SCOPE, method="reference")
        same = [(m.workflow_id, m.alignment) for m in fast] == [
            (m.workflow_id, m.alignment) for m in slow
        ] and all(abs(a.score - b.score) <= 1e-6 for a, b in zip(fast, slow, strict=True))
        if not same:
            return False
    return True


def _latencies(memory: Any, queries: list[Workflow], size: int) -> dict[str, Any]:
    """Per operation and concurrency: p50/p95/p99 ms and calls per second."""
    fresh = iter(data().workflows(10**7, start=size, prefix="new"))
    lock = threading.Lock()

    def new_workflow() -> Workflow:
        with lock:
            return next(fresh)

    operations: dict[str, Callable[[Workflow], object]] = {
        "save": lambda _: memory.save(new_workflow()),
        "retrieve": memory.retrieve,
        "suggest": memory.suggest,
    }
    results: dict[str, Any] = {}
    settings = [(op, c) for c in (1, *CONCURRENCY) for op in OPS]
    with _progress() as bar:
        task = bar.add_task("latency", total=len(settings) + len(CONCURRENCY))
        for op, threads in settings:
            results[f"{op}@{threads}"] = summary(*time_calls(operations[op], queries, threads))
            _note(f"{size:,}: {op}@{threads} {json.dumps(results[f'{op}@{threads}'])}")
            bar.advance(task)
        for tasks in CONCURRENCY:
            results[f"asuggest@{tasks}"] = asyncio.run(_tasks(memory, queries, tasks))
            bar.advance(task)
    return results


async def _tasks(memory: Any, queries: list[Workflow], tasks: int) -> dict[str, float]:
    pending = list(reversed(queries))
    times: list[float] = []

    async def worker() -> None:
        while pending:
            query = pending.pop()
            start = time.perf_counter()
            await memory.asuggest(query)
            times.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(tasks)))
    return summary(times, time.perf_counter() - start)


# ------------------------------------------------------------------------------ the parent


def run_size(
    size: int,
    root: Path,
    calls: int,
    reference: int,
    *,
    with_floor: bool = True,
    approximate_from: int | None = None,
) -> dict[str, Any]:
    """Measure one size: floor, product (child process), cold open (new process), disk."""
    load_before = load_average()
    floor_s = floor(size, root / f"floor-{size}") if with_floor else None
    shutil.rmtree(root / f"floor-{size}", ignore_errors=True)
    store = root / f"store-{size}"
    child = [sys.executable, __file__, "--_product", str(size), str(store), str(calls)]
    done = subprocess.run(
        [*child, str(reference), str(approximate_from or 0)],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )  # stderr passes through: the progress bars
    if done.returncode != 0:
        raise SystemExit(f"the product run at {size:,} failed")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    cold = subprocess.run(
        [sys.executable, "-m", "em_plugin.evaluation.bench", "--cold", str(store), "fake-384", "0"],
        capture_output=True,
        text=True,
        check=False,
    )
    if cold.returncode != 0:
        raise SystemExit(f"the cold open at {size:,} failed: {cold.stderr[-1000:]}")
    report.update(json.loads(cold.stdout.strip().splitlines()[-1]))
    disk = _bytes(store) + _bytes(store.with_name(f"{store.name}.em-index"))
    report.update(
        size=size,
        floor_s=floor_s,
        disk_per_leaf=disk / max(1, report["leaves"]),
        load=f"{load_before} -> {load_average()}",
    )
    return report


def print_size(r: dict[str, Any]) -> None:
    """Print one size's table."""
    rate = r["size"] / r["ingest_s"]
    print(f"\n== {r['size']:,} workflows, {r['leaves']:,} leaf steps; load average {r['load']}")
    print(
        f"distinct texts: {r['distinct_texts']:,} of {r['instruction_leaves']:,} instruction "
        f"leaves; {r['distinct_contexts']:,} distinct instructions over the "
        f"{r['context_leaves']:,} leaves they lead to"
    )
    print(f"fast matcher = reference on the sample: {r['identical']}")
    print(f"continuation level 0: {describe(r['clusters'])}")
    if r["floor_s"]:
        floor_rate = r["size"] / r["floor_s"]
        floor = f"floor {floor_rate:,.0f} wf/s: {rate / floor_rate:.2f} of the floor"
    else:
        floor = "floor not run (--no-floor)"
    print(
        f"ingest {rate:,.0f} wf/s, {floor}   disk {r['disk_per_leaf'] / 1000:.2f} KB/leaf   "
        f"peak RSS {r['rss_mb']:,.0f} MB (after ingest {r['ingest_rss_mb']:,.0f} MB)"
    )
    cold = r["cold_open_seconds"] + r["first_suggest_seconds"]
    print(
        f"cold open + first suggestion (new process): {r['cold_open_seconds']:.2f} + "
        f"{r['first_suggest_seconds']:.2f} = {cold:.2f} s"
    )
    print(f"{'operation':<22} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'calls/s':>9}")
    for key, row in r["latency"].items():
        op, concurrency = key.split("@")
        who = "threads" if op != "asuggest" else "tasks"
        name = op if concurrency == "1" else f"{op} x{concurrency} {who}"
        print(
            f"{name:<22} {row['p50']:>8.1f} {row['p95']:>8.1f} {row['p99']:>8.1f} "
            f"{row['per_s']:>9.1f}"
        )


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def main() -> None:
    """Parse the command line and run every size in turn."""
    if len(sys.argv) > 1 and sys.argv[1] == "--_product":
        size_arg, store, calls, reference, approximate_from = sys.argv[2:7]
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        report = product(
            int(size_arg), Path(store), int(calls), int(reference), int(approximate_from) or None
        )
        print(json.dumps(report))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="10000,100000,300000", help="workflows, comma-separated")
    parser.add_argument("--calls", type=int, default=200, help="calls timed per operation")
    parser.add_argument("--reference", type=int, default=10, help="queries run by both matchers")
    parser.add_argument("--keep", type=Path, default=None, help="keep the stores under DIR")
    parser.add_argument(
        "--approximate-from",
        type=int,
        default=None,
        help="contexts from which level 0 is approximated (default: never, exact)",
    )
    parser.add_argument(
        "--no-floor",
        dest="floor",
        action="store_false",
        help="skip the bulk_load floor (it takes about as long as the ingest)",
    )
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    cpus = os.cpu_count()
    print(f"ladder: sizes {', '.join(f'{s:,}' for s in sizes)}; {cpus} CPUs; fake-384 embedder")
    root = args.keep or Path(tempfile.mkdtemp(prefix="em-ladder-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        for size in sizes:
            report = run_size(
                size,
                root,
                args.calls,
                args.reference,
                with_floor=args.floor,
                approximate_from=args.approximate_from,
            )
            print_size(report)
            sys.stdout.flush()
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
