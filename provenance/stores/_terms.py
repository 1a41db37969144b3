"""RDF term conversions shared by the backends: rdflib -> text, pyoxigraph <-> rdflib.

Writes go to the stores as *text* (N-Quads for the embedded store, ``INSERT DATA`` for an endpoint)
because parsing text in Rust is several times faster than building pyoxigraph terms one by one in
Python. :func:`term_text` is the only function that turns a value into SPARQL or N-Quads text: it
checks IRIs and language tags and escapes literals, so that every value becomes exactly one token.
The token syntax it emits is the common subset of N-Triples and SPARQL (``<iri>``, ``"…"`` with
``\\\\ \\" \\n \\r`` escapes, ``@lang``, ``^^<iri>``, ``_:label``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeAlias, overload

import pyoxigraph as ox
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.namespace import RDF, XSD
from rdflib.term import Node

from provenance.errors import TermError

#: A triple of rdflib terms, as :func:`provenance.mapping.workflow_to_triples` returns them.
Triple: TypeAlias = tuple[Node, Node, Node]

_XSD_STRING = str(XSD.string)
_LANG_STRING = str(RDF.langString)
# What N-Triples' IRIREF and SPARQL's IRIREF both refuse, plus the need for a scheme: a relative
# IRI would be resolved against a base and so would not denote what the caller asked for.
_IRI_FORBIDDEN = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_IRI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_LANG = re.compile(r"[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*")
_BNODE = re.compile(r"[A-Za-z0-9_]+")
# The four characters a "…" literal cannot hold raw, in N-Triples and in SPARQL alike.
_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


class TriplesText(Sequence[Triple]):
    """Triples already written as term text: rows of three :func:`term_text` tokens.

    :func:`nquads` and :func:`replace_update` use the rows as they are (no rdflib terms are
    built); anything else that reads the triples gets equal rdflib terms, parsed on first use.

    Args:
        rows: ``(subject, predicate, object)`` tokens, each exactly what :func:`term_text`
            returns for the term.
        trusted: Every IRI in the rows was built by :mod:`provenance.vocab` from
            percent-encoded segments (and every literal by :func:`term_text`), so a store may
            skip its own IRI checks when parsing them (Oxigraph's ``lenient`` parsing).
    """

    __slots__ = ("_block", "_triples", "rows", "trusted")

    def __init__(self, rows: list[tuple[str, str, str]], *, trusted: bool = False) -> None:
        self.rows = rows
        self.trusted = trusted
        self._triples: list[Triple] | None = None
        self._block: tuple[str, bytes] | None = None

    @classmethod
    def of(cls, triples: Iterable[Triple], *, trusted: bool = False) -> TriplesText:
        """Write rdflib triples as text (checked by :func:`term_text`).

        Raises:
            TermError: When a term cannot be written.
        """
        return cls(list(_rows(triples, {})), trusted=trusted)

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> Triple: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Triple]: ...
    def __getitem__(self, index: int | slice) -> Triple | Sequence[Triple]:
        return self.triples()[index]

    def __iter__(self) -> Iterator[Triple]:
        return iter(self.triples())

    def __repr__(self) -> str:
        return f"TriplesText({len(self.rows)} triples)"

    def nquads_block(self, name: str) -> bytes:
        """Return the rows as N-Quads in graph ``name``, UTF-8 (made once per name, then kept).

        Raises:
            TermError: When ``name`` is not a usable IRI.
        """
        block = self._block
        if block is None or block[0] != name:
            block = self._block = (name, _quads(name, self.rows).encode("utf-8"))
        return block[1]

    def triples(self) -> list[Triple]:
        """Return the rows as rdflib triples (parsed once, then kept)."""
        if self._triples is None:
            self._triples = ntriples_to_triples(
                "".join(f"{s} {p} {o} .\n" for s, p, o in self.rows)
            )
        return self._triples


def ntriples_to_triples(data: str | bytes) -> list[Triple]:
    """Parse N-Triples into rdflib triples (each distinct term converted once).

    Raises:
        SyntaxError: When the text is not N-Triples (pyoxigraph's parse error).
    """
    cache: dict[Any, Node] = {}
    return [
        (to_rdflib(t.subject, cache), to_rdflib(t.predicate, cache), to_rdflib(t.object, cache))
        for t in ox.parse(data, ox.RdfFormat.N_TRIPLES)
    ]


def literal_text(value: str) -> str:
    """Return the token of a plain string literal.

    That is what :func:`term_text` gives ``Literal(value)``.
    """
    return f'"{value.translate(_ESCAPES)}"'


def iri_text(iri: str) -> str:
    """Return ``<iri>`` after checking that ``iri`` is absolute and has no forbidden character.

    Raises:
        TermError: When the string is not a usable absolute IRI.
    """
    if _IRI_FORBIDDEN.search(iri) or not _IRI_SCHEME.match(iri):
        raise TermError(f"{iri!r} is not an absolute IRI (or holds a character IRIs forbid)")
    return f"<{iri}>"


def term_text(term: Any) -> str:
    """Return the N-Triples/SPARQL token of an rdflib term.

    Args:
        term: A ``URIRef``, ``Literal`` or ``BNode``.

    Returns:
        One token; a literal's text is escaped, so nothing in it can end the token early.

    Raises:
        TermError: For an invalid IRI, language tag or blank node label, or another type.
    """
    if isinstance(term, URIRef):
        return iri_text(str(term))
    if isinstance(term, Literal):
        lexical = literal_text(str(term))
        if term.language:
            if not _LANG.fullmatch(term.language):
                raise TermError(f"{term.language!r} is not a valid language tag")
            return f"{lexical}@{term.language}"
        datatype = term.datatype
        if datatype is None or str(datatype) == _XSD_STRING:
            return lexical
        return f"{lexical}^^{iri_text(str(datatype))}"
    if isinstance(term, BNode):
        if not _BNODE.fullmatch(str(term)):
            raise TermError(f"{str(term)!r} is not a usable blank node label")
        return f"_:{term}"
    raise TermError(f"cannot write a {type(term).__name__} as an RDF term: {term!r}")


def nquads(graphs: Sequence[tuple[URIRef, Iterable[Triple]]]) -> str:
    """Serialise named graphs as one N-Quads document.

    Raises:
        TermError: When a term cannot be written.
    """
    cache: dict[Node, str] = {}
    return "".join(_quads(str(name), _rows(triples, cache)) for name, triples in graphs)


def nquads_bytes(graphs: Sequence[tuple[URIRef, Iterable[Triple]]]) -> bytes:
    """Return :func:`nquads` of the graphs as UTF-8, reusing blocks :func:`prerender` made.

    Raises:
        TermError: When a term cannot be written.
    """
    cache: dict[Node, str] = {}
    return b"".join(
        triples.nquads_block(str(name))
        if isinstance(triples, TriplesText)
        else _quads(str(name), _rows(triples, cache)).encode("utf-8")
        for name, triples in graphs
    )


def _quads(name: str, rows: Iterable[tuple[str, str, str]]) -> str:
    """The N-Quads lines of one graph's token rows."""
    tail = f" {iri_text(name)} .\n"
    return "".join([f"{s} {p} {o}{tail}" for s, p, o in rows])


def prerender(graphs: Sequence[tuple[URIRef, Iterable[Triple]]]) -> None:
    """Make the N-Quads blocks of the graphs' :class:`TriplesText` now, for a later write.

    A graph whose block cannot be made is skipped: the write makes it again and raises then.
    """
    for name, triples in graphs:
        if isinstance(triples, TriplesText):
            try:
                triples.nquads_block(str(name))
            except TermError:
                continue


def replace_update(
    graphs: Sequence[tuple[URIRef, Iterable[Triple]]], clear: Sequence[URIRef]
) -> str:
    """Return one SPARQL update that empties ``clear`` and then writes ``graphs``.

    The old triples go with ``DELETE { GRAPH ?g { ?s ?p ?o } } WHERE { VALUES ?g { … } … }``
    rather than one ``DROP GRAPH`` per name: measured on Oxigraph, a ``DROP`` earlier in the same
    transaction doubles the cost of the ``INSERT DATA`` after it (even for absent graphs), the
    ``DELETE`` costs only the triples it finds. A graph left with no triples is dropped, so it
    does not linger as an empty named graph.

    Raises:
        TermError: When a term cannot be written.
    """
    cache: dict[Node, str] = {}
    parts: list[str] = []
    if clear:
        values = " ".join(iri_text(str(name)) for name in clear)
        parts.append(
            f"DELETE {{ GRAPH ?g {{ ?s ?p ?o }} }} "
            f"WHERE {{ VALUES ?g {{ {values} }} GRAPH ?g {{ ?s ?p ?o }} }} ;\n"
        )
    body: list[str] = []
    for name, triples in graphs:
        graph = iri_text(str(name))
        start = len(body)
        body.extend(f"{s} {p} {o} .\n" for s, p, o in _rows(triples, cache))
        if len(body) == start:
            parts.append(f"DROP SILENT GRAPH {graph} ;\n")
        else:
            body.insert(start, f"GRAPH {graph} {{\n")
            body.append("}\n")
    return "".join([*parts, "INSERT DATA {\n", *body, "}"])


def _rows(triples: Iterable[Triple], cache: dict[Node, str]) -> Iterable[tuple[str, str, str]]:
    """The triples' token rows: a :class:`TriplesText`'s own, or each term written once."""
    if isinstance(triples, TriplesText):
        return triples.rows
    return ((_cached(s, cache), _cached(p, cache), _cached(o, cache)) for s, p, o in triples)


def _cached(term: Node, cache: dict[Node, str]) -> str:
    # IRIs and small literals repeat a lot within a batch (types, predicates, indexes).
    text = cache.get(term)
    if text is None:
        text = cache[term] = term_text(term)
    return text


def to_rdflib(term: Any, cache: dict[Any, Node] | None = None) -> Node:
    """Convert a pyoxigraph term to the equal rdflib term.

    A plain ``xsd:string`` literal becomes ``Literal(value)`` with no datatype, which is what
    the mapping writes, so a round trip gives back equal triples.
    """
    if cache is not None:
        found = cache.get(term)
        if found is not None:
            return found
    converted: Node
    if isinstance(term, ox.NamedNode):
        converted = URIRef(term.value)
    elif isinstance(term, ox.Literal):
        datatype = term.datatype.value
        if term.language:
            converted = Literal(term.value, lang=term.language)
        elif datatype == _XSD_STRING or datatype == _LANG_STRING:
            converted = Literal(term.value)
        else:
            converted = Literal(term.value, datatype=URIRef(datatype))
    elif isinstance(term, ox.BlankNode):
        converted = BNode(term.value)
    else:
        raise TermError(f"unsupported term in a result: {term!r}")
    if cache is not None:
        cache[term] = converted
    return converted


def convert_result(
    result: ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples,
) -> tuple[tuple[str, ...], list[tuple[Node | None, ...]]] | bool | Graph:
    """Convert a pyoxigraph query result: ``(columns, rows)``, a bool, or an rdflib Graph."""
    cache: dict[Any, Node] = {}
    if isinstance(result, ox.QueryBoolean):
        return bool(result)
    if isinstance(result, ox.QuerySolutions):
        columns = tuple(v.value for v in result.variables)
        rows = [
            tuple(None if v is None else to_rdflib(v, cache) for v in solution)
            for solution in result
        ]
        return columns, rows
    graph = Graph(bind_namespaces="none")
    for triple in result:
        graph.add(
            (
                to_rdflib(triple.subject, cache),
                to_rdflib(triple.predicate, cache),
                to_rdflib(triple.object, cache),
            )
        )
    return graph
