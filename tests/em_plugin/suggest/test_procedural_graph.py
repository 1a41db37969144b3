"""H-EPM tool-transition graph: weights with the efficiency term, contexts on edges, updates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from em_plugin.embedding import FakeEmbedder
from em_plugin.errors import ConfigurationError
from em_plugin.state.scope_index import ScopeIndex
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.suggest.models import ProceduralModel
from em_plugin.suggest.procedural_graph import ProceduralGraph
from provenance.model import CallStep, InstructionStep, Workflow


def wf(wid: str, *tools: str, text: str | None = None) -> Workflow:
    calls = tuple(CallStep(t) for t in tools)
    steps = (InstructionStep(text, calls),) if text else calls
    return Workflow(id=wid, steps=steps)


def state_of(*workflows: Workflow, embedder: FakeEmbedder | None = None, **kw) -> ScopeMemory:
    """A scope holding ``workflows``, saved one by one (its procedural graph follows it)."""
    embedder = embedder or FakeEmbedder(64)
    state = ScopeMemory(embedder.dimension, embedder.embed, models=[ProceduralModel(**kw)])
    for w in workflows:
        state.add_many([w])
    return state


def graph_of(*workflows: Workflow, embedder: FakeEmbedder | None = None, **kw) -> ProceduralGraph:
    return state_of(*workflows, embedder=embedder, **kw).model("procedural")


def test_weight_is_count_plus_efficiency_term_normalised() -> None:
    # a->b in w1 (3 calls) and w2 (2 calls); a->c in w3 (4 calls).
    graph = graph_of(wf("w1", "a", "b", "x"), wf("w2", "a", "b"), wf("w3", "a", "c", "y", "z"))
    assert graph.raw_weight("a", "b") == pytest.approx(2 + (1 / 3 + 1 / 2))
    assert graph.raw_weight("a", "c") == pytest.approx(1 + 1 / 4)
    total = 2 + 1 / 3 + 1 / 2 + 1 + 1 / 4
    assert graph.weight("a", "b") == pytest.approx((2 + 5 / 6) / total)
    assert math.isclose(sum(graph.successors("a").values()), 1.0)
    assert graph.raw_weight("b", "a") == 0.0


def test_a_workflow_counts_once_per_transition_and_c_scales_efficiency() -> None:
    graph = graph_of(wf("w1", "a", "b", "a", "b"), c=0.0)
    assert graph.raw_weight("a", "b") == 1.0  # N counts workflows, not occurrences
    graph_c2 = graph_of(wf("w1", "a", "b"), c=2.0)
    assert graph_c2.raw_weight("a", "b") == pytest.approx(1 + 2 * 0.5)


def test_efficiency_term_prefers_shorter_workflows() -> None:
    # Same N for a->b and a->c, but a->b happens in a shorter workflow.
    graph = graph_of(wf("short", "a", "b"), wf("long", "a", "c", "d", "e", "f"))
    top = graph.next_tools("a", k=2)
    assert [t.tool for t in top] == ["b", "c"]
    assert all(t.mode == "procedural" for t in top)


def test_start_node_gives_first_tools() -> None:
    graph = graph_of(wf("w1", "a", "b"), wf("w2", "a", "c"), wf("w3", "d"))
    assert [t.tool for t in graph.next_tools(None, k=3)][0] == "a"


def test_close_context_ranks_by_similarity_before_weight() -> None:
    embedder = FakeEmbedder(64)
    memory = [
        wf("w1", "search", "book", text="book a flight to paris"),
        wf("w2", "search", "book", text="book a flight to rome"),
        wf("w3", "search", "cancel", text="cancel my hotel reservation"),
    ]
    graph = graph_of(*memory, embedder=embedder, similarity_threshold=0.7)
    by_weight = graph.next_tools("search", k=2)
    assert [t.tool for t in by_weight] == ["book", "cancel"]
    query = embedder.embed(["cancel my hotel reservation please"])[0]
    ranked = graph.next_tools("search", query, k=2)
    assert ranked[0].tool == "cancel" and ranked[0].mode == "episodic"
    assert ranked[0].similarity is not None and ranked[0].similarity >= 0.7
    assert ranked[0].evidence[0].workflow_id == "w3"
    assert ranked[0].evidence[0].position == 1
    # An unfamiliar context falls back to the weights.
    other = embedder.embed(["zzz qqq unrelated words"])[0]
    assert [t.tool for t in graph.next_tools("search", other, k=2)] == ["book", "cancel"]


def test_remove_and_replace_keep_weights_in_sync() -> None:
    state = state_of(wf("w1", "a", "b"), wf("w2", "a", "c"))
    graph = state.model("procedural")
    state.remove("w1")
    assert graph.successors("a") == {"c": 1.0}
    assert "w1" not in graph and len(graph) == 1
    state.add_many([wf("w2", "a", "d")])
    assert graph.successors("a") == {"d": 1.0}
    assert graph.raw_weight("a", "c") == 0.0


def test_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="c must be"):
        ProceduralGraph(ScopeIndex(8), c=-1)
    with pytest.raises(ConfigurationError, match="similarity_threshold"):
        ProceduralGraph(ScopeIndex(8), similarity_threshold=2)


def test_tool_scores_sum_incoming_weight() -> None:
    graph = graph_of(wf("w1", "a", "b"), wf("w2", "c", "b"))
    scores = graph.tool_scores()
    assert scores["b"] > scores["a"] and set(scores) == {"a", "b", "c"}
    assert np.isclose(scores["b"], 2 * (1 + 0.5))
