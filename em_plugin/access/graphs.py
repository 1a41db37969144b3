"""Which scope a graph of the store belongs to, and what a token may do with it, from its IRI.

The answers come from the store's registry of graph families
(:mod:`provenance.stores.graph_families`): a new family is one entry there, and every server
and check here follows it.
"""

from __future__ import annotations

from provenance.stores.graph_families import (
    WORKFLOWS,
    graph_scope,
    in_default_graph,
    in_query_dataset,
    token_may_read,
    token_may_write,
)

__all__ = [
    "graph_scope",
    "in_default_graph",
    "in_query_dataset",
    "is_workflow_graph",
    "token_may_read",
    "token_may_write",
]


def is_workflow_graph(iri: str) -> bool:
    """Whether ``iri`` names a workflow graph (of any scope)."""
    return WORKFLOWS.owns(iri)
