"""Ad-hoc SPARQL for the command line and the panel: the store's query dataset, as every door.

The library answers it (:func:`provenance.stores.union.union_query`, docs/sparql.md): the
standard prefixes declared for the query (:func:`~provenance.stores.union.with_standard_prefixes`),
the default graph and named graphs of the registry's query families, errors in one line at the
position of the text as typed. This module only keeps the names the CLI and the panel import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from provenance.stores import QueryResult, WorkflowStore

__all__ = ["union_query"]


def union_query(
    store: WorkflowStore, text: str, bindings: dict[str, Any] | None, scope: str | None
) -> QueryResult | bool | Any:
    """Run ad-hoc SPARQL over the store's query dataset (``WorkflowStore.query``).

    Args:
        store: The store to read.
        text: The query as typed (SELECT, ASK, CONSTRUCT or DESCRIBE; updates are refused).
        bindings: Variable values (rdflib terms), never spliced into the text.
        scope: Only this scope's graphs (``None``: every scope's).

    Returns:
        A :class:`~provenance.stores.QueryResult`, a bool (ASK) or an rdflib Graph.

    Raises:
        QueryError: Bad SPARQL (position in the text as typed), an update, or a bad binding.
    """
    return store.query(text, bindings, scope=scope)
