"""Workflow stores: one named graph per workflow, in memory, on disk or behind a SPARQL endpoint.

Open one with :func:`open_store` from a spec string:

====================================  ==========================================================
spec                                  backend
====================================  ==========================================================
``memory:``                           in-process pyoxigraph store, gone when closed
a directory path, ``file:///path``    embedded persistent Oxigraph (RocksDB) - the default
``http(s)://host:port/query``         a SPARQL 1.1 endpoint (Query + Update protocols)
``<scheme>:…``                        a backend added with :func:`register_backend` or through
                                      the ``em_plugin.stores`` entry-point group
None                                  ``$EM_PLUGIN_STORE`` if set, else ``~/.em-plugin/store``
====================================  ==========================================================

Every backend passes the same contract, importable as :mod:`provenance.stores.contract`.

The families of graphs a store holds (workflows, lifecycle and suggestion records, session
journals, change logs, the embedder record) are declared once in
:mod:`provenance.stores.graph_families`, and only this package writes them
(:mod:`provenance.stores.graph_writes`); the dataset an ad-hoc query sees, with the standard
prefixes, is :mod:`provenance.stores.union`, and a full backup :mod:`provenance.stores.backup`
(docs/sparql.md).

Example:
    >>> from provenance.stores import open_store
    >>> with open_store("memory:") as store:
    ...     len(store)
    0
"""

from __future__ import annotations

from pathlib import Path

from provenance.stores.base import GraphStore, QueryResult, StoreConfigError
from provenance.stores.embedded import OxigraphStore
from provenance.stores.registry import (
    DEFAULT_STORE,
    ENTRY_POINT_GROUP,
    ENV_VAR,
    BackendOpener,
    backend_schemes,
    open_backend,
    register_backend,
)
from provenance.stores.remote import SparqlEndpointStore
from provenance.stores.workflow_store import WorkflowStore

__all__ = [
    "DEFAULT_STORE",
    "ENTRY_POINT_GROUP",
    "ENV_VAR",
    "BackendOpener",
    "GraphStore",
    "OxigraphStore",
    "QueryResult",
    "SparqlEndpointStore",
    "StoreConfigError",
    "WorkflowStore",
    "backend_schemes",
    "open_graph_store",
    "open_store",
    "register_backend",
]


def open_graph_store(
    spec: str | Path | None = None,
    *,
    update_url: str | None = None,
    read_only: bool = False,
) -> GraphStore:
    """Open the backend named by ``spec`` (see the module doc) without the workflow layer.

    Raises:
        StoreConfigError: An unknown spec, or an option that does not fit it.
        StoreError: The backend cannot be opened.
    """
    return open_backend(spec, update_url=update_url, read_only=read_only)


def open_store(
    spec: str | Path | None = None,
    *,
    update_url: str | None = None,
    read_only: bool = False,
) -> WorkflowStore:
    """Open a workflow store.

    Args:
        spec: ``memory:``, a directory path or ``file:`` URL, an ``http(s)://…/query`` URL, or
            ``<scheme>:…`` of a backend added with :func:`register_backend`; None means
            ``$EM_PLUGIN_STORE``, else ``~/.em-plugin/store``.
        update_url: The SPARQL update URL of an endpoint (default: ``/query`` -> ``/update``).
        read_only: Refuse writes. On disk, opens alongside a process that writes the store and
            sees it as it was when opened.

    Returns:
        A :class:`WorkflowStore`; close it (or use ``with``) to release the store.

    Raises:
        StoreConfigError: An unknown spec (the message lists the valid forms) or a bad option.
        StoreError: The backend cannot be opened.
    """
    return WorkflowStore(open_graph_store(spec, update_url=update_url, read_only=read_only))
