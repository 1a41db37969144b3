"""The workflow table of one scope, kept in memory and in step with the store.

A page of a large scope cannot be a SPARQL query of its own: every ``ORDER BY ... LIMIT`` and
``COUNT`` over the workflow nodes scans the whole scope (seconds at 100k workflows in
Oxigraph). The table is therefore built once from five SPARQL queries over the scope (the
workflow nodes, their step and call counts, tools, agents and instruction texts; no workflow is
loaded or parsed), and kept current through the store's change log: each request reads the
scope's change-log position (one small query), and when it moved, only the workflows the log
names are read again (``VALUES ?g``), or the whole scope when the log cannot tell. Paging,
sorting and filtering then run in memory, with the unfiltered orders cached.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from rdflib import Literal, URIRef

from provenance.stores import WorkflowStore
from provenance.vocab import PREFIXES, graph_iri

__all__ = ["TableRow", "WorkflowTable", "instant"]

_HEAD = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in PREFIXES.items())
_NODES = (
    _HEAD
    + """SELECT ?g ?id ?title ?created ?outcome WHERE {
  GRAPH ?g {
    ?wf a pl:Workflow ; wf:scope ?scope ; dcterms:identifier ?id .
    OPTIONAL { ?wf dcterms:title ?title }
    OPTIONAL { ?wf wf:createdText ?created }
    OPTIONAL { ?wf prov:wasGeneratedBy ?run . ?run wf:outcome ?outcome }
  }
}"""
)
_STEPS = (
    _HEAD
    + """SELECT ?g (COUNT(?step) AS ?steps) WHERE {
  GRAPH ?g { ?wf wf:scope ?scope . ?step p-plan:isStepOfPlan ?wf }
} GROUP BY ?g"""
)
_CALLS = (
    _HEAD
    + """SELECT ?g (COUNT(?step) AS ?calls) WHERE {
  GRAPH ?g { ?wf wf:scope ?scope . ?step a wf:FunctionCallStep }
} GROUP BY ?g"""
)
_TOOLS = (
    _HEAD
    + """SELECT DISTINCT ?g ?name WHERE {
  GRAPH ?g { ?wf wf:scope ?scope . ?tool wf:toolName ?name }
}"""
)
_AGENTS = (
    _HEAD
    + """SELECT DISTINCT ?g ?name WHERE {
  GRAPH ?g { ?wf wf:scope ?scope . ?agent a prov:SoftwareAgent ; wf:agentName ?name }
}"""
)
_TEXTS = (
    _HEAD
    + """SELECT ?g ?text WHERE {
  GRAPH ?g { ?wf wf:scope ?scope . ?step wf:instructionText ?text }
}"""
)
_MAX_VALUES = 512  # graphs per VALUES block when catching up
_MAX_CACHED_SEARCHES = 16


@dataclass
class TableRow:
    """One workflow of the table, with what the filters look at."""

    id: str
    title: str | None = None
    created: str | None = None
    outcome: str | None = None
    steps: int = 0
    calls: int = 0
    tools: set[str] = field(default_factory=set)
    agent_names: set[str] = field(default_factory=set)
    text: str = ""
    day: date | None = None

    @property
    def agents(self) -> int:
        """How many software agents made calls in it."""
        return len(self.agent_names)


class WorkflowTable:
    """The rows of one scope's workflows, caught up with the store on each :meth:`rows` call.

    Args:
        store: The store.
        scope: The scope.
    """

    def __init__(self, store: WorkflowStore, scope: str) -> None:
        self.store = store
        self.scope = scope
        self._rows: dict[str, TableRow] = {}
        self._position: tuple[int, str] | None = None
        self._orders: dict[tuple[str, bool], list[TableRow]] = {}
        self._matches: dict[tuple[str, bool, Hashable], tuple[list[TableRow], list[TableRow]]]
        self._matches = {}
        self._lock = threading.Lock()

    def rows(self) -> dict[str, TableRow]:
        """Return ``id -> row`` for the scope as the store holds it now."""
        with self._lock:
            position = self.store.position(self.scope)
            if self._position is None:
                self._rows = self._read(None)
            elif position != self._position:
                changed = self.store.marker(self.scope).since(*self._position)
                if changed is None:
                    self._rows = self._read(None)
                else:
                    self._catch_up(changed)
            if position != self._position:
                self._orders = {}
                self._position = position
            return self._rows

    def ordered(self, key: str, descending: bool) -> list[TableRow]:
        """Return every row sorted by a column (ties by id), cached until the store changes."""
        rows = self.rows()
        with self._lock:
            cached = self._orders.get((key, descending))
            if cached is None:
                cached = _sorted(rows.values(), key, descending)
                self._orders[(key, descending)] = cached
            return cached

    def matching(
        self, key: str, descending: bool, where: Hashable, keep: Callable[[TableRow], bool]
    ) -> list[TableRow]:
        """Return the sorted rows that ``keep`` accepts.

        The last few answers are cached by ``where`` (paging through a search costs a slice) until
        the store changes.
        """
        ordered = self.ordered(key, descending)
        cache_key = (key, descending, where)
        with self._lock:
            hit = self._matches.get(cache_key)
        if hit is not None and hit[0] is ordered:
            return hit[1]
        found = [row for row in ordered if keep(row)]
        with self._lock:
            if len(self._matches) >= _MAX_CACHED_SEARCHES:
                self._matches.pop(next(iter(self._matches)))
            self._matches[cache_key] = (ordered, found)
        return found

    def _catch_up(self, changed: Iterable[str]) -> None:
        ids = sorted(changed)
        for start in range(0, len(ids), _MAX_VALUES):
            chunk = ids[start : start + _MAX_VALUES]
            fresh = self._read([graph_iri(i, self.scope) for i in chunk])
            for workflow_id in chunk:
                self._rows.pop(workflow_id, None)
            self._rows.update(fresh)

    def _read(self, graphs: Sequence[URIRef] | None) -> dict[str, TableRow]:
        select = self._selector(graphs)
        rows: dict[str, TableRow] = {}
        by_graph: dict[str, TableRow] = {}
        for r in select(_NODES):
            row = TableRow(
                id=str(r["id"]),
                title=_text(r.get("title")),
                created=_text(r.get("created")),
                outcome=_text(r.get("outcome")),
            )
            row.day = _day(row.created)
            row.text = " ".join(filter(None, (row.id, row.title))).lower()
            rows[row.id] = row
            by_graph[str(r["g"])] = row
        for r in select(_STEPS):
            if (hit := by_graph.get(str(r["g"]))) is not None:
                hit.steps = int(str(r["steps"]))
        for r in select(_CALLS):
            if (hit := by_graph.get(str(r["g"]))) is not None:
                hit.calls = int(str(r["calls"]))
        for r in select(_TOOLS):
            if (hit := by_graph.get(str(r["g"]))) is not None:
                hit.tools.add(str(r["name"]))
        for r in select(_AGENTS):
            if (hit := by_graph.get(str(r["g"]))) is not None:
                hit.agent_names.add(str(r["name"]))
        texts: dict[str, list[str]] = {}
        for r in select(_TEXTS):
            texts.setdefault(str(r["g"]), []).append(str(r["text"]))
        for name, found in texts.items():
            if (hit := by_graph.get(name)) is not None:
                hit.text = " ".join([hit.text, *found]).lower()
        return rows

    def _selector(self, graphs: Sequence[URIRef] | None) -> Callable[[str], list[dict[str, Any]]]:
        scope = Literal(self.scope)

        def select(text: str) -> list[dict[str, Any]]:
            if graphs is not None:
                values = " ".join(_iri(g) for g in graphs)
                text = text.replace("WHERE {", f"WHERE {{ VALUES ?g {{ {values} }}", 1)
            return self.store.backend.select(text, {"scope": scope}).dicts()

        return select


def _sorted(rows: Iterable[TableRow], key: str, descending: bool) -> list[TableRow]:
    by_id = sorted(rows, key=lambda r: r.id, reverse=descending)
    if key == "id":
        return by_id
    present = [r for r in by_id if _value(r, key) is not None]
    missing = [r for r in by_id if _value(r, key) is None]
    present.sort(key=lambda r: _value(r, key), reverse=descending)
    # Unknown values go last whichever the direction, as SPARQL puts unbound ones first.
    return present + missing


def _value(row: TableRow, key: str) -> Any:
    if key == "created":
        return row.created and instant(row.created)
    return getattr(row, key)


def instant(text: str) -> Any:
    """Return the time an ISO 8601 text names (UTC when it has no offset), or ``None``."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment


def _day(text: str | None) -> date | None:
    moment = instant(text) if text else None
    return None if moment is None else moment.astimezone(UTC).date()


def _iri(name: URIRef) -> str:
    text = str(name)
    if any(c in text for c in '<>"{}|^`\\ \t\n'):
        raise ValueError(f"not an IRI the store writes: {text!r}")
    return f"<{text}>"


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
