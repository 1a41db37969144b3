"""``em-plugin serve``: a real oxigraph server over the store, read by an outside SPARQL client
while a crew writes to it through the remote backend."""

from __future__ import annotations

import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from rdflib import Graph, Literal
from rdflib.plugins.stores.sparqlstore import SPARQLStore

from em_plugin.cli import cli
from em_plugin.endpoint import oxigraph_binary
from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import OxigraphStore, open_store
from tests.processes import em_plugin_serve

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(oxigraph_binary() is None, reason="pip install oxigraph (server binary)"),
]
_IDS = """PREFIX dcterms: <http://purl.org/dc/terms/>
PREFIX pl: <https://w3id.org/em-plugin/provlake#>
SELECT ?id WHERE { ?wf a pl:Workflow ; dcterms:identifier ?id }"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``em-plugin serve --store DIR --port 0`` in a child process; yields it and its URL."""
    with em_plugin_serve(tmp_path / "store") as (process, url):
        yield process, url


def test_a_sparql_client_reads_what_a_crew_saved_after_the_server_started(
    served: tuple[subprocess.Popen[str], str], tmp_path: Path
) -> None:
    process, url = served
    assert url.startswith("http://127.0.0.1:") and url.endswith("/query")
    client = Graph(store=SPARQLStore(query_endpoint=url))
    assert list(client.query(_IDS)) == []

    workflow = Workflow(
        id="served-1",
        scope="team",
        steps=(InstructionStep(text="Check the SDS", steps=(CallStep(name="sds_reader"),)),),
    )
    memory = EpisodicMemory(store=url, embedder="fake", scope="team")
    try:
        memory.save(workflow)
    finally:
        memory.close()

    # The union of all graphs is the default graph: no GRAPH clause needed.
    assert [row[0] for row in client.query(_IDS)] == [Literal("served-1")]  # type: ignore[index]

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0
    with pytest.raises((urllib.error.URLError, OSError)):
        urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=2)
    with open_store(tmp_path / "store", read_only=True) as store:  # the server wrote the dir
        assert store.load("served-1", scope="team") == workflow


def test_a_store_in_use_is_refused_with_the_way_out(tmp_path: Path) -> None:
    holder = OxigraphStore(tmp_path / "store")  # a crew holding the store for writing
    try:
        result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path / "store")])
    finally:
        holder.close()
    assert result.exit_code == 1
    assert "in use by another process" in result.output
    assert "point the crew at the endpoint" in result.output


def test_an_endpoint_is_not_a_store_to_serve() -> None:
    result = CliRunner().invoke(cli, ["serve", "--store", "http://127.0.0.1:7878/query"])
    assert result.exit_code == 2
    assert "already a SPARQL endpoint" in result.output


_TOOL_CALLS = """PREFIX wf: <https://w3id.org/em-plugin/ns#>
SELECT (COUNT(*) AS ?n) WHERE { ?c wf:tool ?t . ?t wf:toolName "reset_apn_settings" }"""


def test_one_query_has_one_answer_through_query_serve_and_open_store(tmp_path: Path) -> None:
    from provenance.workflow_json import read_jsonl

    root = Path(__file__).resolve().parents[3]
    directory = tmp_path / "store"
    workflows = list(read_jsonl(root / "notebooks" / "data" / "tau2_telecom.jsonl"))
    calls = sum(
        isinstance(s, CallStep) and s.name == "reset_apn_settings"
        for w in workflows
        for _, s in w.walk()
    )
    with open_store(str(directory)) as store:
        store.save_many(workflows)
        multiset = store.backend.query(_TOOL_CALLS)  # Oxigraph's union: once per graph
        # Suggestion records are not workflows: the union leaves them out.
        suggestion = {"rank": 1, "text": "x", "tool": "reset_apn_settings"}
        store.record_suggestions("s", [suggestion], [], scope="default", time="2026-01-01T00:00:00")

    cli_run = CliRunner().invoke(
        cli,
        ["query", "--sparql", _TOOL_CALLS, "--store", str(directory), "--format", "json"],
    )
    assert cli_run.exit_code == 0, cli_run.output
    through_cli = int(__import__("json").loads(cli_run.output)[0]["n"])

    with open_store(str(directory), read_only=True) as store:
        result = store.query(_TOOL_CALLS)
        through_open_store = int(str(result.rows[0][0]))  # type: ignore[union-attr]

    with em_plugin_serve(directory) as (_, url):
        client = Graph(store=SPARQLStore(query_endpoint=url))
        through_serve = int(next(iter(client.query(_TOOL_CALLS)))[0])  # type: ignore[index]

    assert through_cli == through_open_store == through_serve == calls
    assert int(str(multiset.rows[0][0])) > calls  # type: ignore[union-attr]
