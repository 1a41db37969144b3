"""The front of ``em-plugin serve``: the workflow union as the endpoint's default dataset.

``oxigraph serve`` runs on a private loopback port; this front listens where the user asked and
passes every request through unchanged, except SPARQL queries that name no dataset: those are
answered over the union of the workflow graphs, each triple once
(:mod:`provenance.stores.union`), the answer ``em-plugin query`` and ``WorkflowStore.query``
give for the same text. Oxigraph's own ``--union-default-graph`` counts a triple once per graph
that holds it, so a count through a shared tool node came out squared.

A query that names its dataset (``default-graph-uri``, ``named-graph-uri``, or Oxigraph's
``union-default-graph``, which the remote store backend sends for its own bookkeeping) goes to
Oxigraph as it is. Updates and the Graph Store protocol go to Oxigraph as they are.
"""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["SparqlFront"]

_DATASET_PARAMS = ("default-graph-uri", "named-graph-uri", "union-default-graph")
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}


class SparqlFront:
    """A threading HTTP server in front of a private ``oxigraph serve``.

    Args:
        host: Address to bind.
        port: Port to bind.
        backend: ``(host, port)`` of the private Oxigraph server.
        store: Returns the :class:`~provenance.stores.WorkflowStore` (over the private server)
            that union queries read; called once, on the first such query.
    """

    def __init__(
        self,
        host: str,
        port: int,
        backend: tuple[str, int],
        store: Callable[[], Any],
    ) -> None:
        self.backend = backend
        self._store_factory = store
        self._store: Any = None
        self._store_lock = threading.Lock()
        front = self

        class Handler(_Handler):
            owner = front

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="em-plugin-serve", daemon=True
        )

    def start(self) -> None:
        """Start answering in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop answering and close the store it opened."""
        self.server.shutdown()
        self.server.server_close()
        with self._store_lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def store(self) -> Any:
        """The store union queries read (opened on first use)."""
        with self._store_lock:
            if self._store is None:
                self._store = self._store_factory()
            return self._store


class _Handler(BaseHTTPRequestHandler):
    owner: SparqlFront
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a quiet server: errors go back to the client

    def do_GET(self) -> None:
        self._handle(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._handle(self.rfile.read(length) if length else b"")

    def do_PUT(self) -> None:
        self.do_POST()

    def do_DELETE(self) -> None:
        self.do_POST()

    def do_HEAD(self) -> None:
        self._proxy(b"")

    def _handle(self, body: bytes) -> None:
        text = _union_query_text(self.command, self.path, self.headers, body)
        if text is None:
            self._proxy(body)
            return
        self._answer(text)

    def _answer(self, text: str) -> None:
        from provenance.errors import ProvenanceError
        from provenance.stores.union import union_query

        try:
            result = union_query(self.owner.store(), text)
        except ProvenanceError as exc:
            self._send(400, "text/plain; charset=utf-8", str(exc).encode("utf-8"))
            return
        media, payload = _serialize(result, self.headers.get("Accept", ""))
        self._send(200, media, payload)

    def _send(self, status: int, media: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _proxy(self, body: bytes) -> None:
        host, port = self.owner.backend
        connection = http.client.HTTPConnection(host, port, timeout=600)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            connection.request(self.command, self.path, body=body or None, headers=headers)
            answer = connection.getresponse()
            payload = answer.read()
            self.send_response(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in _HOP_BY_HOP and name.lower() != "server":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
        except OSError as exc:
            self._send(502, "text/plain; charset=utf-8", f"oxigraph: {exc}".encode())
        finally:
            connection.close()

    def version_string(self) -> str:
        # The remote store backend reads the server kind from this header: Oxigraph's dialect.
        return "Oxigraph em-plugin-serve"


def _union_query_text(command: str, path: str, headers: Any, body: bytes) -> str | None:
    """Return the query of a SPARQL query request that names no dataset, else ``None``."""
    url = urllib.parse.urlsplit(path)
    if url.path.rstrip("/") != "/query":
        return None
    params = urllib.parse.parse_qs(url.query)
    query: list[str] = params.get("query", [])
    if command == "POST":
        kind = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if kind == "application/x-www-form-urlencoded":
            form = urllib.parse.parse_qs(body.decode("utf-8"))
            params = {**params, **form}
            query = form.get("query", query)
        elif kind == "application/sparql-query":
            query = [body.decode("utf-8")]
    elif command != "GET":
        return None
    if len(query) != 1 or any(params.get(name) for name in _DATASET_PARAMS):
        return None
    return query[0]


def _serialize(result: Any, accept: str) -> tuple[str, bytes]:
    """Serialize a pyoxigraph result in the first format ``accept`` names that fits it."""
    import pyoxigraph as ox

    wanted = [part.split(";")[0].strip().lower() for part in accept.split(",") if part.strip()]
    if isinstance(result, ox.QueryTriples):
        for media in wanted:
            try:
                rdf = ox.RdfFormat.from_media_type(media)
            except ValueError:
                rdf = None
            if rdf is not None:
                return rdf.media_type, result.serialize(format=rdf) or b""
        return "application/n-triples", result.serialize(format=ox.RdfFormat.N_TRIPLES) or b""
    for media in wanted:
        try:
            kind = ox.QueryResultsFormat.from_media_type(media)
        except ValueError:
            kind = None
        if kind is not None:
            return kind.media_type, result.serialize(format=kind) or b""
    json = ox.QueryResultsFormat.JSON
    return json.media_type, result.serialize(format=json) or b""
