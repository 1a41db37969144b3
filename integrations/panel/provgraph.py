"""A workflow's PROV graph as Cytoscape.js elements, drawn with PROV's usual conventions.

The graph is the one the store holds (:func:`provenance.mapping.workflow_to_triples`), each node
classed as :func:`provenance.mapping.entail_types` would class it (read off the lean triples,
without building an rdflib graph), so every node has its PROV class:
entities are drawn as yellow ellipses, activities as blue rectangles and agents as orange
pentagons, as in the W3C PROV primer's figures. Qualified associations are drawn as the
``wasAssociatedWith`` edge they qualify. Association nodes and the tool nodes are left out (a
tool is named on its calls); a very large workflow is cut at :data:`MAX_NODES` nodes, and the
cut is reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rdflib import URIRef
from rdflib.namespace import DCTERMS, PROV, RDF
from rdflib.term import Node

from provenance.mapping import IMPLIED_TYPES, workflow_to_triples
from provenance.model import Workflow
from provenance.vocab import PPLAN, WF

__all__ = ["MAX_NODES", "ProvDrawing", "prov_drawing"]

MAX_NODES = 400
"""Most nodes drawn; a larger workflow's drawing says how many were left out."""

_KINDS = ((PROV.Agent, "agent"), (PROV.Activity, "activity"), (PROV.Entity, "entity"))
_EDGES: dict[URIRef, str] = {
    PROV.used: "used",
    PROV.wasGeneratedBy: "wasGeneratedBy",
    PROV.wasInformedBy: "wasInformedBy",
    PROV.wasDerivedFrom: "wasDerivedFrom",
    PROV.wasRevisionOf: "wasRevisionOf",
    PROV.actedOnBehalfOf: "actedOnBehalfOf",
    PROV.wasAssociatedWith: "wasAssociatedWith",
    DCTERMS.isPartOf: "isPartOf",
    PPLAN.correspondsToStep: "correspondsToStep",
    PPLAN.isStepOfPlan: "isStepOfPlan",
}
_LABELS = (WF.agentName, WF.instructionText, WF.argName, DCTERMS.title, DCTERMS.identifier)


@dataclass(frozen=True)
class ProvDrawing:
    """Cytoscape.js elements of one workflow and what was left out."""

    elements: list[dict[str, Any]]
    nodes: int
    edges: int
    omitted: int

    def counts(self) -> dict[str, int]:
        """Return how many entities, activities and agents are drawn."""
        found = {"entity": 0, "activity": 0, "agent": 0}
        for element in self.elements:
            kind = element["data"].get("kind")
            if kind in found:
                found[kind] += 1
        return found


def prov_drawing(workflow: Workflow, *, max_nodes: int = MAX_NODES) -> ProvDrawing:
    """Return the Cytoscape.js elements of a workflow's PROV graph.

    Args:
        workflow: The workflow.
        max_nodes: Draw at most this many nodes (activities first, then agents, entities).

    Returns:
        Nodes ``{"data": {"id", "label", "kind", "title"}}`` and edges
        ``{"data": {"id", "source", "target", "label"}}``.
    """
    graph = _Triples(workflow_to_triples(workflow))
    kinds = _node_kinds(graph)
    order = {"activity": 0, "agent": 1, "entity": 2}
    ranked = sorted(kinds, key=lambda node: (order[kinds[node]], str(node)))
    kept = set(ranked[:max_nodes])
    elements: list[dict[str, Any]] = []
    for node in ranked[:max_nodes]:
        label, title = _label(graph, node, workflow)
        elements.append(
            {"data": {"id": str(node), "label": label, "kind": kinds[node], "title": title}}
        )
    edges = 0
    for source, name, target in _edges(graph):
        if source in kept and target in kept:
            edges += 1
            elements.append(
                {
                    "data": {
                        "id": f"e{edges}",
                        "source": str(source),
                        "target": str(target),
                        "label": name,
                    }
                }
            )
    return ProvDrawing(
        elements=elements, nodes=len(kept), edges=edges, omitted=len(kinds) - len(kept)
    )


class _Triples:
    """The workflow's triples indexed by subject and by predicate (what the drawing asks)."""

    def __init__(self, triples: Iterable[tuple[Node, Node, Node]]) -> None:
        self.by_subject: dict[Node, dict[Node, list[Node]]] = {}
        self.by_predicate: dict[Node, list[tuple[Node, Node]]] = {}
        for s, p, o in triples:
            self.by_subject.setdefault(s, {}).setdefault(p, []).append(o)
            self.by_predicate.setdefault(p, []).append((s, o))

    def value(self, subject: Node | None, predicate: Node) -> Node | None:
        found = self.by_subject.get(subject, {}).get(predicate) if subject is not None else None
        return found[0] if found else None

    def pairs(self, predicate: Node) -> list[tuple[Node, Node]]:
        return self.by_predicate.get(predicate, [])


def _node_kinds(graph: _Triples) -> dict[URIRef, str]:
    # The classes entail_types() would add (provenance.mapping), read off the lean triples.
    classes: dict[Node, set[Node]] = {}
    for node, cls in graph.pairs(RDF.type):
        implied = IMPLIED_TYPES.get(cls, ()) if isinstance(cls, URIRef) else ()
        classes.setdefault(node, set()).update((cls, *implied))
    for node, _ in graph.pairs(WF.argName):
        classes.setdefault(node, set()).add(PROV.Entity)
    calls = {n for n, c in classes.items() if WF.FunctionCall in c}
    for node, activity in graph.pairs(PROV.wasGeneratedBy):
        if activity in calls:
            classes.setdefault(node, set()).add(PROV.Entity)
    for _, step in graph.pairs(PROV.hadPlan):
        classes.setdefault(step, set()).add(PROV.Entity)
    tools = {s for s, _ in graph.pairs(WF.toolName)}
    kinds: dict[URIRef, str] = {}
    for node, found in classes.items():
        if not isinstance(node, URIRef) or node in tools:
            continue
        for cls, kind in _KINDS:
            if cls in found:
                kinds[node] = kind
                break
    return kinds


def _edges(graph: _Triples) -> Iterable[tuple[URIRef, str, URIRef]]:
    for predicate, name in _EDGES.items():
        for source, target in graph.pairs(predicate):
            if isinstance(source, URIRef) and isinstance(target, URIRef):
                yield source, name, target
    # A qualified association stands for the wasAssociatedWith edge it qualifies.
    for activity, association in graph.pairs(PROV.qualifiedAssociation):
        agent = graph.value(association, PROV.agent)
        if isinstance(activity, URIRef) and isinstance(agent, URIRef):
            yield activity, "wasAssociatedWith", agent


def _label(graph: _Triples, node: URIRef, workflow: Workflow) -> tuple[str, str]:
    fragment = str(node).rsplit("#", 1)[-1] if "#" in str(node) else str(node).rsplit("/", 1)[-1]
    for predicate in _LABELS:
        value = graph.value(node, predicate)
        if value is not None:
            return _short(str(value)), f"{fragment}: {value}"
    tool = graph.value(node, WF.tool) or graph.value(
        graph.value(node, PPLAN.correspondsToStep), WF.tool
    )
    if tool is not None:
        name = graph.value(tool, WF.toolName)
        if name is not None:
            return _short(f"{fragment} {name}"), f"{fragment}: call to {name}"
    value = graph.value(node, PROV.value)
    if value is not None:
        return _short(fragment), f"{fragment} = {_short(str(value), 300)}"
    if fragment == "run":
        return "run", f"the session that produced {workflow.id}"
    return _short(fragment), fragment


def _short(text: str, limit: int = 28) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
