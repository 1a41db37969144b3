"""Ad-hoc SPARQL for the command line: the project's prefixes, errors a person can act on.

A query typed at the command line gets the project's prefixes (``prov``, ``p-plan``, ``wf``,
``pl``, ``dcterms``, ``rdf``, ``rdfs``, ``xsd``, plus ``workflow``, ``graph``, ``tool``,
``agent``) declared unless it declares them itself, on the query's first line, so the line
numbers of a syntax error are the user's own. It then runs as every ad-hoc query does
(:mod:`provenance.stores.union`): over the union of the workflow graphs, each triple once, the
answer ``WorkflowStore.query`` and ``em-plugin serve`` give too. The named queries
(``em-plugin query NAME``) match inside ``GRAPH ?g`` and run in place.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from provenance.errors import QueryError
from provenance.vocab import PREFIXES

if TYPE_CHECKING:
    from provenance.stores import QueryResult, WorkflowStore

__all__ = ["short_error", "union_query", "with_prefixes"]

_DECLARED = re.compile(r"\bPREFIX\s+([A-Za-z][\w\-.]*)?\s*:", re.IGNORECASE)
_MAX_ERROR_CHARS = 300
# Oxigraph's parse errors end with "expected one of ..." and every token it could take, the
# Unicode ranges of a prefixed name included.
_EXPECTED = re.compile(r",?\s*expected (one of )?.*$", re.DOTALL)


def with_prefixes(text: str) -> str:
    """Return ``text`` with the project's prefixes declared in front (those it lacks).

    The declarations share one line with the start of the query, so an error's line number
    is the line of the text as typed.

    Example:
        >>> with_prefixes("PREFIX wf: <urn:x#> SELECT * { ?s wf:p ?o }").count("PREFIX wf:")
        1
    """
    declared = {name or "" for name in _DECLARED.findall(text)}
    head = " ".join(
        f"PREFIX {name}: <{iri}>" for name, iri in PREFIXES.items() if name not in declared
    )
    return f"{head} {text}" if head else text


def union_query(
    store: WorkflowStore, text: str, bindings: dict[str, Any] | None, scope: str | None
) -> QueryResult | bool | Any:
    """Run ad-hoc SPARQL (prefixes added) over the union of the workflow graphs.

    Args:
        store: The store to read.
        text: The query as typed (SELECT, ASK, CONSTRUCT or DESCRIBE; updates are refused).
        bindings: Variable values (rdflib terms), never spliced into the text.
        scope: Only this scope's workflow graphs (``None``: every workflow).

    Returns:
        A :class:`~provenance.stores.QueryResult`, a bool (ASK) or an rdflib Graph.

    Raises:
        QueryError: Bad SPARQL (the message gives the position in the text as typed), an
            update, or a bad binding.
    """
    full = with_prefixes(text)
    try:
        return store.query(full, bindings, scope=scope)
    except QueryError as exc:
        raise QueryError(short_error(str(exc), full, len(full) - len(text))) from None


def short_error(message: str, text: str = "", shift: int = 0) -> str:
    """Shorten a SPARQL error for a person: the position in the text as typed, no token lists.

    Args:
        message: The store's message (Oxigraph: ``... error at 1:120: expected ...``).
        text: The query as it was run (prefixes included), to name an unknown prefix.
        shift: Characters the prefixes added in front of the first line.

    Returns:
        One line of at most 300 characters.
    """
    flat = " ".join(message.split())
    position = re.search(r"(?<![\d.])(\d+):(\d+)(?![\d.])", flat)
    where = ""
    if position is not None:
        line, column = int(position.group(1)), int(position.group(2))
        if "Prefix not found" in flat:
            lines = text.split("\n")
            before = lines[line - 1][: column - 1] if 0 < line <= len(lines) else ""
            name = re.search(r"([A-Za-z][\w\-.]*)?:[\w\-.]*\s*$", before)
            prefix = f"{name.group(1) or ''}:" if name else "a prefix"
            declared = ", ".join(f"{p}:" for p in PREFIXES)
            return (
                f"invalid SPARQL: unknown prefix {prefix} (declared for you: {declared}; "
                "declare others with PREFIX)"
            )
        if line == 1:
            column = max(1, column - shift)
        where = f"line {line}, column {column}"
        flat = flat[: position.start()] + where + flat[position.end() :]
    flat = _EXPECTED.sub("", flat) if len(flat) > 160 else flat
    return flat if len(flat) <= _MAX_ERROR_CHARS else flat[: _MAX_ERROR_CHARS - 1] + "…"
