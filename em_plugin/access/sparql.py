"""Bounding SPARQL requests to a grant: no ``SERVICE``; updates only on graphs it may write.

Queries are bounded by the dataset the engine receives (the server passes only the grant's
graphs), so a query is checked for one thing only: ``SERVICE`` would reach past that dataset.
An update runs on the whole store, so its graphs are read from its algebra (rdflib's SPARQL
parser) and each one is checked: every graph it writes must be of a scope the grant may write,
every graph its ``WHERE`` reads of a scope it may read (the registry of graph families decides,
:mod:`provenance.stores.graph_families`: the embedder record, of no scope, is read by every
token and written by none). What cannot be bounded from the text is
refused: the default graph (shared by every scope), ``GRAPH ?variable`` (unless ``USING NAMED``
bounds it to the listed graphs, as the protocol's ``using-named-graph-uri`` does), ``LOAD``,
``SERVICE``, ``CLEAR``/``DROP`` of ``DEFAULT``, ``NAMED`` or ``ALL``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from em_plugin.access.tokens import AccessDenied, Grant
from provenance.stores.graph_families import family_of
from provenance.stores.sparql_errors import syntax_error_message
from provenance.stores.union import with_standard_prefixes

__all__ = ["UpdateGraphs", "check_query", "check_update"]

_GRAPH_NODES = ("Graph", "GraphGraphPattern")
_SCRATCH_BASE = "http://127.0.0.1/"  # relative IRIs parse as they do at the endpoint
_REACHES_OUT = re.compile(r"\b(LOAD|SERVICE)\b", re.IGNORECASE)
_TRIPLE_NODES = ("TriplesBlock", "TriplesSameSubject", "TriplesSameSubjectPath")


@dataclass(frozen=True)
class UpdateGraphs:
    """The graphs an allowed update touches."""

    reads: frozenset[str]
    """Graphs its ``WHERE`` clauses (and ``ADD``/``COPY``/``MOVE`` sources) read."""
    writes: frozenset[str]
    """Graphs it inserts into, deletes from, creates, clears or drops."""


def check_query(query: str) -> None:
    """Refuse a query that the dataset cannot bound.

    Raises:
        AccessDenied: 400 when it does not parse, 403 when it uses ``SERVICE``.
    """
    from rdflib.plugins.sparql.parser import parseQuery

    try:
        tree = parseQuery(query)
    except Exception as exc:  # pyparsing and rdflib raise errors with no common public root
        fault = _parse_fault(query, exc, update=False)
        raise AccessDenied(f"the query does not parse: {fault}", 400) from exc
    if any(node.name == "ServiceGraphPattern" for node, _ in _walk(tree, False)):
        raise AccessDenied("SERVICE is refused: it would query past the graphs of your scopes")


def check_update(update: str, grant: Grant) -> UpdateGraphs:
    """Return the graphs an update touches, once each is allowed by ``grant``.

    Args:
        update: The SPARQL 1.1 update text.
        grant: The caller's grant.

    Returns:
        The graphs it reads and writes.

    Raises:
        AccessDenied: 400 when it does not parse; 403 with the first graph or clause that the
            grant does not allow, or that cannot be bounded.
    """
    if grant.access != "read-write":
        raise AccessDenied(f"token {grant.name!r} is read-only; updates need a read-write token")
    reads: set[str] = set()
    writes: set[str] = set()
    if not _replace_form(update, reads, writes):
        from rdflib.plugins.sparql.algebra import translateUpdate
        from rdflib.plugins.sparql.parser import parseUpdate

        try:
            operations = translateUpdate(parseUpdate(update)).algebra
        except Exception as exc:  # pyparsing and rdflib raise errors with no common public root
            fault = _parse_fault(update, exc, update=True)
            raise AccessDenied(f"the update does not parse: {fault}", 400) from exc
        for operation in operations:
            _operation(operation, reads, writes)
    for iri in sorted(writes):
        if not grant.may_write(iri):
            raise AccessDenied(_refusal(grant, iri, "write"))
    for iri in sorted(reads - writes):
        if not grant.may_read(iri):
            raise AccessDenied(_refusal(grant, iri, "read"))
    return UpdateGraphs(frozenset(reads), frozenset(writes))


def _parse_fault(text: str, exc: Exception, *, update: bool) -> str:
    """Name a syntax fault at its line and column (:mod:`provenance.stores.sparql_errors`).

    rdflib's parser often backtracks to the start of the text (``at char 0``) for a fault at
    its end, so the text is parsed again by Oxigraph, on an empty scratch store, for its
    position; never a text that could reach past this process (``LOAD``, ``SERVICE``).
    """
    import pyoxigraph as ox

    if _REACHES_OUT.search(text) is None:
        full = with_standard_prefixes(text)
        scratch = ox.Store()
        try:
            if update:
                scratch.update(full, base_iri=_SCRATCH_BASE)
            else:
                scratch.query(full, base_iri=_SCRATCH_BASE)
        except SyntaxError as found:
            return syntax_error_message(text, str(found), shift=len(full) - len(text))
        except (OSError, RuntimeError, ValueError):
            pass  # it parses there: rdflib's message is all there is
    return syntax_error_message(text, str(exc))


_IRI = r"<[^<>\"{}|^`\\\x00-\x20]*>"
_REPLACE = re.compile(
    rf"""\s*
    (?:DELETE\s*\{{\s*GRAPH\s+\?g\s*\{{\s*\?s\s+\?p\s+\?o\s*\}}\s*\}}\s*
       WHERE\s*\{{\s*VALUES\s+\?g\s*\{{(?P<cleared>(?:\s*{_IRI})+)\s*\}}\s*
       GRAPH\s+\?g\s*\{{\s*\?s\s+\?p\s+\?o\s*\}}\s*\}}\s*;\s*)?
    (?P<dropped>(?:DROP\s+SILENT\s+GRAPH\s+{_IRI}\s*;\s*)*)
    INSERT\s+DATA\s*\{{(?P<data>.*)\}}\s*""",
    re.VERBOSE | re.DOTALL,
)


def _replace_form(update: str, reads: set[str], writes: set[str]) -> bool:
    """Read the graphs of the remote backend's replace without rdflib's (slow) parser.

    The form is fixed: an optional ``DELETE … WHERE { VALUES ?g { <iri> … } GRAPH ?g … }``,
    ``DROP SILENT GRAPH <iri>`` operations, then one ``INSERT DATA { … }`` whose body is parsed
    as TriG by Oxigraph (SPARQL's quad data is a subset of TriG, read the same way). Anything
    else, or a body TriG refuses, goes to the full parser instead.
    """
    import pyoxigraph as ox

    match = _REPLACE.fullmatch(update)
    if match is None:
        return False
    try:
        quads = ox.parse(match["data"].encode("utf-8"), ox.RdfFormat.TRIG)
        graphs = {quad.graph_name for quad in quads}
    except (SyntaxError, ValueError, UnicodeError):
        return False
    if not all(isinstance(g, ox.NamedNode) for g in graphs):
        return False  # the default graph or a blank node: let the full check refuse it
    cleared = re.findall(_IRI, match["cleared"] or "") + re.findall(_IRI, match["dropped"])
    named = {g.value for g in graphs if isinstance(g, ox.NamedNode)}
    writes.update(named | {iri[1:-1] for iri in cleared})
    reads.update(iri[1:-1] for iri in re.findall(_IRI, match["cleared"] or ""))
    return True


def _operation(op: Any, reads: set[str], writes: set[str]) -> None:
    name = op.name
    if name in ("InsertData", "DeleteData", "DeleteWhere"):
        if _get(op, "triples"):
            raise AccessDenied(f"{_sparql(name)} on the default graph is refused: name a graph")
        writes.update(_iris(_get(op, "quads") or {}, f"{_sparql(name)} GRAPH"))
        return
    if name == "Modify":
        _modify(op, reads, writes)
        return
    if name == "Load":
        raise AccessDenied("LOAD is refused: the server does not fetch URLs for clients")
    if name in ("Clear", "Drop", "Create"):
        writes.add(_named(_get(op, "graphiri"), name.upper()))
        return
    if name in ("Add", "Copy", "Move"):
        source, target = (_named(g, name.upper()) for g in op.graph)
        (writes if name == "Move" else reads).add(source)
        writes.add(target)
        return
    raise AccessDenied(f"the update operation {name} is not supported here")


def _modify(op: Any, reads: set[str], writes: set[str]) -> None:
    from rdflib.term import Variable

    with_graph = _get(op, "withClause")
    if with_graph is not None:
        with_graph = _named(with_graph, "WITH")
    listed = None if _get(op, "using") else _values_graphs(_get(op, "where"))
    for clause_name in ("delete", "insert"):
        clause = _get(op, clause_name)
        if clause is None:
            continue
        for graph in _get(clause, "quads") or {}:
            if listed is not None and graph == listed[0]:
                writes.update(listed[1])
            else:
                writes.add(_named(graph, f"{clause_name.upper()} GRAPH"))
        if _get(clause, "triples"):
            if with_graph is None:
                raise AccessDenied(
                    f"{clause_name.upper()} on the default graph is refused: use WITH <graph> "
                    "or GRAPH <graph> { … }"
                )
            writes.add(with_graph)
    if listed is not None:  # the WHERE reads exactly the listed graphs
        reads.update(listed[1])
        return
    using = _get(op, "using") or []
    defaults = [_named(_get(u, "default") or _get(u, "named"), "USING") for u in using]
    reads.update(defaults)
    # USING NAMED makes the WHERE's named graphs exactly those: GRAPH ?g ranges over them only.
    bounded = any(_get(u, "named") is not None for u in using)
    read_default = False
    for node, in_graph in _walk(_get(op, "where"), False):
        if node.name == "ServiceGraphPattern":
            raise AccessDenied("SERVICE is refused: it would query past the graphs of your scopes")
        if node.name in _GRAPH_NODES:
            term = _get(node, "term")
            if bounded and isinstance(term, Variable):
                continue  # a variable: bound by USING NAMED, whose graphs are checked above
            reads.add(_named(term, "GRAPH in WHERE"))
        elif not in_graph and _has_triples(node):
            read_default = True
    if read_default:
        if using:
            return  # USING <g> makes the WHERE's default graph exactly those graphs
        if with_graph is None:
            raise AccessDenied(
                "a WHERE that reads the default graph is refused: use USING <graph>, "
                "WITH <graph> or GRAPH <graph> { … }"
            )
        reads.add(with_graph)


def _values_graphs(where: Any) -> tuple[Any, set[str]] | None:
    """``(?g, IRIs)`` for ``WHERE { VALUES ?g { <iri> … } GRAPH ?g { triple patterns } }``.

    That form (the remote backend's replace of graphs) reads, and lets a template write, only
    the listed graphs: every solution binds ``?g`` to one of them. Any other shape gives None.
    """
    from rdflib.term import URIRef, Variable

    leaves = _join_leaves(where)
    values = [n for n in leaves if n.name == "ToMultiSet"]
    graphs = [n for n in leaves if n.name == "Graph"]
    if len(values) != 1 or len(graphs) != 1 or len(leaves) != 2:
        return None
    rows = _get(_get(values[0], "p"), "res") or []
    variable = _get(graphs[0], "term")
    if not rows or not isinstance(variable, Variable):
        return None
    if not all(list(row) == [variable] and isinstance(row[variable], URIRef) for row in rows):
        return None
    inner = _join_leaves(_get(graphs[0], "p"))
    if not all(n.name == "BGP" and _plain(_get(n, "triples") or []) for n in inner):
        return None
    return variable, {str(row[variable]) for row in rows}


def _join_leaves(node: Any) -> list[Any]:
    """The operands of nested Joins, without the empty BGPs the translation adds."""
    name = getattr(node, "name", None) if isinstance(node, dict) else None
    if name is None:
        return [node]
    if name == "Join":
        return _join_leaves(_get(node, "p1")) + _join_leaves(_get(node, "p2"))
    if name == "BGP" and not _get(node, "triples"):
        return []
    return [node]


def _plain(triples: Any) -> bool:
    from rdflib.term import Node

    return all(isinstance(t, tuple) and all(isinstance(x, Node) for x in t) for t in triples)


def _walk(node: Any, in_graph: bool) -> Iterator[tuple[Any, bool]]:
    """Every parse or algebra node under ``node``, with whether a GRAPH clause encloses it."""
    stack: list[tuple[Any, bool]] = [(node, in_graph)]
    while stack:
        item, inside = stack.pop()
        if isinstance(item, str) or item is None:
            continue
        if isinstance(item, dict):
            name = getattr(item, "name", None)
            if name is not None:
                yield item, inside
            inner = inside or name in _GRAPH_NODES
            stack.extend((value, inner) for value in item.values())
        elif isinstance(item, list | tuple) or hasattr(item, "__iter__"):
            try:
                stack.extend((value, inside) for value in item)
            except TypeError:
                continue


def _get(node: Any, key: str) -> Any:
    # CompValue.get resolves variables against a query context; the raw value is wanted here.
    return dict.get(node, key) if isinstance(node, dict) else None


def _has_triples(node: Any) -> bool:
    if node.name == "BGP":
        return bool(_get(node, "triples"))
    return node.name in _TRIPLE_NODES


def _iris(quads: Any, where: str) -> Iterator[str]:
    for graph in quads:
        yield _named(graph, where)


def _named(term: Any, where: str) -> str:
    from rdflib.term import URIRef

    if isinstance(term, URIRef):
        return str(term)
    if isinstance(term, str) and term.upper() in ("DEFAULT", "NAMED", "ALL"):
        raise AccessDenied(f"{where} {term.upper()} is refused: name each graph")
    raise AccessDenied(f"{where} ?{term} is refused: graphs must be named by IRIs, not variables")


def _sparql(name: str) -> str:
    return {"InsertData": "INSERT DATA", "DeleteData": "DELETE DATA"}.get(name, "DELETE WHERE")


def _refusal(grant: Grant, iri: str, what: str) -> str:
    family = family_of(iri)
    if family is None:
        owner = "no family of the store"
    elif family.scope_of(iri) is None:
        owner = f"no scope: the store's {family.name} record, which tokens only read"
    else:
        owner = f"scope {family.scope_of(iri)!r}"
    allowed = ", ".join(sorted(grant.scopes))
    return (
        f"token {grant.name!r} may not {what} <{iri}> (a graph of {owner}); "
        f"it opens {grant.access} access to: {allowed}"
    )
