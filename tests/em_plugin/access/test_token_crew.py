"""A crew on a scoped token endpoint is a first-class store user: no warning, nothing lost.

A real ``em-plugin serve --token-file`` on 127.0.0.1 serves a disk store; a crew opens an
``EpisodicMemory`` through a read-write token of scope ``a`` and does what a crew does: saves,
saves a new version (a lifecycle record), retires, journals a session, records suggestions and
erases its scope. Every family of its scope is written through the token (the registry of graph
families, provenance/stores/graph_families.py, gives a token of the scope read-write rights), and
the store's embedder record, of no scope, is never tried (docs/sparql.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from em_plugin.access import hash_token
from em_plugin.capture.trajectory import Trajectory
from em_plugin.memory import EpisodicMemory
from em_plugin.session.journal import SessionJournal
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import WorkflowStore
from provenance.stores.graph_families import EMBEDDER, family_of, graph_scope
from provenance.stores.graph_writes import may_write
from provenance.stores.remote import SparqlEndpointStore
from tests.processes import em_plugin_serve

pytestmark = pytest.mark.integration

WRITER_A = "writer-a-token-0123456789"


def _workflow(wid: str, scope: str, *tools: str) -> Workflow:
    steps = (InstructionStep(f"run {wid}", tuple(CallStep(t) for t in tools or ("reader",))),)
    return Workflow(id=wid, scope=scope, steps=steps)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    store = tmp_path / "store"
    for scope in ("a", "b"):
        with EpisodicMemory(store=store, embedder="fake", scope=scope) as memory:
            memory.save(_workflow(f"{scope}1", scope))
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        f'[tokens.writer-a]\nsha256 = "{hash_token(WRITER_A)}"\nscopes = ["a"]\n'
        'access = "read-write"\n'
    )
    with em_plugin_serve(store, "--token-file", str(tokens)) as (_, url):
        yield store, url


def test_a_crew_on_a_token_endpoint_opens_without_warning_and_keeps_every_family(
    served: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _, url = served
    monkeypatch.setenv("EM_PLUGIN_CACHE_DIR", "none")
    caplog.set_level(logging.WARNING)
    store = WorkflowStore(SparqlEndpointStore(url, token=WRITER_A))
    assert not may_write(store.backend, EMBEDDER)  # the store's record: never tried
    memory = EpisodicMemory(store=store, embedder="fake", scope="a")
    try:
        memory.save(_workflow("a2", "a", "reader", "writer"))
        memory.save(_workflow("a2", "a", "reader", "writer", "checker"))  # a2@v1 + a record
        memory.lifecycle.retire("a1", reason="superseded")
        assert memory.ids() == ["a2"]
        assert [v.id for v in memory.lifecycle.history("a2")] == ["a2@v1", "a2"]
        journal = SessionJournal(store.backend)
        trajectory = Trajectory("chat-1", scope="a", framework="beeai")
        trajectory.instruction("Extract the ingredients")
        journal.append("a", "chat-1", trajectory.events, base=0)
        assert [s.session_id for s in journal.unsaved(scope="a")] == ["chat-1"]
        shown = Suggestion("Check it", "checker", score=0.9, evidence=(Evidence("a2", 2, 1.0),))
        assert memory.record_suggestions("chat-1", [shown]) is not None
    finally:
        memory.close()
    families = {family_of(g).name for g in store.backend.graph_names()}  # type: ignore[union-attr]
    # The embedder record, of no scope, is read by every token (the registry's rule).
    assert families == {"workflows", "lifecycle", "suggestions", "journal", "changes", "embedder"}
    assert {graph_scope(g) for g in store.backend.graph_names()} == {"a", None}
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == []

    erased = EpisodicMemory(store=store, embedder="fake", scope="a")
    try:
        assert erased.forget() == ["a1", "a2", "a2@v1"]
    finally:
        erased.close()
        store.close()
    with SparqlEndpointStore(url, token=WRITER_A) as again:
        # Every family of scope a is gone; one log entry says "the whole scope changed". The
        # embedder record, of no scope, stays.
        left = sorted(family_of(g).name for g in again.graph_names())  # type: ignore[union-attr]
        assert left == ["changes", "embedder"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == []
