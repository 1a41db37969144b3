"""The token model and the scope of a graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from em_plugin.access import (
    READ_WRITE,
    AccessDenied,
    Grant,
    TokenTable,
    graph_scope,
    hash_token,
    is_workflow_graph,
)
from em_plugin.errors import ConfigurationError
from provenance.model import DEFAULT_SCOPE
from provenance.suggestion_record import suggestion_graph_iri
from provenance.vocab import changes_graph_iri, graph_iri, workflow_iri

TOKEN = "a-long-enough-token-123"


def test_a_toml_and_a_json_file_give_the_same_grants(tmp_path: Path) -> None:
    toml = tmp_path / "tokens.toml"
    toml.write_text(
        f'[tokens.ci]\nsha256 = "{hash_token(TOKEN)}"\nscopes = ["a", "b"]\naccess = "read-write"\n'
    )
    data = {"tokens": {"ci": {"token": TOKEN, "scopes": ["a", "b"], "access": READ_WRITE}}}
    (tmp_path / "tokens.json").write_text(json.dumps(data))
    for path in (toml, tmp_path / "tokens.json"):
        grant = TokenTable.load(path).authenticate(f"Bearer {TOKEN}")
        assert grant == Grant("ci", frozenset({"a", "b"}), READ_WRITE)
        assert grant.can_write("b") and not grant.can_read("c") and not grant.can_read(None)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"scopes": ["a"]}, "exactly one of sha256, token"),
        ({"token": TOKEN, "sha256": hash_token(TOKEN), "scopes": ["a"]}, "exactly one"),
        ({"token": "short", "scopes": ["a"]}, "16 characters"),
        ({"sha256": "abc", "scopes": ["a"]}, "64 hex digits"),
        ({"token": TOKEN, "scopes": []}, "list of scope names"),
        ({"token": TOKEN, "scopes": "a"}, "list of scope names"),
        ({"token": TOKEN, "scopes": ["a"], "access": "admin"}, "['read', 'read-write']"),
        ({"token": TOKEN, "scopes": ["a"], "scope": "a"}, "unknown keys ['scope']"),
    ],
)
def test_a_bad_entry_is_refused_with_its_name(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match="entry 'x'") as raised:
        TokenTable.from_mapping({"tokens": {"x": entry}})
    assert message in str(raised.value)


def test_bad_files_and_headers(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="non-empty 'tokens'"):
        TokenTable.from_mapping({"token": {}})
    broken = tmp_path / "t.toml"
    broken.write_text("[tokens\n")
    with pytest.raises(ConfigurationError, match="cannot read the token file"):
        TokenTable.load(broken)
    same = {"a": {"token": TOKEN, "scopes": ["a"]}, "b": {"token": TOKEN, "scopes": ["b"]}}
    with pytest.raises(ConfigurationError, match="same token"):
        TokenTable.from_mapping({"tokens": same})
    table = TokenTable.from_mapping({"tokens": {"a": {"token": TOKEN, "scopes": ["a"]}}})
    for header in (None, "", "Basic abc", "Bearer ", f"Bearer {TOKEN}x"):
        with pytest.raises(AccessDenied) as denied:
            table.authenticate(header)
        assert denied.value.status == 401


_SCOPES = st.text(min_size=1, max_size=12).filter(lambda s: s.strip() != "")


@given(scope=_SCOPES, workflow_id=st.text(min_size=1, max_size=12))
def test_every_graph_of_a_scope_maps_back_to_it(scope: str, workflow_id: str) -> None:
    assert graph_scope(str(graph_iri(workflow_id, scope))) == scope
    assert is_workflow_graph(str(graph_iri(workflow_id, scope)))
    assert graph_scope(str(changes_graph_iri(scope))) == scope
    assert graph_scope(str(changes_graph_iri(scope, "1-abc"))) == scope
    assert graph_scope(str(suggestion_graph_iri(workflow_id, scope))) == scope
    assert not is_workflow_graph(str(changes_graph_iri(scope)))


def test_graphs_of_no_scope() -> None:
    assert graph_scope(str(graph_iri("w1"))) == DEFAULT_SCOPE
    for iri in (
        str(workflow_iri("w1")),
        "https://w3id.org/em-plugin/id/graph/",
        "https://w3id.org/em-plugin/id/graph/a/b/c",
        "https://w3id.org/em-plugin/id/graph/a//b",
        "https://w3id.org/em-plugin/id/lifecycle/a/w1",
        "http://example.org/graph/a/w1",
    ):
        assert graph_scope(iri) is None, iri
