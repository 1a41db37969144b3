"""The SPARQL endpoint of ``em-plugin serve --token-file``: bearer tokens, one dataset per grant.

The store is opened in this process (pyoxigraph). Each query runs on a copy of the graphs its
token's scopes own (:class:`~em_plugin.cli.scope_copy.ScopeCopy`: the scopes' workflow graphs,
change logs and suggestion records as named graphs, the union of their workflow graphs as the
default graph), made on the first query of that set of scopes and kept in step with every
update. The query text is never edited: ``FROM``, ``FROM NAMED`` and ``GRAPH ?g`` range over
that copy only, because the engine holds nothing else. ``SERVICE`` is refused (it would query
past it), and updates are checked graph by graph (:func:`em_plugin.access.check_update`).

Endpoints (SPARQL 1.1 Protocol): ``/query`` (GET ``?query=``, POST form or
``application/sparql-query``) and ``/update`` (POST form or ``application/sparql-update``).
A client's ``default-graph-uri`` / ``named-graph-uri`` narrow the dataset to the listed graphs
of the grant's scopes.
"""

from __future__ import annotations

import logging
import threading
import urllib.parse
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from em_plugin.access import AccessDenied, Grant, TokenTable, check_query, check_update
from em_plugin.access.graphs import graph_scope
from em_plugin.cli.scope_copy import ScopeCopy

__all__ = ["GuardedEndpoint", "open_store"]

log = logging.getLogger("em_plugin.serve")

# A graph no store holds: an empty dataset must not mean "the store's default" to the engine.
_NO_GRAPH = ox.NamedNode("urn:x-em-plugin:no-graph")
_MAX_BODY = 512 * 1024 * 1024
_FORM = "application/x-www-form-urlencoded"
_RESULTS = ("application/sparql-results+json", "application/sparql-results+xml", "text/csv",
            "text/tab-separated-values")  # fmt: skip
_GRAPHS = ("application/n-triples", "text/turtle", "application/rdf+xml", "application/n-quads")


