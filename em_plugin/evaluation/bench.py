"""``em-plugin bench``: ingest a synthetic memory through the real save path, then time it.

The memory comes from :class:`~em_plugin.evaluation.synthetic.SyntheticMemory` and goes through
``EpisodicMemory.save_many`` (batches of 1000, one store transaction each) into the store the
user names (``memory:``, a directory for the default disk store, ``http://...``). The report:

* ingest rate, peak RSS of the process, and for a disk store the bytes on disk (store and
  derived data) per leaf step;
* the fast and the reference matcher on the same queries (``identical`` is true only when they
  returned the same workflows, alignments and scores within 1e-6; the reference matcher is brute
  force and runs on the first ``reference_queries`` queries only on large memories);
* ``suggest_ms_p50`` / ``suggest_ms_p95``: whole ``EpisodicMemory.suggest`` calls;
* for a store that outlives the process (disk, remote), ``cold_open_seconds`` and
  ``first_suggest_seconds``, measured in a **new process** that opens the memory and asks for
  one suggestion;
* with ``baseline``, the same figures for the ``memory:`` store in a separate process of the same
  run (``baseline``), so that a figure can be read next to the in-memory one on the same
  machine at the same time.

The embedder defaults to ``FakeEmbedder(384)`` (the default model's dimension, no model load),
so the figures measure the store and the index rather than the embedding model.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from em_plugin.embedding.embedders import Embedder, FakeEmbedder, resolve_embedder
from em_plugin.errors import ConfigurationError
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.retrieval.reference import Match, MatchConfig
from provenance.model import Workflow

BATCH = 1000
#: Batches per ``save_many`` call: a call returns every workflow it stored, so one call over the
#: whole memory held them all until it returned (~620 MB at 100k workflows, what made the peak
#: RSS at 100k grow from 690 MB to 1,361 MB once the bench made one call); ten batches a call
#: hold at most 10,000, and each call is still pipelined.
CALL_BATCHES = 10
Progress = Callable[[str, int, int], None]


def run_bench(
    workflows: int,
    queries: int = 50,
    seed: int = 0,
    store: str = "memory:",
    embedder: Embedder | None = None,
    *,
    reference_queries: int | None = None,
    config: MatchConfig | None = None,
    progress: Progress | None = None,
    baseline: bool | None = None,
) -> dict[str, Any]:
    """Build a synthetic memory of ``workflows`` workflows and time ``queries`` retrievals.

    Args:
        workflows: Memory size.
        queries: Number of current workflows to retrieve for.
        seed: Seed of the synthetic data.
        store: Store spec for the save path (``memory:``, a directory, ``http://...``).
        embedder: The embedder; ``None`` for ``FakeEmbedder(384)``.
        reference_queries: How many of the queries the reference matcher also runs; defaults
            to all of them up to 10k workflows, then fewer (at least 5).
        config: Retrieval parameters (docs/retrieval.md defaults).
        progress: Called with ``(stage, done, total)``.
        baseline: Also run the ``memory:`` store in a separate process (``baseline`` key);
            by default, whenever ``store`` is another store.

    Returns:
        The report: ``workflows``, ``leaf_steps``, ``ingest_seconds``,
        ``ingest_workflows_per_s``, ``fast_ms_p50``, ``fast_ms_p95``, ``reference_ms_p50``,
        ``speedup``, ``identical``, ``suggest_ms_p50``, ``suggest_ms_p95``, ``rss_mb``,
        ``disk_bytes`` and ``disk_bytes_per_leaf`` after a reopen, ``disk_bytes_after_ingest``
        (disk stores), ``cold_open_seconds`` and
        ``first_suggest_seconds`` (stores that persist), ``baseline`` (when asked), and details
        (``reference_queries``, ``ingest_path``, texts, tools, matches per query).

    Raises:
        ConfigurationError: When a count is out of range.
    """
    if workflows < 1 or queries < 1:
        raise ConfigurationError(f"workflows and queries must be >= 1, got {workflows}, {queries}")
    embedder = embedder or FakeEmbedder(384)
    config = config or MatchConfig()
    if reference_queries is None:
        reference_queries = min(queries, max(5, 200_000 // workflows))
    reference_queries = max(1, min(queries, reference_queries))
    data = SyntheticMemory(seed)
    memory, ingest_seconds = _ingest(data, workflows, store, embedder, progress)
    index = memory.index
    try:
        current = list(data.queries(queries))
        fast_ms, fast = _time(lambda q: index.match(q, scope=SCOPE, config=config), current)
        if progress is not None:
            progress("fast", queries, queries)
        subset = current[:reference_queries]
        reference_ms, reference = _time(
            lambda q: index.match(q, scope=SCOPE, config=config, method="reference"),
            subset,
            progress=lambda done: progress("reference", done, len(subset)) if progress else None,
        )
        memory.suggest(current[0])  # builds the suggestion state once, outside the timing
        suggest_ms, _ = _time(memory.suggest, current)
        stats = index.stats().get(SCOPE, {})
    finally:
        memory.close()
    same = all(_agree(a, b) for a, b in zip(fast, reference, strict=False))
    fast_subset = float(np.median(fast_ms[:reference_queries]))
    leaves = int(stats.get("leaf_steps", 0))
    report: dict[str, Any] = {
        "workflows": workflows,
        "leaf_steps": leaves,
        "ingest_seconds": round(ingest_seconds, 3),
        "ingest_workflows_per_s": round(workflows / max(ingest_seconds, 1e-9), 1),
        "fast_ms_p50": round(float(np.percentile(fast_ms, 50)), 3),
        "fast_ms_p95": round(float(np.percentile(fast_ms, 95)), 3),
        "reference_ms_p50": round(float(np.percentile(reference_ms, 50)), 3),
        "speedup": round(float(np.median(reference_ms)) / max(fast_subset, 1e-9), 1),
        "identical": same,
        "suggest_ms_p50": round(float(np.percentile(suggest_ms, 50)), 3),
        "suggest_ms_p95": round(float(np.percentile(suggest_ms, 95)), 3),
        "rss_mb": _peak_rss_mb(),
        "queries": queries,
        "reference_queries": reference_queries,
        "matches_per_query": round(float(np.mean([len(m) for m in fast])), 2),
        "unique_instruction_texts": int(stats.get("texts", 0)),
        "tools": int(stats.get("tools", 0)),
        "ingest_path": "EpisodicMemory.save_many",
        "embedder": embedder.name,
        "store": store,
        "seed": seed,
    }
    directory = _directory(store)
    derived = None if directory is None else directory.with_name(f"{directory.name}.em-index")
    if directory is not None and derived is not None:
        # RocksDB compacts in the background and when reopened: the peak right after the
        # ingest and the size after the new process below opened the store differ a lot.
        report["disk_bytes_after_ingest"] = _bytes(directory) + _bytes(derived)
    if store != "memory:":
        report.update(_in_new_process(["--cold", store, embedder.name, str(seed)]))
    if directory is not None and derived is not None:
        disk = _bytes(directory) + _bytes(derived)
        report["disk_bytes"] = disk
        report["disk_bytes_per_leaf"] = round(disk / max(leaves, 1), 1)
    if store != "memory:" and baseline is not False:
        args = ["--baseline", str(workflows), str(queries), embedder.name, str(seed)]
        report["baseline"] = _in_new_process(args)
    return report


def cold_open(store: str, embedder: Embedder, seed: int = 0) -> dict[str, float]:
    """Open a stored memory and ask for one suggestion; time both (run in a new process).

    Returns:
        ``cold_open_seconds`` and ``first_suggest_seconds``.
    """
    from em_plugin.memory import EpisodicMemory

    start = time.perf_counter()
    memory = EpisodicMemory(store=store, embedder=embedder, scope=SCOPE)
    opened = time.perf_counter()
    try:
        memory.suggest(next(iter(SyntheticMemory(seed).queries(1))))
    finally:
        memory.close()
    done = time.perf_counter()
    return {
        "cold_open_seconds": round(opened - start, 3),
        "first_suggest_seconds": round(done - opened, 3),
    }


def _in_new_process(args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "em_plugin.evaluation.bench", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ConfigurationError(f"bench worker {args[0]} failed: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _peak_rss_mb() -> float:
    """Peak RSS of this process.

    Linux's ``ru_maxrss`` survives fork+exec (a worker would report its parent's peak), so ``VmHWM``
    is read where there is one.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _directory(store: str) -> Path | None:
    if store == "memory:" or "://" in store:
        return None
    path = Path(store[5:] if store.startswith("file:") else store).expanduser()
    return path if path.exists() else None


