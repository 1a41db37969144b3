"""The endpoint without tokens: an ``oxigraph serve`` child on a private loopback port.

Requests are read and checked by the server (:mod:`~em_plugin.endpoint.protocol`) and sent on
to Oxigraph rebuilt in one form (a form POST for a query, a direct update), with the base IRI of
the public endpoint and the store's prefixes declared, so Oxigraph's own answers to a malformed
request never reach a client. A query that names no dataset is answered here over the default
dataset of every door (the registry's query dataset, ``docs/sparql.md``): its default graph
is the merge of the default-graph families (workflows, lifecycle records), each triple once, and
its named graphs are the query families' graphs plus any graph of no family (a client's own,
written by ``INSERT DATA { GRAPH <x> ... }``); the store's bookkeeping (change logs, session
journals, the embedder record) stays out. Oxigraph's own
``--union-default-graph`` counts a triple once per graph that holds it, so a count through a
shared tool node would come out squared. That dataset is an in-memory copy of the store, made
again after any write went through this endpoint (serve owns the directory: every write does).

A query that names its dataset (``default-graph-uri``, ``named-graph-uri``, or Oxigraph's
``union-default-graph``, which the remote store backend sends for its own bookkeeping) goes to
Oxigraph. Updates and the Graph Store Protocol (``/store``) go to Oxigraph.
"""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler

import pyoxigraph as ox

from em_plugin.endpoint.answers import GRAPH, TABULAR, Answer, pick_media_type, run_query
from em_plugin.endpoint.protocol import ProtocolError, SparqlRequest
from em_plugin.endpoint.sparql_text import query_form, with_base
from provenance.stores.graph_families import family_of
from provenance.stores.sparql_errors import syntax_error_message
from provenance.stores.union import with_standard_prefixes

__all__ = ["ProxiedBackend"]

# The default graph is a set: each triple of the default-graph families' graphs lands once.
_MERGE = (
    "DROP SILENT DEFAULT ; "
    "INSERT {{ ?s ?p ?o }} WHERE {{ VALUES ?g {{ {graphs} }} GRAPH ?g {{ ?s ?p ?o }} }}"
)
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
               "trailers", "transfer-encoding", "upgrade", "host", "content-length"}  # fmt: skip


class ProxiedBackend:
    """Answers requests through a private ``oxigraph serve`` (no authentication).

    Args:
        backend: ``(host, port)`` of the private Oxigraph server.
    """

    scoped = False

    def __init__(self, backend: tuple[str, int]) -> None:
        self.backend = backend
        self._generation = 0  # bumped by every write that goes through
        self._copy: tuple[int, ox.Store] | None = None
        self._lock = threading.Lock()
        self._building = threading.Lock()  # one copy at a time: parallel readers wait for it

    def authorize(self, header: str | None) -> None:
        """Everyone may read and write (``serve`` binds loopback only without tokens)."""
        return None

    def query(self, grant: None, request: SparqlRequest, base: str, accept: str | None) -> Answer:
        """Answer over the default dataset here, or send a query naming its dataset on."""
        text = with_standard_prefixes(request.text or "")
        if not request.names_dataset and not request.extra:
            return run_query(
                self._dataset(), text, accept=accept, base_iri=base, typed=request.text or ""
            )
        form = query_form(text)
        media = pick_media_type(accept, GRAPH if form in ("CONSTRUCT", "DESCRIBE") else TABULAR)
        fields = [("query", with_base(text, base))]
        fields += [("default-graph-uri", g) for g in request.default_graphs]
        fields += [("named-graph-uri", g) for g in request.named_graphs]
        fields += list(request.extra)
        body = urllib.parse.urlencode(fields).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": media}
        status, kind, answer = self._send("POST", "/query", body, headers)
        if status != 200:
            raise ProtocolError(answer.decode("utf-8", "replace"), status)
        return Answer(answer, kind or media)

    def update(self, grant: None, request: SparqlRequest, base: str) -> None:
        """Send an update on (with the protocol's dataset as URL parameters)."""
        params = [("using-graph-uri", g) for g in request.default_graphs]
        params += [("using-named-graph-uri", g) for g in request.named_graphs]
        target = "/update" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        body = with_base(request.text or "", base).encode()
        self._wrote()
        try:
            status, _, answer = self._send(
                "POST", target, body, {"Content-Type": "application/sparql-update"}
            )
        finally:
            self._wrote()
        if status // 100 != 2:
            message = answer.decode("utf-8", "replace")
            if status == 400 and "error at" in message:  # Oxigraph's parse error
                sent = request.text or ""
                fault = syntax_error_message(sent, message, shift=len(body) - len(sent.encode()))
                message = f"the update does not parse: {fault}"
            raise ProtocolError(message, status)

    def other(self, handler: BaseHTTPRequestHandler, body: bytes) -> bool:
        """Pass any other request (the Graph Store Protocol) to Oxigraph as it is."""
        if handler.command not in ("GET", "HEAD"):
            self._wrote()
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
        connection = http.client.HTTPConnection(*self.backend, timeout=600)
        try:
            connection.request(handler.command, handler.path, body=body or None, headers=headers)
            answer = connection.getresponse()
            payload = answer.read()
            handler.send_response(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in _HOP_BY_HOP and name.lower() != "server":
                    handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            if handler.command != "HEAD":
                handler.wfile.write(payload)
        finally:
            connection.close()
            if handler.command not in ("GET", "HEAD"):
                self._wrote()
        return True

    def close(self) -> None:
        """Drop the dataset copy."""
        with self._lock:
            self._copy = None

    def _wrote(self) -> None:
        with self._lock:
            self._generation += 1
            self._copy = None

    def _dataset(self) -> ox.Store:
        """The in-memory default dataset, copied again after a write."""
        with self._building:
            with self._lock:
                if self._copy is not None and self._copy[0] == self._generation:
                    return self._copy[1]
                generation = self._generation
            status, _, data = self._send("GET", "/store", b"", {"Accept": "application/n-quads"})
            if status != 200:
                raise ProtocolError(f"oxigraph: cannot read the store ({status})", 502)
            local = _dataset_of(data)
            with self._lock:
                if self._generation == generation:
                    self._copy = (generation, local)
            return local

    def _send(
        self, method: str, target: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, str, bytes]:
        connection = http.client.HTTPConnection(*self.backend, timeout=600)
        try:
            connection.request(method, target, body=body or None, headers=headers)
            answer = connection.getresponse()
            kind = (answer.getheader("Content-Type") or "").split(";")[0].strip()
            return answer.status, kind, answer.read()
        except OSError as exc:
            raise ProtocolError(f"oxigraph: {exc}", 502) from None
        finally:
            connection.close()


def _dataset_of(nquads: bytes) -> ox.Store:
    """The store's query dataset: its query graphs named, the default-graph families merged."""
    local = ox.Store()
    local.load(nquads, format=ox.RdfFormat.N_QUADS)  # parsed and stored in Rust, no Python terms
    merged: list[str] = []
    for graph in list(local.named_graphs()):
        if not isinstance(graph, ox.NamedNode):
            continue
        family = family_of(graph.value)
        if family is not None and not family.named_graph:
            local.remove_graph(graph)  # the store's bookkeeping is no part of the dataset
        elif family is not None and family.default_graph:
            merged.append(str(graph))
    local.update(_MERGE.format(graphs=" ".join(merged)))
    return local
