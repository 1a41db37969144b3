"""Parsing the query command's arguments: NAME, FILE.rq or ``--sparql TEXT``, and ``--bind k=v``.

Everything else a command does is one library call (files: :mod:`provenance.workflow_files`,
shapes: :mod:`provenance.validation`, exports: :func:`provenance.export.export_store`).
Nothing here prints; :mod:`em_plugin.cli` prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from provenance.errors import QueryError

if TYPE_CHECKING:
    from provenance.queries import NamedQuery

__all__ = ["parse_binding", "resolve_query"]


def resolve_query(name: str | None, sparql: str | None) -> tuple[str, NamedQuery | None]:
    """Return the SPARQL text to run and, for a named or documented query, its description.

    Args:
        name: A named query (``tool-pairs``) or a ``.rq`` file path.
        sparql: Query text given with ``--sparql``.

    Raises:
        QueryError: When both or neither are given, the name is unknown or the file unreadable.
    """
    from provenance.queries import load_query, parse_query

    if (name is None) == (sparql is None):
        raise QueryError("give a query NAME, a FILE.rq or --sparql TEXT (exactly one)")
    if sparql is not None:
        return sparql, None
    assert name is not None
    path = Path(name)
    if path.suffix == ".rq" or path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise QueryError(f"cannot read query file {path}: {exc.strerror}") from None
        # A .rq file with the documenting header gets its parameter kinds; a bare one runs as is.
        if "# description:" not in text:
            return text, None
        named = parse_query(text, path.stem)
        return named.text, named
    named = load_query(name)
    return named.text, named


def parse_binding(text: str, query: NamedQuery | None = None) -> tuple[str, Any]:
    """Turn a ``--bind`` value into ``(variable, RDF term)``.

    ``k=<iri>`` binds an IRI. Anything else binds a plain string literal (``k=3`` is the string
    ``"3"``), except that a parameter the named query documents as ``(iri)`` binds an IRI. A
    leading ``?`` or ``$`` on the variable is dropped.

    Raises:
        QueryError: Without ``=``, for a name that is not a variable name, for a bad IRI, or for
            a name the named query does not take (the message lists the ones it takes).
    """
    from rdflib import Literal, URIRef

    name, sep, value = text.partition("=")
    name = name.strip().lstrip("?$")
    if not sep or not name or not name.replace("_", "a").isalnum():
        raise QueryError(f"--bind expects NAME=VALUE or NAME=<iri>, got {text!r}")
    if len(value) >= 2 and value.startswith("<") and value.endswith(">"):
        term: Any = URIRef(_check_iri(name, value[1:-1]))
    else:
        term = Literal(value)
    if query is not None:
        kinds = {p.name: p.kind for p in query.parameters}
        if name not in kinds:
            valid = ", ".join(kinds) or "none"
            raise QueryError(f"query {query.name!r} has no parameter {name!r}; valid: {valid}")
        if kinds[name] == "iri" and isinstance(term, Literal):
            term = URIRef(_check_iri(name, value))
    return name, term


def _check_iri(name: str, iri: str) -> str:
    if not iri or any(c in iri for c in '<>" {}|\\^`\n\r\t'):
        raise QueryError(f"--bind {name}: {iri!r} is not a valid IRI")
    return iri
