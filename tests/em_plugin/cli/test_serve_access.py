"""``em-plugin serve --token-file``: per-scope bearer tokens, checked by hostile requests from an
outside client against a real server process on 127.0.0.1."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from em_plugin.access import hash_token
from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.vocab import graph_iri
from tests.processes import em_plugin_serve

pytestmark = pytest.mark.integration

READER_A = "reader-a-token-0123456789"
WRITER_A = "writer-a-token-0123456789"
READER_B = "reader-b-token-0123456789"
A1 = str(graph_iri("a1", "a"))
B1 = str(graph_iri("b1", "b"))
D1 = str(graph_iri("d1"))
SECRETS = {"a": "alpha-secret", "b": "bravo-secret", "default": "delta-secret"}
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _workflow(wid: str, scope: str) -> Workflow:
    text = f"check the SDS {SECRETS[scope]}"
    return Workflow(id=wid, scope=scope, steps=(InstructionStep(text, (CallStep("sds_reader"),)),))


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("served")
    store = root / "store"
    for wid, scope in (("a1", "a"), ("b1", "b"), ("d1", "default")):
        with EpisodicMemory(store=store, embedder="fake", scope=scope) as memory:
            memory.save(_workflow(wid, scope))
    tokens = root / "tokens.toml"
    tokens.write_text(
        f"""
[tokens.reader-a]
sha256 = "{hash_token(READER_A)}"
scopes = ["a"]

[tokens.writer-a]
token = "{WRITER_A}"
scopes = ["a"]
access = "read-write"

