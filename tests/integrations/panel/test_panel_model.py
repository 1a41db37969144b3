"""The panel's data layer without a browser: the PROV drawing's classes, the workflow table."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from panel_support import SCOPE, seed_workflows
from rdflib import URIRef
from rdflib.namespace import PROV, RDF

from em_plugin.memory import EpisodicMemory
from integrations.panel.catalog import Catalog, WorkflowFilter
from integrations.panel.provgraph import prov_drawing
from provenance.mapping import entail_types, workflow_to_graph
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from provenance.vocab import WF
from tests.strategies import workflows


def _entailed_kinds(workflow: Workflow) -> dict[str, str]:
    graph = entail_types(workflow_to_graph(workflow))
    tools = set(graph.subjects(WF.toolName, None))
    kinds: dict[str, str] = {}
    for cls, kind in ((PROV.Agent, "agent"), (PROV.Activity, "activity"), (PROV.Entity, "entity")):
        for node in graph.subjects(RDF.type, cls):
            if isinstance(node, URIRef) and node not in tools:
                kinds.setdefault(str(node), kind)
    return kinds


@settings(max_examples=60, deadline=None)
@given(workflows)
def test_the_drawing_classes_every_node_as_entail_types_does(workflow: Workflow) -> None:
    drawing = prov_drawing(workflow, max_nodes=10_000)
    drawn = {e["data"]["id"]: e["data"]["kind"] for e in drawing.elements if "kind" in e["data"]}
    assert drawn == _entailed_kinds(workflow)
    ids = set(drawn)
    edges = [e["data"] for e in drawing.elements if "source" in e["data"]]
    assert all(e["source"] in ids and e["target"] in ids for e in edges)
    assert drawing.omitted == 0 and drawing.edges == len(edges)


def test_a_large_drawing_is_cut_and_says_so() -> None:
    workflow = seed_workflows()[0]
    full = prov_drawing(workflow)
    cut = prov_drawing(workflow, max_nodes=5)
    assert cut.nodes == 5 and cut.omitted == full.nodes - 5


def test_the_workflow_table_follows_saves_and_deletes() -> None:
    seeded = [w for w in seed_workflows() if w.scope == SCOPE]
    with open_store("memory:") as store:
        store.save_many(seeded)
        catalog = Catalog(store)
        page = catalog.workflows(SCOPE, limit=10)
        assert page.total == len(seeded) and len(page.rows) == 10
        newest = max(seeded, key=lambda w: w.created or "")
        assert page.rows[0].id == newest.id
        first = seeded[0]
        row = next(r for r in catalog.workflows(SCOPE, limit=100).rows if r.id == first.id)
        assert row.steps == sum(1 for _ in first.walk())
        assert row.calls == sum(isinstance(s, CallStep) for _, s in first.walk())

        extra = Workflow(
            id="late/1",
            scope=SCOPE,
            title="A late arrival",
            created="2027-01-01T00:00:00+00:00",
            steps=(InstructionStep("Rank the suppliers", (CallStep("ranker", agent="a1"),)),),
        )
        store.save(extra)
        page = catalog.workflows(SCOPE, limit=1)
        assert page.total == len(seeded) + 1 and page.rows[0].id == "late/1"
        found = catalog.workflows(SCOPE, where=WorkflowFilter(text="suppliers"))
        assert [r.id for r in found.rows] == ["late/1"]
        found = catalog.workflows(SCOPE, where=WorkflowFilter(agent="a1", tool="ranker"))
        assert [r.id for r in found.rows] == ["late/1"]
        found = catalog.workflows(SCOPE, where=WorkflowFilter(since=date(2027, 1, 1)))
        assert [r.id for r in found.rows] == ["late/1"]

        store.delete("late/1", SCOPE)
        assert catalog.workflows(SCOPE).total == len(seeded)
        assert catalog.workflows(SCOPE, where=WorkflowFilter(text="suppliers")).total == 0


def test_the_table_shows_current_versions_and_filters_retired_ones() -> None:
    seeded = [w for w in seed_workflows() if w.scope == SCOPE]
    revised, retired = seeded[3], seeded[5]
    with EpisodicMemory(store="memory:", embedder="fake", scope=SCOPE) as memory:
        memory.save_many(seeded)
        extra = InstructionStep("Double-check the report", (CallStep("report_checker"),))
        memory.save(revised.replace(steps=(*revised.steps, extra)))
        memory.lifecycle.retire(retired.id, reason="outdated")
        catalog = Catalog(memory.store)
        everything = catalog.workflows(SCOPE, limit=1000)
        assert everything.total == len(seeded)
        rows = {r.id: r for r in everything.rows}
        assert f"{revised.id}@v1" not in rows
        assert rows[revised.id].versions == 2 and rows[retired.id].retired
        assert not rows[revised.id].retired and rows[retired.id].versions == 1
        hidden = catalog.workflows(SCOPE, where=WorkflowFilter(retired="hide"), limit=1000)
        assert hidden.total == len(seeded) - 1 and retired.id not in {r.id for r in hidden.rows}
        only = catalog.workflows(SCOPE, where=WorkflowFilter(retired="only"))
        assert [r.id for r in only.rows] == [retired.id]
        assert [s.workflows for s in catalog.scopes() if s.scope == SCOPE] == [len(seeded)]
        with pytest.raises(ValueError, match="show, hide, only"):
            catalog.workflows(SCOPE, where=WorkflowFilter(retired="maybe"))


def test_versions_read_from_the_record_match_the_memorys_history() -> None:
    seeded = [w for w in seed_workflows() if w.scope == SCOPE]
    revised, retired, plain = seeded[3], seeded[5], seeded[7]
    with EpisodicMemory(store="memory:", embedder="fake", scope=SCOPE) as memory:
        memory.save_many(seeded)
        extra = InstructionStep("Double-check the report", (CallStep("report_checker"),))
        memory.save(revised.replace(steps=(*revised.steps, extra)))
        memory.lifecycle.retire(retired.id, reason="outdated")
        catalog = Catalog(memory.store)
        for workflow_id in (revised.id, f"{revised.id}@v1", retired.id, plain.id):
            shown = catalog.versions(memory.store.load(workflow_id, SCOPE))
            assert shown == memory.lifecycle.history(workflow_id), workflow_id
        assert [v.id for v in catalog.versions(memory.store.load(revised.id, SCOPE))] == [
            f"{revised.id}@v1",
            revised.id,
        ]


def test_the_read_only_pages_never_build_the_memory(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from integrations.panel import PanelSettings, create_app

    seeded = [w for w in seed_workflows() if w.scope == SCOPE]
    revised = seeded[3]
    store = tmp_path / "store"
    with EpisodicMemory(store=str(store), embedder="fake", scope=SCOPE) as memory:
        memory.save_many(seeded)
        extra = InstructionStep("Double-check the report", (CallStep("report_checker"),))
        memory.save(revised.replace(steps=(*revised.steps, extra)))
        memory.lifecycle.retire(seeded[5].id, reason="outdated")
    app = create_app(PanelSettings(store=str(store), embedder="fake"))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        state = app.state.panel
        for path in (
            "/",
            f"/workflows?scope={SCOPE}",
            f"/workflow?scope={SCOPE}&id={revised.id}",
            f"/workflow?scope={SCOPE}&id={revised.id}%40v1",
            f"/workflow?scope={SCOPE}&id={seeded[5].id}",
            f"/workflow/download?scope={SCOPE}&id={revised.id}&format=ttl",
            f"/tools?scope={SCOPE}",
            "/sparql?name=tool-usage",
        ):
            answer = client.get(path)
            assert answer.status_code == 200, (path, answer.text[:300])
        page = client.get(f"/workflow?scope={SCOPE}&id={revised.id}").text
        assert page.count("data-version=") == 2
        assert 'id="retired-badge"' in client.get(f"/workflow?scope={SCOPE}&id={seeded[5].id}").text
        assert not state.memory_loaded  # so neither is the embedding model
        client.get(f"/procedures?scope={SCOPE}")  # mining reads the step index: it needs one
        assert state.memory_loaded


def test_a_read_only_panel_reopens_the_store_only_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from integrations.panel import state as panel_state
    from integrations.panel.state import PanelSettings, PanelState

    monkeypatch.setattr(panel_state, "_REFRESH_SECONDS", 0.0)
    seeded = [w for w in seed_workflows() if w.scope == SCOPE]
    path = tmp_path / "store"
    with open_store(str(path)) as writer:
        writer.save_many(seeded[:5])
        state = PanelState(PanelSettings(store=str(path)))
        try:
            assert state.store.read_only
            reopened: list[int] = []
            monkeypatch.setattr(state.store, "refresh", lambda: reopened.append(1))
            state.refresh()
            state.refresh()
            assert reopened == []  # nothing was written: no reopen, caches stay warm
            monkeypatch.undo()
            monkeypatch.setattr(panel_state, "_REFRESH_SECONDS", 0.0)
            writer.save(seeded[5])
            state.refresh()
            assert (SCOPE, seeded[5].id) in state.store
        finally:
            state.close()


def test_the_pages_over_every_kind_of_store(store: Any) -> None:
    """Embedded (memory, disk), ``oxigraph serve`` and Virtuoso: the same pages, the same counts."""
    from starlette.testclient import TestClient

    from integrations.panel import PanelSettings, create_app

    seeded = [w for w in seed_workflows() if w.scope == SCOPE][:8]
    revised = seeded[3]
    with EpisodicMemory(store=store, embedder="fake", scope=SCOPE) as memory:
        memory.save_many(seeded)
        extra = InstructionStep("Double-check the report", (CallStep("report_checker"),))
        memory.save(revised.replace(steps=(*revised.steps, extra)))
    app = create_app(PanelSettings(store="memory:", embedder="fake", warm=False), store=store)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        scopes = client.get("/").text
        assert f'data-scope="{SCOPE}"' in scopes
        table = client.get(f"/workflows?scope={SCOPE}").text
        assert f'data-total="{len(seeded)}"' in table
        page = client.get(f"/workflow?scope={SCOPE}&id={revised.id}")
        assert page.status_code == 200 and page.text.count("data-version=") == 2
        tools = client.get(f"/tools?scope={SCOPE}")
        assert tools.status_code == 200 and "report_checker" in tools.text
        answer = client.get("/sparql?name=tool-usage")
        assert answer.status_code == 200 and "report_checker" in answer.text
        assert not app.state.panel.memory_loaded
