"""Validate workflow graphs against the SHACL shapes in ``provenance/shapes.ttl`` (pyshacl).

Validation costs about 0.2 s per workflow graph (``docs/provenance-mapping.md``, "Shapes"): fine
when saving one workflow, too slow for a whole store, so validate per graph.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from rdflib import Graph, Literal, URIRef
from rdflib.namespace import SH
from rdflib.term import Node

from provenance.vocab import PREFIXES

__all__ = ["load_shapes", "validate_graph"]


@lru_cache(maxsize=1)
def load_shapes() -> Graph:
    """Return the shapes graph (parsed once and cached; do not modify it)."""
    text = resources.files("provenance").joinpath("shapes.ttl").read_text(encoding="utf-8")
    return Graph().parse(data=text, format="turtle")


def validate_graph(graph: Graph) -> list[str]:
    """Check a workflow (or suggestion) graph against the shapes.

    Args:
        graph: The graph of one workflow, as made by
            :func:`~provenance.mapping.workflow_to_graph`.

    Returns:
        One readable line per violation, sorted (``focus node [path]: message (value)``); an
        empty list when the graph conforms.

    Example:
        >>> validate_graph(workflow_to_graph(workflow))
        []
    """
    # Imported here: pyshacl pulls in owlrl and more, which most callers never need.
    from pyshacl import validate

    conforms, report, _ = validate(
        graph,
        shacl_graph=load_shapes(),
        inference="none",
        advanced=True,
        allow_warnings=True,
    )
    if conforms:
        return []
    assert isinstance(report, Graph)
    lines = {
        _describe(report, result) for result in report.subjects(SH.resultSeverity, SH.Violation)
    }
    return sorted(lines)


def _describe(report: Graph, result: Node) -> str:
    focus = report.value(result, SH.focusNode)
    path = report.value(result, SH.resultPath)
    message = report.value(result, SH.resultMessage)
    value = report.value(result, SH.value)
    text = _short(focus)
    if path is not None:
        text += f" [{_short(path)}]"
    if message is None:
        component = _short(report.value(result, SH.sourceConstraintComponent))
        text += f": violates {component}"
    else:
        text += f": {message}"
    if value is not None and (message is None or str(value) not in str(message)):
        text += f" (value {_short(value)})"
    return text


def _short(node: Node | None) -> str:
    """Abbreviate an IRI with the layer's prefixes; quote literals."""
    if node is None:
        return "?"
    if isinstance(node, Literal):
        return repr(str(node))
    if isinstance(node, URIRef):
        text = str(node)
        best = max((ns for ns in PREFIXES.values() if text.startswith(ns)), key=len, default="")
        if best:
            prefix = next(p for p, ns in PREFIXES.items() if ns == best)
            return f"{prefix}:{text[len(best) :]}"
        return f"<{text}>"
    return str(node)
