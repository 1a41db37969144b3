"""A remote SPARQL 1.1 endpoint (Query + Update protocols over HTTP, stdlib only).

Queries are ``POST``s of an ``application/x-www-form-urlencoded`` body (``query=``, plus
``default-graph-uri``/``named-graph-uri`` when the dataset is narrowed): the one form of the
SPARQL 1.1 Protocol that every server answers. A direct ``application/sparql-query`` body is not
used: Virtuoso 7.2 never answers it (the request hangs until the client's timeout, while the same
query as a form answers at once). Updates are direct ``application/sparql-update`` bodies, which
both Oxigraph and Virtuoso take, and which stay short (no percent-encoding): Virtuoso refuses a
request over 10 MB, so a longer write fails before it is sent (``max_update_bytes``).
SELECT/ASK answers are SPARQL JSON and CONSTRUCT answers N-Triples, both parsed by pyoxigraph
(in Rust) and converted to rdflib terms.

* **Atomic replace** is one update request that deletes the graphs' triples and then runs
  ``INSERT DATA { GRAPH <g> { … } … }`` (see :func:`~provenance.stores._terms.replace_update`):
  SPARQL servers run one request as one transaction, so a rejected request changes nothing
  (checked by the contract tests against Oxigraph and Virtuoso).
* **Union default graph**: the store's default graph is the union of its named graphs. The
  server kind is read once from the ``Server`` header of the first answer:

  - Oxigraph (and unknown servers, with ``union_default_graph=True``, the default) get
    Oxigraph's ``union-default-graph`` URL parameter, which other servers ignore; for another
    server that does not serve the union by itself, configure it to (Fuseki/TDB2
    ``tdb2:unionDefaultGraph true``, Oxigraph ``serve --union-default-graph``);
  - Virtuoso serves the union of *all* its graphs, including its own system graphs
    (``virtrdf#``, ``ldp#``, the service description). Each unrestricted query therefore starts
    with Virtuoso's ``DEFINE input:default-graph-exclude`` / ``named-graph-exclude`` pragmas for
    those graphs (:data:`VIRTUOSO_SYSTEM_GRAPHS`, plus ``hidden_graphs``), so that
    ``graph_names``, counts and the union see the store's graphs only.
* **Narrowed queries** (``graphs=[…]``) use the standard ``default-graph-uri``/``named-graph-uri``
  protocol parameters, and lose their ``FROM`` clauses (Virtuoso adds those to the protocol's
  dataset). On Virtuoso the dataset goes into ``DEFINE input:default-graph-uri`` /
  ``named-graph-uri`` pragmas instead: it echoes each protocol graph as a response header, and
  Python's HTTP client refuses an answer with more than 100 headers.
* **Authentication**: ``auth=(user, password)`` or ``http://user:password@host/…`` in the URL;
  HTTP Digest or Basic, whichever the server asks for (Virtuoso's ``/sparql-auth`` asks for
  Digest). Without credentials Virtuoso runs updates as the ``SPARQL`` user, which needs
  ``GRANT SPARQL_UPDATE TO "SPARQL"`` (only on a server bound to loopback).
* **Truncated answers** (Virtuoso's ``ResultSetMaxRows``, sent as ``X-SPARQL-MaxRows``) are a
  :class:`~provenance.errors.StoreError` naming the setting, never a silently short result.
* **Bindings** go into a ``VALUES`` block (:mod:`provenance.stores._sparql`).

``docs/stores.md`` sums up what other servers need, and how ``em-plugin serve`` fits in.
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyoxigraph as ox
from rdflib import Graph, URIRef
from rdflib.term import Node

from provenance.errors import QueryError, StoreError, StoreOutcomeUnknown
from provenance.stores._sparql import (
    GRAPH_VARIABLE,
    bind,
    query_form,
    with_graph_variables,
    without_dataset_clauses,
)
from provenance.stores._terms import (
    TermError,
    Triple,
    iri_text,
    ntriples_to_triples,
    replace_update,
    to_rdflib,
)
from provenance.stores.base import (
    Bindings,
    GraphStore,
    QueryResult,
    StoreConfigError,
    check_batch,
    result_from_oxigraph,
)

__all__ = [
    "TOKEN_ENV",
    "VIRTUOSO_MAX_REQUEST_BYTES",
    "VIRTUOSO_SYSTEM_GRAPHS",
    "SparqlEndpointStore",
]

#: The bearer token a remote store sends when none is given (``em-plugin serve --token-file``).
TOKEN_ENV = "EM_PLUGIN_STORE_TOKEN"

#: The longest SPARQL text Virtuoso 7 takes in one request ("string session is longer than
#: 10Mb"); a longer update is refused before it is sent.
VIRTUOSO_MAX_REQUEST_BYTES = 10_000_000

#: Graphs a Virtuoso server holds for itself (a fresh database has the first three; the others
#: are their names under Debian's default configuration).
VIRTUOSO_SYSTEM_GRAPHS: tuple[str, ...] = (
    "http://www.openlinksw.com/schemas/virtrdf#",
    "http://www.w3.org/ns/ldp#",
    "http://localuriqaserver/sparql",
    "http://localhost:8890/sparql",
    "http://localhost:8890/DAV/",
)

# A graph no store holds: narrowing to an empty list must not fall back to "every graph",
# which is what a request with no default-graph-uri parameter means.
_NO_GRAPH = "urn:x-em-plugin:no-graph"
#: Graphs dropped per request on Virtuoso (see RemoteBackend.drop_graphs).
_VIRTUOSO_DROPS = 50
_JSON = "application/sparql-results+json"
_NTRIPLES = "application/n-triples"
_TSV = "text/tab-separated-values"
_FORM = "application/x-www-form-urlencoded"
_UPDATE = "application/sparql-update"
_ERROR_CHARS = 300


class SparqlEndpointStore(GraphStore):
    """A store behind a SPARQL 1.1 endpoint.

    Args:
        query_url: The query endpoint, e.g. ``http://127.0.0.1:7878/query``; a server's base
            URL without a path (``http://127.0.0.1:7878``) means its ``/query``.
        update_url: The update endpoint; by default ``query_url`` with a trailing ``/query``
            replaced by ``/update`` (or ``query_url`` itself).
        timeout: Seconds to wait for a query's answer.
        update_timeout: Seconds to wait for an update's answer; longer, since a server runs a
            whole import batch as one transaction before it answers. After a timeout the
            outcome is unknown: the server may still commit the update.
        union_default_graph: Send Oxigraph's ``union-default-graph`` parameter to servers that
            are not Virtuoso (see module doc).
        read_only: Refuse writes without asking the server.
        batch_size: Graphs fetched per request by :meth:`read_graphs`.
        auth: ``(user, password)`` for HTTP Digest or Basic authentication; credentials in the
            URL (``http://user:password@host/…``) are used when this is None.
        token: A bearer token sent with every request (``em-plugin serve --token-file``);
            ``$EM_PLUGIN_STORE_TOKEN`` when None.
        hidden_graphs: Graphs of the server that are not the store's, left out of the union
            and of ``graph_names`` on Virtuoso (added to :data:`VIRTUOSO_SYSTEM_GRAPHS`).
        max_update_bytes: The longest update the server takes in one request; a longer write
            fails before anything is sent. ``None``: :data:`VIRTUOSO_MAX_REQUEST_BYTES` on
            Virtuoso, no limit elsewhere.

    Raises:
        StoreConfigError: A URL that is not http(s), or credentials given twice.
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
        auth: tuple[str, str] | None = None,
        hidden_graphs: Sequence[str] = (),
        max_update_bytes: int | None = None,
        token: str | None = None,
    ) -> None:
        query_url, url_auth = _split_credentials(_base_to_query(_check_url(query_url, "query")))
        if update_url is None:
            update_url = query_url
            if query_url.rstrip("/").endswith("/query"):
                update_url = query_url.rstrip("/")[: -len("query")] + "update"
        update_url, update_auth = _split_credentials(_check_url(update_url, "update"))
        if auth is not None and (url_auth or update_auth):
            raise StoreConfigError("give credentials either in the URL or as auth=, not both")
        self.query_url = query_url
        self.update_url = update_url
        self.timeout = timeout
        self.update_timeout = update_timeout
        self.union_default_graph = union_default_graph
        self.read_only = read_only
        self.batch_size = max(1, batch_size)
        self.hidden_graphs = tuple(hidden_graphs)
        self.max_update_bytes = max_update_bytes
        # Credentials are split off above: the key names the endpoint, never a password.
        self.cache_key = f"sparql {query_url} {update_url}"
        self._closed = False
        self._server: str | None = None  # the Server header of the first answer
        self._server_lock = threading.Lock()
        self._readers: ThreadPoolExecutor | None = None  # Virtuoso: graphs read in parallel
        credentials = auth or url_auth or update_auth
        token = token or os.environ.get(TOKEN_ENV, "").strip() or None
        self.token_scoped = token is not None
        self._opener = _opener(self.query_url, self.update_url, credentials, token)
        # urllib's digest handler counts nonces without a lock: no parallel requests with it.
        self._parallel_reads = credentials is None

    def __repr__(self) -> str:
        return f"SparqlEndpointStore({self.query_url!r})"

    # -- HTTP --------------------------------------------------------------------------------

    def _post(
        self,
        url: str,
        params: list[tuple[str, str]],
        accept: str | None = None,
        *,
        is_query: bool = True,
    ) -> bytes:
        """POST ``params`` as a form and return the answer's body."""
        try:
            data = urllib.parse.urlencode(params, encoding="utf-8", errors="strict").encode()
        except UnicodeEncodeError as exc:
            raise StoreError(f"cannot send text that is not valid Unicode: {exc}") from exc
        return self._send(url, data, _FORM, accept, is_query=is_query)

    def _send(
        self, url: str, data: bytes, content_type: str, accept: str | None, *, is_query: bool
    ) -> bytes:
        if self._closed:
            raise StoreError(f"{self!r} is closed")
        headers = {"Content-Type": content_type}
        if accept:
            headers["Accept"] = accept
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        endpoint = self.query_url if is_query else self.update_url  # the URL the user gave
        timeout = self.timeout if is_query else self.update_timeout
        try:
            with self._opener.open(request, timeout=timeout) as response:
                body = bytes(response.read())
                if self._server is None:
                    self._server = response.headers.get("Server") or ""
                if is_query and response.headers.get("X-SPARQL-MaxRows"):
                    raise StoreError(
                        f"the SPARQL endpoint {endpoint} cut the answer at "
                        f"{response.headers['X-SPARQL-MaxRows']} rows (Virtuoso: raise "
                        f"ResultSetMaxRows in the [SPARQL] section of virtuoso.ini)"
                    )
                return body
        except urllib.error.HTTPError as exc:
            raise _http_error(exc, endpoint, is_query) from exc
        except urllib.error.URLError as exc:
            raise _network_error(exc.reason, endpoint, timeout, is_query) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise _network_error(exc, endpoint, timeout, is_query) from exc

    def _update(self, update: str) -> None:
        # The update is the request body (not a form field): percent-encoding would make a
        # large batch up to three times longer, and Virtuoso caps the text of one request.
        if self.read_only:
            raise StoreError(f"{self!r} is read-only; open it without read_only to write")
        try:
            data = update.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise StoreError(f"cannot send text that is not valid Unicode: {exc}") from exc
        limit = self.max_update_bytes
        # Known once the server answered anything (a store reads before it writes); a first
        # request that is too long is refused by Virtuoso itself, with nothing written.
        if limit is None and (self._server or "").startswith("Virtuoso"):
            limit = VIRTUOSO_MAX_REQUEST_BYTES
        if limit is not None and len(data) > limit:
            raise StoreError(
                f"this write is one SPARQL update of {len(data) / 1e6:.1f} MB, over the "
                f"{limit / 1e6:.1f} MB that the SPARQL endpoint {self.update_url} accepts in one "
                "request; nothing was sent. A batch is one request, so that it is atomic: save "
                "fewer workflows per call"
            )
        self._send(self.update_url, data, _UPDATE, None, is_query=False)

    def _is_virtuoso(self) -> bool:
        """Whether the server is Virtuoso; asks it once (a cheap ASK) before the first query."""
        if self._server is None:
            with self._server_lock:
                if self._server is None:
                    self._post(self.query_url, [("query", "ASK {}")], _JSON)
        return (self._server or "").startswith("Virtuoso")

    def _union_query(self, text: str) -> tuple[str, str]:
        """Return ``(url, query text)`` for a query over the union of the store's graphs."""
        if self._is_virtuoso():
            hidden = dict.fromkeys((*VIRTUOSO_SYSTEM_GRAPHS, *self.hidden_graphs))
            pragmas = "".join(
                f"DEFINE input:default-graph-exclude <{g}>\n"
                f"DEFINE input:named-graph-exclude <{g}>\n"
                for g in hidden
            )
            return self.query_url, pragmas + with_graph_variables(text)
        if self.union_default_graph:
            return _with_params(self.query_url, [("union-default-graph", "true")]), text
        return self.query_url, text

    # -- writes ------------------------------------------------------------------------------

    def replace_graphs(self, graphs: Sequence[tuple[URIRef, Iterable[Triple]]]) -> None:
        """See :meth:`GraphStore.replace_graphs`: one update request (Virtuoso: DROPs 50 a time)."""
        # Every name is cleared, present or not: checking first would race with other clients.
        batch = check_batch(graphs)
        if not batch:
            return
        try:
            if self._server is not None and self._server.startswith("Virtuoso"):
                # Virtuoso empties a graph with DROP far faster than with the DELETE … VALUES
                # form (measured: 0.5 s against 10 s for 250 stored workflows).
                drops = [f"DROP SILENT GRAPH {iri_text(str(n))} ;\n" for n, _ in batch]
                # It refuses a long chain of DROPs in one request ("SQ156: Query too large", an
                # erased scope's change logs): all but the last 50 go first, in requests of 50.
                last = max(len(drops) - _VIRTUOSO_DROPS, 0)
                for start in range(0, last, _VIRTUOSO_DROPS):
                    chunk = drops[start : min(start + _VIRTUOSO_DROPS, last)]
                    self._update("".join(chunk).rstrip(" ;\n"))
                update = "".join(drops[last:]) + replace_update(batch, [])
            else:
                update = replace_update(batch, [name for name, _ in batch])
        except TermError as exc:
            raise StoreError(f"cannot store the graphs: {exc}") from exc
        self._update(update)

    def drop_graphs(self, names: Iterable[URIRef]) -> None:
        """See :meth:`GraphStore.drop_graphs`: one update request (Virtuoso: one per 50 graphs)."""
        try:
            drops = [f"DROP SILENT GRAPH {iri_text(str(n))}" for n in names]
        except TermError as exc:
            raise StoreError(f"cannot drop graphs: {exc}") from exc
        # Virtuoso refuses a long chain of DROPs in one request ("SQ156: Query too large"), as
        # when a scope with many change-log graphs is erased; a DROP SILENT repeated is harmless.
        virtuoso = self._server is not None and self._server.startswith("Virtuoso")
        size = _VIRTUOSO_DROPS if virtuoso else max(len(drops), 1)
        for start in range(0, len(drops), size):
            self._update(" ;\n".join(drops[start : start + size]))

    # -- reads -------------------------------------------------------------------------------

    def graph_names(self) -> list[URIRef]:
        """See :meth:`GraphStore.graph_names`."""
        # `GRAPH ?g { }` would be cheaper, but Virtuoso answers it with one unbound row.
        result = self.select("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
        return sorted(URIRef(g) for (g,) in result.rows if isinstance(g, URIRef))

    def read_graphs(self, names: Sequence[URIRef]) -> Iterator[tuple[URIRef, list[Triple]]]:
        """See :meth:`GraphStore.read_graphs`.

        One request per ``batch_size`` graphs (per graph on Virtuoso).
        """
        names = list(names)
        for start in range(0, len(names), self.batch_size):
            chunk = names[start : start + self.batch_size]
            try:
                iris = [iri_text(str(n)) for n in chunk]
            except TermError as exc:
                raise StoreError(f"cannot read graphs: {exc}") from exc
            if self._is_virtuoso():
                # Virtuoso 7.2 writes SPARQL JSON results slowly (3 workflow graphs of 2k
                # stored, as one query: 54 ms), and its XML and TSV results are not exact (an
                # unescaped "&", a dropped trailing newline; a quoted TSV header). A CONSTRUCT
                # of one named graph, as N-Triples, is exact and takes 4-10 ms; a few run at
                # once, as the server answers requests in parallel.
                for name, graph in zip(chunk, self._read_each(iris), strict=True):
                    if graph:
                        yield name, graph
                continue
            values = " ".join(iris)
            sparql = (
                f"SELECT ?g ?s ?p ?o WHERE {{ VALUES ?g {{ {values} }} GRAPH ?g {{ ?s ?p ?o }} }}"
            )
            found = self._quads(sparql)
            for name in chunk:
                triples = found.get(URIRef(name))
                if triples:
                    yield name, triples

    def _read_each(self, iris: list[str]) -> Iterator[list[Triple]]:
        """The triples of each graph, in order.

        Read by up to four requests at a time (one at a time with credentials).
        """
        if len(iris) == 1 or not self._parallel_reads:
            return map(self._graph_triples, iris)
        with self._server_lock:
            if self._readers is None:
                self._readers = ThreadPoolExecutor(4, thread_name_prefix="em-sparql-read")
        return self._readers.map(self._graph_triples, iris)

    def _graph_triples(self, iri: str) -> list[Triple]:
        """The triples of one named graph (``iri`` in N-Triples syntax), by a CONSTRUCT."""
        # The graph is named, so the union's exclusions do not apply (and Virtuoso's exclusion
        # pragmas would hide a named graph's triples).
        sparql = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH {iri} {{ ?s ?p ?o }} }}"
        raw = self._post(self.query_url, [("query", sparql)], _NTRIPLES)
        try:
            return ntriples_to_triples(raw)
        except (SyntaxError, ValueError) as exc:
            raise StoreError(
                f"{self!r} sent graph {iri} in a form that does not parse: {exc}"
            ) from exc

    def _quads(self, sparql: str) -> dict[URIRef, list[Triple]]:
        url, text = self._union_query(sparql)
        # Oxigraph writes TSV (N-Triples terms) half as long as JSON and twice as fast to parse,
        # which is what reading many workflows (a cold open) costs; other servers get JSON.
        tsv = (self._server or "").startswith("Oxigraph")
        raw = self._post(url, [("query", text)], _TSV if tsv else _JSON)
        results_format = ox.QueryResultsFormat.TSV if tsv else ox.QueryResultsFormat.JSON
        try:
            solutions = ox.parse_query_results(raw, results_format)
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
            url, text = self._union_query(text)
            raw = self._post(url, [("query", text)], accept)
        else:
            dataset = [str(g) for g in graphs] or [_NO_GRAPH]
            text = without_dataset_clauses(text)
            if self._is_virtuoso():
                # Virtuoso echoes every protocol dataset graph as a response header, and Python's
                # HTTP client refuses more than 100 headers: a scope of 50 workflows would fail.
                # Its DEFINE pragmas set the same dataset from the query text.
                try:
                    pragmas = "".join(
                        f"DEFINE input:default-graph-uri {iri_text(g)}\n"
                        f"DEFINE input:named-graph-uri {iri_text(g)}\n"
                        for g in dataset
                    )
                except TermError as exc:
                    raise QueryError(f"cannot narrow the query to graph {exc}") from exc
                raw = self._post(self.query_url, [("query", pragmas + text)], accept)
            else:
                params = [("query", text)]
                params += [("default-graph-uri", g) for g in dataset]
                params += [("named-graph-uri", g) for g in dataset]
                raw = self._post(self.query_url, params, accept)
        result = _parse(raw, form, self.query_url)
        if isinstance(result, QueryResult) and any(
            c.startswith(GRAPH_VARIABLE) for c in result.columns
        ):
            result = _without_graph_variables(result)
        if form == "ASK" and isinstance(result, QueryResult):
            # Virtuoso 7.2 answers ASK as a SELECT of `__ASK_RETVAL`: one row "1", or none.
            return any(row and str(row[0]) not in ("0", "false") for row in result.rows)
        return result

    def close(self) -> None:
        """See :meth:`GraphStore.close`; the store holds no open connection between requests."""
        self._closed = True
        if self._readers is not None:
            self._readers.shutdown(wait=False, cancel_futures=True)


