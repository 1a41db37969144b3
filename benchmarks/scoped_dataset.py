"""What a token's dataset costs a query: a copy of the scope, its graphs listed, the union.

``em-plugin serve --token-file`` runs each query on a copy of the token's scopes' graphs
(``em_plugin/endpoint/scope_copy.py``, docs/observability.md). This bench fills an in-memory store
with synthetic workflows in two scopes and times the same queries three ways, in one run: over
the union of all graphs (what ``serve`` without tokens answers), over one scope's graphs given
to Oxigraph as a list (``default_graph=[…]``, ``named_graphs=[…]``, the other way to bound a
dataset), and over the scope's copy; plus the time to make the copy.

Run: ``python benchmarks/scoped_dataset.py [--workflows 2000] [--repeat 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import pyoxigraph as ox

from em_plugin.access import graph_scope, is_workflow_graph
from em_plugin.endpoint import ScopeCopy
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


def _listed(store: ox.Store, scope: str) -> tuple[list[ox.NamedNode], list[ox.NamedNode]]:
    named = [
        g
        for g in store.named_graphs()
        if isinstance(g, ox.NamedNode) and graph_scope(g.value) == scope
    ]
    return [g for g in named if is_workflow_graph(g.value)], named


def main() -> None:
    """Fill the store, then print the medians per query and their ratio to the union."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflows", type=int, default=2000, help="per scope")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    store = ox.Store()
    _fill(store, args.workflows)
    start = time.perf_counter()
    copy = ScopeCopy.of(store, frozenset({"a"}))
    made = time.perf_counter() - start
    default, named = _listed(store, "a")
    print(f"{args.workflows} synthetic workflows in each of two scopes, in memory")
    print(f"making the copy of one scope: {made:.2f} s (once; updates then sync their graphs)")
    header = f"{'query':<16} {'union ms':>10} {'list ms':>10} {'x union':>8}"
    print(f"{header} {'copy ms':>10} {'x union':>8}")
    for name, text in QUERIES.items():
        union = _median_ms(
            lambda t=text: list(store.query(t, use_default_graph_as_union=True)), args.repeat
        )
        listed = _median_ms(
            lambda t=text: list(store.query(t, default_graph=default, named_graphs=named)),
            max(1, args.repeat // 4),
        )
        copied = _median_ms(lambda t=text: list(copy.store.query(t)), args.repeat)
        print(
            f"{name:<16} {union:>10.2f} {listed:>10.2f} {listed / union:>8.2f}"
            f" {copied:>10.2f} {copied / union:>8.2f}"
        )


if __name__ == "__main__":
    main()
