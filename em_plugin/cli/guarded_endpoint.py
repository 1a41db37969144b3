"""The SPARQL endpoint of ``em-plugin serve --token-file``: bearer tokens, one dataset per grant.

The store is opened in this process (pyoxigraph) and each request is answered on the dataset
its token opens: the default graph is the union of the grant's scopes' workflow graphs, the
named graphs are all of its scopes' graphs (workflows, change logs, suggestion records). The
query text is never edited: ``FROM``, ``FROM NAMED`` and ``GRAPH ?g`` range over that dataset
only, because the engine receives no other. ``SERVICE`` is refused (it would query past it), and
updates are checked graph by graph (:func:`em_plugin.access.check_update`).

Endpoints (SPARQL 1.1 Protocol): ``/query`` (GET ``?query=``, POST form or
``application/sparql-query``) and ``/update`` (POST form or ``application/sparql-update``).
A client's ``default-graph-uri`` / ``named-graph-uri`` narrow the dataset further; graphs outside
the grant are dropped from them, never added.
"""

from __future__ import annotations

import logging
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from em_plugin.access import AccessDenied, Grant, TokenTable, check_query, check_update
from em_plugin.access.graphs import graph_scope, is_workflow_graph

__all__ = ["GuardedEndpoint", "ScopeGraphs", "open_store"]

log = logging.getLogger("em_plugin.serve")

# A graph no store holds: an empty dataset must not mean "the store's default" to the engine.
_NO_GRAPH = ox.NamedNode("urn:x-em-plugin:no-graph")
_MAX_BODY = 512 * 1024 * 1024
_FORM = "application/x-www-form-urlencoded"
_RESULTS = ("application/sparql-results+json", "application/sparql-results+xml", "text/csv",
            "text/tab-separated-values")  # fmt: skip
_GRAPHS = ("application/n-triples", "text/turtle", "application/rdf+xml", "application/n-quads")


@dataclass
class ScopeGraphs:
    """The store's graphs by scope: ``(workflow graphs, other graphs)`` of each scope."""

    by_scope: dict[str, tuple[list[ox.NamedNode], list[ox.NamedNode]]]

    @classmethod
    def of(cls, store: ox.Store) -> ScopeGraphs:
        """Sort every named graph of ``store`` by the scope it belongs to."""
        by_scope: dict[str, tuple[list[ox.NamedNode], list[ox.NamedNode]]] = {}
        for graph in store.named_graphs():
            if not isinstance(graph, ox.NamedNode):
                continue
            scope = graph_scope(graph.value)
            if scope is None:
                continue
            workflows, others = by_scope.setdefault(scope, ([], []))
            (workflows if is_workflow_graph(graph.value) else others).append(graph)
        return cls(by_scope)

    def dataset(self, grant: Grant) -> tuple[list[ox.NamedNode], list[ox.NamedNode]]:
        """Return ``(default graph, named graphs)`` that ``grant`` may read."""
        default: list[ox.NamedNode] = []
        named: list[ox.NamedNode] = []
        for scope in sorted(grant.scopes):
            workflows, others = self.by_scope.get(scope, ([], []))
            default += workflows
            named += workflows + others
        return default, named


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
        self._graphs: ScopeGraphs | None = None
        self._generation = 0
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

    def scope_graphs(self) -> ScopeGraphs:
        """The store's graphs by scope, listed again after each update."""
        with self._lock:
            graphs, generation = self._graphs, self._generation
        if graphs is not None:
            return graphs
        graphs = ScopeGraphs.of(self.store)
        with self._lock:
            if generation == self._generation:
                self._graphs = graphs
        return graphs

    def query(self, grant: Grant, text: str, params: dict[str, list[str]]) -> Any:
        """Run a query on the grant's dataset (narrowed by the client's dataset parameters)."""
        check_query(text)
        default, named = self.scope_graphs().dataset(grant)
        default = _narrow(default, params.get("default-graph-uri"))
        named = _narrow(named, params.get("named-graph-uri"))
        default_graph: list[ox.NamedNode | ox.BlankNode | ox.DefaultGraph] = [*default]
        named_graphs: list[ox.NamedNode | ox.BlankNode] = [*named]
        try:
            return self.store.query(
                text,
                default_graph=default_graph or [_NO_GRAPH],
                named_graphs=named_graphs or [_NO_GRAPH],
            )
        except SyntaxError as exc:
            raise AccessDenied(f"the query does not parse: {exc}", 400) from exc

    def update(self, grant: Grant, text: str) -> None:
        """Run an update whose every graph the grant allows."""
        check_update(text, grant)
        try:
            self.store.update(text)
        except SyntaxError as exc:
            raise AccessDenied(f"the update does not parse: {exc}", 400) from exc
        finally:
            with self._lock:
                self._graphs = None
                self._generation += 1


def _narrow(allowed: list[ox.NamedNode], asked: list[str] | None) -> list[ox.NamedNode]:
    if not asked:
        return allowed
    wanted = set(asked)
    return [graph for graph in allowed if graph.value in wanted]


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
