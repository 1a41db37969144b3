"""One state per scope: the suggestion models are indexes over the scope's arrays, follow every
change written to the scope, and rank as models built afresh over the same arrays."""

from __future__ import annotations

from pathlib import Path

from em_plugin.embedding import FakeEmbedder
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory
from em_plugin.state.scope_memory import ScopeMemory

DATA = SyntheticMemory(5)
QUERIES = list(DATA.queries(10))


def _ranked(state: ScopeMemory) -> list[list[tuple[str, float, tuple[str, ...]]]]:
    out = []
    for query in QUERIES:
        found = state.continuation.rank(state.query(query))
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
        # One vocabulary and one args and routes table: the objects, not copies.
        assert state.continuation._names is arrays.tools
        assert state.graph._vocab is arrays.tool_ids
        assert state.continuation.arg_table is arrays.args
        assert state.continuation.route_table is arrays.routes
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
        fresh = ScopeMemory(32, memory._engine.embedder.embed, arrays=arrays)
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
