"""The store layer's writes of graphs beside the workflows: by family, within a token's rights.

Only :mod:`provenance.stores` writes or drops graphs (``tests/test_layers.py`` keeps it so).
Workflows, their change logs and lifecycle records are written by
:meth:`~provenance.stores.workflow_store.WorkflowStore.commit`, in one transaction with the
change-log entries; the other families (session journals, the embedder record) are written here,
each graph checked against :mod:`provenance.stores.graph_families`:

* a graph of no family, a workflow graph or a change-log entry is refused (they have their own
  writer, or none);
* on a store reached through a scoped bearer token (:attr:`GraphStore.token_scoped`) a graph
  that a token may not write is not written at all: :func:`may_write` says so beforehand, and
  :func:`write_graphs` skips it, so a crew on a token endpoint never sends a write that the
  server would refuse.

Example:
    >>> from provenance.stores import open_store
    >>> from provenance.stores.graph_families import EMBEDDER
    >>> from rdflib import Literal, URIRef
    >>> store = open_store("memory:")
    >>> triple = (URIRef("urn:x:s"), URIRef("urn:x:p"), Literal("fake-64"))
    >>> write_graphs(store.backend, [(EMBEDDER.iri(), [triple])])
    1
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from rdflib import URIRef

from provenance.errors import StoreError
from provenance.stores.base import GraphStore
from provenance.stores.graph_families import (
    CHANGES,
    FAMILIES,
    WORKFLOWS,
    GraphFamily,
    family_of,
)

__all__ = ["drop_scope_graphs", "may_write", "scope_graphs", "write_graphs"]

log = logging.getLogger("provenance.stores")

# Written by WorkflowStore.commit only, with the change-log entries in the same transaction.
_COMMITTED = (WORKFLOWS, CHANGES)


def may_write(backend: GraphStore, family: GraphFamily) -> bool:
    """Whether the store layer writes ``family``'s graphs to ``backend`` at all.

    False on a read-only backend, and on a token-scoped one for a family of no scope (the
    embedder record): the server would refuse the write, so it is never sent.
    """
    if backend.read_only:
        return False
    return not backend.token_scoped or family.token == "scope"


def write_graphs(backend: GraphStore, graphs: Sequence[tuple[URIRef, Iterable[Any]]]) -> int:
    """Replace graphs of the families written outside a commit, in one transaction.

    Args:
        backend: The store.
        graphs: ``(name, triples)`` pairs; empty triples drop the graph.

    Returns:
        How many graphs were written (those a scoped token may not write are skipped).

    Raises:
        StoreError: A graph of no family, or one that only a commit writes; a read-only
            backend; or the backend fails (nothing is written).
    """
    kept = []
    for name, triples in graphs:
        family = _family(name)
        if _token_may_write(backend, family):
            kept.append((name, triples))
        else:
            log.debug("not written (a %s graph through a token): %s", family.name, name)
    if kept:
        backend.replace_graphs(kept)
    return len(kept)


def scope_graphs(
    backend: GraphStore,
    scope: str,
    families: Iterable[GraphFamily] = FAMILIES,
    *,
    under: str = "",
) -> list[URIRef]:
    """Return the names of a scope's graphs of ``families``, sorted.

    Args:
        backend: The store.
        scope: The scope.
        families: The families to list (default: every one).
        under: Only names that continue the family's scope prefix with this text (a session's
            journal: ``encode_segment(session) + "/"``).

    Returns:
        The graph names.
    """
    wanted = tuple(families)
    found = []
    for name in backend.graph_names():
        family = family_of(name)
        if family is None or family not in wanted or family.scope_of(name) != scope:
            continue
        if under and not str(name).startswith(family.prefix(scope) + under):
            continue
        found.append(name)
    return sorted(found)


def drop_scope_graphs(
    backend: GraphStore, scope: str, family: GraphFamily, *, under: str = ""
) -> int:
    """Drop a scope's graphs of one family (written outside a commit), in one transaction.

    Args:
        backend: The store.
        scope: The scope.
        family: The family (not one a commit writes).
        under: As :func:`scope_graphs`.

    Returns:
        How many graphs were dropped.

    Raises:
        StoreError: For a family that only a commit writes, or when the backend fails.
    """
    if family in _COMMITTED:
        raise StoreError(f"{family.name} graphs are dropped by WorkflowStore.commit only")
    names = scope_graphs(backend, scope, [family], under=under)
    if names and _token_may_write(backend, family):
        backend.drop_graphs(names)  # a read-only backend raises StoreError
        return len(names)
    return 0


def _token_may_write(backend: GraphStore, family: GraphFamily) -> bool:
    # A read-only backend is left to refuse (StoreError): only a token's limits skip a write.
    return not backend.token_scoped or family.token == "scope"


def _family(name: URIRef) -> GraphFamily:
    family = family_of(name)
    if family is None:
        known = ", ".join(f.pattern for f in FAMILIES)
        raise StoreError(f"<{name}> is in no graph family of the store; families: {known}")
    if family in _COMMITTED:
        raise StoreError(
            f"<{name}> is a {family.name} graph: WorkflowStore.commit writes those, "
            "with the change log"
        )
    return family
