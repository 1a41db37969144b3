"""The fast matcher returns exactly what the brute-force reference returns (docs/retrieval.md)."""

from __future__ import annotations

import hashlib
from contextlib import ExitStack
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from em_plugin.embedding import CallableEmbedder, FakeEmbedder
from em_plugin.retrieval import fast as fast_matching
from em_plugin.retrieval.alignment import exact_alignment, exact_alignments
from em_plugin.retrieval.fast import _exact_sims, _Query, similarity_margin
from em_plugin.retrieval.reference import MatchConfig, best_alignment, similarity_matrix
from em_plugin.state.step_index import StepIndex
from provenance.model import CallStep, InstructionStep, Workflow

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

WORDS = ["extract", "pfas", "product", "label", "check", "supplier", "report", "the", "of"]
TOOLS = ["search", "extract", "classify", "lookup", "report"]

leaf = st.one_of(
    st.sampled_from(TOOLS).map(lambda t: ("call", t)),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(
        lambda ws: ("instr", " ".join(ws))
    ),
)
leaf_lists = st.lists(leaf, min_size=1, max_size=8)


def _workflow(workflow_id: str, leaves: list[tuple[str, str]], scope: str = "default") -> Workflow:
    """Build a workflow with these leaves; calls after an instruction are nested under it."""
    steps: list[InstructionStep | CallStep] = []
    i = 0
    while i < len(leaves):
        kind, value = leaves[i]
        if kind == "call":
            steps.append(CallStep(value))
            i += 1
            continue
        calls: list[CallStep] = []
        j = i + 1
        while j < len(leaves) and leaves[j][0] == "call" and len(calls) < 2:
            calls.append(CallStep(leaves[j][1]))
            j += 1
        # An instruction with sub-steps is not a leaf: keep a leaf copy of its text first.
        steps.append(InstructionStep(value))
        if calls:
            steps.append(InstructionStep(value + " then", tuple(calls)))
        i = j
    return Workflow(workflow_id, tuple(steps), scope=scope)


configs = st.builds(
    MatchConfig,
    threshold=st.sampled_from([-0.5, 0.0, 0.3, 0.5, 0.65, 0.8, 0.95]),
    max_workflows=st.integers(1, 6),
    exclude_identical=st.booleans(),
    require_continuation=st.booleans(),
    window=st.none() | st.integers(1, 4),
)


def _same(index: StepIndex, query: Workflow, config: MatchConfig) -> list:
    fast = index.match(query, config=config)
    reference = index.match(query, config=config, method="reference")
    assert [m.workflow_id for m in fast] == [m.workflow_id for m in reference]
    assert [m.alignment for m in fast] == [m.alignment for m in reference]
    assert np.allclose([m.score for m in fast], [m.score for m in reference], rtol=0, atol=1e-6)
    return fast


def _small_limits() -> ExitStack:
    """Shrink the matcher's budgets so that every pruning path runs on small memories."""
    stack = ExitStack()
    for name, value in (
        ("_FIRST_K", 2),
        ("_MIN_BUDGET", 3),
        ("_FIRST_BATCH", 2),
        ("_MAX_CELLS", 40),
    ):
        stack.enter_context(patch.object(fast_matching, name, value))
    return stack


@SETTINGS
@given(
    memory=st.lists(leaf_lists, min_size=1, max_size=30),
    query=leaf_lists,
    prefix_of=st.none() | st.integers(0, 29),
    config=configs,
    small=st.booleans(),
)
def test_fast_equals_reference_with_fake_embedder(memory, query, prefix_of, config, small):
    index = StepIndex(FakeEmbedder(16))
    index.add_many(_workflow(f"w{i:02d}", leaves) for i, leaves in enumerate(memory))
    if prefix_of is not None and prefix_of < len(memory):
        # Queries that are prefixes of memory workflows make matches and exact duplicates.
        source = memory[prefix_of]
        query = source[: max(1, min(len(source), len(query)))]
    with _small_limits() if small else ExitStack():
        _same(index, _workflow("current", query), config)


def _planted(texts: list[str]) -> np.ndarray:
    """Random unit vectors, but texts sharing a first letter share one vector (planted ties)."""
    rows = []
    for text in texts:
        seed = int.from_bytes(hashlib.blake2b(text[:1].encode(), digest_size=4).digest(), "little")
        rows.append(np.random.default_rng(seed).standard_normal(8))
    return np.array(rows)


