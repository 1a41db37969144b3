"""Safe variable bindings for SPARQL text: a small lexer that places a ``VALUES`` block.

Bindings are never spliced into the query where a variable stands. Each value is written as one
RDF term by :func:`provenance.stores._terms.term_text` (IRIs checked, literals escaped) and the
terms go into a ``VALUES (?a ?b) { (… …) }`` block inserted right after the ``{`` that opens the
query's outermost WHERE group. Only the *position* comes from the lexer, so a query the lexer
misreads can at worst be rejected by the parser: no value can change the query's structure.

The lexer skips what may hold a brace or a keyword without being one: IRIs (``<…>``, told apart
from the ``<`` operator by SPARQL's IRIREF rule), strings of all four quotings, comments, prefixed
names and variables. The first ``{`` at nesting depth 0 is the WHERE group, except the template of a
``CONSTRUCT { … } WHERE { … }``. When the group is a sub-select (``{ SELECT … }``), which cannot
share its braces, the sub-select is wrapped in an inner group.

Why not pyoxigraph's ``substitutions``: it refuses any variable the SELECT does not project
(``SELECT ?wf WHERE { ?wf wf:tool ?tool }`` with ``?tool`` bound fails), so every backend uses
this one mechanism and the same semantics.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rdflib import BNode, Literal
from rdflib.term import Identifier, Node

from provenance.errors import QueryError
from provenance.stores._terms import TermError, term_text

#: Query forms; anything else (INSERT, DELETE, LOAD, DROP, ...) is an update.
QUERY_FORMS = ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")
_UPDATE_WORDS = frozenset(
    {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"}
)

_TOKEN = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<comment>\#[^\n\r]*)
    | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''
               |\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
               |'(?:[^'\\\n\r]|\\.)*'
               |"(?:[^"\\\n\r]|\\.)*")
    | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
    | (?P<var>[?$][^\s{}()<>,;.\[\]"'#=!|&+*/^-]+)
    | (?P<pname>[^\W\d]?[\w.\-]*:(?:[\w.\-:%]|\\.)*)
    | (?P<word>[^\W\d][\w\-]*)
    | (?P<open>\{)
    | (?P<close>\})
    | (?P<other>\\.|.)
    """,
    re.VERBOSE | re.DOTALL,
)
_VARNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _tokens(query: str) -> Iterator[tuple[str, str, int]]:
    """Yield ``(kind, text, start)`` for every significant token (no blanks or comments)."""
    for match in _TOKEN.finditer(query):
        kind = match.lastgroup or "other"
        if kind not in ("ws", "comment"):
            yield kind, match.group(), match.start()


def query_form(query: str) -> str:
    """Return ``SELECT``, ``ASK``, ``CONSTRUCT`` or ``DESCRIBE``.

    Raises:
        QueryError: For an update or text that starts no query.
    """
    for kind, text, _ in _tokens(query):
        if kind != "word":
            continue
        word = text.upper()
        if word in QUERY_FORMS:
            return word
        if word in _UPDATE_WORDS:
            raise QueryError(f"expected a query (SELECT, ASK, CONSTRUCT, DESCRIBE), not {word}")
    raise QueryError("no SELECT, ASK, CONSTRUCT or DESCRIBE found in the query")


def _where_group(query: str) -> tuple[int, int, bool]:
    """Return the offsets of the WHERE group's ``{`` and ``}``, and whether it is a sub-select.

    Raises:
        QueryError: When the query has no WHERE group.
    """
    depth = 0
    after_construct = False
    skipping_template = False
    start = -1
    first_inside: str | None = None
    for kind, text, pos in _tokens(query):
        if start >= 0 and depth == 1 and first_inside is None:
            first_inside = text.upper() if kind == "word" else kind
        if kind == "open":
            if depth == 0:
                if after_construct:
                    skipping_template = True
                elif start < 0:
                    start = pos
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth == 0 and skipping_template:
                skipping_template = False
            elif depth == 0 and start >= 0:
                return start, pos, first_inside == "SELECT"
        after_construct = depth == 0 and kind == "word" and text.upper() == "CONSTRUCT"
    raise QueryError("bindings need a query with a WHERE group { … }; none was found")


def without_dataset_clauses(query: str) -> str:
    """Return the query without its ``FROM`` / ``FROM NAMED`` clauses.

    The SPARQL 1.1 Protocol says a request's ``default-graph-uri``/``named-graph-uri`` replace
    the query's dataset clauses, but Virtuoso adds the ``FROM`` graphs to them; removing the
    clauses before narrowing gives every server the protocol's semantics.

    Example:
        >>> without_dataset_clauses("SELECT * FROM <urn:g> FROM NAMED <urn:h> WHERE { ?s ?p ?o }")
        'SELECT * WHERE { ?s ?p ?o }'
    """
    cuts: list[tuple[int, int]] = []
    depth = 0
    pending: int | None = None  # start of a FROM clause waiting for its IRI
    for kind, text, pos in _tokens(query):
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
        if depth != 0:
            pending = None
            continue
        word = text.upper() if kind == "word" else ""
        if word == "FROM":
            pending = pos
        elif pending is not None and word == "NAMED":
            continue
        elif pending is not None and kind in ("iri", "pname"):
            end = pos + len(text)
            while end < len(query) and query[end] in " \t\r\n":
                end += 1
            cuts.append((pending, end))
            pending = None
        else:
            pending = None
    for start, end in reversed(cuts):
        query = query[:start] + query[end:]
    return query


