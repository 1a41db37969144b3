"""``em-plugin serve``'s doors: the base URL as a store, one answer for one query text at each
door (prefixes included), the Service Description, the loopback rule, clean logs under load, and
the caller's ``traceparent`` carried into the server's spans."""

from __future__ import annotations

import gc
import http.client
import json
import sys
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rdflib import Graph, URIRef
from rdflib.namespace import RDF

from em_plugin.access import hash_token
from em_plugin.cli import cli
from em_plugin.endpoint import oxigraph_binary, start_endpoint
from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from provenance.vocab import graph_iri
from tests.processes import em_plugin_serve

pytestmark = pytest.mark.integration

TOKEN = "doors-writer-token-0123456789"
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?wf a pl:Workflow }"
SD = URIRef("http://www.w3.org/ns/sparql-service-description#")
needs_oxigraph = pytest.mark.skipif(oxigraph_binary() is None, reason="pip install oxigraph")


def _workflow(wid: str, scope: str) -> Workflow:
    step = InstructionStep("Check the SDS", (CallStep("sds_reader"),))
    return Workflow(id=wid, scope=scope, steps=(step,))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("doors") / "store"
    with EpisodicMemory(store=path, embedder="fake", scope="team") as memory:
        memory.save_many([_workflow(f"w{i}", "team") for i in range(3)])
    return path


def _tokens(root: Path) -> Path:
    path = root / "tokens.toml"
    path.write_text(f'[tokens.w]\nsha256 = "{hash_token(TOKEN)}"\nscopes = ["team"]\n'
                    'access = "read-write"\n')  # fmt: skip
    return path