class GuardedEndpoint:
    """A threaded HTTP server answering SPARQL requests within each token's grant.

    Args:
        store: The open store (this process owns it).
        tokens: The token table.
        host: Address to bind.
        port: Port to bind (0: a free one).
    """

    def __init__(self, store: ox.Store, tokens: TokenTable, host: str, port: int) -> None:
        self.store = store
        self.tokens = tokens
        self._copies: dict[frozenset[str], ScopeCopy] = {}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer((host, port), _handler(self))
        self.server.daemon_threads = True

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self.server.server_address[1])

    def serve_forever(self) -> None:
        """Answer requests until :meth:`shutdown`."""
        self.server.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop answering and close the socket (the store stays open)."""
        self.server.shutdown()
        self.server.server_close()

    # -- the work of one request ---------------------------------------------------------------

    def copy_for(self, grant: Grant) -> ScopeCopy:
        """The copy of the grant's scopes' graphs, made on first use and kept in step."""
        copy = self._copies.get(grant.scopes)
        if copy is None:
            with self._lock:  # no update runs while a copy is made, so none is missed
                copy = self._copies.get(grant.scopes)
                if copy is None:
                    copy = self._copies[grant.scopes] = ScopeCopy.of(self.store, grant.scopes)
        return copy

    def query(self, grant: Grant, text: str, params: dict[str, list[str]]) -> Any:
        """Run a query on the grant's copy (narrowed by the client's dataset parameters)."""
        check_query(text)
        copy = self.copy_for(grant)
        default = _listed(grant, params.get("default-graph-uri"))
        named = _listed(grant, params.get("named-graph-uri"))
        try:
            return copy.store.query(
                text,
                default_graph=None if default is None else [*default] or [_NO_GRAPH],
                named_graphs=None if named is None else [*named] or [_NO_GRAPH],
            )
        except SyntaxError as exc:
            raise AccessDenied(f"the query does not parse: {exc}", 400) from exc

    def update(self, grant: Grant, text: str) -> None:
        """Run an update whose every graph the grant allows; bring the copies in step."""
        graphs = check_update(text, grant)
        with self._lock:
            try:
                self.store.update(text)
            except SyntaxError as exc:
                raise AccessDenied(f"the update does not parse: {exc}", 400) from exc
            finally:
                for copy in self._copies.values():
                    copy.sync(self.store, graphs.writes)


def _listed(grant: Grant, asked: list[str] | None) -> list[ox.NamedNode] | None:
    """The client's dataset parameter, cut to the grant's graphs (None: not given)."""
    if not asked:
        return None
    return [ox.NamedNode(iri) for iri in dict.fromkeys(asked) if grant.can_read(graph_scope(iri))]


def _handler(endpoint: GuardedEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "em-plugin"
        sys_version = ""
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s %s", self.address_string(), format % args)

        def do_GET(self) -> None:
            self._guarded(self._get)

        def do_POST(self) -> None:
            self._guarded(self._post)

        def _guarded(self, work: Callable[[], None]) -> None:
            try:
                work()
            except AccessDenied as exc:
                self._send(exc.status, str(exc).encode(), "text/plain; charset=utf-8")
            except (OSError, ValueError, RuntimeError) as exc:
                log.warning("request failed: %s", exc)
                message = f"the request failed: {exc}".encode()
                self._send(500, message, "text/plain; charset=utf-8")

        def _grant(self) -> Grant:
            return endpoint.tokens.authenticate(self.headers.get("Authorization"))

        def _get(self) -> None:
            path, params = self._target()
            grant = self._grant()
            if path != "/query":
                raise AccessDenied(f"no such endpoint {path}; use /query or /update", 404)
            self._answer(grant, _one(params, "query"), params)

        def _post(self) -> None:
            path, params = self._target()
            grant = self._grant()
            body = self._body()
            kind = (self.headers.get("Content-Type") or _FORM).split(";")[0].strip().lower()
            if kind == _FORM:
                for key, values in urllib.parse.parse_qs(body.decode("utf-8")).items():
                    params.setdefault(key, []).extend(values)
            if path == "/query":
                text = body.decode("utf-8") if kind == "application/sparql-query" else None
                self._answer(grant, text or _one(params, "query"), params)
            elif path == "/update":
                text = body.decode("utf-8") if kind == "application/sparql-update" else None
                endpoint.update(grant, text or _one(params, "update"))
                self._send(HTTPStatus.NO_CONTENT, b"", None)
            else:
                raise AccessDenied(f"no such endpoint {path}; use /query or /update", 404)

        def _target(self) -> tuple[str, dict[str, list[str]]]:
            parts = urllib.parse.urlsplit(self.path)
            return parts.path.rstrip("/") or "/", urllib.parse.parse_qs(parts.query)

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            if length > _MAX_BODY:
                raise AccessDenied(f"the request body is over {_MAX_BODY} bytes", 413)
            return self.rfile.read(length) if length else b""

        def _answer(self, grant: Grant, text: str, params: dict[str, list[str]]) -> None:
            result = endpoint.query(grant, text, params)
            accept = self.headers.get("Accept") or ""
            if isinstance(result, ox.QueryTriples):
                rdf = _pick(accept, _GRAPHS, ox.RdfFormat.from_media_type) or ox.RdfFormat.N_TRIPLES
                self._send(200, result.serialize(format=rdf) or b"", rdf.media_type)
                return
            fmt = _pick(accept, _RESULTS, ox.QueryResultsFormat.from_media_type)
            fmt = fmt or ox.QueryResultsFormat.JSON
            self._send(200, result.serialize(format=fmt) or b"", fmt.media_type)

        def _send(self, status: int, body: bytes, media_type: str | None) -> None:
            self.send_response(status)
            if status == 401:
                self.send_header("WWW-Authenticate", 'Bearer realm="em-plugin"')
            if media_type:
                self.send_header("Content-Type", media_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body:
                self.wfile.write(body)

    return Handler


def _one(params: dict[str, list[str]], key: str) -> str:
    values = params.get(key) or []
    if len(values) != 1 or not values[0].strip():
        raise AccessDenied(f"send exactly one '{key}' parameter", 400)
    return values[0]


def _pick(accept: str, offered: tuple[str, ...], parse: Callable[[str], Any]) -> Any:
    for item in accept.split(","):
        media = item.split(";")[0].strip().lower()
        if media in offered:
            return parse(media)
        if media in ("*/*", "application/*", "text/*"):
            return None  # the default of the result kind
    return None


def open_store(location: Path | None) -> ox.Store:
    """Open the store to serve (``None``: an empty in-memory one), owning it for writing."""
    if location is None:
        return ox.Store()
    location.mkdir(parents=True, exist_ok=True)
    return ox.Store(str(location))
