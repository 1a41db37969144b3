"""One state per scope: the suggestion models are indexes over the scope's arrays, follow every
change written to the scope, and rank as models built afresh over the same arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from em_plugin.embedding import FakeEmbedder
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.suggest.continuation import ContinuationIndex
from em_plugin.suggest.models import ContinuationModel, ProceduralModel
from em_plugin.suggest.procedural_graph import ProceduralGraph

MODELS = (ContinuationModel(), ProceduralModel())

DATA = SyntheticMemory(5)
QUERIES = list(DATA.queries(10))
#: What the models kept of their own before they became indexes over the scope's arrays.
OWN_TABLES = {
    "_slot_of", "_slot_ids", "_alive", "_offsets", "_lengths", "_names", "_vocab",
    "_tokens", "_ctx", "_args", "_calls", "arg_table", "route_table",
}  # fmt: skip


def _ranked(state: ScopeMemory) -> list[list[tuple[str, float, tuple[str, ...]]]]:
    out = []
    for query in QUERIES:
        found = state.model("continuation").rank(state.query(query))
        out.append(
            [
                (c.tool, round(c.probability, 9), tuple(e.workflow_id for e in c.evidence))
                for c in found
            ]
        )
    return out


def test_the_models_share_the_scope_tables_and_follow_its_changes(tmp_path: Path) -> None:
    with EpisodicMemory(str(tmp_path / "store"), embedder=FakeEmbedder(32), scope=SCOPE) as memory:
        workflows = list(DATA.workflows(60))
        memory.save_many(workflows[:40])
        state = memory.scope_memory()
        arrays = state.arrays
        assert arrays.models is state
        # The models are indexes over the scope's arrays: one slot table, one vocabulary, one
        # per-leaf table of tools, contexts and args, one table of call counts.
        assert (
            state.model("continuation").scope is arrays
            and state.model("procedural").scope is arrays
        )
        for model in state.models.values():
            assert not OWN_TABLES & set(vars(model)), type(model).__name__
        # Saves, a replacement and deletes are written once, to the scope; the models follow.
        memory.save_many(workflows[40:])
        memory.save(workflows[3])
        for workflow in workflows[:5]:
            memory.delete(workflow.id)
        assert memory.scope_memory() is state
        assert state.ids() == sorted(w.id for w in workflows[5:])
        assert state.episode(workflows[0].id) is None
        assert state.episode(workflows[50].id) is not None
        # Models built afresh over the same arrays rank the same.
        fresh = ScopeMemory(32, memory._engine.embedder.embed, models=MODELS, arrays=arrays)
        assert arrays.models is fresh
        assert _ranked(fresh) == _ranked(state)


def test_a_compacted_scope_builds_its_models_again(tmp_path: Path) -> None:
    with EpisodicMemory(str(tmp_path / "store"), embedder=FakeEmbedder(32), scope=SCOPE) as memory:
        workflows = list(DATA.workflows(30))
        memory.save_many(workflows)
        for workflow in workflows[:10]:
            memory.delete(workflow.id)
        state = memory.scope_memory()
        before = _ranked(state)
        version = state.version(workflows[20].id)
        memory._engine.index.save()  # compacts the scope: a new state object
        again = memory.scope_memory()
        assert again is not state and again.arrays.models is again
        assert _ranked(again) == before
        assert again.version(workflows[20].id) == version  # cached parsed copies stay valid


def test_the_models_own_compactions_rank_as_models_built_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Small saves fold the postings' tails; many deletes drop dead positions and edge uses.
    # Both keep the scope's slot numbering, so they rank as models built over the same arrays.
    compactions: list[str] = []
    for model in (ContinuationIndex, ProceduralGraph):
        original = model._compact

        def counted(self: object, original: object = original) -> None:
            compactions.append(type(self).__name__)
            original(self)  # type: ignore[operator]

        monkeypatch.setattr(model, "_compact", counted)
    embedder = FakeEmbedder(32)
    state = ScopeMemory(32, embedder.embed, models=MODELS)
    workflows = list(DATA.workflows(600))
    for start in range(0, len(workflows), 25):
        state.add_many(workflows[start : start + 25])
    for workflow in workflows[::3] + workflows[1::3]:
        state.remove(workflow.id)
    assert {"ContinuationIndex", "ProceduralGraph"} <= set(compactions)
    graph = state.model("procedural")
    fresh = ScopeMemory(32, embedder.embed, models=MODELS, arrays=state.arrays)
    assert _ranked(fresh) == _ranked(state)
    assert fresh.model("procedural").tool_scores() == graph.tool_scores()
    context = np.asarray(embedder.embed(["book a flight"]), dtype=np.float32)[0]
    for tool in [None, *state.arrays.tools]:
        assert fresh.model("procedural").next_tools(tool, context, k=5) == graph.next_tools(
            tool, context, k=5
        )
