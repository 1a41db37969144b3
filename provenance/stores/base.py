"""The backend protocol: named graphs in, SPARQL out.

A backend (:class:`GraphStore`) stores RDF as named graphs and answers SPARQL over them. Like
LangGraph's ``BaseStore`` it has a small abstract core and builds everything else on it:

=========================  ==================================================================
abstract                   ``replace_graphs``, ``drop_graphs``, ``graph_names``,
                           ``read_graphs``, ``query``, ``close``
built on them              ``triples``, ``has_graph``, ``select``, ``ask``, ``construct``,
                           ``count_triples``, context manager
=========================  ==================================================================

Query semantics shared by every backend:

* the default graph is the **union of the named graphs**; ``graphs=[…]`` narrows the dataset to
  those graphs (they form the default graph and are the only ones ``GRAPH ?g`` can see), which is
  how :class:`~provenance.stores.workflow_store.WorkflowStore` confines a query to one scope;
* ``bindings`` map variable names to rdflib terms; they reach the query as a ``VALUES`` block
  (see :mod:`provenance.stores._sparql`), never spliced in as text;
* ``FROM``/``FROM NAMED`` clauses in the query text do not widen the dataset.

Every library or server failure surfaces as :class:`~provenance.errors.StoreError` (the backend
failed) or :class:`~provenance.errors.QueryError` (the query or a binding is wrong).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

import pyoxigraph as ox
from rdflib import Graph, URIRef
from rdflib.term import Node

from provenance.errors import QueryError, StoreError, WorkflowNotFound
from provenance.stores._terms import Triple, convert_result

__all__ = [
    "Bindings",
    "GraphStore",
    "QueryResult",
    "StoreConfigError",
    "Triple",
    "term_to_json",
]

#: Variable name (with or without ``?``) -> rdflib term (plain str/int/float/bool become literals).
Bindings: TypeAlias = Mapping[str, Any]


class StoreConfigError(StoreError, ValueError):
    """A store spec or option is invalid; raised when the store is opened, never later."""


@dataclass(frozen=True)
class QueryResult:
    """The solutions of a SELECT query.

    Example:
        >>> from rdflib import Literal
        >>> result = QueryResult(("id",), [(Literal("w1"),)])
        >>> [str(row["id"]) for row in result.dicts()]
        ['w1']
        >>> result.records()
        [{'id': 'w1'}]
    """

    columns: tuple[str, ...]
    """The projected variable names, without ``?``, in query order."""
    rows: list[tuple[Node | None, ...]] = field(default_factory=list)
    """One tuple per solution, aligned with :attr:`columns`; ``None`` where unbound."""

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[tuple[Node | None, ...]]:
        return iter(self.rows)

    def dicts(self) -> list[dict[str, Node]]:
        """Return the rows as dicts, leaving unbound variables out."""
        return [
            {
                name: value
                for name, value in zip(self.columns, row, strict=True)
                if value is not None
            }
            for row in self.rows
        ]

    def records(self) -> list[dict[str, Any]]:
        """Return the rows as JSON-ready objects, every column in column order.

        Each value goes through :func:`term_to_json`; an unbound variable is ``None``. This is
        what ``em-plugin query --format json`` prints.
        """
        return [
            {name: term_to_json(value) for name, value in zip(self.columns, row, strict=True)}
            for row in self.rows
        ]

    def column(self, name: str) -> list[Node | None]:
        """Return the values of one column.

        Raises:
            QueryError: When the query projected no such variable.
        """
        try:
            i = self.columns.index(name)
        except ValueError:
            raise QueryError(
                f"no column {name!r} in the result; columns: {', '.join(self.columns)}"
            ) from None
        return [row[i] for row in self.rows]


def term_to_json(value: Any) -> Any:
    """Turn one SPARQL result value (an rdflib term, ``None`` or a plain value) into JSON.

    Args:
        value: The value.

    Returns:
        For an IRI or a blank node its string; for a numeric or boolean literal the number or
        boolean (a decimal as a float); for every other literal its lexical form; ``None`` for
        ``None``; any other value as it is.

    Example:
        >>> from rdflib import Literal, URIRef
        >>> [term_to_json(v) for v in (URIRef("urn:x"), Literal(3), Literal("3"), None)]
        ['urn:x', 3, '3', None]
    """
    from decimal import Decimal

    from rdflib import Literal

    if isinstance(value, Literal):  # before the str check: a Literal is a str
        python = value.toPython()
        if isinstance(python, bool | int | float) and not isinstance(python, Literal):
            return python
        if isinstance(python, Decimal):
            return float(python)
        return str(value)
    if isinstance(value, Node):
        return str(value)
    return value


class GraphStore(ABC):
    """A set of named RDF graphs with SPARQL; the contract every backend passes.

    Attributes:
        read_only: Whether writes are refused.
        path: The directory of a disk store, ``None`` for other stores (derived data such as
            indexes lives beside it).
        cache_key: What identifies a store without a directory across processes (a remote
            endpoint's URLs): its derived data then lives in a local cache
            (``provenance/stores/_cache_dir.py``). ``None``: derived data is kept in memory.
        token_scoped: Whether the store is reached through a bearer token that opens some
            scopes only (``em-plugin serve --token-file``): the store layer then never writes a
            graph that a token may not write (:mod:`provenance.stores.graph_families`).
    """

    read_only: bool = False
    path: Path | None = None
    cache_key: str | None = None
    token_scoped: bool = False

    @abstractmethod
    def replace_graphs(self, graphs: Sequence[tuple[URIRef, Iterable[Triple]]]) -> None:
        """Replace the named graphs, atomically.

        After it, either all hold the new triples or the store is as it was before.

        Args:
            graphs: ``(graph name, triples)`` pairs; each graph is dropped first if it exists.

        Raises:
            StoreError: When a term cannot be stored or the backend fails (nothing is written).
        """

    @abstractmethod
    def drop_graphs(self, names: Iterable[URIRef]) -> None:
        """Remove the named graphs, atomically; names that do not exist are ignored.

        Raises:
            StoreError: When the backend fails (nothing is removed).
        """

    @abstractmethod
    def graph_names(self) -> list[URIRef]:
        """Return the names of the non-empty named graphs, sorted."""

    @abstractmethod
    def read_graphs(self, names: Sequence[URIRef]) -> Iterator[tuple[URIRef, list[Triple]]]:
        """Yield ``(name, triples)`` for each of ``names`` that exists, in the given order.

        Backends fetch in batches, so reading many graphs costs few round trips.
        """

    @abstractmethod
    def query(
        self,
        sparql: str,
        bindings: Bindings | None = None,
        *,
        graphs: Sequence[URIRef] | None = None,
    ) -> QueryResult | bool | Graph:
        """Run a SPARQL query (SELECT, ASK, CONSTRUCT or DESCRIBE).

        Args:
            sparql: The query text.
            bindings: Values for variables, applied safely (never spliced into the text).
            graphs: Narrow the dataset to these graphs; ``None`` means all of them.

        Returns:
            A :class:`QueryResult` for SELECT, a bool for ASK, an rdflib Graph otherwise.

        Raises:
            QueryError: For bad SPARQL or a bad binding; the message names the problem.
            StoreError: When the backend fails.
        """

    def prepare(self, graphs: Sequence[tuple[URIRef, Iterable[Triple]]]) -> None:
        """Do ahead of time the Python work a later :meth:`replace_graphs` of ``graphs`` needs.

        A writer that prepares batch k+1 while batch k is written calls this off its critical
        path (``EpisodicMemory.save_many``; docs/stores.md). It never writes and never fails: a
        graph it cannot prepare is left for :meth:`replace_graphs`, which raises as usual.
        The default does nothing.
        """
        return None  # not abstract: a backend with no such work keeps the default

    def refresh(self) -> None:
        """Let a read-only view see writes committed since it was opened.

        A no-op for backends that always read the latest state.
        """
        return None  # not abstract: most backends always read the latest state

    @abstractmethod
    def close(self) -> None:
        """Release the backend (file locks, connections); further use raises StoreError."""

    # -- built on the core -------------------------------------------------------------------

    def triples(self, name: URIRef) -> Graph:
        """Return one named graph as an rdflib Graph.

        Raises:
            WorkflowNotFound: When the store has no such graph.
        """
        for _, triples in self.read_graphs([name]):
            graph = Graph(identifier=name, bind_namespaces="none")
            for triple in triples:
                graph.add(triple)
            return graph
        raise WorkflowNotFound(f"no graph <{name}> in the store")

    def has_graph(self, name: URIRef) -> bool:
        """Return whether the named graph exists and is not empty."""
        return self.ask("ASK { GRAPH ?g { ?s ?p ?o } }", {"g": name})

    def select(
        self,
        sparql: str,
        bindings: Bindings | None = None,
        *,
        graphs: Sequence[URIRef] | None = None,
    ) -> QueryResult:
        """Run a SELECT query; see :meth:`query`.

        Raises:
            QueryError: When the query is not a SELECT.
        """
        return _expect(self.query(sparql, bindings, graphs=graphs), QueryResult, "SELECT")

    def ask(
        self,
        sparql: str,
        bindings: Bindings | None = None,
        *,
        graphs: Sequence[URIRef] | None = None,
    ) -> bool:
        """Run an ASK query; see :meth:`query`.

        Raises:
            QueryError: When the query is not an ASK.
        """
        return _expect(self.query(sparql, bindings, graphs=graphs), bool, "ASK")

    def construct(
        self,
        sparql: str,
        bindings: Bindings | None = None,
        *,
        graphs: Sequence[URIRef] | None = None,
    ) -> Graph:
        """Run a CONSTRUCT or DESCRIBE query; see :meth:`query`.

        Raises:
            QueryError: When the query is neither.
        """
        return _expect(self.query(sparql, bindings, graphs=graphs), Graph, "CONSTRUCT")

    def count_triples(self) -> int:
        """Return the number of triples over all named graphs."""
        result = self.select("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
        value = result.rows[0][0] if result.rows else None
        return int(str(value)) if value is not None else 0

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _expect(result: Any, kind: type, form: str) -> Any:
    if not isinstance(result, kind):
        raise QueryError(f"expected a {form} query, got one returning {type(result).__name__}")
    return result


def check_batch(
    graphs: Sequence[tuple[URIRef, Iterable[Triple]]],
) -> list[tuple[URIRef, Iterable[Triple]]]:
    """Return the batch as a list, refusing a graph name that appears twice.

    Raises:
        StoreError: On a repeated name (its triples would silently merge).
    """
    batch = list(graphs)
    seen: set[URIRef] = set()
    for name, _ in batch:
        if name in seen:
            raise StoreError(f"graph <{name}> appears twice in one batch")
        seen.add(name)
    return batch


def result_from_oxigraph(
    result: ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples,
) -> QueryResult | bool | Graph:
    """Wrap a pyoxigraph query result (local, or parsed from an endpoint's answer)."""
    converted = convert_result(result)
    if isinstance(converted, tuple):
        return QueryResult(*converted)
    return converted
