"""What the panel reads from the store: scopes, a page of workflows, tools, suggestion records.

Every question is SPARQL run in the store (aggregates, ``ORDER BY``, ``LIMIT``/``OFFSET``);
no page loads every workflow. A page of the workflow table is two queries over the workflow
nodes (the page, the total) plus one over the page's own graphs (step, call and agent counts).
Whole-store aggregates (scopes, tools) are cached until the store's change markers move, so a
second look costs one small query. User values reach the queries as bindings, never as text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from rdflib import Literal, URIRef
from rdflib.namespace import XSD

from provenance import model as _model
from provenance.stores import WorkflowStore
from provenance.vocab import PREFIXES

__all__ = [
    "OUTCOME_CHOICES",
    "SORT_KEYS",
    "Catalog",
    "ScopeSummary",
    "ToolSummary",
    "WorkflowFilter",
    "WorkflowPage",
    "WorkflowRow",
]

# provenance.model.OUTCOMES comes with workflow outcomes; these are its values.
_OUTCOMES: tuple[str, ...] = getattr(_model, "OUTCOMES", ("success", "failure", "abandoned"))
OUTCOME_CHOICES: tuple[str, ...] = (*_OUTCOMES, "unknown")
"""Outcome filter values: the model's outcomes and ``unknown`` (none recorded)."""
SORT_KEYS: tuple[str, ...] = ("id", "title", "created", "outcome", "steps", "calls", "agents")
"""Columns the workflow table sorts by."""

