"""Standard PROV-O queries give the same answers on every store and on the exports, and the
answers the Workflow JSON implies (docs/provenance-mapping.md, "PROV-O types")."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prov.model import ProvActivity, ProvAgent, ProvAssociation, ProvDocument
from rdflib import Graph

from provenance.export import export, to_prov_document
from provenance.model import CallStep, Workflow
from provenance.stores import WorkflowStore, open_store
from provenance.vocab import agent_iri, workflow_iri
from provenance.workflow_json import loads_workflow
from tests.prov_counts import STANDARD_QUERIES, dev_workflows, expected_counts

GOLDEN = [
    loads_workflow(json.dumps(json.loads(path.read_text(encoding="utf-8"))))
    for path in sorted((Path(__file__).parent / "golden").glob("*.json"))
]


@pytest.fixture(scope="module")
def dev() -> list[Workflow]:
    return dev_workflows()


def answers(run: Any) -> dict[str, int]:
    """The count each standard query gives through ``run(sparql) -> rows``."""
    return {name: int(next(iter(run(sparql)))[0]) for name, sparql in STANDARD_QUERIES.items()}


def store_answers(store: WorkflowStore) -> dict[str, int]:
    return answers(lambda sparql: list(store.query(sparql)))  # type: ignore[arg-type]


def test_the_golden_counts_are_the_expected_ones() -> None:
    # A hand check of the counting rules on one workflow (docs/provenance-mapping.md tables).
    failed = next(w for w in GOLDEN if w.failed)
    counts = expected_counts([failed])
    assert counts["activities"] == 1 + 4 + 1  # run, instruction + 3 calls, the failed call
    assert counts["agents"] == 1 + 2  # the user, coordinator and chem_agent
    assert counts["actedOnBehalfOf"] == 1  # chem_agent for coordinator


def test_dev_data_store_answers_standard_prov_queries_as_the_json_implies(
    dev: list[Workflow], tmp_path: Path
) -> None:
    expected = expected_counts(dev)
    assert expected["activities"] > 2000 and expected["wasAssociatedWith"] > 500
    with open_store(tmp_path / "store") as store:
        store.save_many(dev)
        assert store_answers(store) == expected
    # Reopened read-only, as `em-plugin query` does.
    with open_store(tmp_path / "store", read_only=True) as store:
        assert store_answers(store) == expected


def test_the_turtle_export_answers_as_the_store(dev: list[Workflow]) -> None:
    # Every sixth dev workflow (all files), so rdflib's exporter and SPARQL engine stay quick.
    workflows = [*GOLDEN, *dev[::6]]
    exported = Graph().parse(data=export(workflows, "ttl"), format="turtle")
    with open_store("memory:") as store:
        store.save_many(workflows)
        assert answers(exported.query) == store_answers(store) == expected_counts(workflows)


@pytest.mark.integration
@pytest.mark.parametrize("server", ["oxigraph_server", "virtuoso_server"])
def test_servers_answer_as_the_json_implies(
    server: str, request: pytest.FixtureRequest, dev: list[Workflow]
) -> None:
    running = request.getfixturevalue(server)  # Virtuoso skips when it is not installed
    running.wipe()
    with open_store(running.query_url) as store:
        for start in range(0, len(dev), 50):  # Virtuoso takes 10 MB per update
            store.save_many(dev[start : start + 50])
        assert store_answers(store) == expected_counts(dev)
        store.delete_scope("default")


def _bundle_records(document: ProvDocument) -> Iterator[Any]:
    for bundle in document.bundles:
        yield from bundle.get_records()


def test_the_prov_package_reads_one_activity_per_execution(dev: list[Workflow]) -> None:
    workflows = [*GOLDEN, *dev[:40]]
    expected = expected_counts(workflows)
    records = list(_bundle_records(to_prov_document(workflows)))
    activities = {r.identifier.uri for r in records if isinstance(r, ProvActivity)}
    assert len(activities) == expected["activities"]
    # One association per qualified association, bound to the agent the JSON names: the
    # shortcuts beside them add no second record and move no role.
    bound: dict[str, str] = {}
    for record in records:
        if isinstance(record, ProvAssociation):
            activity = record.get_attribute("prov:activity")
            agent = record.get_attribute("prov:agent")
            assert len(activity) == len(agent) == 1
            bound[next(iter(activity)).uri] = next(iter(agent)).uri
    assert len(bound) == expected["associations"]
    for workflow in workflows:
        base = workflow_iri(workflow.id)
        for path, step in workflow.walk():
            agent = step.agent if isinstance(step, CallStep) else None
            if step.kind == "instruction":
                assert bound[f"{base}#exec-{path}"] == f"{base}#user"
            elif agent is not None:
                assert bound[f"{base}#exec-{path}"] == str(agent_iri(agent))
    agents = {r.identifier.uri for r in records if isinstance(r, ProvAgent)}
    assert len(agents) == expected["agents"]


def test_the_prov_package_reads_the_turtle_export() -> None:
    text = export(GOLDEN, "ttl")
    with warnings.catch_warnings():
        # The prov package reads PROV-O only: it names our own (wf:, pl:) triples unconverted.
        warnings.filterwarnings(
            "ignore", "The following attributes were not converted", UserWarning
        )
        document = ProvDocument.deserialize(content=text, format="rdf", rdf_format="turtle")
    activities = [r for r in document.get_records() if isinstance(r, ProvActivity)]
    assert len(activities) == expected_counts(GOLDEN)["activities"]
