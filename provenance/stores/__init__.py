"""Workflow stores: one named graph per workflow, in memory, on disk or behind a SPARQL endpoint.

Open one with :func:`open_store` from a spec string:

====================================  ==========================================================
spec                                  backend
====================================  ==========================================================
``memory:``                           in-process pyoxigraph store, gone when closed
a directory path, ``file:///path``    embedded persistent Oxigraph (RocksDB) - the default
``http(s)://host:port/query``         a SPARQL 1.1 endpoint (Query + Update protocols)
None                                  ``$EM_PLUGIN_STORE`` if set, else ``~/.em-plugin/store``
====================================  ==========================================================

Example:
    >>> from provenance.stores import open_store
    >>> with open_store("memory:") as store:
    ...     len(store)
    0
"""

from __future__ import annotations

import os
import re
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from provenance.stores.base import GraphStore, QueryResult, StoreConfigError
from provenance.stores.embedded import OxigraphStore
from provenance.stores.remote import SparqlEndpointStore
from provenance.stores.workflow_store import WorkflowStore

__all__ = [
    "DEFAULT_STORE",
    "ENV_VAR",
    "GraphStore",
    "OxigraphStore",
    "QueryResult",
    "SparqlEndpointStore",
    "StoreConfigError",
    "WorkflowStore",
    "open_graph_store",
    "open_store",
]

#: The environment variable that names the default store.
ENV_VAR = "EM_PLUGIN_STORE"
#: The store used when neither a spec nor ``$EM_PLUGIN_STORE`` is given.
DEFAULT_STORE = Path("~/.em-plugin/store")

_VALID_FORMS = "memory:, a directory path, file:///path, or http(s)://host:port/query"
# A URL scheme of two letters or more; one letter is a Windows drive ("C:\\store").
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]+):")

_Opener = Callable[[str, str | None, bool], GraphStore]


def _open_memory(spec: str, update_url: str | None, read_only: bool) -> GraphStore:
    return OxigraphStore(None, read_only=read_only)


def _open_path(spec: str, update_url: str | None, read_only: bool) -> GraphStore:
    return OxigraphStore(spec, read_only=read_only)


def _open_file_url(spec: str, update_url: str | None, read_only: bool) -> GraphStore:
    parts = urllib.parse.urlsplit(spec)
    if parts.netloc not in ("", "localhost"):
        raise StoreConfigError(f"a file: store must be on this machine, not {parts.netloc!r}")
    return OxigraphStore(urllib.request.url2pathname(parts.path), read_only=read_only)


def _open_endpoint(spec: str, update_url: str | None, read_only: bool) -> GraphStore:
    return SparqlEndpointStore(spec, update_url, read_only=read_only)


_OPENERS: dict[str, _Opener] = {
    "memory": _open_memory,
    "path": _open_path,
    "file": _open_file_url,
    "http": _open_endpoint,
    "https": _open_endpoint,
}
_REMOTE = frozenset({"http", "https"})


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
    kind, target = _parse_spec(spec)
    if update_url is not None and kind not in _REMOTE:
        raise StoreConfigError(f"update_url applies to http(s) stores only, not to {target!r}")
    return _OPENERS[kind](target, update_url, read_only)


def open_store(
    spec: str | Path | None = None,
    *,
    update_url: str | None = None,
    read_only: bool = False,
) -> WorkflowStore:
    """Open a workflow store.

    Args:
        spec: ``memory:``, a directory path or ``file:`` URL, or an ``http(s)://…/query`` URL;
            None means ``$EM_PLUGIN_STORE``, else ``~/.em-plugin/store``.
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


def _parse_spec(spec: str | Path | None) -> tuple[str, str]:
    """Return ``(kind, target)`` where kind is a key of ``_OPENERS``."""
    if spec is None:
        spec = os.environ.get(ENV_VAR) or DEFAULT_STORE.expanduser()
    if isinstance(spec, Path):
        return "path", str(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise StoreConfigError(f"empty store spec; use {_VALID_FORMS}")
    spec = spec.strip()
    if spec in ("memory:", "memory://", ":memory:"):
        return "memory", spec
    match = _SCHEME.match(spec)
    if match is None:
        return "path", spec
    kind = match.group(1).lower()
    if kind not in _OPENERS or kind in ("memory", "path"):
        raise StoreConfigError(f"unknown store {spec!r}; use {_VALID_FORMS}")
    return kind, spec