def _check_url(url: str, what: str) -> str:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise StoreConfigError(f"the SPARQL {what} URL must be http(s)://host[:port]/path: {url!r}")
    return url


def _base_to_query(url: str) -> str:
    """A server's base URL (no path) as its query endpoint, ``…/query`` (Oxigraph, ``serve``)."""
    parts = urllib.parse.urlsplit(url)
    if parts.path not in ("", "/") or parts.query:
        return url
    return urllib.parse.urlunsplit(parts._replace(path="/query"))


def _split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """Return the URL without ``user:password@`` and the credentials it held, if any."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    bare = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    user = urllib.parse.unquote(parts.username)
    return bare, (user, urllib.parse.unquote(parts.password or ""))


class _Bearer(urllib.request.BaseHandler):
    """Sends ``Authorization: Bearer <token>`` with every request."""

    def __init__(self, token: str) -> None:
        self._header = f"Bearer {token}"

    def http_request(self, request: urllib.request.Request) -> urllib.request.Request:
        request.add_unredirected_header("Authorization", self._header)
        return request

    https_request = http_request


def _opener(
    query_url: str, update_url: str, auth: tuple[str, str] | None, token: str | None = None
) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = []
    if token is not None:
        handlers.append(_Bearer(token))
    # A proxy from the environment must not capture requests to this machine's own endpoint.
    host = urllib.parse.urlsplit(query_url).hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        handlers.append(urllib.request.ProxyHandler({}))
    if auth is not None:
        passwords = urllib.request.HTTPPasswordMgrWithDefaultRealm()
        for url in dict.fromkeys((query_url, update_url)):
            passwords.add_password(None, url, *auth)
        # Either scheme, as the server asks: Virtuoso's /sparql-auth uses Digest.
        handlers.append(urllib.request.HTTPDigestAuthHandler(passwords))
        handlers.append(urllib.request.HTTPBasicAuthHandler(passwords))
    return urllib.request.build_opener(*handlers)


def _with_params(url: str, params: list[tuple[str, str]]) -> str:
    separator = "&" if urllib.parse.urlsplit(url).query else "?"
    return f"{url}{separator}{urllib.parse.urlencode(params)}"


def _parse(raw: bytes, form: str, url: str) -> QueryResult | bool | Graph:
    try:
        if form in ("SELECT", "ASK"):
            return result_from_oxigraph(ox.parse_query_results(raw, ox.QueryResultsFormat.JSON))
        graph = Graph(bind_namespaces="none")
        for triple in ntriples_to_triples(raw):
            graph.add(triple)
        return graph
    except (SyntaxError, ValueError) as exc:
        raise StoreError(
            f"the SPARQL endpoint {url} sent an answer that does not parse: {exc}"
        ) from exc


def _without_graph_variables(result: QueryResult) -> QueryResult:
    """The result without the columns that :func:`with_graph_variables` added."""
    keep = [i for i, c in enumerate(result.columns) if not c.startswith(GRAPH_VARIABLE)]
    return QueryResult(
        tuple(result.columns[i] for i in keep), [tuple(row[i] for i in keep) for row in result.rows]
    )


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
    hint = " (Oxigraph and em-plugin serve answer queries at …/query)" if exc.code == 404 else ""
    return StoreError(f"the SPARQL endpoint {url} answered HTTP {exc.code}: {detail}{hint}")


def _network_error(reason: object, url: str, timeout: float, is_query: bool) -> StoreError:
    if isinstance(reason, ConnectionRefusedError):
        # Refused before anything was sent: the store is unchanged, even for an update.
        return StoreError(f"cannot reach the SPARQL endpoint {url}: connection refused")
    if isinstance(reason, TimeoutError | socket.timeout):
        message = f"the SPARQL endpoint {url} did not answer within {timeout:g} s"
    else:
        message = f"cannot reach the SPARQL endpoint {url}: {reason}"
    if is_query:
        return StoreError(message)
    # The update may have reached the server, which may commit it after we stop waiting.
    return StoreOutcomeUnknown(f"{message}; the update may or may not have been applied")