[tokens.reader-b]
sha256 = "sha256:{hash_token(READER_B)}"
scopes = ["b"]
access = "read"
"""
    )
    with em_plugin_serve(store, "--token-file", str(tokens)) as (_, served):
        assert served.startswith("http://127.0.0.1:") and served.endswith("/query")
        yield served


def _request(
    url: str,
    token: str | None,
    *,
    query: str | None = None,
    update: str | None = None,
    params: list[tuple[str, str]] = (),  # type: ignore[assignment]
    get: bool = False,
    accept: str = "application/sparql-results+json",
) -> tuple[int, str]:
    headers = {"Accept": accept}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    fields = [("query", query)] if query is not None else []
    target = url
    if update is not None:
        target = url.removesuffix("query") + "update"
        fields = [("update", update)]
    form = urllib.parse.urlencode([*fields, *params])
    if get:
        request = urllib.request.Request(f"{target}?{form}", headers=headers)
    else:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(target, data=form.encode(), headers=headers)
    try:
        with _LOCAL.open(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _values(body: str) -> set[str]:
    data = json.loads(body)
    if "boolean" in data:
        return {str(data["boolean"])}
    return {b["value"] for row in data["results"]["bindings"] for b in row.values()}


def test_no_token_or_an_unknown_one_is_401(url: str) -> None:
    status, body = _request(url, None, query="ASK {}")
    assert status == 401 and "Bearer" in body
    assert _request(url, "not-a-token-at-all", query="ASK {}")[0] == 401
    assert _request(url, hash_token(READER_A), query="ASK {}")[0] == 401  # the hash is no token


def test_a_read_token_sees_its_scope(url: str) -> None:
    status, body = _request(url, READER_A, query="SELECT ?o WHERE { ?s ?p ?o }")
    assert status == 200
    values = _values(body)
    assert any(SECRETS["a"] in v for v in values)
    assert not any(SECRETS["b"] in v or SECRETS["default"] in v for v in values)
    status, body = _request(url, READER_B, query="SELECT ?g WHERE { GRAPH ?g { } }", get=True)
    assert status == 200
    graphs = _values(body)  # the scope's workflow graphs and its change log, nothing else
    assert B1 in graphs
    assert all(
        g.startswith(
            ("https://w3id.org/em-plugin/id/graph/b/", "https://w3id.org/em-plugin/id/changes/b")
        )
        for g in graphs
    ), graphs


HOSTILE = [
    "SELECT ?g ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
    f"SELECT ?o FROM <{B1}> FROM <{D1}> WHERE {{ ?s ?p ?o }}",
    f"SELECT ?o FROM NAMED <{B1}> FROM NAMED <{D1}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}",
    f"SELECT ?o WHERE {{ GRAPH <{B1}> {{ ?s ?p ?o }} }}",
    f"SELECT ?o WHERE {{ {{ GRAPH <{D1}> {{ ?s ?p ?o }} }} UNION {{ GRAPH <{B1}> {{ ?s ?p ?o }} }} }}",  # noqa: E501
    "SELECT ?o WHERE { ?s ?p ?o FILTER(CONTAINS(STR(?o), 'secret')) }",
    f"SELECT ?o WHERE {{ VALUES ?g {{ <{B1}> <{D1}> }} GRAPH ?g {{ ?s ?p ?o }} }}",
    f"ASK {{ GRAPH <{B1}> {{ ?s ?p ?o }} }}",
    "SELECT (COUNT(*) AS ?n) ?o WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?o",
    f"SELECT ?o WHERE {{ SERVICE <{{url}}> {{ GRAPH <{B1}> {{ ?s ?p ?o }} }} }}",
    "SELECT ?o WHERE { SERVICE SILENT <http://127.0.0.1:9/query> { ?s ?p ?o } }",
]


@pytest.mark.parametrize("query", HOSTILE)
@pytest.mark.parametrize("get", [False, True])
def test_hostile_reads_return_nothing_of_another_scope_or_403(
    url: str, query: str, get: bool
) -> None:
    status, body = _request(url, READER_A, query=query.replace("{url}", url), get=get)
    if "SERVICE" in query:
        assert status == 403 and "SERVICE is refused" in body
        return
    assert status == 200, body
    assert SECRETS["b"] not in body and SECRETS["default"] not in body
    assert B1 not in body and D1 not in body
    if query.startswith("ASK"):
        assert _values(body) == {"False"}


def test_dataset_parameters_narrow_but_never_widen(url: str) -> None:
    for key in ("default-graph-uri", "named-graph-uri"):
        status, body = _request(
            url,
            READER_A,
            query="SELECT ?o WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }",
            params=[(key, B1), (key, D1), ("union-default-graph", "true")],
        )
        assert status == 200 and SECRETS["b"] not in body and SECRETS["default"] not in body
    status, body = _request(
        url, READER_A, query="SELECT ?o WHERE { ?s ?p ?o }", params=[("default-graph-uri", A1)]
    )
    assert any(SECRETS["a"] in v for v in _values(body))


def test_construct_answers_in_the_accepted_rdf_format_within_the_scope(url: str) -> None:
    status, body = _request(
        url,
        READER_A,
        query=f"CONSTRUCT {{ ?s ?p ?o }} FROM <{B1}> WHERE {{ ?s ?p ?o }}",
        accept="text/turtle",
    )
    assert status == 200 and SECRETS["b"] not in body  # FROM names a graph it does not hold
    status, body = _request(
        url,
        READER_A,
        query=f"CONSTRUCT {{ ?s ?p ?o }} FROM <{A1}> WHERE {{ ?s ?p ?o }}",
        accept="text/turtle",
    )
    assert status == 200 and SECRETS["a"] in body and body.startswith("<")


def test_updates_need_a_read_write_token_for_every_graph(url: str) -> None:
    mine = f"{A1}-extra"
    insert_mine = f'INSERT DATA {{ GRAPH <{mine}> {{ <urn:s> <urn:p> "written-by-a" }} }}'
    status, body = _request(url, READER_A, update=insert_mine)
    assert status == 403 and "read-only" in body

    refused = {
        f'INSERT DATA {{ GRAPH <{B1}> {{ <urn:s> <urn:p> "planted" }} }}': "may not write",
        f'INSERT DATA {{ GRAPH <{mine}> {{ <urn:s> <urn:p> "x" }} GRAPH <{D1}> {{ <urn:s> <urn:p> "x" }} }}': "may not write",  # noqa: E501
        'INSERT DATA { <urn:s> <urn:p> "planted" }': "default graph",
        "DROP ALL": "DROP ALL is refused",
        "CLEAR DEFAULT": "CLEAR DEFAULT is refused",
        f"DROP GRAPH <{B1}>": "may not write",
        "DELETE WHERE { GRAPH ?g { ?s ?p ?o } }": "?g is refused",
        f"INSERT {{ GRAPH <{mine}> {{ ?s ?p ?o }} }} WHERE {{ GRAPH <{B1}> {{ ?s ?p ?o }} }}": "may not read",  # noqa: E501
        f"INSERT {{ GRAPH <{mine}> {{ ?s ?p ?o }} }} WHERE {{ ?s ?p ?o }}": "default graph",
        f"INSERT {{ GRAPH <{mine}> {{ ?s ?p ?o }} }} USING <{D1}> WHERE {{ ?s ?p ?o }}": "may not read",  # noqa: E501
        f"INSERT {{ GRAPH ?g {{ <urn:s> <urn:p> 1 }} }} WHERE {{ BIND(<{B1}> AS ?g) }}": "?g is refused",  # noqa: E501
        f"COPY <{B1}> TO <{mine}>": "may not read",
        f"MOVE <{mine}> TO <{B1}>": "may not write",
        f"LOAD <{url}> INTO GRAPH <{mine}>": "LOAD is refused",
        f"INSERT {{ GRAPH <{mine}> {{ ?s ?p ?o }} }} WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}": "SERVICE",  # noqa: E501
    }
    for update, reason in refused.items():
        status, body = _request(url, WRITER_A, update=update)
        assert (status, reason in body) == (403, True), (update, body)

    status, body = _request(url, WRITER_A, update="INSERT DATA { nonsense")
    assert status == 400

    assert _request(url, WRITER_A, update=insert_mine)[0] == 204
    # What a writer of scope a adds, a reader of a sees at once, a reader of b never.
    query = 'ASK { GRAPH ?g { ?s ?p "written-by-a" } }'
    assert _values(_request(url, READER_A, query=query)[1]) == {"True"}
    assert _values(_request(url, READER_B, query=query)[1]) == {"False"}
    # Scope b's workflow is untouched by all of the above.
    status, body = _request(url, READER_B, query="SELECT ?o WHERE { ?s ?p ?o }")
    assert any(SECRETS["b"] in v for v in _values(body))
    assert "planted" not in body
    assert _request(url, WRITER_A, update=f"DROP GRAPH <{mine}>")[0] == 204
    assert _values(_request(url, READER_A, query=query)[1]) == {"False"}


def test_an_rdflib_sparql_store_client_reads_only_its_scope(url: str) -> None:
    from rdflib import Graph
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    def client(token: str) -> Graph:
        store = SPARQLStore(query_endpoint=url, headers={"Authorization": f"Bearer {token}"})
        return Graph(store=store)

    query = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
    seen_by_a = {str(row[0]) for row in client(READER_A).query(query)}  # type: ignore[index]
    seen_by_b = {str(row[0]) for row in client(READER_B).query(query)}  # type: ignore[index]
    assert A1 in seen_by_a and B1 not in seen_by_a and D1 not in seen_by_a
    assert B1 in seen_by_b and A1 not in seen_by_b


def test_a_crew_with_a_read_write_token_saves_and_reads_its_scope_only(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provenance.errors import StoreError
    from provenance.stores import WorkflowStore
    from provenance.stores.remote import SparqlEndpointStore

    monkeypatch.setenv("EM_PLUGIN_CACHE_DIR", "none")
    store = WorkflowStore(SparqlEndpointStore(url, token=WRITER_A))
    memory = EpisodicMemory(store=store, embedder="fake", scope="a")
    try:
        assert memory.ids() == ["a1"]  # scope b and the default scope are not in its dataset
        memory.save(_workflow("a2", "a"))
        memory.save(_workflow("a2", "a"))  # a save replaces: DELETE … VALUES ?g, INSERT DATA
        assert memory.ids() == ["a1", "a2"]
        assert [s.tool for s in memory.suggest(_workflow("now", "a"))] == []  # nothing follows
        other = memory.with_scope("b")
        with pytest.raises(StoreError, match="403"):
            other.save(_workflow("b2", "b"))
    finally:
        memory.close()
        store.close()
    monkeypatch.setenv("EM_PLUGIN_STORE_TOKEN", READER_B)
    reader = WorkflowStore(SparqlEndpointStore(url))  # the token from the environment
    try:
        assert reader.ids("b") == ["b1"] and reader.ids("a") == []
        with pytest.raises(StoreError, match="read-only"):
            reader.save(_workflow("b3", "b"))
    finally:
        reader.close()
    status, _ = _request(url, WRITER_A, update=f"DROP GRAPH <{graph_iri('a2', 'a')}>")
    assert status == 204


def test_a_bad_token_file_stops_serve_with_the_entry_named(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from em_plugin.cli import cli

    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[tokens.ops]\ntoken = "short"\nscopes = ["a"]\n')
    result = CliRunner().invoke(
        cli, ["serve", "--store", "memory:", "--port", "0", "--token-file", str(tokens)]
    )
    assert result.exit_code == 2
    assert "--token-file" in result.output and "entry 'ops'" in result.output


def test_the_cli_names_the_token_variable_on_401_and_the_grant_on_403(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from em_plugin.cli import cli

    monkeypatch.delenv("EM_PLUGIN_STORE_TOKEN", raising=False)
    monkeypatch.setenv("EM_PLUGIN_EMBEDDER", "fake")
    refused = CliRunner().invoke(cli, ["list", "--store", url])
    assert refused.exit_code == 1
    assert "HTTP 401" in refused.stderr and "$EM_PLUGIN_STORE_TOKEN" in refused.stderr
    monkeypatch.setenv("EM_PLUGIN_STORE_TOKEN", READER_A)
    read = CliRunner().invoke(cli, ["list", "--store", url, "--format", "json"])
    assert read.exit_code == 0 and [r["id"] for r in json.loads(read.stdout)] == ["a1"]
    beyond = CliRunner().invoke(cli, ["delete", "a1", "--scope", "a", "--yes", "--store", url])
    assert beyond.exit_code == 1, beyond.output
    assert "HTTP 403" in beyond.stderr and "$EM_PLUGIN_STORE_TOKEN" in beyond.stderr