def values_block(bindings: Mapping[str, Any]) -> str:
    """Return ``VALUES (?a ?b) { (t1 t2) }`` for the bindings.

    Raises:
        QueryError: For a bad variable name or a value that is not one RDF term.
    """
    names: list[str] = []
    terms: list[str] = []
    for raw_name, value in bindings.items():
        name = raw_name[1:] if raw_name[:1] in ("?", "$") else raw_name
        if not _VARNAME.fullmatch(name):
            raise QueryError(f"binding name {raw_name!r} is not a SPARQL variable name")
        names.append(f"?{name}")
        terms.append(_binding_text(name, value))
    return f"VALUES ({' '.join(names)}) {{ ({' '.join(terms)}) }}"


def _binding_text(name: str, value: Any) -> str:
    term = as_term(name, value)
    try:
        return term_text(term)
    except TermError as exc:
        raise QueryError(f"binding ?{name}: {exc}") from None


def as_term(name: str, value: Any) -> Node:
    """Return the rdflib term for a binding value; plain Python values become literals.

    Raises:
        QueryError: For a blank node (VALUES cannot hold one) or an unsupported type.
    """
    if isinstance(value, BNode):
        raise QueryError(f"binding ?{name}: a blank node cannot be bound; use an IRI")
    if isinstance(value, Identifier):
        return value
    if isinstance(value, bool | int | float | str):
        return Literal(value)
    raise QueryError(f"binding ?{name}: cannot bind a {type(value).__name__}; use an rdflib term")


def bind(query: str, bindings: Mapping[str, Any] | None) -> str:
    """Return ``query`` with ``bindings`` placed in a VALUES block in its WHERE group.

    Example:
        >>> bind("SELECT ?s WHERE { ?s ?p ?o }", {"o": Literal("x")})
        'SELECT ?s WHERE { VALUES (?o) { ("x") } ?s ?p ?o }'

    Raises:
        QueryError: When the query has no WHERE group or a binding is invalid.
    """
    if not bindings:
        return query
    block = values_block(bindings)
    start, end, subselect = _where_group(query)
    if subselect:
        # `{ SELECT … }` must stay alone in its braces: give it an inner group.
        return f"{query[: start + 1]} {block} {{{query[start + 1 : end]}}} {query[end:]}"
    return f"{query[: start + 1]} {block}{query[start + 1 :]}"


def bind_each(query: str, name: str, values: Sequence[Any]) -> str:
    """Return ``query`` with ``?name`` bound to each of ``values`` in turn (one row each).

    One query then answers for many values, e.g. the change logs of a batch's scopes, where
    leaving ``?name`` unbound would read every scope's.

    Example:
        >>> bind_each("SELECT ?s WHERE { ?s ?p ?o }", "o", ["x", "y"])
        'SELECT ?s WHERE { VALUES ?o { "x" "y" } ?s ?p ?o }'

    Raises:
        QueryError: When the query has no WHERE group, or ``name`` or a value is invalid.
    """
    if not _VARNAME.fullmatch(name):
        raise QueryError(f"binding name {name!r} is not a SPARQL variable name")
    terms = " ".join(_binding_text(name, value) for value in values)
    block = f"VALUES ?{name} {{ {terms} }}"
    start, end, subselect = _where_group(query)
    if subselect:
        return f"{query[: start + 1]} {block} {{{query[start + 1 : end]}}} {query[end:]}"
    return f"{query[: start + 1]} {block}{query[start + 1 :]}"


#: Prefix of the variables :func:`with_graph_variables` introduces; results drop them.
GRAPH_VARIABLE = "__em_graph_"


def with_graph_variables(query: str) -> str:
    """Return the query with each constant ``GRAPH <iri>`` written as a variable bound to it.

    ``GRAPH <g> { … }`` becomes ``VALUES ?__em_graph_1 { <g> } GRAPH ?__em_graph_1 { … }``: the
    same solutions (the variable has one value), in a form Virtuoso 7.2 answers correctly under
    the ``input:*-graph-exclude`` pragmas that hide its system graphs (with them, it finds nothing
    or one triple in a constant graph). ``SELECT *`` would show the new variables: drop the
    columns named :data:`GRAPH_VARIABLE` ``…`` from the results.

    Example:
        >>> with_graph_variables("SELECT ?s WHERE { GRAPH <urn:g> { ?s ?p ?o } }")
        'SELECT ?s WHERE { VALUES ?__em_graph_1 { <urn:g> } GRAPH ?__em_graph_1 { ?s ?p ?o } }'
    """
    cuts: list[tuple[int, int, str]] = []
    graph_at: int | None = None
    for kind, text, pos in _tokens(query):
        if graph_at is not None and kind in ("iri", "pname"):
            name = f"?{GRAPH_VARIABLE}{len(cuts) + 1}"
            cuts.append((graph_at, pos + len(text), f"VALUES {name} {{ {text} }} GRAPH {name}"))
        graph_at = pos if kind == "word" and text.upper() == "GRAPH" else None
    for start, end, replacement in reversed(cuts):
        query = query[:start] + replacement + query[end:]
    return query
