"""The registry of graph families: every graph name the code builds is in exactly one family,
with the scope it was built for; malformed names are in none; token rights follow the family."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from em_plugin.embedding.record import RECORD_GRAPH
from em_plugin.session.journal import SessionJournal, journal_graph_prefix
from provenance.lifecycle import procedure_iri, workflow_record_iri
from provenance.model import DEFAULT_SCOPE
from provenance.stores.graph_families import (
    CHANGES,
    EMBEDDER,
    FAMILIES,
    JOURNAL,
    LIFECYCLE,
    SUGGESTIONS,
    WORKFLOWS,
    dataset_families,
    family_of,
    graph_scope,
    in_default_graph,
    in_query_dataset,
    token_may_read,
    token_may_write,
)
from provenance.suggestion_record import suggestion_graph_iri
from provenance.vocab import BASE, changes_graph_iri, graph_iri

# Scopes and ids as users write them: slashes, dots, blanks, non-ASCII, the default scope.
NAMES = st.one_of(
    st.sampled_from([DEFAULT_SCOPE, "team/a", ".", "..", "a b", "ü", "default2"]),
    st.text(min_size=1, max_size=12),
)


@given(scope=NAMES, name=NAMES)
def test_every_builder_names_a_graph_of_its_family_and_scope(scope: str, name: str) -> None:
    built = {
        WORKFLOWS: graph_iri(name, scope),
        LIFECYCLE: workflow_record_iri(name, scope),
        SUGGESTIONS: suggestion_graph_iri(name, scope),
        CHANGES: changes_graph_iri(scope, name),
        JOURNAL: JOURNAL.iri(scope, name, "saved"),
    }
    built_procedure = procedure_iri(name, scope)
    for family, iri in [*built.items(), (LIFECYCLE, built_procedure)]:
        assert family_of(iri) is family, iri
        assert graph_scope(iri) == scope, iri
        assert [f for f in FAMILIES if f.owns(str(iri))] == [family]  # one family only


def test_the_journal_builds_names_of_its_family() -> None:
    from provenance.stores import open_store

    with open_store("memory:") as store:
        journal = SessionJournal(store.backend)
        chunk = journal.append("team/a", "chat 1", [], base=0)
        journal.mark_saved("team/a", "chat 1", events=0, workflow_id="w")
        names = store.backend.graph_names()
        assert {family_of(n) for n in names} == {JOURNAL}
        assert {graph_scope(n) for n in names} == {"team/a"}
        assert chunk.startswith(journal_graph_prefix("team/a", "chat 1"))
        assert journal.forget("team/a", "chat 1") == 2  # the chunk and the saved mark
        assert journal.forget("team/a") == 1  # the scope's marker
        assert store.backend.graph_names() == []


def test_the_embedder_record_is_the_store_s_not_a_scope_s() -> None:
    assert family_of(RECORD_GRAPH) is EMBEDDER and graph_scope(RECORD_GRAPH) is None
    assert token_may_read(RECORD_GRAPH, {"a"}) and not token_may_write(RECORD_GRAPH, {"a"})
    assert not EMBEDDER.erased_with_scope and EMBEDDER.backup


@pytest.mark.parametrize(
    "iri",
    [
        f"{BASE}graph/",  # no id
        f"{BASE}graph/a/b/c",  # one segment too many
        f"{BASE}graph/a//b",  # an empty segment
        f"{BASE}lifecycle/a/workflow",  # too short
        f"{BASE}journal/a",  # too short
        f"{BASE}changes/%ff/1",  # an undecodable scope
        f"{BASE}store/embedder/x",  # the record's name is fixed
        f"{BASE}store/",
        "urn:x:foreign",
        "http://example.org/graph/a",
    ],
)
def test_a_malformed_or_foreign_name_is_in_no_family(iri: str) -> None:
    assert family_of(iri) is None and graph_scope(iri) is None
    assert not token_may_read(iri, {"a", DEFAULT_SCOPE}) and not token_may_write(iri, {"a"})
    assert not in_query_dataset(iri) and not in_default_graph(iri)


def test_tokens_read_and_write_their_scopes_graphs_of_every_scoped_family() -> None:
    for family in (WORKFLOWS, LIFECYCLE, SUGGESTIONS, JOURNAL, CHANGES):
        mine = {
            WORKFLOWS: graph_iri("w", "a"),
            LIFECYCLE: workflow_record_iri("w", "a"),
            SUGGESTIONS: suggestion_graph_iri("s", "a"),
            JOURNAL: JOURNAL.iri("a", "journal"),
            CHANGES: changes_graph_iri("a", "1-x"),
        }[family]
        assert token_may_read(mine, {"a"}) and token_may_write(mine, {"a"}), family.name
        assert not token_may_read(mine, {"b"}) and not token_may_write(mine, {"b"}), family.name


def test_the_query_dataset_is_workflows_and_lifecycle_merged_suggestions_named() -> None:
    assert [f.name for f in dataset_families()] == ["workflows", "lifecycle", "suggestions"]
    assert in_default_graph(graph_iri("w")) and in_default_graph(workflow_record_iri("w", "a"))
    assert not in_default_graph(suggestion_graph_iri("s")) and in_query_dataset(
        suggestion_graph_iri("s")
    )
    for bookkeeping in (JOURNAL.iri("a", "journal"), changes_graph_iri("a", "1"), RECORD_GRAPH):
        assert not in_query_dataset(bookkeeping)


def test_a_name_outside_the_family_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="journal family"):
        JOURNAL.iri("a")  # a scope alone names no journal graph
    with pytest.raises(ValueError, match="lifecycle family"):
        LIFECYCLE.iri("a", "workflow", "")
