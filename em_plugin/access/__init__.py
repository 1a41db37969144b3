"""Bearer tokens that grant read or read-write access to named scopes (docs/observability.md).

A token file maps each token (its SHA-256, or the token itself) to the scopes it opens and the
access it gives. :class:`TokenTable` checks an ``Authorization`` header and returns the
:class:`Grant`; :func:`graph_scope` says which scope a graph of the store belongs to and
:meth:`Grant.may_read` / :meth:`Grant.may_write` what the grant may do with it (both from the
store's registry of graph families, :mod:`provenance.stores.graph_families`), so a
server (``em-plugin serve --token-file``, the memory panel) can hand its engine only the graphs
a grant opens; :func:`check_query` and :func:`check_update` refuse SPARQL requests that would
reach past them. Without tokens a server binds loopback only (:func:`is_loopback`).

Example:
    >>> from em_plugin.access import TokenTable, hash_token
    >>> table = TokenTable.from_mapping(
    ...     {"tokens": {"reader": {"sha256": hash_token("s3cret"), "scopes": ["team-a"]}}}
    ... )
    >>> grant = table.authenticate("Bearer s3cret")
    >>> grant.can_read("team-a"), grant.can_write("team-a"), grant.can_read("team-b")
    (True, False, False)
"""

from __future__ import annotations

from em_plugin.access.graphs import (
    graph_scope,
    in_default_graph,
    in_query_dataset,
    is_workflow_graph,
    token_may_read,
    token_may_write,
)
from em_plugin.access.hosts import LOOPBACK_NAMES, is_loopback
from em_plugin.access.sparql import UpdateGraphs, check_query, check_update
from em_plugin.access.tokens import (
    READ,
    READ_WRITE,
    AccessDenied,
    Grant,
    TokenTable,
    hash_token,
)

__all__ = [
    "LOOPBACK_NAMES",
    "READ",
    "READ_WRITE",
    "AccessDenied",
    "Grant",
    "TokenTable",
    "UpdateGraphs",
    "check_query",
    "check_update",
    "graph_scope",
    "hash_token",
    "in_default_graph",
    "in_query_dataset",
    "is_loopback",
    "is_workflow_graph",
    "token_may_read",
    "token_may_write",
]