_HEAD = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in PREFIXES.items())
# The workflow node of each graph, with what the table shows and filters on.
_NODE = """
  GRAPH ?g {
    ?wf a pl:Workflow ; wf:scope ?scope ; dcterms:identifier ?id .
    OPTIONAL { ?wf dcterms:title ?title }
    OPTIONAL { ?wf dcterms:created ?created }
    OPTIONAL { ?wf prov:wasGeneratedBy/wf:outcome ?outcome }
  }
"""
# The size of a graph's plan: its steps, call steps and agents.
_SIZE = """
  GRAPH ?g {
    ?wf a pl:Workflow .
    OPTIONAL {
      ?step p-plan:isStepOfPlan ?wf .
      OPTIONAL { ?step a wf:FunctionCallStep . BIND(?step AS ?call) }
    }
  }
"""
_AGENTS = """
  GRAPH ?g { ?agentNode a prov:SoftwareAgent }
"""
_FILTERS = {
    "text": """FILTER(CONTAINS(LCASE(STR(?id)), ?q) || CONTAINS(LCASE(COALESCE(?title, "")), ?q)
         || EXISTS { GRAPH ?g { ?anyStep wf:instructionText ?anyText
                                FILTER(CONTAINS(LCASE(?anyText), ?q)) } })""",
    "tool": "FILTER EXISTS { GRAPH ?g { ?anyTool wf:toolName ?tool } }",
    "agent": "FILTER EXISTS { GRAPH ?g { ?anyAgent wf:agentName ?agent } }",
    "outcome": "FILTER(BOUND(?outcome) && STR(?outcome) = ?want)",
    "unknown": "FILTER(!BOUND(?outcome))",
    "since": "FILTER(BOUND(?created) && ?created >= ?since)",
    "until": "FILTER(BOUND(?created) && ?created < ?until)",
}
_SCOPES = (
    _HEAD
    + """SELECT ?scope (COUNT(DISTINCT ?g) AS ?workflows) (MAX(?created) AS ?latest) WHERE {
  GRAPH ?g { ?wf a pl:Workflow ; wf:scope ?scope . OPTIONAL { ?wf dcterms:created ?created } }
} GROUP BY ?scope ORDER BY ?scope"""
)
_SCOPE_STEPS = (
    _HEAD
    + """SELECT ?scope (COUNT(?step) AS ?steps) WHERE {
  GRAPH ?g { ?wf a pl:Workflow ; wf:scope ?scope . ?step p-plan:isStepOfPlan ?wf }
} GROUP BY ?scope"""
)
_SCOPE_TOOLS = (
    _HEAD
    + """SELECT ?scope (COUNT(DISTINCT ?name) AS ?tools) WHERE {
  GRAPH ?g { ?wf a pl:Workflow ; wf:scope ?scope . ?tool wf:toolName ?name }
} GROUP BY ?scope"""
)
_TOOL_CALLS = (
    _HEAD
    + """SELECT ?tool (COUNT(DISTINCT ?exec) AS ?calls) (COUNT(DISTINCT ?failed) AS ?failures)
       (COUNT(DISTINCT ?g) AS ?workflows) WHERE {
  GRAPH ?g {
    ?wf a pl:Workflow ; wf:scope ?scope .
    ?exec a ?kind .
    VALUES ?kind { wf:FunctionCall wf:FailedCall }
    # A planned call has its tool on its plan step; a failed one (and any call in graphs
    # of earlier versions) on itself.
    { ?exec p-plan:correspondsToStep/wf:tool/wf:toolName ?tool }
    UNION { ?exec wf:tool/wf:toolName ?tool }
    OPTIONAL {
      { ?exec a wf:FailedCall } UNION { ?exec wf:outcome "failure" }
      BIND(?exec AS ?failed)
    }
  }
} GROUP BY ?tool ORDER BY DESC(?calls) ?tool"""
)
_TOOL_PAIRS = (
    _HEAD
    + """SELECT ?tool ?next (COUNT(?step) AS ?count) WHERE {
  GRAPH ?g {
    ?wf a pl:Workflow ; wf:scope ?scope .
    ?step wf:nextCall ?following ; wf:tool/wf:toolName ?tool .
    ?following wf:tool/wf:toolName ?next .
  }
} GROUP BY ?tool ?next ORDER BY DESC(?count) ?tool ?next"""
)
_RECORDS = (
    _HEAD
    + """SELECT ?session ?time ?rank ?text ?tool ?score WHERE {
  ?activity a wf:Suggestion ; wf:sessionId ?session ; wf:scope ?scope .
  ?suggestion a wf:SuggestedStep ; prov:wasGeneratedBy ?activity ; wf:rank ?rank .
  { ?suggestion prov:wasDerivedFrom ?memory }
  UNION {
    ?suggestion prov:wasGeneratedBy/prov:used ?memory .
    FILTER NOT EXISTS { ?suggestion prov:wasDerivedFrom ?any }
  }
  ?memory dcterms:identifier ?workflow .
  OPTIONAL { ?activity prov:startedAtTime ?time }
  OPTIONAL { ?suggestion wf:suggestedText ?text }
  OPTIONAL { ?suggestion wf:suggestedTool ?tool }
  OPTIONAL { ?suggestion wf:score ?score }
} ORDER BY DESC(?time) ?rank LIMIT 200"""
)
_AGENT_NAMES = (
    _HEAD
    + """SELECT DISTINCT ?name WHERE {
  GRAPH ?g { ?wf a pl:Workflow ; wf:scope ?scope . ?agent wf:agentName ?name }
} ORDER BY ?name"""
)


@dataclass(frozen=True)
class ScopeSummary:
    """One scope's counts and latest activity."""

    scope: str
    workflows: int
    steps: int
    tools: int
    latest: str | None


@dataclass(frozen=True)
class WorkflowRow:
    """One row of the workflow table."""

    id: str
    title: str | None
    created: str | None
    outcome: str | None
    steps: int = 0
    calls: int = 0
    agents: int = 0


@dataclass(frozen=True)
class WorkflowFilter:
    """What narrows the workflow table (every field optional)."""

    text: str = ""
    tool: str = ""
    agent: str = ""
    outcome: str = ""
    since: date | None = None
    until: date | None = None

    def active(self) -> bool:
        """Whether anything narrows the table."""
        return any((self.text, self.tool, self.agent, self.outcome, self.since, self.until))


