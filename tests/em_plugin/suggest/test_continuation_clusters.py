"""Level 0 in a large scope: context clusters, and the approximation against the exact model."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from em_plugin.errors import ConfigurationError
from em_plugin.state import context_clusters
from em_plugin.state.context_clusters import PER_CLUSTER, ContextClusters
from em_plugin.suggest import continuation_clusters
from em_plugin.suggest.continuation import ContinuationConfig
from em_plugin.suggest.continuation_clusters import ClusterLayout
from provenance.model import CallStep, InstructionStep, Workflow
from tests.em_plugin.suggest.test_continuation import index_of, query, state_of

TOPICS = ("refund", "exchange", "address", "cancel", "upgrade", "invoice")
FLOWS = {
    "refund": ("lookup", "refund", "notify"),
    "exchange": ("lookup", "exchange", "ship"),
    "address": ("lookup", "update_address"),
    "cancel": ("lookup", "cancel", "notify"),
    "upgrade": ("plan", "upgrade", "invoice"),
    "invoice": ("plan", "invoice"),
}


def workflows(count: int) -> list[Workflow]:
    """Workflows of six topics, each instruction distinct (a ticket number in its text)."""
    out = []
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        tools = FLOWS[topic]
        if i % 5 == 0:  # some sessions wander into another topic's last tool
            tools = (*tools[:-1], FLOWS[TOPICS[(i + 1) % len(TOPICS)]][-1])
        text = f"{topic} request for ticket {i}: customer {i % 17} asks about {topic}"
        out.append(
            Workflow(id=f"w{i}", steps=(InstructionStep(text, tuple(map(CallStep, tools))),))
        )
    return out


def queries() -> list:
    return [
        query(*tools[:cut], text=f"{topic} please, ticket {900 + n}")
        for n, (topic, tools) in enumerate(FLOWS.items())
        for cut in range(1, len(tools))
    ]


def ranked(index, q, *, exact: bool) -> list[tuple[str, float]]:
    return [(c.tool, c.probability) for c in index.rank(q, exact=exact)]


def test_below_the_size_ranking_is_exact_and_nothing_is_built() -> None:
    index = index_of(*workflows(60), approximate_from=1000)
    assert not index.approximate_ready(timeout=5)
    for q in queries():
        assert ranked(index, q, exact=False) == ranked(index, q, exact=True)


def test_every_cluster_probed_equals_the_exact_model() -> None:
    # 120 contexts in 11 clusters, every cluster probed: the approximation computes the exact
    # factors, by other sums (the z-score's moments in float64 against float32 cosines).
    index = index_of(*workflows(120), approximate_from=50, probes=64)
    assert index.approximate_ready(timeout=60)
    for q in [*queries(), query("lookup", text="refund", exclude=frozenset({"w0", "w6"}))]:
        approx, exact = ranked(index, q, exact=False), ranked(index, q, exact=True)
        assert [t for t, _ in approx] == [t for t, _ in exact]
        assert [p for _, p in approx] == pytest.approx([p for _, p in exact], rel=1e-6)


def test_few_probes_keep_the_ranking_of_the_exact_model() -> None:
    index = index_of(*workflows(600), approximate_from=50, probes=2)
    assert index.approximate_ready(timeout=60)
    agree = 0
    for q in queries():
        approx, exact = ranked(index, q, exact=False), ranked(index, q, exact=True)
        agree += approx[0][0] == exact[0][0]
        top = {t for t, _ in exact[:3]}
        assert len(top & {t for t, _ in approx[:3]}) >= 2
        assert sum(p for _, p in approx) == pytest.approx(1.0)
    assert agree >= len(queries()) - 1


def test_saves_after_the_build_are_covered_and_excluded_votes_leave_nothing(monkeypatch) -> None:
    monkeypatch.setattr(context_clusters, "PER_CLUSTER", 10_000)
    state = state_of(*workflows(120), approximate_from=50, probes=64)
    index = state.model("continuation")
    assert index.approximate_ready(timeout=60)
    built_for = index._ready_clusters().built_for
    extra = Workflow(
        id="new",
        steps=(
            InstructionStep("a brand new kind of request", (CallStep("lookup"), CallStep("audit"))),
        ),
    )
    state.add_many([extra])
    q = query("lookup", text="a brand new kind of request")
    approx = ranked(index, q, exact=False)
    assert len(index._ready_clusters().assignment) > built_for  # the new context was assigned
    assert "audit" in [t for t, _ in approx]
    alone = query("lookup", text="a brand new kind of request", exclude=frozenset({"new"}))
    assert "audit" not in [t for t, _ in ranked(index, alone, exact=False)]
    # The sample predates the save, which added the one context equal to the query: the
    # z-score's spread differs (121 contexts against 120), the order does not.
    approx, exact = ranked(index, alone, exact=False), ranked(index, alone, exact=True)
    assert [t for t, _ in approx] == [t for t, _ in exact]
    assert [p for _, p in approx] == pytest.approx([p for _, p in exact], abs=0.1)


def test_a_failed_build_is_logged_and_ranking_stays_exact(monkeypatch, caplog) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("no FAISS today")

    monkeypatch.setattr(ContextClusters, "build", broken)
    index = index_of(*workflows(120), approximate_from=50)
    with caplog.at_level(logging.WARNING):
        assert not index.approximate_ready(timeout=60)
    assert "ranking stays exact" in caplog.text
    thread = index._clusters._thread
    q = queries()[0]
    assert ranked(index, q, exact=False) == ranked(index, q, exact=True)
    assert index._clusters._thread is thread  # no new attempt on every ranking
    assert index.cluster_count == 0


def test_clusters_partition_the_live_ids_and_sample_each_cluster() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((900, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    live = np.setdiff1d(np.arange(900), [5, 17, 400])
    clusters = ContextClusters.build(vectors, live, seed=1)
    again = ContextClusters.build(vectors, live, seed=1)
    assert np.array_equal(clusters.assignment, again.assignment)  # deterministic
    assert np.array_equal(clusters.sample, again.sample)
    assert len(clusters) == 30  # round(sqrt(897))
    assert clusters.assignment[[5, 17, 400]].tolist() == [-1, -1, -1]
    members = clusters.members(np.arange(len(clusters)))
    assert np.array_equal(members, live)
    sampled = np.bincount(clusters.sample_clusters, minlength=len(clusters))
    sizes = np.bincount(clusters.assignment[live], minlength=len(clusters))
    assert np.array_equal(sampled, np.minimum(sizes, PER_CLUSTER))
    # Each live id's cluster is its nearest centroid.
    nearest = np.argmax(vectors[live] @ clusters.centroids.T, axis=1)
    assert np.array_equal(clusters.assignment[live], nearest)
    grown = np.vstack((vectors, vectors[:3]))
    clusters.cover(grown, np.arange(903))
    assert clusters.assignment[900:].tolist() == clusters.assignment[:3].tolist()
    assert clusters.members(clusters.assignment[[900]]).tolist().count(900) == 1


def test_a_clustering_needs_two_contexts_and_the_config_is_checked() -> None:
    with pytest.raises(ValueError, match="at least 2 live contexts"):
        ContextClusters.build(np.ones((3, 4), np.float32), np.array([1]))
    with pytest.raises(ConfigurationError, match="approximate_from"):
        ContinuationConfig(approximate_from=1)
    with pytest.raises(ConfigurationError, match="probes"):
        ContinuationConfig(probes=0)


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(-1, 30), st.integers(0, 1), st.integers(1, 4)),
        min_size=1,
        max_size=60,
    )
)
def test_the_sums_counted_densely_are_those_of_a_sort(groups) -> None:
    tools, contexts, later, sizes = np.array(groups, dtype=np.int64).T
    assignment = np.array([c % 4 if c % 7 else -1 for c in range(31)], dtype=np.int32)
    dense = ClusterLayout.of(assignment, 4, tools, contexts, later, sizes)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(continuation_clusters, "_DENSE_SUMS", 0)
        sorted_ = ClusterLayout.of(assignment, 4, tools, contexts, later, sizes)
    for name in ("rows", "tools", "later", "sums", "starts", "groups", "group_sums"):
        assert np.array_equal(getattr(dense, name), getattr(sorted_, name)), name
    # Every group is counted once, in its row's sum.
    assert dense.sums.sum() == sizes.sum()
    assert np.array_equal(np.sort(dense.groups), np.arange(len(groups)))
