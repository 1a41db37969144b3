"""What one SPARQL query answers at each door of the same store (docs/sparql.md).

Builds a disk store as a new user would: the PFAS bootstrap imported with ``em-plugin import``, one
workflow saved again (a version), one retired, the most supported mined procedure accepted, one
round of suggestions recorded, one session journaled. Then asks each query, written without
``PREFIX`` lines, through every door:

- ``API``: ``WorkflowStore.query``;
- ``CLI``: ``em-plugin query --sparql`` (click's runner, in process);
- ``panel``: the panel's query page (``integrations/panel/pages.py``);
- ``serve``: ``em-plugin serve`` over HTTP (SPARQL 1.1 Protocol, JSON results);
- ``serve+token``: ``em-plugin serve --token-file`` with a read token of the store's scope;
- ``SPARQLWrapper``: the SPARQLWrapper client against ``serve`` (when installed; otherwise
  ``rdflib``: rdflib's ``SPARQLStore`` client);
- ``other token``: ``serve --token-file`` with a read token of another scope (it must find
  none of the store's graphs: every cell 0).

A cell is the count the door answered, or the first words of its error; every door but the last
must answer each row alike (issue 30's table). Run::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/dataset_doors.py
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP = ROOT / "integrations" / "demo" / "pfas" / "data" / "bootstrap.jsonl"
TOKEN = "reader-default-0123456789"
OTHER_TOKEN = "reader-elsewhere-0123456789"


def _things(cls: str) -> str:
    return f"SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE {{ ?x a {cls} }}"


def _links(prop: str) -> str:
    return f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s {prop} ?o }}"


#: The queries of issue 30's table, written without PREFIX lines, then the dataset's edges.
QUERIES = {
    **{cls: _things(cls) for cls in ("prov:Activity", "prov:Entity", "prov:Agent", "prov:Plan")},
    **{cls: _things(cls) for cls in ("p-plan:Plan", "p-plan:Step")},
    **{p: _links(p) for p in ("prov:wasAssociatedWith", "prov:used", "prov:wasGeneratedBy")},
    "wasRevisionOf": _links("prov:wasRevisionOf"),
    "invalidatedAtTime": _links("prov:invalidatedAtTime"),
    "accepted procedure": (
        'SELECT (COUNT(*) AS ?n) WHERE { ?p a wf:Procedure , p-plan:Plan ; wf:status "active" }'
    ),
    "pl:Workflow": "SELECT (COUNT(*) AS ?n) WHERE { ?w a pl:Workflow }",
    "lifecycle in GRAPH ?g": (
        "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?new prov:wasRevisionOf ?old } }"
    ),
    "suggestion rounds": "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a a wf:Suggestion } }",
    "named graphs": "SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }",
    "journal graphs": (
        "SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } "
        'FILTER(CONTAINS(STR(?g), "/journal/")) }'
    ),
}
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def build(store: Path) -> None:
    """Make the store: bootstrap, a version, a retirement, a procedure, suggestions, a journal."""
    from click.testing import CliRunner

    from em_plugin.capture.trajectory import Trajectory
    from em_plugin.cli import cli
    from em_plugin.memory import EpisodicMemory
    from em_plugin.session.journal import SessionJournal
    from em_plugin.suggest.types import Evidence, Suggestion

    done = CliRunner().invoke(
        cli, ["--embedder", "fake", "import", str(BOOTSTRAP), "--store", str(store)]
    )
    if done.exit_code != 0:
        raise SystemExit(done.output)
    with EpisodicMemory(store=store, embedder="fake") as memory:
        first, second, *_ = memory.ids()
        memory.save(memory.load(first).replace(title="saved again"))
        memory.lifecycle.retire(second, reason="duplicate")
        candidates = sorted(memory.lifecycle.procedures(), key=lambda p: -p.support)
        if candidates:
            memory.lifecycle.accept_procedure(candidates[0].id, name="most supported")
        shown = Suggestion("Check it", "checker", score=0.9, evidence=(Evidence(first, 1, 1.0),))
        memory.record_suggestions("chat-1", [shown])
        trajectory = Trajectory("chat-1", scope=memory.scope, framework="beeai")
        trajectory.instruction("Extract the ingredients")
        SessionJournal(memory.store.backend).append(
            memory.scope, "chat-1", trajectory.events, base=0
        )


def _count(rows: Any) -> str:
    return str(int(str(rows.rows[0][0])))


def _short(exc: BaseException) -> str:
    return "error: " + " ".join(str(exc).split())[:40]


def _guarded(ask: Callable[[str], str], text: str) -> str:
    try:
        return ask(text)
    except Exception as exc:  # noqa: BLE001 - the door's error is the cell
        return _short(exc)


def local_doors(store: Path) -> dict[str, Callable[[str], str]]:
    """The doors that open the store in this process."""
    from click.testing import CliRunner

    from em_plugin.cli import cli
    from integrations.panel.pages import _run_query
    from provenance.stores import open_store

    def api(text: str) -> str:
        with open_store(store, read_only=True) as opened:
            return _count(opened.query(text))

    def command(text: str) -> str:
        args = ["query", "--sparql", text, "--store", str(store), "--format", "json"]
        done = CliRunner().invoke(cli, args)
        if done.exit_code != 0:
            return "error: " + " ".join(done.output.split())[:40]
        return str(int(next(iter(json.loads(done.output)[0].values()))))

    def panel(text: str) -> str:
        with open_store(store, read_only=True) as opened:

            class State:
                pass

            state = State()
            state.store = opened  # type: ignore[attr-defined]
            return str(int(_run_query(state, text, False, None)["rows"][0][0]))  # type: ignore[arg-type]

    return {"API": api, "CLI": command, "panel": panel}


def http_door(url: str, token: str | None = None) -> Callable[[str], str]:
    """A door over the SPARQL 1.1 Protocol (POST form, JSON results)."""

    def ask(text: str) -> str:
        headers = {
            "Accept": "application/sparql-results+json",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        body = urllib.parse.urlencode({"query": text}).encode()
        try:
            with _LOCAL.open(
                urllib.request.Request(url, data=body, headers=headers), timeout=60
            ) as answer:
                data = json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code}: " + " ".join(exc.read().decode(errors="replace").split())[:30]
        binding = data["results"]["bindings"][0]
        return str(int(next(iter(binding.values()))["value"]))

    return ask


def rdflib_door(url: str) -> Callable[[str], str]:
    """Rdflib's SPARQLStore client."""
    from rdflib import Graph
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    def ask(text: str) -> str:
        try:
            rows = list(Graph(store=SPARQLStore(query_endpoint=url)).query(text))
        except Exception as exc:  # noqa: BLE001 - the door's error is the cell
            return _short(exc)
        return str(int(str(rows[0][0])))  # type: ignore[index]

    return ask


