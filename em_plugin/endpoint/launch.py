"""Starting the endpoint: :func:`start_endpoint` returns a :class:`RunningEndpoint`.

Without tokens the endpoint has no authentication, so it binds a loopback address only (as the
memory panel does); with ``token_file`` it may bind any address. The store directory is owned
while it runs: a store on disk has one writer.
"""

from __future__ import annotations

import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from em_plugin.access import is_loopback
from em_plugin.endpoint.oxigraph_process import OxigraphProcess, ServeError
from em_plugin.endpoint.proxied import ProxiedBackend
from em_plugin.endpoint.scoped import ScopedBackend, open_store
from em_plugin.endpoint.server import SparqlServer
from em_plugin.errors import ConfigurationError

__all__ = ["RunningEndpoint", "start_endpoint", "store_location"]


@dataclass
class RunningEndpoint:
    """A started endpoint; :meth:`stop` it (or use it as a context manager)."""

    url: str
    """The query endpoint's URL for a client on this machine (``…/query``)."""
    location: Path | None
    """The store directory (``None``: an empty in-memory store)."""
    tokens: int | None
    """How many tokens it accepts (``None``: no authentication)."""
    public: bool
    """Whether it listens on more than loopback."""
    _server: SparqlServer = field(repr=False)
    _child: OxigraphProcess | None = field(default=None, repr=False)
    _store: Any = field(default=None, repr=False)

    @property
    def update_url(self) -> str:
        """The update endpoint's URL."""
        return self.url.removesuffix("query") + "update"

    def wait(self, poll: float = 0.5) -> None:
        """Block until the Oxigraph child ends (without tokens) or forever.

        Raises:
            ServeError: When the Oxigraph child stopped by itself.
        """
        while True:
            if self._child is not None and not self._child.running():
                raise ServeError(f"the oxigraph server stopped: {self._child.stderr()}")
            time.sleep(poll)

    def stop(self) -> None:
        """Stop answering, stop the child, release the store."""
        self._server.stop()
        if self._child is not None:
            self._child.stop()
        self._store = None  # the last reference: RocksDB closes and releases the directory lock

    def __enter__(self) -> RunningEndpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def store_location(spec: str) -> Path | None:
    """Return the directory a store spec names (``None`` for ``memory:``).

    Raises:
        ConfigurationError: For a URL (already an endpoint) or another kind of spec.
    """
    if spec.strip() in ("memory:", "memory://", ":memory:"):
        return None
    scheme = urllib.parse.urlsplit(spec).scheme.lower()
    if scheme in ("http", "https"):
        raise ConfigurationError(f"{spec} is already a SPARQL endpoint; serve a store directory")
    if scheme == "file":
        return Path(urllib.request.url2pathname(urllib.parse.urlsplit(spec).path))
    if len(scheme) > 1:
        raise ConfigurationError(f"cannot serve {spec!r}; give a store directory or 'memory:'")
    return Path(spec)


def start_endpoint(
    store: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 7878,
    token_file: Path | None = None,
) -> RunningEndpoint:
    """Serve a store as a SPARQL 1.1 endpoint (Query and Update protocols) in the background.

    Args:
        store: The store directory, or ``memory:`` for an empty in-memory store.
        host: Address to bind; without ``token_file`` a loopback address only.
        port: Port to bind (0: a free one).
        token_file: Bearer tokens per scope (TOML or JSON, ``docs/observability.md``).

    Returns:
        The running endpoint.

    Raises:
        ConfigurationError: A bad store spec or token file, or a public address without tokens.
        MissingExtraError: The ``oxigraph`` binary is missing (the ``serve`` extra).
        ServeError: The store is held by another process, or the port is taken.
    """
    location = store_location(str(store))
    label = str(store)
    public = not is_loopback(host)
    if token_file is None and public:
        raise ConfigurationError(
            f"refusing to bind {host} without --token-file: anyone who can reach it could read "
            "and change the store. Bind 127.0.0.1 (the default), or give --token-file"
        )
    if token_file is not None:
        return _start_scoped(location, label, host, port, token_file, public)
    child = OxigraphProcess(location, label)
    try:
        server = SparqlServer(ProxiedBackend(("127.0.0.1", child.port)), host, port)
    except OSError as exc:
        child.stop()
        raise ServeError(f"cannot bind {_authority(host, port)}: {exc}") from exc
    server.start()
    return RunningEndpoint(_url(host, server.port), location, None, public, server, child)


def _start_scoped(
    location: Path | None, label: str, host: str, port: int, token_file: Path, public: bool
) -> RunningEndpoint:
    from em_plugin.access import TokenTable

    tokens = TokenTable.load(token_file)
    try:
        store = open_store(location)
    except OSError as exc:
        raise ServeError(
            f"cannot open the store {label} (a crew or a CLI command may hold it for writing; "
            f"stop it first): {exc}"
        ) from exc
    try:
        server = SparqlServer(ScopedBackend(store, tokens), host, port)
    except OSError as exc:
        raise ServeError(f"cannot bind {_authority(host, port)}: {exc}") from exc
    server.start()
    return RunningEndpoint(
        _url(host, server.port), location, len(tokens), public, server, _store=store
    )


def _url(host: str, port: int) -> str:
    # A wildcard address is where the server listens, not an address to connect to.
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"http://{_authority(host, port)}/query"


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
