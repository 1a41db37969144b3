"""The store contract (provenance.stores.contract) against every backend.

The ``store`` fixture (tests/conftest.py) gives an empty WorkflowStore of each backend: memory,
disk, a real ``oxigraph serve`` and a real Virtuoso 7 server (skipped, with the reason, when
Virtuoso is not installed).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from rdflib import Literal, URIRef
from rdflib.namespace import DCTERMS

from provenance.errors import StoreError
from provenance.mapping import graph_iri
from provenance.model import CallStep, Workflow
from provenance.stores import WorkflowStore, open_store
from provenance.stores.contract import CHECKS, Check, ContractFailure, run_contract
from tests.strategies import workflows

_XSD_INTEGER = URIRef("http://www.w3.org/2001/XMLSchema#integer")


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.name)
def test_contract(store: WorkflowStore, check: Check) -> None:
    check(store)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(workflow=workflows)
def test_hypothesis_round_trip(store: WorkflowStore, workflow: Workflow) -> None:
    store.save(workflow)  # examples share the store: an id may recur in several scopes
    assert store.load(workflow.id, scope=workflow.scope) == workflow


@pytest.mark.parametrize("replace_existing", [False, True], ids=["new-graphs", "replacing"])
def test_batch_the_backend_rejects_changes_nothing(
    store: WorkflowStore, replace_existing: bool
) -> None:
    store.save_many([Workflow(id="wf-1", steps=(CallStep(name="A1"),))])
    # Change markers are left out: the state layer rewrites them, not the backend.
    backend = store.backend
    before = {n: frozenset(t) for n, t in backend.read_graphs(backend.graph_names())}
    good = (graph_iri("wf-1") if replace_existing else URIRef("urn:x:fresh"), [_triple("ok")])
    # Both pass the client's checks, and each server rejects one of them after part of the
    # request was read: Oxigraph the invalid percent-encoding, Virtuoso the ill-typed integer.
    bad = (
        URIRef("urn:x:bad"),
        [
            (URIRef("http://example.org/%zz"), DCTERMS.title, Literal("x")),
            (URIRef("urn:x:s"), DCTERMS.title, Literal("abc", datatype=_XSD_INTEGER)),
        ],
    )
    with pytest.raises(StoreError):
        backend.replace_graphs([good, bad])
    after = {n: frozenset(t) for n, t in backend.read_graphs(backend.graph_names())}
    assert after == before


def test_run_contract_reports_a_broken_backend() -> None:
    """run_contract works without pytest and names the promise a backend breaks."""

    class Forgetful(WorkflowStore):
        def ids(self, scope: str | None = None) -> list[str]:
            return super().ids(scope)[:-1]  # loses the last id

    failures = run_contract(lambda: Forgetful(open_store("memory:").backend))
    assert "round_trip" in failures and "ids() lists every workflow" in failures["round_trip"]
    assert "query_forms" not in failures
    assert run_contract(lambda: open_store("memory:")) == {}
    with pytest.raises(ContractFailure):
        CHECKS[0](Forgetful(open_store("memory:").backend))


def _triple(text: str) -> tuple[URIRef, URIRef, Literal]:
    return (URIRef("urn:x:s"), DCTERMS.title, Literal(text))
