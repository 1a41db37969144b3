"""Which scope a graph of the store belongs to, from its IRI alone."""

from __future__ import annotations

from provenance.model import DEFAULT_SCOPE
from provenance.vocab import BASE, decode_segment

__all__ = ["graph_scope", "is_workflow_graph"]

# The per-scope graph namespaces (provenance/vocab.py, provenance/suggestion_record.py). In
# ``graph/`` and ``suggestions/`` the default scope has one segment, any other scope two.
_WORKFLOWS = f"{BASE}graph/"
_SUGGESTIONS = f"{BASE}suggestions/"
_CHANGES = f"{BASE}changes/"


def graph_scope(iri: str) -> str | None:
    """Return the scope whose graph ``iri`` is, or ``None`` for a graph of no scope.

    A scope's graphs are its workflow graphs, its change log and its suggestion records. Any
    other graph (another namespace, a malformed name) belongs to no scope, so no token opens it.

    Args:
        iri: A graph IRI.

    Returns:
        The scope, or ``None``.
    """
    for prefix, default_form in ((_WORKFLOWS, True), (_SUGGESTIONS, True), (_CHANGES, False)):
        if iri.startswith(prefix):
            return _scope(iri[len(prefix) :].split("/"), default_form)
    return None


def is_workflow_graph(iri: str) -> bool:
    """Whether ``iri`` names a workflow graph (of any scope)."""
    return iri.startswith(_WORKFLOWS) and graph_scope(iri) is not None


def _scope(segments: list[str], default_form: bool) -> str | None:
    if not all(segments) or len(segments) > 2:
        return None
    if default_form and len(segments) == 1:
        return DEFAULT_SCOPE
    try:
        return decode_segment(segments[0])
    except UnicodeDecodeError:
        return None
