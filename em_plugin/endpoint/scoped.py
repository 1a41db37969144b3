"""The endpoint with bearer tokens: the store in this process, one dataset per grant.

Each query runs on a copy of the graphs its token's scopes own
(:class:`~em_plugin.endpoint.scope_copy.ScopeCopy`: the graphs the registry lets the token read
as named graphs, the merge of their workflow graphs and lifecycle records as the default graph;
an ad-hoc query's named graphs are the query families' ones, docs/sparql.md), made on the first
query of that set of scopes and kept in step with every update. The query text is never
narrowed: ``FROM``, ``FROM NAMED`` and ``GRAPH ?g`` range over that copy only, because the engine
holds nothing else.
``SERVICE`` is refused (it would query past it), and updates are checked graph by graph
(:func:`em_plugin.access.check_update`) after the protocol's ``using-graph-uri`` /
``using-named-graph-uri`` became ``USING`` clauses. A client's ``default-graph-uri`` /
``named-graph-uri`` narrow the dataset to the listed graphs of the grant's scopes.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pyoxigraph as ox

from em_plugin.access import AccessDenied, Grant, TokenTable, check_query, check_update
from em_plugin.access.graphs import graph_scope
from em_plugin.endpoint.answers import Answer, run_query
from em_plugin.endpoint.protocol import ProtocolError, SparqlRequest
from em_plugin.endpoint.scope_copy import ScopeCopy
from em_plugin.endpoint.sparql_text import with_using
from provenance.stores.union import with_standard_prefixes

__all__ = ["ScopedBackend", "open_store"]

# rdflib's SPARQL parser (pyparsing) is not thread-safe: two parses at once fail at random
# ("Param.postParse2() missing ... 'tokenList'"). It holds the GIL anyway, so one at a time
# costs no parallelism.
_PARSER = threading.Lock()
# A graph no store holds: an empty dataset must not mean "the store's default" to the engine.
_NO_GRAPH = ox.NamedNode("urn:x-em-plugin:no-graph")


class ScopedBackend:
    """Answers each token's requests within its grant, on a store this process owns.

    Args:
        store: The open store.
        tokens: The token table.
    """

    scoped = True

    def __init__(self, store: ox.Store, tokens: TokenTable) -> None:
        self.store = store
        self.tokens = tokens
        self._copies: dict[frozenset[str], ScopeCopy] = {}
        self._lock = threading.Lock()

    def authorize(self, header: str | None) -> Grant:
        """The grant of the ``Authorization`` header (401 without a valid token)."""
        try:
            return self.tokens.authenticate(header)
        except AccessDenied as exc:
            raise ProtocolError(str(exc), exc.status) from None

    def copy_for(self, grant: Grant) -> ScopeCopy:
        """The copy of the grant's scopes' graphs, made on first use and kept in step."""
        copy = self._copies.get(grant.scopes)
        if copy is None:
            with self._lock:  # no update runs while a copy is made, so none is missed
                copy = self._copies.get(grant.scopes)
                if copy is None:
                    copy = self._copies[grant.scopes] = ScopeCopy.of(self.store, grant.scopes)
        return copy

    def query(self, grant: Grant, request: SparqlRequest, base: str, accept: str | None) -> Answer:
        """Run a query on the grant's copy (narrowed by the client's dataset parameters)."""
        try:
            with _PARSER:
                # The text as sent: rdflib misreads SERVICE after a one-line `PREFIX p: <…#>`.
                check_query(request.text or "")
        except AccessDenied as exc:
            raise ProtocolError(str(exc), exc.status) from None
        copy = self.copy_for(grant)
        default = _listed(grant, request.default_graphs)
        named = _listed(grant, request.named_graphs)
        if named is None and not request.extra:
            # The dataset of every door (docs/sparql.md); a store backend reading through the
            # token (it sends `union-default-graph`) also sees its scopes' bookkeeping.
            named = copy.query_graphs()
        return run_query(
            copy.store,
            with_standard_prefixes(request.text or ""),
            typed=request.text or "",
            accept=accept,
            base_iri=base,
            default_graph=None if default is None else [*default] or [_NO_GRAPH],
            named_graphs=None if named is None else [*named] or [_NO_GRAPH],
        )

    def update(self, grant: Grant, request: SparqlRequest, base: str) -> None:
        """Run an update whose every graph the grant allows; bring the copies in step."""
        text = with_using(request.text or "", request.default_graphs, request.named_graphs)
        try:
            with _PARSER:
                graphs = check_update(text, grant)
        except AccessDenied as exc:
            raise ProtocolError(str(exc), exc.status) from None
        with self._lock:
            try:
                self.store.update(text, base_iri=base)
            except SyntaxError as exc:
                raise ProtocolError(f"the update does not parse: {exc}") from None
            finally:
                for copy in self._copies.values():
                    copy.sync(self.store, graphs.writes)

    def other(self, handler: BaseHTTPRequestHandler, body: bytes) -> bool:
        """No other path is served with tokens (no Graph Store Protocol)."""
        return False

    def close(self) -> None:
        """Drop the copies (the store is closed by its owner)."""
        self._copies.clear()


def _listed(grant: Grant, asked: tuple[str, ...]) -> list[ox.NamedNode] | None:
    """The client's dataset parameter, cut to the grant's graphs (None: not given)."""
    if not asked:
        return None
    try:
        return [ox.NamedNode(g) for g in dict.fromkeys(asked) if grant.can_read(graph_scope(g))]
    except ValueError as exc:
        raise ProtocolError(f"a dataset parameter is not an IRI: {exc}") from None


def open_store(location: Path | None) -> ox.Store:
    """Open the store to serve (``None``: an empty in-memory one), owning it for writing.

    Args:
        location: The store directory, created if missing.

    Returns:
        The open store.

    Raises:
        OSError: When another process holds the directory.
    """
    if location is None:
        return ox.Store()
    location.mkdir(parents=True, exist_ok=True)
    return ox.Store(str(location))