@dataclass(frozen=True)
class WorkflowPage:
    """A page of the workflow table and the total that matched."""

    rows: list[WorkflowRow]
    total: int
    offset: int
    limit: int


@dataclass(frozen=True)
class ToolSummary:
    """One tool of a scope: its calls, failures and neighbours."""

    tool: str
    calls: int
    failures: int
    workflows: int
    before: list[tuple[str, int]] = field(default_factory=list)
    after: list[tuple[str, int]] = field(default_factory=list)

    @property
    def failure_rate(self) -> float:
        """Failed calls over all calls (0 when it was never called)."""
        return self.failures / self.calls if self.calls else 0.0


class Catalog:
    """The panel's read queries over one store, with whole-store aggregates cached.

    Args:
        store: The store to read (the caller owns it).
    """

    def __init__(self, store: WorkflowStore) -> None:
        self.store = store
        self._cache: dict[tuple[str, ...], tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    # -- scopes ------------------------------------------------------------------------------

    def scopes(self) -> list[ScopeSummary]:
        """Return every scope with its workflow, step and distinct-tool counts."""
        found: list[ScopeSummary] = self._cached(("scopes",), self._scopes)
        return found

    def _scopes(self) -> list[ScopeSummary]:
        steps = {str(r["scope"]): _int(r.get("steps")) for r in self._select(_SCOPE_STEPS)}
        tools = {str(r["scope"]): _int(r.get("tools")) for r in self._select(_SCOPE_TOOLS)}
        return [
            ScopeSummary(
                scope=str(r["scope"]),
                workflows=_int(r.get("workflows")),
                steps=steps.get(str(r["scope"]), 0),
                tools=tools.get(str(r["scope"]), 0),
                latest=_text(r.get("latest")),
            )
            for r in self._select(_SCOPES)
        ]

    def agents(self, scope: str) -> list[str]:
        """Return the agent names of a scope's workflows, sorted."""
        rows = self._cached(("agents", scope), lambda: self._select(_AGENT_NAMES, scope=scope))
        return [str(r["name"]) for r in rows]

    # -- workflows ---------------------------------------------------------------------------

    def workflows(
        self,
        scope: str,
        *,
        where: WorkflowFilter | None = None,
        sort: str = "created",
        descending: bool = True,
        offset: int = 0,
        limit: int = 50,
    ) -> WorkflowPage:
        """Return one page of a scope's workflows, filtered and sorted in the store.

        Args:
            scope: The scope.
            where: What narrows the table.
            sort: One of :data:`SORT_KEYS`.
            descending: Sort direction.
            offset: Rows to skip.
            limit: Rows to return.

        Returns:
            The page and the number of workflows that match.

        Raises:
            ValueError: For an unknown sort key or outcome (the message lists the valid ones).
        """
        if sort not in SORT_KEYS:
            raise ValueError(f"unknown sort {sort!r}; choose one of {', '.join(SORT_KEYS)}")
        where = where or WorkflowFilter()
        clauses, bindings = _filter_clauses(where)
        bindings["scope"] = Literal(scope)
        body = _NODE + "\n".join(clauses)
        total_rows = self._select(
            f"{_HEAD}SELECT (COUNT(*) AS ?n) WHERE {{{body}}}", **_as_kwargs(bindings)
        )
        total = _int(total_rows[0].get("n")) if total_rows else 0
        if sort in ("steps", "calls", "agents"):
            rows = self._sized_page(body, bindings, sort, descending, offset, limit)
        else:
            rows = self._plain_page(body, bindings, sort, descending, offset, limit)
        return WorkflowPage(rows=rows, total=total, offset=offset, limit=limit)

    def _plain_page(
        self,
        body: str,
        bindings: dict[str, Any],
        sort: str,
        descending: bool,
        offset: int,
        limit: int,
    ) -> list[WorkflowRow]:
        key = {"id": "?id", "title": "?title", "created": "?created", "outcome": "?outcome"}[sort]
        order = f"DESC({key})" if descending else f"ASC({key})"
        text = (
            f"{_HEAD}SELECT ?g ?id ?title ?created ?outcome WHERE {{{body}}} "
            f"ORDER BY {order} ?id LIMIT {int(limit)} OFFSET {int(offset)}"
        )
        found = self._select(text, **_as_kwargs(bindings))
        sizes = self._sizes([URIRef(str(r["g"])) for r in found])
        return [_row(r, sizes.get(str(r["g"]), (0, 0, 0))) for r in found]

    def _sized_page(
        self,
        body: str,
        bindings: dict[str, Any],
        sort: str,
        descending: bool,
        offset: int,
        limit: int,
    ) -> list[WorkflowRow]:
        # Sorting by a size needs the size of every matching workflow: one aggregate query.
        if sort == "agents":
            size = "(COUNT(DISTINCT ?agentNode) AS ?agents)"
            pattern = f"OPTIONAL {{ {_AGENTS} }}"
        else:
            size = "(COUNT(DISTINCT ?step) AS ?steps) (COUNT(DISTINCT ?call) AS ?calls)"
            pattern = _SIZE
        order = f"DESC(?{sort})" if descending else f"ASC(?{sort})"
        text = (
            f"{_HEAD}SELECT ?g ?id ?title ?created ?outcome {size} WHERE {{{body}\n{pattern}}} "
            f"GROUP BY ?g ?id ?title ?created ?outcome "
            f"ORDER BY {order} ?id LIMIT {int(limit)} OFFSET {int(offset)}"
        )
        found = self._select(text, **_as_kwargs(bindings))
        sizes = self._sizes([URIRef(str(r["g"])) for r in found])
        return [_row(r, sizes.get(str(r["g"]), (0, 0, 0))) for r in found]

    def _sizes(self, graphs: Sequence[URIRef]) -> dict[str, tuple[int, int, int]]:
        """Steps, calls and agents of each graph (one query each over the page's graphs)."""
        if not graphs:
            return {}
        values = "VALUES ?g { " + " ".join(_iri(g) for g in graphs) + " }"
        steps = self._select(
            f"{_HEAD}SELECT ?g (COUNT(DISTINCT ?step) AS ?steps) (COUNT(DISTINCT ?call) AS ?calls)"
            f" WHERE {{ {values} {_SIZE} }} GROUP BY ?g"
        )
        agents = self._select(
            f"{_HEAD}SELECT ?g (COUNT(DISTINCT ?agentNode) AS ?agents)"
            f" WHERE {{ {values} {_AGENTS} }} GROUP BY ?g"
        )
        counted = {str(r["g"]): _int(r.get("agents")) for r in agents}
        return {
            str(r["g"]): (_int(r.get("steps")), _int(r.get("calls")), counted.get(str(r["g"]), 0))
            for r in steps
        }

    # -- tools -------------------------------------------------------------------------------

    def tools(self, scope: str) -> list[ToolSummary]:
        """Return a scope's tools, most called first, with failures and neighbours.

        ``before``/``after`` are the tools called directly before/after it (consecutive call
        leaves, ``wf:nextCall``), with how often, most frequent first.
        """
        found: list[ToolSummary] = self._cached(("tools", scope), lambda: self._tools(scope))
        return found

    def _tools(self, scope: str) -> list[ToolSummary]:
        pairs = [
            (str(r["tool"]), str(r["next"]), _int(r.get("count")))
            for r in self._select(_TOOL_PAIRS, scope=scope)
        ]
        before: dict[str, list[tuple[str, int]]] = {}
        after: dict[str, list[tuple[str, int]]] = {}
        for tool, following, count in pairs:
            after.setdefault(tool, []).append((following, count))
            before.setdefault(following, []).append((tool, count))
        return [
            ToolSummary(
                tool=str(r["tool"]),
                calls=_int(r.get("calls")),
                failures=_int(r.get("failures")),
                workflows=_int(r.get("workflows")),
                before=before.get(str(r["tool"]), []),
                after=after.get(str(r["tool"]), []),
            )
            for r in self._select(_TOOL_CALLS, scope=scope)
        ]

    # -- suggestion records ------------------------------------------------------------------

    def suggestion_records(self, workflow_id: str, scope: str) -> list[dict[str, Any]]:
        """Return the recorded suggestions that this workflow shaped, newest first (at most 200).

        Each is ``{session, time, rank, text, tool, score}``.
        """
        rows = self._select(_RECORDS, scope=scope, workflow=workflow_id)
        return [
            {
                "session": _text(r.get("session")),
                "time": _text(r.get("time")),
                "rank": _int(r.get("rank")),
                "text": _text(r.get("text")),
                "tool": _text(r.get("tool")),
                "score": _float(r.get("score")),
            }
            for r in rows
        ]

    # -- plumbing ----------------------------------------------------------------------------

    def _select(self, text: str, **bindings: Any) -> list[dict[str, Any]]:
        terms = {
            k: v if isinstance(v, Literal | URIRef) else Literal(v) for k, v in bindings.items()
        }
        return self.store.backend.select(text, terms or None).dicts()

    def _cached(self, key: tuple[str, ...], compute: Callable[[], Any]) -> Any:
        # The change markers move on every save and delete, in any process writing the store.
        version = self.store.markers()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        value = compute()
        with self._lock:
            self._cache[key] = (version, value)
        return value


def _filter_clauses(where: WorkflowFilter) -> tuple[list[str], dict[str, Any]]:
    clauses: list[str] = []
    bindings: dict[str, Any] = {}
    if where.text.strip():
        clauses.append(_FILTERS["text"])
        bindings["q"] = Literal(where.text.strip().lower())
    if where.tool.strip():
        clauses.append(_FILTERS["tool"])
        bindings["tool"] = Literal(where.tool.strip())
    if where.agent.strip():
        clauses.append(_FILTERS["agent"])
        bindings["agent"] = Literal(where.agent.strip())
    if where.outcome:
        if where.outcome not in OUTCOME_CHOICES:
            raise ValueError(
                f"unknown outcome {where.outcome!r}; choose one of {', '.join(OUTCOME_CHOICES)}"
            )
        if where.outcome == "unknown":
            clauses.append(_FILTERS["unknown"])
        else:
            clauses.append(_FILTERS["outcome"])
            bindings["want"] = Literal(where.outcome)
    if where.since is not None:
        clauses.append(_FILTERS["since"])
        bindings["since"] = _midnight(where.since)
    if where.until is not None:
        clauses.append(_FILTERS["until"])
        bindings["until"] = _midnight(where.until + timedelta(days=1))
    return clauses, bindings


def _midnight(day: date) -> Literal:
    moment = datetime.combine(day, time(0, 0), tzinfo=UTC)
    return Literal(moment.isoformat(), datatype=XSD.dateTime)


def _as_kwargs(bindings: dict[str, Any]) -> dict[str, Any]:
    return dict(bindings)


def _iri(name: URIRef) -> str:
    text = str(name)
    if any(c in text for c in '<>"{}|^`\\ \t\n'):
        raise ValueError(f"not an IRI the store writes: {text!r}")
    return f"<{text}>"


def _row(r: dict[str, Any], size: tuple[int, int, int]) -> WorkflowRow:
    return WorkflowRow(
        id=str(r["id"]),
        title=_text(r.get("title")),
        created=_text(r.get("created")),
        outcome=_text(r.get("outcome")),
        steps=size[0],
        calls=size[1],
        agents=size[2],
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int:
    return 0 if value is None else int(float(str(value)))


def _float(value: Any) -> float | None:
    return None if value is None else float(str(value))
