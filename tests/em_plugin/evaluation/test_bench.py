"""The benchmark: deterministic synthetic memory of realistic shape, and the report."""

from __future__ import annotations

import pytest

from em_plugin.errors import ConfigurationError
from em_plugin.evaluation.bench import run_bench
from em_plugin.evaluation.synthetic import MAX_LEAVES, MIN_LEAVES, SCOPE, SyntheticMemory

KEYS = {
    "workflows",
    "leaf_steps",
    "ingest_seconds",
    "fast_ms_p50",
    "fast_ms_p95",
    "reference_ms_p50",
    "speedup",
    "identical",
    "rss_mb",
    "reference_queries",
}


def test_synthetic_memory_is_deterministic_and_realistic():
    first = list(SyntheticMemory(seed=7).workflows(300))
    assert first == list(SyntheticMemory(seed=7).workflows(300))
    assert first != list(SyntheticMemory(seed=8).workflows(300))
    leaves = [w.leaves() for w in first]
    assert all(MIN_LEAVES <= len(ls) <= MAX_LEAVES for ls in leaves)
    assert max(len(ls) for ls in leaves) > 20
    tools = {s.name for ls in leaves for s in ls if s.kind == "call"}
    texts = [s.text for ls in leaves for s in ls if s.kind == "instruction"]
    assert len(tools) > 150 and 0.05 < len(texts) / sum(map(len, leaves)) < 0.5
    assert len(set(texts)) < 0.7 * len(texts)  # paraphrase templates repeat
    assert any(s.steps for w in first for _, s in w.walk() if s.kind == "call")  # handoffs
    assert all(w.scope == SCOPE for w in first)


def test_queries_are_prefixes_with_a_continuation():
    data = SyntheticMemory(seed=1)
    for query in data.queries(20):
        assert len(query.leaves()) >= MIN_LEAVES
        assert query.id.startswith("query-")


def test_bench_reports_identical_fast_and_reference_results():
    stages: set[str] = set()
    report = run_bench(300, queries=6, progress=lambda stage, done, total: stages.add(stage))
    assert KEYS <= set(report)
    assert report["workflows"] == 300 and report["identical"] is True
    assert report["reference_queries"] == 6
    assert report["leaf_steps"] == sum(
        len(w.leaves()) for w in SyntheticMemory(seed=0).workflows(300)
    )
    assert report["matches_per_query"] > 0
    assert report["fast_ms_p50"] > 0 and report["reference_ms_p50"] > 0 and report["rss_mb"] > 0
    assert stages == {"ingest", "fast", "reference"}


def test_bench_refuses_empty_runs():
    with pytest.raises(ConfigurationError, match="must be >= 1"):
        run_bench(0)


def test_bench_on_the_disk_store_reports_disk_cold_open_and_the_memory_baseline(tmp_path):
    report = run_bench(120, queries=3, store=str(tmp_path / "store"))
    assert report["identical"] is True and report["ingest_path"] == "EpisodicMemory.save_many"
    assert report["disk_bytes"] > 0 and report["disk_bytes_per_leaf"] > 0
    assert report["cold_open_seconds"] > 0 and report["first_suggest_seconds"] > 0
    assert report["suggest_ms_p50"] > 0 and report["suggest_ms_p95"] >= report["suggest_ms_p50"]
    baseline = report["baseline"]
    assert baseline["store"] == "memory:" and baseline["identical"] is True
    assert baseline["ingest_workflows_per_s"] > 0 and baseline["rss_mb"] > 0
