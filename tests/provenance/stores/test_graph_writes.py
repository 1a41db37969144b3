"""The store layer's writes beside the workflows: family checked, a token's rights respected."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import Literal, URIRef

from provenance.errors import StoreError
from provenance.stores import open_store
from provenance.stores.graph_families import CHANGES, EMBEDDER, JOURNAL, WORKFLOWS
from provenance.stores.graph_writes import drop_scope_graphs, may_write, scope_graphs, write_graphs
from provenance.vocab import changes_graph_iri, graph_iri

TRIPLE = (URIRef("urn:x:s"), URIRef("urn:x:p"), Literal("o"))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (graph_iri("w", "a"), "WorkflowStore.commit"),
        (changes_graph_iri("a", "1-x"), "WorkflowStore.commit"),
        (URIRef("urn:x:foreign"), "no graph family"),
    ],
)
def test_a_graph_that_only_a_commit_writes_or_of_no_family_is_refused(
    name: URIRef, message: str
) -> None:
    with open_store("memory:") as store:
        with pytest.raises(StoreError, match=message):
            write_graphs(store.backend, [(JOURNAL.iri("a", "journal"), [TRIPLE]), (name, [TRIPLE])])
        assert store.backend.graph_names() == []  # nothing of the batch was written


def test_a_token_scoped_store_never_writes_the_store_s_record() -> None:
    with open_store("memory:") as store:
        store.backend.token_scoped = True  # as a SparqlEndpointStore with a token is
        assert not may_write(store.backend, EMBEDDER) and may_write(store.backend, JOURNAL)
        written = write_graphs(
            store.backend, [(EMBEDDER.iri(), [TRIPLE]), (JOURNAL.iri("a", "journal"), [TRIPLE])]
        )
        assert written == 1
        assert store.backend.graph_names() == [JOURNAL.iri("a", "journal")]


def test_drop_scope_graphs_drops_one_scope_s_family_only() -> None:
    with open_store("memory:") as store:
        names = [JOURNAL.iri(s, "chat", "saved") for s in ("a", "b")] + [
            JOURNAL.iri("a", "journal")
        ]
        write_graphs(store.backend, [(n, [TRIPLE]) for n in names])
        assert scope_graphs(store.backend, "a", [JOURNAL], under="chat/") == [names[0]]
        assert drop_scope_graphs(store.backend, "a", JOURNAL) == 2
        assert store.backend.graph_names() == [names[1]]
        with pytest.raises(StoreError, match="commit"):
            drop_scope_graphs(store.backend, "a", WORKFLOWS)
        with pytest.raises(StoreError, match="commit"):
            drop_scope_graphs(store.backend, "a", CHANGES)


def test_a_read_only_store_refuses_rather_than_losing_a_write_silently(tmp_path: Path) -> None:
    with open_store(tmp_path / "store") as store:
        write_graphs(store.backend, [(JOURNAL.iri("a", "journal"), [TRIPLE])])
    with open_store(tmp_path / "store", read_only=True) as store:
        assert not may_write(store.backend, JOURNAL)  # what a caller asks before trying
        with pytest.raises(StoreError):
            write_graphs(store.backend, [(JOURNAL.iri("a", "journal"), [])])
        with pytest.raises(StoreError):
            drop_scope_graphs(store.backend, "a", JOURNAL)
        assert store.backend.graph_names() == [JOURNAL.iri("a", "journal")]
