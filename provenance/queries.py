"""Named SPARQL queries: ``.rq`` files in ``provenance/queries/`` with a documenting header.

Each file starts with a comment header::

    # name: tool-pairs
    # description: Tool transitions ... (continuation lines are indented)
    # parameters:
    #   tool (literal): only transitions from this tool
    # columns: tool, next_tool, count

Parameters are variables a caller may bind; they are bound by variable substitution
(rdflib ``initBindings``, pyoxigraph ``substitutions``), never by editing the query text, so
user-supplied names cannot change a query. Every parameter is also a result column (and a group
key of aggregates) bound in a required pattern, so binding it before evaluation (substitution,
a ``VALUES`` block at the top of the WHERE group) or filtering the rows after gives the same
answer; pyoxigraph's ``substitutions`` also insists on projected variables. The queries run over
the union of the named graphs (one per workflow).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal as TypingLiteral

from rdflib import Graph, Literal, URIRef
from rdflib.term import Identifier, Node

from provenance.errors import QueryError

__all__ = [
    "NamedQuery",
    "QueryParameter",
    "list_queries",
    "load_query",
    "parse_query",
    "query_text",
]

_PARAMETER = re.compile(r"(?P<name>\w+)\s*\((?P<kind>literal|iri)\)\s*:\s*(?P<description>.*)")


@dataclass(frozen=True)
class QueryParameter:
    """A variable of a named query that callers may bind."""

    name: str
    """The variable name, without ``?``."""
    kind: TypingLiteral["literal", "iri"]
    """Whether a plain string binds as a literal or as an IRI."""
    description: str
    """What binding it selects."""


@dataclass(frozen=True)
class NamedQuery:
    """A SPARQL SELECT query with its documentation, loaded from a ``.rq`` file."""

    name: str
    """The query name (the file name without ``.rq``)."""
    text: str
    """The SPARQL text, header included (it is made of comments)."""
    description: str
    """What the query answers."""
    parameters: tuple[QueryParameter, ...]
    """Variables that may be bound."""
    columns: tuple[str, ...]
    """The result columns, in order."""

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The names of :attr:`parameters`."""
        return tuple(p.name for p in self.parameters)

    def bindings(self, **values: str | Identifier | None) -> dict[str, Identifier]:
        """Turn keyword values into variable bindings; ``None`` values are left unbound.

        A ``str`` becomes a literal or an IRI as the parameter's kind says; rdflib terms are
        used as given.

        Raises:
            QueryError: For a name that is not a parameter; the message lists the valid ones.
        """
        known = {p.name: p for p in self.parameters}
        out: dict[str, Identifier] = {}
        for name, value in values.items():
            if name not in known:
                valid = ", ".join(known) or "none"
                raise QueryError(f"query {self.name!r} has no parameter {name!r}; valid: {valid}")
            if value is None:
                continue
            if isinstance(value, Identifier):
                out[name] = value
            elif known[name].kind == "iri":
                out[name] = URIRef(value)
            else:
                out[name] = Literal(value)
        return out

    def execute(
        self, graph: Graph, **values: str | Identifier | None
    ) -> list[dict[str, Node | None]]:
        """Run the query with rdflib (e.g. over ``Dataset(default_union=True)``).

        Returns:
            One dict per row, keyed by :attr:`columns`; unbound cells are ``None``.

        Raises:
            QueryError: For an unknown parameter, or when rdflib fails on the query.
        """
        bindings = self.bindings(**values)
        try:
            with warnings.catch_warnings():
                # rdflib's SPARQL engine calls its own deprecated Dataset.default_context.
                warnings.simplefilter("ignore", DeprecationWarning)
                result = graph.query(self.text, initBindings=bindings)
                rows = [
                    {column: row.get(column) for column in self.columns}  # type: ignore[union-attr]
                    for row in result
                ]
        except Exception as exc:  # rdflib raises parser and evaluation errors of many types
            raise QueryError(f"query {self.name!r} failed: {exc}") from exc
        return rows


def list_queries() -> list[NamedQuery]:
    """Return every named query shipped in ``provenance/queries/``, sorted by name."""
    folder = resources.files("provenance").joinpath("queries")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".rq")), key=lambda f: f.name)
    return [parse_query(f.read_text(encoding="utf-8"), f.name[:-3]) for f in files]


def load_query(name_or_path: str | Path) -> NamedQuery:
    """Load a named query by name (``"tool-pairs"``) or from a ``.rq`` file path.

    Raises:
        QueryError: For an unknown name (the message lists the valid ones), an unreadable file
            or a malformed header.
    """
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or text.endswith(".rq") or "/" in text:
        path = Path(name_or_path)
        try:
            return parse_query(path.read_text(encoding="utf-8"), path.stem)
        except OSError as exc:
            raise QueryError(f"cannot read query file {path}: {exc.strerror}") from None
    queries = {q.name: q for q in list_queries()}
    if text not in queries:
        raise QueryError(f"unknown query {text!r}; valid: {', '.join(queries)}")
    return queries[text]


def query_text(name_or_path: str | Path) -> str:
    """Return the SPARQL text of a named query (what stores run).

    Raises:
        QueryError: As :func:`load_query`.
    """
    return load_query(name_or_path).text


def parse_query(text: str, default_name: str = "query") -> NamedQuery:
    """Parse a ``.rq`` text and its comment header into a :class:`NamedQuery`.

    Raises:
        QueryError: When the header lacks a description or columns, a parameter line is
            malformed, or a parameter is not also a column.
    """
    fields = _header(text)
    name = fields.get("name", default_name).strip() or default_name
    description = " ".join(fields.get("description", "").split())
    columns = tuple(c.strip() for c in fields.get("columns", "").split(",") if c.strip())
    if not description or not columns:
        raise QueryError(f"query {name!r} needs '# description:' and '# columns:' header lines")
    parameters = []
    for line in fields.get("parameters", "").splitlines():
        if not line.strip():
            continue
        match = _PARAMETER.fullmatch(line.strip())
        if match is None:
            raise QueryError(
                f"query {name!r}: parameter line {line.strip()!r} must read "
                "'name (literal|iri): description'"
            )
        kind: TypingLiteral["literal", "iri"] = "iri" if match["kind"] == "iri" else "literal"
        parameters.append(QueryParameter(match["name"], kind, match["description"].strip()))
    missing = [p.name for p in parameters if p.name not in columns]
    if missing:
        raise QueryError(f"query {name!r}: parameters {missing} must also be columns")
    return NamedQuery(name, text, description, tuple(parameters), columns)


def _header(text: str) -> Mapping[str, str]:
    """Read ``# key: value`` lines (indented lines continue the previous key)."""
    fields: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        body = line[1:]
        match = re.match(r"\s?(\w[\w-]*):\s*(.*)", body)
        if match and not body.startswith("  "):
            key = match.group(1).lower()
            fields[key] = match.group(2)
        elif key is not None:
            fields[key] += "\n" + body.strip()
    return fields
