"""Lifecycle records (provenance/lifecycle.py): round trips, their own graphs, named queries."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from em_plugin import EpisodicMemory
from provenance.lifecycle import (
    LifecycleEvent,
    ProcedureRecord,
    VersionRecord,
    WorkflowRecord,
    procedure_iri,
    procedure_triples,
    read_procedure,
    read_workflow_record,
    version_of,
    workflow_record_iri,
    workflow_record_triples,
)
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.queries import load_query
from provenance.vocab import BASE, PROV

ids = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), min_size=1, max_size=20
)
TIME = "2026-11-27T10:00:00+00:00"


@given(ids, ids, st.integers(1, 5), st.booleans())
def test_workflow_records_round_trip(
    workflow_id: str, scope: str, count: int, retired: bool
) -> None:
    versions = tuple(VersionRecord(n, TIME, n * 2) for n in range(1, count + 1))
    event = LifecycleEvent("Retirement", TIME, "someone", reason="r", status="retired")
    record = WorkflowRecord(
        workflow_id,
        scope,
        versions,
        retired=retired,
        reason="r" if retired else None,
        retired_at=TIME if retired else None,
        retired_by=event.token if retired else None,
    )
    triples = workflow_record_triples(record, (), event)
    back = read_workflow_record(triples, workflow_id, scope)
    assert back.versions == versions and back.retired == retired
    assert (back.reason, back.retired_by) == (record.reason, record.retired_by)
    # Rewriting keeps the activities already recorded.
    again = workflow_record_triples(back, triples, None)
    assert {t for t in triples if "#act-" in str(t[0])} <= set(again)


@given(ids, st.lists(ids, min_size=2, max_size=5), st.sampled_from(["candidate", "active"]))
def test_procedure_records_round_trip(scope: str, tools: list[str], status: str) -> None:
    record = ProcedureRecord(
        "p-0123456789ab", scope, tuple(tools), status, name="x", support=3, uses=3,
        successes=2, sources=("w 2", "w/1"),
    )  # fmt: skip
    name = procedure_iri(record.procedure_id, scope)
    assert read_procedure(procedure_triples(record), name) == record


def test_version_ids() -> None:
    assert version_of("session/t1@v12") == ("session/t1", 12)
    assert version_of("a@b@v1") == ("a@b", 1)
    assert version_of("plain") is None and version_of("x@v0") is None


def test_records_live_in_their_own_graphs(tmp_path: Path) -> None:
    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32", scope="s") as memory:
        memory.save(Workflow(id="w", steps=(CallStep("a"), CallStep("b"))))
        memory.save(Workflow(id="w", steps=(CallStep("a"), CallStep("c"))))
        memory.save(Workflow(id="v", steps=(CallStep("a"), CallStep("c"))))
        memory.save(Workflow(id="u", steps=(CallStep("a"), CallStep("c"))))
        memory.lifecycle.retire("v", reason="stale")
        memory.lifecycle.procedures()
        names = {str(n) for n in memory.store.backend.graph_names()}
        lifecycle = {n for n in names if n.startswith(f"{BASE}lifecycle/s/")}
        assert str(workflow_record_iri("w", "s")) in lifecycle
        assert len(lifecycle) == 3  # two workflow records, one procedure
        # Never listed as workflows.
        assert memory.store.ids("s") == ["u", "v", "w", "w@v1"]
        assert len(memory.store) == 4
        memory.forget()
        left = {str(n) for n in memory.store.backend.graph_names()}
        assert not {n for n in left if "/lifecycle/" in n}


@pytest.mark.parametrize("spec", ["memory:", "disk"])
def test_named_queries_read_the_records(spec: str, tmp_path: Path) -> None:
    store = "memory:" if spec == "memory:" else str(tmp_path / "store")
    steps = (InstructionStep("go", (CallStep("a"), CallStep("b"))),)
    with EpisodicMemory(store, embedder="fake:32", scope="s") as memory:
        memory.save(Workflow(id="w", steps=steps))
        memory.save(Workflow(id="w", steps=(*steps, InstructionStep("more", (CallStep("c"),)))))
        memory.save(Workflow(id="x", steps=steps))
        memory.lifecycle.retire("x", reason="stale", agent="ann")
        memory.save(Workflow(id="y", steps=steps))
        (procedure,) = memory.lifecycle.procedures()
        memory.lifecycle.accept_procedure(procedure.id, name="AB")
        versions = memory.store.query("versions", {"workflow": "w"}).dicts()
        assert [(str(r["id"]), str(r.get("revises", ""))) for r in versions] == [
            ("w@v1", ""),
            ("w", "w@v1"),
        ]
        (retired,) = memory.store.query("retired-workflows").dicts()
        assert (str(retired["workflow"]), str(retired["reason"]), str(retired["agent"])) == (
            "x",
            "stale",
            "ann",
        )
        (row,) = memory.store.query("procedures", {"status": "active"}).dicts()
        assert (str(row["name"]), int(row["support"]), int(row["sources"])) == ("AB", 2, 2)
        kinds = [str(r["kind"]) for r in memory.store.query("lifecycle-activities").dicts()]
        assert sorted(kinds) == ["ProcedureAcceptance", "ProcedureMining", "Retirement", "Revision"]
        assert load_query("lifecycle-activities").parameter_names == ("scope", "subject")
        # Standard PROV: the retired workflow was invalidated by an activity.
        ask = memory.store.backend.query(
            "PREFIX prov: <http://www.w3.org/ns/prov#> ASK { GRAPH ?g { "
            "?w prov:wasInvalidatedBy ?a . ?a a prov:Activity ; prov:startedAtTime ?t } }"
        )
        assert ask is True and PROV.invalidatedAtTime
