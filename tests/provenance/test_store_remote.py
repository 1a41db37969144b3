"""The SPARQL endpoint backend: URLs, errors that name the endpoint, timeouts, read-only."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from rdflib import Literal, URIRef

from provenance.errors import QueryError, StoreError
from provenance.model import CallStep, Workflow
from provenance.stores import SparqlEndpointStore, StoreConfigError, WorkflowStore, open_store
from tests.conftest import OxigraphServer, free_port, start_oxigraph, stop_oxigraph

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
    with pytest.raises(StoreError, match="/update did not answer within 0.2 s"):
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