def sparqlwrapper_door(url: str) -> Callable[[str], str] | None:
    """The SPARQLWrapper client, when it is installed."""
    try:
        from SPARQLWrapper import JSON, POST, SPARQLWrapper
    except ImportError:
        return None

    def ask(text: str) -> str:
        client = SPARQLWrapper(url)
        client.setMethod(POST)
        client.setReturnFormat(JSON)
        client.setQuery(text)
        try:
            data: Any = client.queryAndConvert()
        except Exception as exc:  # noqa: BLE001 - the door's error is the cell
            return _short(exc)
        return str(int(next(iter(data["results"]["bindings"][0].values()))["value"]))

    return ask


def serve(store: Path, *options: str) -> tuple[subprocess.Popen[str], str]:
    """Start ``em-plugin serve`` on a free loopback port; return the process and its URL."""
    command = [sys.executable, "-m", "em_plugin", "serve", "--store", str(store), "--port", "0"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [*command, *options], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url:
        process.kill()
        raise SystemExit("serve printed no URL")
    return process, url


def stop(process: subprocess.Popen[str]) -> None:
    """Stop a server this script started."""
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    if process.stdout is not None:
        process.stdout.close()


def main() -> None:
    """Print the door x query table."""
    from em_plugin.access import hash_token
    from provenance.model import DEFAULT_SCOPE

    with tempfile.TemporaryDirectory() as directory:
        store = Path(directory) / "store"
        build(store)
        answers: dict[str, dict[str, str]] = {}
        for door, ask in local_doors(store).items():
            answers[door] = {name: _guarded(ask, text) for name, text in QUERIES.items()}
        process, url = serve(store)
        try:
            answers["serve"] = {name: http_door(url)(text) for name, text in QUERIES.items()}
            client = sparqlwrapper_door(url)
            label = "SPARQLWrapper" if client is not None else "rdflib"
            client = client or rdflib_door(url)
            answers[label] = {name: client(text) for name, text in QUERIES.items()}
        finally:
            stop(process)
        tokens = Path(directory) / "tokens.toml"
        tokens.write_text(
            f'[tokens.reader]\nsha256 = "{hash_token(TOKEN)}"\nscopes = ["{DEFAULT_SCOPE}"]\n'
            f'[tokens.elsewhere]\nsha256 = "{hash_token(OTHER_TOKEN)}"\nscopes = ["elsewhere"]\n'
        )
        process, url = serve(store, "--token-file", str(tokens))
        try:
            ask = http_door(url, TOKEN)
            answers["serve+token"] = {name: ask(text) for name, text in QUERIES.items()}
            other = http_door(url, OTHER_TOKEN)
            answers["other token"] = {name: other(text) for name, text in QUERIES.items()}
        finally:
            stop(process)
    doors = list(answers)
    print("| query | " + " | ".join(doors) + " | equal |")
    print("|---|" + "---|" * (len(doors) + 1))
    for name in QUERIES:
        cells = [answers[d][name] for d in doors]
        same = len(set(cells[:-1])) == 1 and cells[-1] == "0"
        print(f"| {name} | " + " | ".join(cells) + f" | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
