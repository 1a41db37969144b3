"""Versions, retirements and accepted procedures are found through ``em-plugin serve`` as
through the API: without a token, with a token of their scope, and never with another scope's
(issue 30, item 3; docs/sparql.md). Parse errors name their fault at every door."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from em_plugin.access import hash_token
from em_plugin.endpoint import oxigraph_binary
from provenance.stores import open_store
from tests.processes import em_plugin_serve
from tests.prov_counts import AIRLINE, PFAS, lifecycle_memory

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(oxigraph_binary() is None, reason="pip install oxigraph (server binary)"),
]

PFAS_TOKEN, AIRLINE_TOKEN = "pfas-reader-0123456789", "airline-reader-0123456789"
LIFECYCLE = {
    "versions": "SELECT (COUNT(*) AS ?n) WHERE { ?new prov:wasRevisionOf ?old }",
    "versions by GRAPH": "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a prov:wasRevisionOf ?b } }",
    "retirements": "SELECT (COUNT(*) AS ?n) WHERE { ?e prov:invalidatedAtTime ?t }",
    "accepted procedures": (
        'SELECT (COUNT(*) AS ?n) WHERE { ?p a wf:Procedure , p-plan:Plan ; wf:status "active" }'
    ),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("lifecycle-serve") / "store"
    lifecycle_memory(str(path)).close()
    yield path


def _post(url: str, text: str, token: str | None = None) -> tuple[int, str]:
    parts = urllib.parse.urlsplit(url)
    headers = {"Content-Type": "application/sparql-query",
               "Accept": "application/sparql-results+json"}  # fmt: skip
    if token:
        headers["Authorization"] = f"Bearer {token}"
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request("POST", parts.path, body=text.encode(), headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def _counts(url: str, token: str | None = None) -> dict[str, int]:
    counts = {}
    for name, text in LIFECYCLE.items():
        status, body = _post(url, text, token)
        assert status == 200, body
        counts[name] = int(json.loads(body)["results"]["bindings"][0]["n"]["value"])
    return counts


def test_the_lifecycle_is_found_through_serve_by_its_scope_only(
    store: Path, tmp_path: Path
) -> None:
    with open_store(store, read_only=True) as opened:
        api = {
            scope: {
                n: int(str(opened.query(t, scope=scope).rows[0][0])) for n, t in LIFECYCLE.items()
            }  # type: ignore[union-attr]
            for scope in (None, PFAS, AIRLINE)
        }
    assert api[None] == api[PFAS] == {n: 1 for n in LIFECYCLE}
    assert api[AIRLINE] == {n: 0 for n in LIFECYCLE}
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        f'[tokens.p]\nsha256 = "{hash_token(PFAS_TOKEN)}"\nscopes = ["{PFAS}"]\n'
        f'[tokens.a]\nsha256 = "{hash_token(AIRLINE_TOKEN)}"\nscopes = ["{AIRLINE}"]\n'
    )
    with em_plugin_serve(store) as (_, url):
        assert _counts(url) == api[None]
    with em_plugin_serve(store, "--token-file", str(tokens)) as (_, url):
        assert _counts(url, PFAS_TOKEN) == api[PFAS]
        assert _counts(url, AIRLINE_TOKEN) == api[AIRLINE]  # another scope's token finds none


def test_a_parse_error_names_its_fault_through_serve_with_and_without_a_token(
    store: Path, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[tokens.p]\nsha256 = "{hash_token(PFAS_TOKEN)}"\nscopes = ["{PFAS}"]\n')
    fault = "line 1, column 24: the triple pattern `?s ?p` has no object"
    with em_plugin_serve(store) as (_, url):
        status, body = _post(url, "SELECT * WHERE { ?s ?p }")
        assert status == 400 and fault in body
    with em_plugin_serve(store, "--token-file", str(tokens)) as (_, url):
        status, body = _post(url, "SELECT * WHERE { ?s ?p }", PFAS_TOKEN)
        assert status == 400 and fault in body
