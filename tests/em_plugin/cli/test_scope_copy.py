"""The copy of a token's scopes: its graphs only, its default graph their union, kept in step."""

from __future__ import annotations

import pyoxigraph as ox

from em_plugin.endpoint import ScopeCopy
from provenance.vocab import changes_graph_iri, graph_iri

TOOL = ox.Triple(ox.NamedNode("urn:tool"), ox.NamedNode("urn:a"), ox.NamedNode("urn:Tool"))


def _graph(iri: str, *triples: ox.Triple) -> list[ox.Quad]:
    return [ox.Quad(t.subject, t.predicate, t.object, ox.NamedNode(iri)) for t in triples]


def _own(name: str) -> ox.Triple:
    return ox.Triple(ox.NamedNode(f"urn:{name}"), ox.NamedNode("urn:p"), ox.Literal(name))


def test_the_union_keeps_a_shared_triple_while_a_workflow_graph_holds_it() -> None:
    a1, a2, b1 = str(graph_iri("1", "a")), str(graph_iri("2", "a")), str(graph_iri("1", "b"))
    log = str(changes_graph_iri("a", "1-x"))
    source = ox.Store()
    source.extend(_graph(a1, TOOL, _own("a1")) + _graph(a2, TOOL, _own("a2")))
    source.extend(_graph(b1, TOOL, _own("b1")) + _graph(log, _own("log")))
    copy = ScopeCopy.of(source, frozenset({"a"}))

    def default() -> set[str]:
        return {
            str(q.object.value)
            for q in copy.store.quads_for_pattern(None, None, None, ox.DefaultGraph())
        }

    assert {g.value for g in copy.store.named_graphs()} == {a1, a2, log}
    assert default() == {"urn:Tool", "a1", "a2"}  # the change log stays out of the union

    source.remove_graph(ox.NamedNode(a1))
    copy.sync(source, [a1, b1])
    assert default() == {"urn:Tool", "a2"}
    source.remove_graph(ox.NamedNode(a2))
    source.extend(_graph(a2, _own("a2-new")))
    copy.sync(source, [a2])
    assert default() == {"a2-new"}
    assert {g.value for g in copy.store.named_graphs()} >= {a2, log}