def _bytes(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _agree(fast: list[Match], reference: list[Match]) -> bool:
    return [(m.workflow_id, m.alignment) for m in fast] == [
        (m.workflow_id, m.alignment) for m in reference
    ] and all(abs(a.score - b.score) <= 1e-6 for a, b in zip(fast, reference, strict=True))


def _time(
    run: Callable[[Workflow], list[Match]],
    current: list[Workflow],
    progress: Callable[[int], None] | None = None,
) -> tuple[list[float], list[list[Match]]]:
    times, results = [], []
    for i, query in enumerate(current):
        start = time.perf_counter()
        results.append(run(query))
        times.append((time.perf_counter() - start) * 1000)
        if progress is not None:
            progress(i + 1)
    return times, results


def _ingest(
    data: SyntheticMemory,
    total: int,
    store: str,
    embedder: Embedder,
    progress: Progress | None,
) -> tuple[Any, float]:
    """Save the synthetic memory through one ``EpisodicMemory.save_many`` call, timed."""
    from em_plugin.memory import EpisodicMemory

    memory = EpisodicMemory(store=store, embedder=embedder, scope=SCOPE)
    # Pipelined calls of CALL_BATCHES batches, as an import makes them. The synthetic
    # workflows are made as they are saved (held all at once they would add ~6 KB each to the
    # peak RSS this bench reports), so their making is timed too: the ingest figure errs on
    # the slow side.
    try:
        start = time.perf_counter()
        for first in range(0, total, BATCH * CALL_BATCHES):
            count = min(BATCH * CALL_BATCHES, total - first)
            memory.save_many(
                data.workflows(count, start=first),
                batch_size=BATCH,
                progress=None if progress is None else partial(_report, progress, first, total),
            )
        seconds = time.perf_counter() - start
    except BaseException:
        memory.close()
        raise
    return memory, seconds


def _report(progress: Progress, first: int, total: int, done: int) -> None:
    progress("ingest", first + done, total)


def _worker(argv: list[str]) -> dict[str, Any]:
    """Run one bench worker.

    ``--cold STORE EMBEDDER SEED`` or ``--baseline WORKFLOWS QUERIES EMBEDDER SEED`` (the
    ``memory:`` store).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if argv[0] == "--cold":
        return cold_open(argv[1], _embedder(argv[2]), int(argv[3]))
    report = run_bench(int(argv[1]), int(argv[2]), seed=int(argv[4]), embedder=_embedder(argv[3]))
    keep = (
        "ingest_seconds", "ingest_workflows_per_s", "fast_ms_p50", "fast_ms_p95",
        "suggest_ms_p50", "suggest_ms_p95", "rss_mb", "identical", "store",
    )  # fmt: skip
    return {k: report[k] for k in keep}


def _embedder(name: str) -> Embedder:
    if name.startswith("fake-"):
        return FakeEmbedder(int(name.removeprefix("fake-")))
    return resolve_embedder(name.removeprefix("sentence-transformers:"))


if __name__ == "__main__":
    print(json.dumps(_worker(sys.argv[1:])))