def _post(url: str, text: str, token: str | None = None, accept: str = "") -> tuple[int, bytes]:
    parts = urllib.parse.urlsplit(url)
    headers = {"Content-Type": "application/sparql-query"}
    if accept:
        headers["Accept"] = accept
    if token:
        headers["Authorization"] = f"Bearer {token}"
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request("POST", parts.path, body=text.encode(), headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def _count(url: str, token: str | None = None) -> int:
    status, body = _post(url, COUNT, token)
    assert status == 200, body
    return int(json.loads(body)["results"]["bindings"][0]["n"]["value"])


@needs_oxigraph
def test_one_prefixed_query_one_answer_at_every_door(store: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["query", "--store", str(store), "--sparql", COUNT,
                                      "--format", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    through_cli = int(json.loads(result.output)[0]["n"])
    with open_store(store, read_only=True) as opened:  # the API, prefixes declared by the text
        through_api = int(
            opened.query(f"PREFIX pl: <https://w3id.org/em-plugin/provlake#> {COUNT}").rows[0][0]
        )
    with em_plugin_serve(store) as (_, url):
        served = _count(url)
    with em_plugin_serve(store, "--token-file", str(_tokens(tmp_path))) as (_, url):
        with_token = _count(url, TOKEN)
    assert through_cli == through_api == served == with_token == 3


@needs_oxigraph
@pytest.mark.parametrize("kind", ["em-plugin serve", "oxigraph serve"])
def test_a_server_base_url_opens_as_a_store(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind == "oxigraph serve":
        base = request.getfixturevalue("oxigraph_server").base_url
        context: Any = None
    else:
        context = em_plugin_serve(tmp_path / "store")
        base = context.__enter__()[1].removesuffix("/query")
    try:
        with EpisodicMemory(store=base, embedder="fake", scope=f"base-{tmp_path.name}") as memory:
            memory.save(_workflow("b1", memory.scope))
            assert memory.ids() == ["b1"]
        listed = CliRunner().invoke(
            cli, ["list", "--store", base, "--scope", f"base-{tmp_path.name}"]
        )
        assert listed.exit_code == 0 and "b1" in listed.output, listed.output
    finally:
        if context is not None:
            context.__exit__(None, None, None)


@needs_oxigraph
@pytest.mark.parametrize("scoped", [False, True])
def test_the_query_endpoint_describes_its_service(scoped: bool, tmp_path: Path) -> None:
    token_file = _tokens(tmp_path) if scoped else None
    with start_endpoint(tmp_path / "s", port=0, token_file=token_file) as endpoint:
        parts = urllib.parse.urlsplit(endpoint.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        headers = {"Authorization": f"Bearer {TOKEN}"} if scoped else {}
        connection.request("GET", "/query", headers=headers)
        answer = connection.getresponse()
        body = answer.read()
        connection.close()
    assert answer.status == 200 and answer.getheader("Content-Type") == "text/turtle"
    graph = Graph().parse(data=body, format="turtle")
    service = next(graph.subjects(RDF.type, SD + "Service"))
    assert graph.value(service, SD + "endpoint") == URIRef(endpoint.url)
    assert set(graph.objects(service, SD + "supportedLanguage")) == {
        SD + "SPARQL11Query",
        SD + "SPARQL11Update",
    }
    formats = {str(f).rsplit("/", 1)[1] for f in graph.objects(service, SD + "resultFormat")}
    assert {"SPARQL_Results_JSON", "SPARQL_Results_XML", "Turtle", "N-Triples"} <= formats
    dataset = graph.value(service, SD + "defaultDataset")
    assert (dataset, RDF.type, SD + "Dataset") in graph
    assert graph.value(dataset, SD + "defaultGraph") is not None


def test_a_public_address_without_tokens_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="--token-file"):
        start_endpoint(tmp_path / "s", host="0.0.0.0", port=0)
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path / "s"), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "refusing to bind 0.0.0.0 without --token-file" in result.output
    assert "http://0.0.0.0" not in result.output


def test_a_public_address_with_tokens_prints_a_url_to_connect_to(tmp_path: Path) -> None:
    with start_endpoint(
        "memory:", host="0.0.0.0", port=0, token_file=_tokens(tmp_path)
    ) as endpoint:
        assert endpoint.public and endpoint.url.startswith("http://127.0.0.1:")
        assert _post(endpoint.url, "ASK {}", TOKEN)[0] == 200


def test_parallel_reads_and_updates_drop_no_pyoxigraph_object_on_another_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unraisable: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(repr(u.exc_value)))
    graph = graph_iri("w", "team")
    texts = [
        (
            "update",
            f"DROP SILENT GRAPH <{graph}> ; "
            f"INSERT DATA {{ GRAPH <{graph}> {{ <urn:s> <urn:p> 1 }} }}",
        ),
        ("query", "SELECT ?s ?o WHERE { ?s ?p ?o } LIMIT 5"),
        ("query", "ASK { ?s ?p ?o }"),
        ("query", "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"),
        ("query", "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"),
    ]
    with start_endpoint("memory:", port=0, token_file=_tokens(tmp_path)) as endpoint:

        def send(number: int) -> int:
            kind, text = texts[number % len(texts)]
            url = endpoint.update_url if kind == "update" else endpoint.url
            parts = urllib.parse.urlsplit(url)
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
            try:
                connection.request(
                    "POST",
                    parts.path,
                    body=text.encode(),
                    headers={
                        "Content-Type": f"application/sparql-{kind}",
                        "Authorization": f"Bearer {TOKEN}",
                    },
                )
                answer = connection.getresponse()
                answer.read()
                return answer.status
            finally:
                connection.close()

        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(send, range(120)))
    gc.collect()
    assert {s // 100 for s in statuses} == {2}
    assert unraisable == []


def test_an_incoming_traceparent_is_the_parent_of_the_request_span(tmp_path: Path) -> None:
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    previous = trace._TRACER_PROVIDER  # the global provider can be set once: swap it back after
    trace._TRACER_PROVIDER = provider
    try:
        trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
        with start_endpoint("memory:", port=0, token_file=_tokens(tmp_path)) as endpoint:
            parts = urllib.parse.urlsplit(endpoint.url)
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
            connection.request(
                "POST",
                "/query",
                body=b"ASK {}",
                headers={
                    "Content-Type": "application/sparql-query",
                    "Authorization": f"Bearer {TOKEN}",
                    "traceparent": f"00-{trace_id}-{parent_id}-01",
                },
            )
            assert connection.getresponse().status == 200
            connection.close()
    finally:
        trace._TRACER_PROVIDER = previous
    (span,) = exporter.get_finished_spans()
    assert span.name == "POST /query" and span.kind == trace.SpanKind.SERVER
    assert format(span.context.trace_id, "032x") == trace_id
    assert span.parent is not None and format(span.parent.span_id, "016x") == parent_id
    assert span.attributes["http.response.status_code"] == 200


def test_the_package_all_is_its_sorted_public_names() -> None:
    import em_plugin.endpoint as endpoint
    from tests.api_surface import public_names

    assert endpoint.__all__ == public_names("em_plugin.endpoint")


def test_a_dataset_parameter_that_is_no_iri_is_a_400(tmp_path: Path) -> None:
    bad = str(graph_iri("w", "team"))[:-1] + "a b"  # of the token's scope by its name; no IRI
    with start_endpoint("memory:", port=0, token_file=_tokens(tmp_path)) as endpoint:
        parts = urllib.parse.urlsplit(endpoint.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            query = urllib.parse.urlencode({"query": "ASK {}", "default-graph-uri": bad})
            connection.request(
                "GET", f"/query?{query}", headers={"Authorization": f"Bearer {TOKEN}"}
            )
            answer = connection.getresponse()
            assert (answer.status, b"not an IRI" in answer.read()) == (400, True)
        finally:
            connection.close()


def test_serve_without_the_oxigraph_binary_names_the_extra_and_exits_4(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import em_plugin.endpoint.oxigraph_process as process

    monkeypatch.setattr(process, "oxigraph_binary", lambda: None)
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path / "store"), "--port", "0"])
    assert result.exit_code == 4, result.output
    assert "pip install 'em-plugin[serve]'" in result.output
    assert "Traceback" not in result.output
