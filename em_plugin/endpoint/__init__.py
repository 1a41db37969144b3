"""The store as a SPARQL 1.1 endpoint: what ``em-plugin serve`` runs, and what tests start.

:func:`start_endpoint` serves a store directory on HTTP: queries at ``/query`` (GET, or POST as
a form or ``application/sparql-query``; a GET without a query answers the SPARQL 1.1 Service
Description), updates at ``/update`` (POST as a form or ``application/sparql-update``), as the
SPARQL 1.1 Protocol says (``tests/em_plugin/endpoint/test_w3c_protocol.py`` runs its tests).
Every door gives one query text one answer: the store's prefixes are declared for the text
(:func:`provenance.stores.union.with_standard_prefixes`), and the dataset is the registry's
query dataset (:mod:`provenance.stores.graph_families`, ``docs/sparql.md``): the default graph
merges the default-graph families (workflows, lifecycle records), each triple once, and the
named graphs are the query families' graphs (those of a token's scopes, with a token).

* Without tokens an ``oxigraph serve`` child holds the store on a private port
  (:mod:`~em_plugin.endpoint.proxied`); the endpoint binds a loopback address only.
* With a token file the store is opened in this process and each token sees the graphs of its
  scopes only (:mod:`~em_plugin.endpoint.scoped`, :mod:`em_plugin.access`).

Example:
    >>> from em_plugin.endpoint import start_endpoint
    >>> with start_endpoint("memory:", port=0) as endpoint:  # doctest: +SKIP
    ...     print(endpoint.url)
    http://127.0.0.1:.../query
"""

from __future__ import annotations

from em_plugin.endpoint.answers import Answer, pick_media_type, run_query
from em_plugin.endpoint.description import service_description
from em_plugin.endpoint.launch import RunningEndpoint, start_endpoint, store_location
from em_plugin.endpoint.oxigraph_process import ServeError, oxigraph_binary
from em_plugin.endpoint.protocol import ProtocolError, SparqlRequest, read_request
from em_plugin.endpoint.scope_copy import ScopeCopy

__all__ = [
    "Answer",
    "ProtocolError",
    "RunningEndpoint",
    "ScopeCopy",
    "ServeError",
    "SparqlRequest",
    "oxigraph_binary",
    "pick_media_type",
    "read_request",
    "run_query",
    "service_description",
    "start_endpoint",
    "store_location",
]
