"""A copy of some scopes' graphs, kept in step with the store: the dataset a token's query runs on.

The copy holds the graphs a token of the scopes may read, as the registry of graph families says
(:func:`provenance.stores.graph_families.token_may_read`: the scopes' workflows, lifecycle
records, suggestion records, journals and change logs, and the embedder record of no scope) as
named graphs and, as its default graph, the merge of those of the default-graph families
(workflows and lifecycle records), each triple once. A query on it sees nothing else, whatever
it says: the store it runs on holds nothing else. :meth:`ScopeCopy.query_graphs` are the named
graphs of an ad-hoc query (docs/sparql.md); the bookkeeping is there for the store's own code
reading through the token (``SparqlEndpointStore``). Oxigraph answers
a join on that default graph as fast as on any default graph, where a default graph given as a
list of thousands of graphs is evaluated one graph at a time (benchmarks/scoped_dataset.py).
"""

from __future__ import annotations

from collections.abc import Iterable

import pyoxigraph as ox

from em_plugin.access.graphs import in_default_graph, in_query_dataset, token_may_read

__all__ = ["ScopeCopy"]


class ScopeCopy:
    """An in-memory store with the graphs of ``scopes`` (build it with :meth:`of`).

    Args:
        scopes: The scopes it holds.
    """

    def __init__(self, scopes: frozenset[str]) -> None:
        self.scopes = scopes
        self.store = ox.Store()

    @classmethod
    def of(cls, source: ox.Store, scopes: frozenset[str]) -> ScopeCopy:
        """Copy the graphs of ``scopes`` from ``source``."""
        copy = cls(scopes)
        quads: list[ox.Quad] = []
        for graph in source.named_graphs():
            if isinstance(graph, ox.NamedNode) and token_may_read(graph.value, scopes):
                held = list(source.quads_for_pattern(None, None, None, graph))
                quads += held
                if in_default_graph(graph.value):
                    quads += (ox.Quad(q.subject, q.predicate, q.object) for q in held)
        copy.store.bulk_extend(quads)  # one load: the copy is not read before it is returned
        return copy

    def query_graphs(self) -> list[ox.NamedNode]:
        """Return the copy's graphs an ad-hoc query sees as named graphs (the query families')."""
        return [
            g
            for g in self.store.named_graphs()
            if isinstance(g, ox.NamedNode) and in_query_dataset(g.value)
        ]

    def sync(self, source: ox.Store, graphs: Iterable[str]) -> None:
        """Bring the named ``graphs`` (those of its scopes) in step with ``source``."""
        for iri in graphs:
            if not token_may_read(iri, self.scopes):
                continue
            graph = ox.NamedNode(iri)
            new = set(source.quads_for_pattern(None, None, None, graph))
            old = set(self.store.quads_for_pattern(None, None, None, graph))
            # Added first, removed after: a reader in between sees the graph whole, never absent.
            self._add(graph, [q for q in new if q not in old])
            self._remove(graph, [q for q in old if q not in new])
            if not new and self.store.contains_named_graph(graph):
                self.store.remove_graph(graph)  # dropped in the store: no empty name left here

    def _add(self, graph: ox.NamedNode, quads: list[ox.Quad]) -> None:
        self.store.extend(quads)
        if in_default_graph(graph.value):
            self.store.extend(ox.Quad(q.subject, q.predicate, q.object) for q in quads)

    def _remove(self, graph: ox.NamedNode, quads: list[ox.Quad]) -> None:
        for quad in quads:
            self.store.remove(quad)
        if not in_default_graph(graph.value):
            return
        for quad in quads:
            # The merge keeps a triple while another default-graph graph of the copy holds it.
            holders = list(self.store.quads_for_pattern(quad.subject, quad.predicate, quad.object))
            if not any(
                isinstance(h.graph_name, ox.NamedNode) and in_default_graph(h.graph_name.value)
                for h in holders
            ):
                self.store.remove(ox.Quad(quad.subject, quad.predicate, quad.object))