def _lattice(texts: list[str]) -> np.ndarray:
    """Vectors on a tiny lattice: many exactly equal cosines between different texts."""
    basis = np.eye(4)
    return np.array([basis[len(t) % 4] + basis[(len(t) // 4) % 4] for t in texts])


@SETTINGS
@given(
    memory=st.lists(leaf_lists, min_size=1, max_size=25),
    query=leaf_lists,
    config=configs,
    vectors=st.sampled_from([_planted, _lattice]),
    small=st.booleans(),
)
def test_fast_equals_reference_with_planted_vectors(memory, query, config, vectors, small):
    index = StepIndex(CallableEmbedder(vectors, name=vectors.__name__))
    index.add_many(_workflow(f"w{i:02d}", leaves) for i, leaves in enumerate(memory))
    with _small_limits() if small else ExitStack():
        _same(index, _workflow("current", query), config)


@SETTINGS
@given(
    memory=st.lists(leaf_lists, min_size=2, max_size=25),
    removals=st.lists(st.integers(0, 24), max_size=10),
    replacements=st.lists(st.tuples(st.integers(0, 24), leaf_lists), max_size=5),
    query=leaf_lists,
    config=configs,
)
def test_fast_equals_reference_after_removals_and_replacements(
    memory, removals, replacements, query, config
):
    index = StepIndex(FakeEmbedder(16))
    index.add_many(_workflow(f"w{i:02d}", leaves) for i, leaves in enumerate(memory))
    for i in removals:
        index.remove(f"w{i:02d}")
    for i, leaves in replacements:
        index.add(_workflow(f"w{i:02d}", leaves))
    with _small_limits():
        _same(index, _workflow("current", query), config)


def test_fast_finds_matches_and_honours_the_limit():
    rng = np.random.default_rng(3)
    memory = [
        [("instr", "extract pfas of product"), ("call", "extract"), ("call", "classify")]
        + [("call", TOOLS[int(t)]) for t in rng.integers(0, 5, size=3)]
        for _ in range(40)
    ]
    index = StepIndex(FakeEmbedder(32))
    index.add_many(_workflow(f"w{i:02d}", leaves) for i, leaves in enumerate(memory))
    query = _workflow("q", [("instr", "extract the pfas of product"), ("call", "extract")])
    with _small_limits():
        found = _same(index, query, MatchConfig(max_workflows=5))
    assert len(found) == 5
    assert all(m.score > 0.65 for m in found)


matrices = st.integers(1, 5).flatmap(
    lambda n: st.integers(n, 9).flatmap(
        lambda m: st.lists(
            st.sampled_from([0.0, 0.25, 0.5, 1.0, -0.5])
            | st.floats(-1, 1, width=32, allow_subnormal=False),
            min_size=n * m,
            max_size=n * m,
        ).map(lambda v: np.array(v, dtype=np.float32).reshape(n, m))
    )
)


@settings(max_examples=300, deadline=None)
@given(sim=matrices)
def test_exact_alignment_is_the_reference_dp(sim):
    assert exact_alignment(sim) == best_alignment(sim)


@settings(max_examples=100, deadline=None)
@given(sims=st.lists(matrices, min_size=1, max_size=6))
def test_batched_alignments_are_the_reference_dp(sims):
    rows = sims[0].shape[0]
    same_n = [s for s in sims if s.shape[0] == rows] + [np.zeros((rows, max(0, rows - 1)))]
    assert exact_alignments(same_n) == [best_alignment(s) for s in same_n]


@SETTINGS
@given(memory=st.lists(leaf_lists, min_size=1, max_size=10), query=leaf_lists)
def test_exact_similarities_are_the_reference_matrix_bit_for_bit(memory, query):
    index = StepIndex(CallableEmbedder(_planted, name="planted"))
    index.add_many(_workflow(f"w{i:02d}", leaves) for i, leaves in enumerate(memory))
    current = index.query_leaves(_workflow("current", query + [("call", "never-stored")]))
    scope = index._scopes["default"]
    for slot in scope.id_slots.values():
        expected = similarity_matrix(current, scope.leaves(slot))
        actual = _exact_sims(_Query(current, scope), current, scope, slot)
        assert actual.dtype == expected.dtype and np.array_equal(actual, expected)


def test_exact_alignment_of_impossible_shapes():
    assert exact_alignment(np.zeros((3, 2), np.float32)) is None
    assert exact_alignment(np.zeros((0, 4), np.float32)) is None


@pytest.mark.parametrize("dimension", [8, 384, 4096])
def test_margin_covers_float32_dot_products(dimension):
    rng = np.random.default_rng(dimension)
    x = rng.standard_normal((64, dimension)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    exact = x.astype(np.float64) @ x.astype(np.float64).T
    assert np.abs((x @ x.T) - exact).max() < similarity_margin(dimension) / 2
