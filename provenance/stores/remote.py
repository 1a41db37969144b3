"""A remote SPARQL 1.1 endpoint (Query + Update protocols over HTTP, stdlib only).

Requests are ``POST``s: ``application/sparql-query`` / ``application/sparql-update`` bodies, or an
``application/x-www-form-urlencoded`` body when the dataset is narrowed (its graph list can be
long). SELECT/ASK answers are SPARQL JSON and CONSTRUCT answers N-Triples, both parsed by
pyoxigraph (in Rust) and converted to rdflib terms.

* **Atomic replace** is one update request that deletes the graphs' triples and then runs
  ``INSERT DATA { GRAPH <g> { … } … }`` (see :func:`~provenance.stores._terms.replace_update`):
  SPARQL servers run one request as one transaction (checked for Oxigraph in ``notes/prov.md``
  §2.7 and by the contract tests), so a rejected request changes nothing.
* **Union default graph**: with ``union_default_graph=True`` (the default) each unrestricted query
  carries Oxigraph's ``union-default-graph`` parameter. For another server set it to False and
  make the server serve the union itself (Fuseki/TDB2 ``tdb2:unionDefaultGraph true``, Oxigraph
  ``serve --union-default-graph``; GraphDB does by default).
* **Narrowed queries** (``graphs=[…]``) use the standard ``default-graph-uri``/``named-graph-uri``
  protocol parameters, which take precedence over ``FROM`` clauses.
* **Bindings** go into a ``VALUES`` block (:mod:`provenance.stores._sparql`).
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyoxigraph as ox
from rdflib import Graph, URIRef
from rdflib.term import Node

from provenance.errors import QueryError, StoreError
from provenance.stores._sparql import bind, query_form
from provenance.stores._terms import TermError, Triple, iri_text, replace_update, to_rdflib
from provenance.stores.base import (
    Bindings,
    GraphStore,
    QueryResult,
    StoreConfigError,
    check_batch,
    result_from_oxigraph,
)

__all__ = ["SparqlEndpointStore"]

# A graph no store holds: narrowing to an empty list must not fall back to "every graph",
# which is what a request with no default-graph-uri parameter means.
_NO_GRAPH = "urn:x-em-plugin:no-graph"
_JSON = "application/sparql-results+json"
_NTRIPLES = "application/n-triples"
_ERROR_CHARS = 300


class SparqlEndpointStore(GraphStore):
    """A store behind a SPARQL 1.1 endpoint.

    Args:
        query_url: The query endpoint, e.g. ``http://127.0.0.1:7878/query``.
        update_url: The update endpoint; by default ``query_url`` with a trailing ``/query``
            replaced by ``/update`` (or ``query_url`` itself).
        timeout: Seconds to wait for a query's answer.
        update_timeout: Seconds to wait for an update's answer; longer, since a server runs a
            whole import batch as one transaction before it answers. After a timeout the
            outcome is unknown: the server may still commit the update.
        union_default_graph: Send Oxigraph's ``union-default-graph`` parameter (see module doc).
        read_only: Refuse writes without asking the server.
        batch_size: Graphs fetched per request by :meth:`read_graphs`.

    Raises:
        StoreConfigError: A URL that is not http(s).
    """

    def __init__(
        self,
        query_url: str,
        update_url: str | None = None,
        *,
        timeout: float = 30.0,
        update_timeout: float = 600.0,
        union_default_graph: bool = True,
        read_only: bool = False,
        batch_size: int = 200,
    ) -> None:
        self.query_url = _check_url(query_url, "query")
        if update_url is None:
            update_url = query_url
            if query_url.rstrip("/").endswith("/query"):
                update_url = query_url.rstrip("/")[: -len("query")] + "update"
        self.update_url = _check_url(update_url, "update")
        self.timeout = timeout
        self.update_timeout = update_timeout
        self.union_default_graph = union_default_graph
        self.read_only = read_only
        self.batch_size = max(1, batch_size)
        self._closed = False
        self._opener = _opener(self.query_url)

    def __repr__(self) -> str:
        return f"SparqlEndpointStore({self.query_url!r})"

    # -- HTTP --------------------------------------------------------------------------------

    def _post(
        self,
        url: str,
        body: str,
        content_type: str,
        accept: str | None = None,
        *,
        is_query: bool = True,
    ) -> bytes:
        if self._closed:
            raise StoreError(f"{self!r} is closed")
        headers = {"Content-Type": f"{content_type}; charset=utf-8"}
        if accept:
            headers["Accept"] = accept
        try:
            data = body.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise StoreError(f"cannot send text that is not valid Unicode: {exc}") from exc
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        endpoint = self.query_url if is_query else self.update_url  # the URL the user gave
        timeout = self.timeout if is_query else self.update_timeout
        try:
            with self._opener.open(request, timeout=timeout) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as exc:
            raise _http_error(exc, endpoint, is_query) from exc
        except urllib.error.URLError as exc:
            raise _network_error(exc.reason, endpoint, timeout) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise _network_error(exc, endpoint, timeout) from exc

    def _update(self, update: str) -> None:
        if self.read_only:
            raise StoreError(f"{self!r} is read-only; open it without read_only to write")
        self._post(self.update_url, update, "application/sparql-update", is_query=False)

    # -- writes ------------------------------------------------------------------------------

    def replace_graphs(self, graphs: Sequence[tuple[URIRef, Iterable[Triple]]]) -> None:
        """See :meth:`GraphStore.replace_graphs`: one update request."""
        # Every name is cleared, present or not: checking first would race with other clients.
        batch = check_batch(graphs)
        if not batch:
            return
        try:
            update = replace_update(batch, [name for name, _ in batch])
        except TermError as exc:
            raise StoreError(f"cannot store the graphs: {exc}") from exc
        self._update(update)

    def drop_graphs(self, names: Iterable[URIRef]) -> None:
        """See :meth:`GraphStore.drop_graphs`: one update request."""
        try:
            update = " ;\n".join(f"DROP SILENT GRAPH {iri_text(str(n))}" for n in names)
        except TermError as exc:
            raise StoreError(f"cannot drop graphs: {exc}") from exc
        if update:
            self._update(update)

    # -- reads -------------------------------------------------------------------------------

    def graph_names(self) -> list[URIRef]:
        """See :meth:`GraphStore.graph_names`."""
        result = self.select("SELECT DISTINCT ?g WHERE { GRAPH ?g { } }")
        return sorted(URIRef(g) for (g,) in result.rows if isinstance(g, URIRef))

    def read_graphs(self, names: Sequence[URIRef]) -> Iterator[tuple[URIRef, list[Triple]]]:
        """See :meth:`GraphStore.read_graphs`: one request per ``batch_size`` graphs."""
        names = list(names)
        for start in range(0, len(names), self.batch_size):
            chunk = names[start : start + self.batch_size]
            try:
                values = " ".join(iri_text(str(n)) for n in chunk)
            except TermError as exc:
                raise StoreError(f"cannot read graphs: {exc}") from exc
            sparql = (
                f"SELECT ?g ?s ?p ?o WHERE {{ VALUES ?g {{ {values} }} GRAPH ?g {{ ?s ?p ?o }} }}"
            )
            found = self._quads(sparql)
            for name in chunk:
                triples = found.get(URIRef(name))
                if triples:
                    yield name, triples

    def _quads(self, sparql: str) -> dict[URIRef, list[Triple]]:
        raw = self._post(self.query_url, sparql, "application/sparql-query", _JSON)
        try:
            solutions = ox.parse_query_results(raw, ox.QueryResultsFormat.JSON)
        except (SyntaxError, ValueError) as exc:
            raise StoreError(f"{self!r} sent graphs that do not parse: {exc}") from exc
        cache: dict[Any, Node] = {}
        found: dict[URIRef, list[Triple]] = {}
        for g, s, p, o in solutions:  # type: ignore[union-attr]
            found.setdefault(URIRef(g.value), []).append(
                (to_rdflib(s, cache), to_rdflib(p, cache), to_rdflib(o, cache))
            )
        return found

    def query(
        self,
        sparql: str,
        bindings: Bindings | None = None,
        *,
        graphs: Sequence[URIRef] | None = None,
    ) -> QueryResult | bool | Graph:
        """See :meth:`GraphStore.query`."""
        form = query_form(sparql)
        text = bind(sparql, bindings)
        accept = _JSON if form in ("SELECT", "ASK") else _NTRIPLES
        if graphs is None:
            url = self.query_url
            if self.union_default_graph:
                url = _with_params(url, [("union-default-graph", "true")])
            raw = self._post(url, text, "application/sparql-query", accept)
        else:
            dataset = [str(g) for g in graphs] or [_NO_GRAPH]
            params = [("query", text)]
            params += [("default-graph-uri", g) for g in dataset]
            params += [("named-graph-uri", g) for g in dataset]
            body = urllib.parse.urlencode(params)
            raw = self._post(self.query_url, body, "application/x-www-form-urlencoded", accept)
        return _parse(raw, form, self.query_url)

    def close(self) -> None:
        """See :meth:`GraphStore.close`; the store holds no open connection between requests."""
        self._closed = True


def _check_url(url: str, what: str) -> str:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise StoreConfigError(f"the SPARQL {what} URL must be http(s)://host[:port]/path: {url!r}")
    return url


def _opener(url: str) -> urllib.request.OpenerDirector:
    # A proxy from the environment must not capture requests to this machine's own endpoint.
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def _with_params(url: str, params: list[tuple[str, str]]) -> str:
    separator = "&" if urllib.parse.urlsplit(url).query else "?"
    return f"{url}{separator}{urllib.parse.urlencode(params)}"


def _parse(raw: bytes, form: str, url: str) -> QueryResult | bool | Graph:
    try:
        if form in ("SELECT", "ASK"):
            return result_from_oxigraph(ox.parse_query_results(raw, ox.QueryResultsFormat.JSON))
        cache: dict[Any, Node] = {}
        graph = Graph(bind_namespaces="none")
        for quad in ox.parse(raw, ox.RdfFormat.N_TRIPLES):
            graph.add(
                (
                    to_rdflib(quad.subject, cache),
                    to_rdflib(quad.predicate, cache),
                    to_rdflib(quad.object, cache),
                )
            )
        return graph
    except (SyntaxError, ValueError) as exc:
        raise StoreError(
            f"the SPARQL endpoint {url} sent an answer that does not parse: {exc}"
        ) from exc


def _http_error(exc: urllib.error.HTTPError, url: str, is_query: bool) -> Exception:
    try:
        detail = exc.read(_ERROR_CHARS * 4).decode("utf-8", errors="replace")
    except (OSError, http.client.HTTPException):
        detail = ""
    detail = " ".join(detail.split())[:_ERROR_CHARS] or exc.reason
    if exc.code == 400 and is_query:
        return QueryError(f"the SPARQL endpoint rejected the query: {detail}")
    if exc.code == 400:
        return StoreError(f"the SPARQL endpoint {url} rejected the update: {detail}")
    return StoreError(f"the SPARQL endpoint {url} answered HTTP {exc.code}: {detail}")


def _network_error(reason: object, url: str, timeout: float) -> StoreError:
    if isinstance(reason, TimeoutError | socket.timeout):
        return StoreError(f"the SPARQL endpoint {url} did not answer within {timeout:g} s")
    if isinstance(reason, ConnectionRefusedError):
        return StoreError(f"cannot reach the SPARQL endpoint {url}: connection refused")
    return StoreError(f"cannot reach the SPARQL endpoint {url}: {reason}")
