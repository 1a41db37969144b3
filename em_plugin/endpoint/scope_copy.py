"""A copy of some scopes' graphs, kept in step with the store: the dataset a token's query runs on.

The copy holds the scopes' graphs as named graphs (workflows, change logs, suggestion records)
and, as its default graph, the union of their workflow graphs, each triple once. A query on it
sees nothing else, whatever it says: the store it runs on holds nothing else. Oxigraph answers
a join on that default graph as fast as on any default graph, where a default graph given as a
list of thousands of graphs is evaluated one graph at a time (benchmarks/scoped_dataset.py).
"""

from __future__ import annotations

from collections.abc import Iterable

import pyoxigraph as ox

from em_plugin.access.graphs import graph_scope, is_workflow_graph

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
            if isinstance(graph, ox.NamedNode) and graph_scope(graph.value) in scopes:
                held = list(source.quads_for_pattern(None, None, None, graph))
                quads += held
                if is_workflow_graph(graph.value):
                    quads += (ox.Quad(q.subject, q.predicate, q.object) for q in held)
        copy.store.bulk_extend(quads)  # one load: the copy is not read before it is returned
        return copy

    def sync(self, source: ox.Store, graphs: Iterable[str]) -> None:
        """Bring the named ``graphs`` (those of its scopes) in step with ``source``."""
        for iri in graphs:
            if graph_scope(iri) not in self.scopes:
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
        if is_workflow_graph(graph.value):
            self.store.extend(ox.Quad(q.subject, q.predicate, q.object) for q in quads)

    def _remove(self, graph: ox.NamedNode, quads: list[ox.Quad]) -> None:
        for quad in quads:
            self.store.remove(quad)
        if not is_workflow_graph(graph.value):
            return
        for quad in quads:
            # The union keeps a triple while another workflow graph of the copy still holds it.
            holders = list(self.store.quads_for_pattern(quad.subject, quad.predicate, quad.object))
            if not any(
                isinstance(h.graph_name, ox.NamedNode) and is_workflow_graph(h.graph_name.value)
                for h in holders
            ):
                self.store.remove(ox.Quad(quad.subject, quad.predicate, quad.object))
