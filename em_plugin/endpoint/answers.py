"""Running a query on a pyoxigraph store and serializing its answer, in one call on one thread.

pyoxigraph's results (``QuerySolutions``, ``QueryTriples``) must be dropped on the thread that
made them. :func:`run_query` makes the result, serializes it and drops it before it returns,
so no such object outlives the call: none is ever left to a frame that a reference cycle keeps
alive (rdflib's parser leaves many), which the garbage collector would free on whatever thread
it runs on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from em_plugin.endpoint.protocol import ProtocolError
from provenance.stores.sparql_errors import syntax_error_message

__all__ = ["BOOLEAN", "GRAPH", "TABULAR", "Answer", "pick_media_type", "run_query"]

#: Media types of SELECT answers, the first the default.
TABULAR = ("application/sparql-results+json", "application/sparql-results+xml", "text/csv",
           "text/tab-separated-values")  # fmt: skip
#: Media types of ASK answers, the first the default.
BOOLEAN = TABULAR[:2]
#: Media types of CONSTRUCT and DESCRIBE answers (the Protocol's list), the first the default.
GRAPH = ("text/turtle", "application/n-triples", "application/rdf+xml")


@dataclass(frozen=True)
class Answer:
    """A serialized answer."""

    body: bytes
    media_type: str


def pick_media_type(accept: str | None, offered: Sequence[str]) -> str:
    """Return the first of ``offered`` that ``accept`` takes, by its q-values.

    Args:
        accept: The ``Accept`` header (``None`` or ``*/*``: the first offered).
        offered: The media types the answer can have, the default first.

    Returns:
        The media type to answer with.

    Raises:
        ProtocolError: 406 when ``accept`` takes none of them.
    """
    if not accept or not accept.strip():
        return offered[0]
    ranked: list[tuple[float, int, str]] = []
    for order, item in enumerate(accept.split(",")):
        media, *options = (part.strip().lower() for part in item.split(";"))
        quality = 1.0
        for option in options:
            if option.startswith("q="):
                try:
                    quality = float(option[2:])
                except ValueError:
                    quality = 0.0
        if media and quality > 0:
            ranked.append((-quality, order, media))
    for _, _, media in sorted(ranked):
        if media in offered:
            return media
        if media in ("*/*", "application/*", "text/*"):
            kind = media.split("/")[0]
            return next((m for m in offered if kind == "*" or m.startswith(kind)), offered[0])
    raise ProtocolError(f"cannot answer in {accept}; this answer can be: {', '.join(offered)}", 406)


def run_query(
    store: ox.Store,
    text: str,
    *,
    accept: str | None,
    base_iri: str | None = None,
    default_graph: Any = None,
    named_graphs: Any = None,
    typed: str | None = None,
) -> Answer:
    """Run a query on ``store`` and return its serialized answer (the result is dropped here).

    Args:
        store: The store to query.
        text: The query.
        accept: The client's ``Accept`` header.
        base_iri: The base IRI relative IRIs resolve against.
        default_graph: Passed to ``Store.query`` (``None``: the store's default graph).
        named_graphs: Passed to ``Store.query`` (``None``: all its named graphs).
        typed: The query as the client sent it, when ``text`` has the standard prefixes in
            front: a syntax error names the line and column of this text.

    Returns:
        The answer.

    Raises:
        ProtocolError: 400 for a query that does not parse, 406 for an ``Accept`` it cannot
            meet.
    """
    try:
        result = store.query(
            text, base_iri=base_iri, default_graph=default_graph, named_graphs=named_graphs
        )
    except SyntaxError as exc:
        sent = text if typed is None else typed
        fault = syntax_error_message(sent, str(exc), shift=len(text) - len(sent))
        raise ProtocolError(f"the query does not parse: {fault}") from None
    try:
        if isinstance(result, ox.QueryTriples):
            media = pick_media_type(accept, GRAPH)
            body = result.serialize(format=ox.RdfFormat.from_media_type(media))
        else:
            media = pick_media_type(
                accept, BOOLEAN if isinstance(result, ox.QueryBoolean) else TABULAR
            )
            body = result.serialize(format=ox.QueryResultsFormat.from_media_type(media))
        return Answer(body or b"", media)
    finally:
        del result
