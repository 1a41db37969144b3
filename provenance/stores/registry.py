"""The table of store backends: spec string -> backend, open to backends from other packages.

A spec is ``memory:``, a directory path, or ``<scheme>:…`` where the scheme names a backend. The
built-in schemes are ``memory``, ``file``, ``http`` and ``https``; more come from
:func:`register_backend`, or from the ``em_plugin.stores`` entry-point group of an installed
distribution (``name = "myscheme"``, ``value = "my_package.module:open_myscheme"``), loaded the
first time a spec names an unknown scheme. ``docs/stores.md`` shows both ways.

A backend opener is called as ``opener(spec, update_url=..., read_only=...)`` and returns a
:class:`~provenance.stores.base.GraphStore`; it raises
:class:`~provenance.stores.base.StoreConfigError` for an option it does not support.

Example:
    >>> from provenance.stores import OxigraphStore, open_store, register_backend
    >>> def open_scratch(spec, *, update_url, read_only):
    ...     return OxigraphStore(None, read_only=read_only)
    >>> register_backend("scratch", open_scratch)
    >>> with open_store("scratch:anything") as store:
    ...     len(store)
    0
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import threading
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Protocol

from provenance.stores.base import GraphStore, StoreConfigError
from provenance.stores.embedded import OxigraphStore
from provenance.stores.remote import SparqlEndpointStore

__all__ = [
    "DEFAULT_STORE",
    "ENTRY_POINT_GROUP",
    "ENV_VAR",
    "BackendOpener",
    "backend_schemes",
    "open_backend",
    "register_backend",
]

#: The environment variable that names the default store.
ENV_VAR = "EM_PLUGIN_STORE"
#: The store used when neither a spec nor ``$EM_PLUGIN_STORE`` is given.
DEFAULT_STORE = Path("~/.em-plugin/store")
#: Entry-point group through which installed distributions add backends.
ENTRY_POINT_GROUP = "em_plugin.stores"

# A URL scheme of two letters or more; one letter is a Windows drive ("C:\\store").
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]+):")
_SCHEME_NAME = re.compile(r"[a-z][a-z0-9+.\-]+")
_MEMORY_SPECS = ("memory:", "memory://", ":memory:")


class BackendOpener(Protocol):
    """Opens a backend from a spec string; see the module doc."""

    def __call__(self, spec: str, *, update_url: str | None, read_only: bool) -> GraphStore:
        """Open the backend.

        Args:
            spec: The whole spec string, e.g. ``http://127.0.0.1:7878/query``.
            update_url: A separate update URL, for backends that have one.
            read_only: Refuse writes.

        Returns:
            The open backend.
        """
        ...


def _open_memory(spec: str, *, update_url: str | None, read_only: bool) -> GraphStore:
    _no_update_url(spec, update_url)
    if spec.strip() not in _MEMORY_SPECS:
        raise StoreConfigError(f"unknown store {spec!r}; use {_valid_forms()}")
    return OxigraphStore(None, read_only=read_only)


def _open_path(spec: str, *, update_url: str | None, read_only: bool) -> GraphStore:
    _no_update_url(spec, update_url)
    return OxigraphStore(spec, read_only=read_only)


def _open_file_url(spec: str, *, update_url: str | None, read_only: bool) -> GraphStore:
    _no_update_url(spec, update_url)
    parts = urllib.parse.urlsplit(spec)
    if parts.netloc not in ("", "localhost"):
        raise StoreConfigError(f"a file: store must be on this machine, not {parts.netloc!r}")
    return OxigraphStore(urllib.request.url2pathname(parts.path), read_only=read_only)


def _open_endpoint(spec: str, *, update_url: str | None, read_only: bool) -> GraphStore:
    return SparqlEndpointStore(spec, update_url, read_only=read_only)


def _no_update_url(spec: str, update_url: str | None) -> None:
    if update_url is not None:
        raise StoreConfigError(f"update_url applies to http(s) stores only, not to {spec!r}")


_BUILT_IN: dict[str, BackendOpener] = {
    "file": _open_file_url,
    "http": _open_endpoint,
    "https": _open_endpoint,
    "memory": _open_memory,
}
_backends: dict[str, BackendOpener] = dict(_BUILT_IN)
_entry_points_loaded = False
_lock = threading.Lock()


def register_backend(scheme: str, opener: BackendOpener, *, replace: bool = False) -> None:
    """Make ``open_store("<scheme>:…")`` open a backend with ``opener``.

    Args:
        scheme: A lower-case URL scheme of two characters or more, e.g. ``"fuseki"``.
        opener: Called as ``opener(spec, update_url=..., read_only=...)``.
        replace: Allow replacing a scheme that is already registered (built-ins included).

    Raises:
        StoreConfigError: A malformed scheme, an opener that is not callable, or a scheme that
            is taken and ``replace`` is False.
    """
    if not isinstance(scheme, str) or not _SCHEME_NAME.fullmatch(scheme):
        raise StoreConfigError(
            f"a backend scheme is lower-case letters, digits, '+', '-' or '.', starting with a "
            f"letter, two characters or more: {scheme!r}"
        )
    if not callable(opener):
        raise StoreConfigError(f"the opener for {scheme!r} is not callable: {opener!r}")
    with _lock:
        if scheme in _backends and not replace:
            raise StoreConfigError(
                f"a backend for {scheme!r} is already registered; pass replace=True to replace it"
            )
        _backends[scheme] = opener


def backend_schemes() -> list[str]:
    """Return the registered schemes (entry points included), sorted."""
    _load_entry_points()
    return sorted(_backends)


def open_backend(
    spec: str | Path | None, *, update_url: str | None = None, read_only: bool = False
) -> GraphStore:
    """Open the backend that ``spec`` names; see :func:`provenance.stores.open_store`.

    Raises:
        StoreConfigError: An empty spec or an unknown scheme (the message lists the valid forms).
    """
    if spec is None:
        spec = os.environ.get(ENV_VAR) or DEFAULT_STORE.expanduser()
    if isinstance(spec, Path):
        return _open_path(str(spec), update_url=update_url, read_only=read_only)
    if not isinstance(spec, str) or not spec.strip():
        raise StoreConfigError(f"empty store spec; use {_valid_forms()}")
    spec = spec.strip()
    if spec in _MEMORY_SPECS:
        return _open_memory(spec, update_url=update_url, read_only=read_only)
    match = _SCHEME.match(spec)
    if match is None:
        return _open_path(spec, update_url=update_url, read_only=read_only)
    opener = _opener_for(match.group(1).lower())
    if opener is None:
        raise StoreConfigError(f"unknown store {spec!r}; use {_valid_forms()}")
    return opener(spec, update_url=update_url, read_only=read_only)


def _opener_for(scheme: str) -> BackendOpener | None:
    if scheme not in _backends:
        _load_entry_points()
    return _backends.get(scheme)


def _load_entry_points() -> None:
    """Register the backends of the ``em_plugin.stores`` entry points, once per process."""
    global _entry_points_loaded
    with _lock:
        if _entry_points_loaded:
            return
        _entry_points_loaded = True
        found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    for entry in found:
        if entry.name in _backends:
            continue  # registered in code, or a built-in: the explicit choice wins
        try:
            opener = entry.load()
        except Exception as exc:  # one broken plugin must not hide the others
            raise StoreConfigError(
                f"the store backend {entry.name!r} from entry point {entry.value!r} "
                f"cannot be loaded: {exc}"
            ) from exc
        register_backend(entry.name, opener)


def _valid_forms() -> str:
    extra = [f"{s}:..." for s in sorted(_backends) if s not in _BUILT_IN]
    forms = ["memory:", "a directory path", "file:///path", "http(s)://host:port/query", *extra]
    return ", ".join(forms[:-1]) + f", or {forms[-1]}"
