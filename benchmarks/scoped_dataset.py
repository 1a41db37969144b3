"""What a token's dataset costs a query: the scope's graphs listed, against the plain union.

``em-plugin serve --token-file`` runs each query on the grant's graphs, given to Oxigraph as the
default graph and the named graphs (docs/observability.md). This bench fills an in-memory store
with synthetic workflows in two scopes and times the same queries three ways, in one run:
over the union of all graphs (what ``serve`` without tokens answers), over one scope's graphs
given as the dataset (a token's), and the listing of the scopes' graphs that builds it.

Run: ``python benchmarks/scoped_dataset.py [--workflows 2000] [--repeat 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import pyoxigraph as ox

from em_plugin.access import Grant
from em_plugin.cli.guarded_endpoint import ScopeGraphs
from em_plugin.evaluation.synthetic import SyntheticMemory
from provenance.mapping import workflow_to_triples
from provenance.stores._terms import replace_update
from provenance.vocab import graph_iri

QUERIES = {
    "ids": "PREFIX dcterms: <http://purl.org/dc/terms/> PREFIX pl: <https://w3id.org/em-plugin/provlake#>"
    " SELECT ?id WHERE { ?wf a pl:Workflow ; dcterms:identifier ?id }",
    "count": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
    "graphs": "SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }",
    "ids in GRAPH ?g": "PREFIX dcterms: <http://purl.org/dc/terms/>"
    " PREFIX pl: <https://w3id.org/em-plugin/provlake#>"
    " SELECT ?id WHERE { GRAPH ?g { ?wf a pl:Workflow ; dcterms:identifier ?id } }",
}


def _fill(store: ox.Store, workflows: int) -> None:
    data = SyntheticMemory(11)
    for scope in ("a", "b"):
        batch = [w.replace(scope=scope) for w in data.workflows(workflows, prefix=scope)]
        graphs = [(graph_iri(w.id, scope), list(workflow_to_triples(w))) for w in batch]
        store.update(replace_update(graphs, []))


def _median_ms(function: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    """Fill the store, then print the medians per query and their ratio to the union."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflows", type=int, default=2000, help="per scope")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    store = ox.Store()
    _fill(store, args.workflows)
    grant = Grant("reader", frozenset({"a"}), "read")
    listing = _median_ms(lambda: ScopeGraphs.of(store), args.repeat)
    default, named = ScopeGraphs.of(store).dataset(grant)
    print(f"{args.workflows} synthetic workflows in each of two scopes, in memory")
    print(f"listing the store's graphs by scope: {listing:.2f} ms (after each update)")
    print(f"{'query':<16} {'union ms':>10} {'scope ms':>10} {'x union':>8}")
    for name, text in QUERIES.items():
        union = _median_ms(
            lambda t=text: list(store.query(t, use_default_graph_as_union=True)), args.repeat
        )
        scoped = _median_ms(
            lambda t=text: list(store.query(t, default_graph=default, named_graphs=named)),
            args.repeat,
        )
        print(f"{name:<16} {union:>10.2f} {scoped:>10.2f} {scoped / union:>8.2f}")


if __name__ == "__main__":
    main()
