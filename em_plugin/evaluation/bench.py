"""``em-plugin bench``: ingest a synthetic memory, then time the fast and the reference matcher.

The memory comes from :class:`~em_plugin.evaluation.synthetic.SyntheticMemory` and goes through the
normal save path: ``EpisodicMemory.save_many`` / ``save`` when :mod:`em_plugin.memory` is
available, else the store's ``save_many`` followed by :meth:`StepIndex.add_many` on the same
batch (the two halves of a save), else the index alone. Batches of 1000 workflows.

The embedder defaults to ``FakeEmbedder(384)`` (the default model's dimension, no model load),
so the figures measure the matcher rather than the embedding model; pass any embedder (e.g.
``None`` through the CLI's ``--embedder default``) to use another one.

The reference matcher is brute force; on large memories it is timed on the first
``reference_queries`` queries only (reported). ``identical`` is true only when the fast
matcher returned the same workflows, alignments and scores (within 1e-6) on every query both
ran. ``speedup`` compares the two medians over those same queries.
"""

from __future__ import annotations

import importlib.util
import resource
import time
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

import numpy as np

from em_plugin.embedding.embedders import Embedder, FakeEmbedder
from em_plugin.errors import ConfigurationError
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.retrieval.reference import Match, MatchConfig
from em_plugin.state.step_index import StepIndex
from provenance.model import Workflow

BATCH = 1000
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
        config: Retrieval parameters (DESIGN §7 defaults).
        progress: Called with ``(stage, done, total)``.

    Returns:
        The report: ``workflows``, ``leaf_steps``, ``ingest_seconds``, ``fast_ms_p50``,
        ``fast_ms_p95``, ``reference_ms_p50``, ``speedup``, ``identical``, ``rss_mb`` and
        details (``reference_queries``, ``ingest_path``, texts, tools, matches per query).

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
    index, ingest_seconds, path, close = _ingest(data, workflows, store, embedder, progress)
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
        stats = index.stats().get(SCOPE, {})
    finally:
        close()
    same = all(_agree(a, b) for a, b in zip(fast, reference, strict=False))
    fast_subset = float(np.median(fast_ms[:reference_queries]))
    return {
        "workflows": workflows,
        "leaf_steps": int(stats.get("leaf_steps", 0)),
        "ingest_seconds": round(ingest_seconds, 3),
        "fast_ms_p50": round(float(np.percentile(fast_ms, 50)), 3),
        "fast_ms_p95": round(float(np.percentile(fast_ms, 95)), 3),
        "reference_ms_p50": round(float(np.percentile(reference_ms, 50)), 3),
        "speedup": round(float(np.median(reference_ms)) / max(fast_subset, 1e-9), 1),
        "identical": same,
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "queries": queries,
        "reference_queries": reference_queries,
        "matches_per_query": round(float(np.mean([len(m) for m in fast])), 2),
        "unique_instruction_texts": int(stats.get("texts", 0)),
        "tools": int(stats.get("tools", 0)),
        "ingest_path": path,
        "embedder": embedder.name,
        "store": store,
        "seed": seed,
    }


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


def _batches(data: SyntheticMemory, total: int) -> Iterator[list[Workflow]]:
    iterator = data.workflows(total)
    while batch := list(islice(iterator, BATCH)):
        yield batch


def _ingest(
    data: SyntheticMemory,
    total: int,
    store: str,
    embedder: Embedder,
    progress: Progress | None,
) -> tuple[StepIndex, float, str, Callable[[], None]]:
    """Save the synthetic memory through the normal save path; only saving is timed."""
    saver, index, path, close = _save_path(store, embedder)
    seconds, done = 0.0, 0
    for batch in _batches(data, total):
        start = time.perf_counter()
        saver(batch)
        seconds += time.perf_counter() - start
        done += len(batch)
        if progress is not None:
            progress("ingest", done, total)
    return index, seconds, path, close


def _save_path(
    store: str, embedder: Embedder
) -> tuple[Callable[[list[Workflow]], Any], StepIndex, str, Callable[[], None]]:
    if importlib.util.find_spec("em_plugin.memory") is not None:
        from em_plugin.memory import EpisodicMemory

        memory = EpisodicMemory(store=store, embedder=embedder, scope=SCOPE)
        index = _memory_index(memory)
        if index is not None:
            many = getattr(memory, "save_many", None)
            saver = many if many is not None else lambda ws: [memory.save(w) for w in ws]
            name = "EpisodicMemory.save_many" if many is not None else "EpisodicMemory.save"
            return saver, index, name, memory.close
        memory.close()
    index = StepIndex(embedder)
    try:
        from provenance.stores import open_store
    except ImportError:  # the store layer is optional for a matcher-only benchmark
        open_store = None
    if open_store is not None:
        opened = open_store(store)

        def save(batch: list[Workflow]) -> None:
            opened.save_many(batch)
            index.add_many(batch, batch_size=len(batch))

        return save, index, "WorkflowStore.save_many+StepIndex.add_many", opened.close
    return lambda batch: index.add_many(batch, batch_size=len(batch)), index, "StepIndex", _noop


def _memory_index(memory: Any) -> StepIndex | None:
    for name in ("index", "step_index", "_index"):
        found = getattr(memory, name, None)
        if isinstance(found, StepIndex):
            return found
    return None


def _noop() -> None:
    return None
