"""Issue 30, items 3 and 4: the lifecycle is PROV that ad hoc SPARQL finds, and the live store
answers PROV-O and P-Plan queries as its export does (docs/provenance-mapping.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from em_plugin import EpisodicMemory
from provenance.export import export, provjson_to_workflows, store_items
from provenance.lifecycle import lifecycle_prefix
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.vocab import PREFIXES, workflow_iri
from tests.prov_counts import (
    AIRLINE,
    NINE_COUNTS,
    PFAS,
    PROCEDURE_NAME,
    RETIRED,
    REVISED,
    export_counts,
    lifecycle_memory,
    live_counts,
)

_PREFIXES = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in PREFIXES.items())


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EpisodicMemory]:
    with lifecycle_memory(str(tmp_path_factory.mktemp("lifecycle") / "store")) as found:
        yield found


def _rows(memory: EpisodicMemory, text: str, scope: str | None = None) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in memory.store.query(_PREFIXES + text, scope=scope)]  # type: ignore[union-attr]


@pytest.mark.parametrize("scope", [PFAS, AIRLINE, None], ids=["pfas", "airline", "all"])
def test_the_nine_counts_are_equal_in_the_live_store_and_its_export(
    memory: EpisodicMemory, scope: str | None
) -> None:
    live = live_counts(memory.store, scope)
    assert live == export_counts(memory.store, scope)
    assert set(live) == set(NINE_COUNTS) and all(live.values())


def test_plans_are_workflows_and_procedures_and_steps_are_not_plans(
    memory: EpisodicMemory,
) -> None:
    live = live_counts(memory.store, PFAS)
    workflows = len(memory.store.ids(PFAS))  # the newest versions, older ones and retired ones
    assert live["plans"] == live["p-plan plans"] == workflows + 1  # + the accepted procedure
    assert _rows(memory, "SELECT ?s WHERE { ?s a p-plan:Step , prov:Plan }") == []
    steps = _rows(
        memory,
        "SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s a p-plan:Step ; p-plan:isStepOfPlan ?p }",
        PFAS,
    )
    assert int(steps[0][0]) == live["p-plan steps"]


def test_every_association_names_the_plan_its_agent_followed(memory: EpisodicMemory) -> None:
    # Every call of the bootstrap names its agent: every execution is associated with one.
    unassociated = """SELECT ?e WHERE {
      ?e p-plan:correspondsToStep ?step .
      FILTER NOT EXISTS { ?e prov:wasAssociatedWith ?agent }
    }"""
    assert _rows(memory, unassociated, PFAS) == []
    planless = """SELECT ?q WHERE {
      ?e prov:qualifiedAssociation ?q .
      FILTER NOT EXISTS { ?q prov:hadPlan ?plan . ?plan a p-plan:Plan , prov:Plan }
    }"""
    assert _rows(memory, planless) == []
    # The plan is the workflow the execution belongs to; its step is p-plan:correspondsToStep.
    followed = """SELECT DISTINCT ?plan WHERE {
      ?e p-plan:correspondsToStep/p-plan:isStepOfPlan ?wf ;
         prov:qualifiedAssociation/prov:hadPlan ?plan .
      FILTER(?plan != ?wf)
    }"""
    assert _rows(memory, followed) == []


REVISION = "SELECT ?new ?old WHERE { ?new prov:wasRevisionOf ?old }"
RETIREMENT = """SELECT ?wf ?time ?agent ?reason WHERE {
  ?wf prov:invalidatedAtTime ?time ; prov:wasInvalidatedBy ?act .
  ?act a prov:Activity ; prov:wasAssociatedWith ?agent ; wf:reason ?reason .
}"""
PROCEDURE = """SELECT ?plan ?name (COUNT(DISTINCT ?source) AS ?sources) WHERE {
  ?plan a p-plan:Plan , prov:Plan , wf:Procedure ; dcterms:title ?name ;
        prov:wasDerivedFrom ?source .
  ?source a pl:Workflow .
} GROUP BY ?plan ?name"""


def _in_graphs(text: str) -> str:
    """The same query with its pattern inside ``GRAPH ?g`` (and ``?g`` selected)."""
    head, _, body = text.partition("WHERE {")
    body, _, tail = body.rpartition("}")
    return f"{head.replace('SELECT', 'SELECT ?g', 1)}WHERE {{ GRAPH ?g {{{body}}} }}{tail}"


def test_versions_retirements_and_procedures_are_found_by_plain_sparql(
    memory: EpisodicMemory,
) -> None:
    revision = _rows(memory, REVISION)
    assert [(str(new), str(old)) for new, old in revision] == [
        (str(workflow_iri(REVISED)), str(workflow_iri(f"{REVISED}@v1")))
    ]
    ((retired, time, agent, reason),) = _rows(memory, RETIREMENT)
    assert str(retired) == str(workflow_iri(RETIRED)) and str(time).startswith("20")
    assert str(agent).endswith("/agent/auditor") and str(reason) == "the SDS was withdrawn"
    # A procedure's sources are the workflows it was mined from (the source pattern is not in
    # the procedure's own graph, so this joins across graphs through the default graph).
    ((_, name, sources),) = _rows(memory, PROCEDURE)
    assert str(name) == PROCEDURE_NAME and int(sources) >= 2


def test_the_lifecycle_is_in_named_graphs_of_its_scope(memory: EpisodicMemory) -> None:
    prefix = lifecycle_prefix(PFAS)
    for text in (REVISION, RETIREMENT):
        rows = _rows(memory, _in_graphs(text))
        assert len(rows) == 1 and str(rows[0][0]).startswith(prefix), text
    in_graph = """SELECT ?g WHERE { GRAPH ?g {
      ?plan a p-plan:Plan , wf:Procedure ; prov:wasDerivedFrom ?source ;
            prov:wasGeneratedBy ?mining .
      ?mining a prov:Activity .
      ?step p-plan:isStepOfPlan ?plan .
    } }"""
    graphs = {str(row[0]) for row in _rows(memory, in_graph)}
    assert len(graphs) == 1 and next(iter(graphs)).startswith(f"{prefix}procedure/")
    # Scoped, the same query sees its scope's lifecycle and no other's.
    assert len(_rows(memory, REVISION, PFAS)) == 1
    assert _rows(memory, REVISION, AIRLINE) == _rows(memory, RETIREMENT, AIRLINE) == []


def test_a_change_is_seen_by_the_next_query(tmp_path: Path) -> None:
    # The union the queries read is a copy kept between queries: each lifecycle write must
    # move the scope's marker, or the copy would answer from before it.
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?p a p-plan:Plan , wf:Procedure }"
    calls = tuple(CallStep(t, agent="a") for t in ("extract", "classify", "report"))
    workflows = [Workflow(id=f"w{i}", steps=(InstructionStep("go", calls),)) for i in range(3)]
    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32", scope="lab") as memory:
        memory.save_many(workflows)
        candidate = memory.lifecycle.procedures()[0]
        assert int(_rows(memory, count)[0][0]) == 0
        memory.lifecycle.accept_procedure(candidate.id, name="report")
        assert int(_rows(memory, count)[0][0]) == 1
        memory.lifecycle.retire("w0", reason="obsolete")
        assert len(_rows(memory, RETIREMENT)) == 1
        memory.lifecycle.restore("w0")
        assert _rows(memory, RETIREMENT) == []
        # The procedure's change did not make the index reload anything it should not.
        assert memory.ids() == ["w0", "w1", "w2"]


def test_another_memory_on_a_remote_store_sees_an_acceptance(oxigraph_server: Any) -> None:
    # Two memories on one `oxigraph serve`, as two workers: the reader's cached union copy
    # follows the writer's lifecycle writes through the scope's change marker.
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?p a p-plan:Plan , wf:Procedure }"
    calls = tuple(CallStep(t, agent="a") for t in ("extract", "classify", "report"))
    workflows = [Workflow(id=f"w{i}", steps=(InstructionStep("go", calls),)) for i in range(3)]
    url = oxigraph_server.query_url
    oxigraph_server.wipe()
    try:
        with (
            EpisodicMemory(url, embedder="fake:32", scope="lab") as writer,
            EpisodicMemory(url, embedder="fake:32", scope="lab") as reader,
        ):
            writer.save_many(workflows)
            candidate = writer.lifecycle.procedures()[0]
            assert int(_rows(reader, count)[0][0]) == 0
            writer.lifecycle.accept_procedure(candidate.id, name="report")
            assert int(_rows(reader, count)[0][0]) == 1
            writer.lifecycle.retire("w0", reason="obsolete")
            assert len(_rows(reader, RETIREMENT, "lab")) == 1
    finally:
        oxigraph_server.wipe()


def test_the_export_of_a_store_carries_its_lifecycle_as_prov() -> None:
    calls = tuple(CallStep(t, agent="a") for t in ("extract", "classify", "report"))
    workflows = [Workflow(id=f"w{i}", steps=(InstructionStep("go", calls),)) for i in range(3)]
    with EpisodicMemory("memory:", embedder="fake:32", scope="lab") as memory:
        memory.save_many(workflows)
        memory.save(workflows[0].replace(title="again"))
        memory.lifecycle.retire("w1", reason="obsolete")
        memory.lifecycle.accept_procedure(memory.lifecycle.procedures()[0].id, name="report")
        items = store_items(memory.store, scope="lab")
    # The workflows (the older version too), then one graph per lifecycle record.
    assert [i.id for i in items if isinstance(i, Workflow)] == ["w0", "w0@v1", "w1", "w2"]
    records = [str(i.identifier) for i in items if not isinstance(i, Workflow)]
    assert len(records) == 3 and all(r.startswith(lifecycle_prefix("lab")) for r in records)
    # Through the `prov` package: a bundle per record, the retirement as PROV relations; a
    # re-import reads the workflows back and skips the records.
    text = export(items, "provjson")
    bundles = json.loads(text)["bundle"]
    retirement = bundles["lifecycle:lab/workflow/w1"]
    assert len(retirement["wasInvalidatedBy"]) == 1 and len(retirement["activity"]) == 1
    (activity,) = retirement["activity"].values()
    assert activity["wf:reason"] == "obsolete"
    revision = bundles["lifecycle:lab/workflow/w0"]
    # The `prov` package keeps an unqualified prov:wasRevisionOf as an attribute.
    assert revision["entity"]["workflow:w0"]["prov:wasRevisionOf"]["$"] == "workflow:w0%40v1"
    assert [w.id for w in provjson_to_workflows(text)] == ["w0", "w0@v1", "w1", "w2"]
