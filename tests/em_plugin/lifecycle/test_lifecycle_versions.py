"""Issue 21.3: saving an id that exists makes a new version; the old one stays readable."""

from __future__ import annotations

from pathlib import Path

import pytest

from em_plugin import EpisodicMemory, WorkflowVersion
from provenance.errors import WorkflowNotFound
from provenance.lifecycle import workflow_record_iri
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.vocab import PROV, workflow_iri


def _session(*tools: str, wid: str = "session/t1", text: str = "classify the SDS") -> Workflow:
    calls = tuple(CallStep(t) for t in tools)
    return Workflow(id=wid, session="t1", steps=(InstructionStep(text, calls),))


@pytest.fixture
def memory(tmp_path: Path):  # type: ignore[no-untyped-def]
    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32", scope="team") as found:
        yield found


def test_a_session_saved_twice_keeps_both_versions(memory: EpisodicMemory) -> None:
    memory.save(_session("extract", "classify"))
    memory.save(_session("extract", "classify", "report"))

    versions = memory.lifecycle.history("session/t1")
    assert [(v.id, v.version, v.leaves) for v in versions] == [
        ("session/t1@v1", 1, 2),
        ("session/t1", 2, 3),
    ]
    assert versions[0].superseded_by == "session/t1"
    assert versions[1].superseded_by is None and versions[1].created is not None
    assert all(isinstance(v, WorkflowVersion) for v in versions)
    # The id reads the newest; ID@v1 reads the old one.
    assert [s.name for s in memory.load("session/t1").leaves()] == ["extract", "classify", "report"]
    assert [s.name for s in memory.load("session/t1@v1").leaves()] == ["extract", "classify"]
    # Only the newest is retrieved; both stay stored.
    assert memory.ids() == ["session/t1"]
    assert memory.store.ids("team") == ["session/t1", "session/t1@v1"]
    assert memory.lifecycle.history("session/t1@v1") == versions


def test_versions_are_linked_by_was_revision_of(memory: EpisodicMemory) -> None:
    memory.save(_session("a", "b"))
    memory.save(_session("a", "c"))
    memory.save(_session("a", "d"))
    name = workflow_record_iri("session/t1", "team")
    triples = memory.store.read_records([name])[name]
    links = {(s, o) for s, p, o in triples if p == PROV.wasRevisionOf}
    assert links == {
        (workflow_iri("session/t1"), workflow_iri("session/t1@v2")),
        (workflow_iri("session/t1@v2"), workflow_iri("session/t1@v1")),
    }
    assert [v.id for v in memory.lifecycle.history("session/t1")] == [
        "session/t1@v1",
        "session/t1@v2",
        "session/t1",
    ]
    # The revision activities are PROV activities with a time and an agent.
    rows = memory.store.backend.query(
        "PREFIX prov: <http://www.w3.org/ns/prov#> "
        "PREFIX wf: <https://w3id.org/em-plugin/ns#> "
        "SELECT ?a ?t ?who WHERE { GRAPH ?g { ?a a prov:Activity, wf:Revision ; "
        "prov:startedAtTime ?t ; prov:wasAssociatedWith ?who } }"
    ).rows
    assert len(rows) == 2


def test_a_session_saved_again_never_loses_steps(memory: EpisodicMemory) -> None:
    memory.save(_session("extract", "classify", "report"))
    kept = memory.save(_session("extract"))  # a shorter save of the same session
    assert [s.name for s in kept.leaves()] == ["extract", "classify", "report"]
    assert len(memory.lifecycle.history("session/t1")) == 1
    assert [s.name for s in memory.load("session/t1").leaves()] == [
        "extract",
        "classify",
        "report",
    ]


def test_an_unchanged_save_makes_no_version(memory: EpisodicMemory) -> None:
    memory.save(_session("a", "b"))
    memory.save(_session("a", "b"))
    assert len(memory.lifecycle.history("session/t1")) == 1
    assert memory.store.ids("team") == ["session/t1"]


def test_versions_survive_a_reopen_and_are_deleted_with_the_workflow(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    with EpisodicMemory(path, embedder="fake:32", scope="team") as memory:
        memory.save(_session("a", "b"))
        memory.save(_session("a", "c"))
    with EpisodicMemory(path, embedder="fake:32", scope="team") as memory:
        assert memory.ids() == ["session/t1"]
        assert len(memory.lifecycle.history("session/t1")) == 2
        assert memory.delete("session/t1")
        assert memory.store.ids("team") == []
        with pytest.raises(WorkflowNotFound):
            memory.lifecycle.history("session/t1")
