"""Validate workflow graphs against the SHACL shapes in ``provenance/shapes.ttl`` (pyshacl).

Validation costs about 0.2 s per workflow graph (``docs/provenance-mapping.md``, "Shapes"): fine
when saving one workflow, too slow for a whole store, so validate per graph.
:func:`validate_workflows` checks workflows read from a file before they are saved
(``em-plugin import --validate``), :func:`validate_store` the graphs a store holds, as stored
(``em-plugin validate``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from rdflib import Graph, Literal, URIRef
from rdflib.namespace import SH
from rdflib.term import Node

from provenance.errors import WorkflowFormatError
from provenance.model import Workflow
from provenance.vocab import PREFIXES

if TYPE_CHECKING:
    from provenance.stores import WorkflowStore

__all__ = ["load_shapes", "validate_graph", "validate_store", "validate_workflows"]

Progress = Callable[[str, int, int], None]


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


def validate_workflows(
    workflows: Sequence[tuple[int, Workflow]],
    *,
    file: str,
    skip_invalid: bool = False,
    progress: Progress | None = None,
) -> tuple[list[tuple[int, Workflow]], list[WorkflowFormatError]]:
    """Check each workflow's PROV graph against the shapes, locating a violation in its file.

    Args:
        workflows: The workflows with the lines they were read from
            (:func:`provenance.workflow_files.read_workflow_file`).
        file: The file name for error locations.
        skip_invalid: Collect the violations instead of raising on the first one.
        progress: Called as ``progress("shapes", done, total)`` after each workflow.

    Returns:
        The conforming workflows, and one located error per workflow that violates the shapes.

    Raises:
        WorkflowFormatError: On the first violating workflow, unless ``skip_invalid``.
    """
    from provenance.mapping import workflow_to_graph

    kept: list[tuple[int, Workflow]] = []
    errors: list[WorkflowFormatError] = []
    for done, (number, workflow) in enumerate(workflows, start=1):
        problems = validate_graph(workflow_to_graph(workflow))
        if progress is not None:
            progress("shapes", done, len(workflows))
        if not problems:
            kept.append((number, workflow))
            continue
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        error = WorkflowFormatError(
            f"violates the SHACL shapes: {'; '.join(problems[:3])}{more}", file=file, line=number
        )
        if not skip_invalid:
            raise error
        errors.append(error)
    return kept, errors


def validate_store(
    store: WorkflowStore, *, scope: str | None = None, progress: Progress | None = None
) -> tuple[int, list[tuple[str, str]]]:
    """Check every stored workflow graph (as stored, not re-mapped) against the shapes.

    Args:
        store: The store.
        scope: Only this scope's workflows (default: every scope's).
        progress: Called as ``progress("", done, total)`` after each workflow.

    Returns:
        How many workflows were checked, and one ``(id, violation)`` pair per problem.
    """
    from provenance.mapping import graph_iri

    # Ids are per scope: each workflow's graph is named by its scope and id.
    pairs = [(s, i) for s in ([scope] if scope else store.scopes()) for i in store.ids(s)]
    problems: list[tuple[str, str]] = []
    for done, (workflow_scope, workflow_id) in enumerate(pairs, start=1):
        graph = store.backend.triples(graph_iri(workflow_id, workflow_scope))
        problems.extend((workflow_id, line) for line in validate_graph(graph))
        if progress is not None:
            progress("", done, len(pairs))
    return len(pairs), problems


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
