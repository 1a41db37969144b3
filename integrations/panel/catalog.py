"""What the panel reads from the store: scopes, a page of workflows, tools, suggestion records.

Every question is SPARQL run in the store (aggregates, never a workflow loaded one by one).
The workflow table of a scope is kept in memory by :class:`~integrations.panel.table.WorkflowTable`
(built from aggregates, caught up through the store's change log), so a page is a slice of it.
Whole-store aggregates (scopes, tools) are cached until the store's change markers move, so a
second look costs one small query. User values reach the queries as bindings, never as text.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from rdflib import Literal, URIRef

from em_plugin.lifecycle import WorkflowVersion
from integrations.panel.table import TableRow, WorkflowTable, instant
from provenance import model as _model
from provenance.lifecycle import (
    read_workflow_record,
    version_id,
    version_of,
    workflow_record_iri,
)
from provenance.model import Workflow
from provenance.stores import WorkflowStore
from provenance.vocab import PREFIXES, workflow_iri

__all__ = [
    "OUTCOME_CHOICES",
    "RETIRED_CHOICES",
    "SORT_KEYS",
    "Catalog",
    "Lifecycle",
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
# Calls in the plan, then failed calls (kept in the run only), then planned calls whose outcome
# is failure; each count a query of its own, as one query with UNIONs is several times slower.
_TOOL_CALLS = (
    _HEAD
    + """SELECT ?tool (COUNT(?step) AS ?calls) (COUNT(DISTINCT ?g) AS ?workflows) WHERE {
  GRAPH ?g { ?wf wf:scope ?scope . ?step a wf:FunctionCallStep ; wf:tool ?t . ?t wf:toolName ?tool }
} GROUP BY ?tool"""
)
_TOOL_FAILED = (
    _HEAD
    + """SELECT ?tool (COUNT(?call) AS ?failures) (COUNT(DISTINCT ?g) AS ?workflows) WHERE {
  GRAPH ?g { ?wf wf:scope ?scope . ?call a wf:FailedCall ; wf:tool ?t . ?t wf:toolName ?tool }
} GROUP BY ?tool"""
)
_TOOL_FAILED_OUTCOMES = (
    _HEAD
    + """SELECT ?tool (COUNT(?call) AS ?failures) WHERE {
  GRAPH ?g {
    ?wf wf:scope ?scope .
    ?call wf:outcome "failure" ; p-plan:correspondsToStep ?step .
    ?step wf:tool ?t . ?t wf:toolName ?tool
  }
} GROUP BY ?tool"""
)
_TOOL_PAIRS = (
    _HEAD
    + """SELECT ?tool ?next (COUNT(?step) AS ?count) WHERE {
  GRAPH ?g {
    ?wf wf:scope ?scope .
    ?step wf:nextCall ?following ; wf:tool ?a .
    ?following wf:tool ?b .
    ?a wf:toolName ?tool .
    ?b wf:toolName ?next .
  }
} GROUP BY ?tool ?next"""
)
# From the workflow's IRI (bound) to the records: an index lookup, whatever the store's size.
_RECORDS = (
    _HEAD
    + """SELECT ?session ?time ?rank ?text ?tool ?score WHERE {
  GRAPH ?record {
    { ?suggestion prov:wasDerivedFrom ?memory . ?suggestion prov:wasGeneratedBy ?activity }
    UNION {
      ?activity prov:used ?memory .
      ?suggestion prov:wasGeneratedBy ?activity .
      FILTER NOT EXISTS { ?suggestion prov:wasDerivedFrom ?any }
    }
    ?activity a wf:Suggestion ; wf:sessionId ?session ; wf:scope ?scope .
    ?suggestion a wf:SuggestedStep ; wf:rank ?rank .
    OPTIONAL { ?activity prov:startedAtTime ?time }
    OPTIONAL { ?suggestion wf:suggestedText ?text }
    OPTIONAL { ?suggestion wf:suggestedTool ?tool }
    OPTIONAL { ?suggestion wf:score ?score }
  }
} ORDER BY DESC(?time) ?rank LIMIT 200"""
)
# Lifecycle records of a scope: retired workflows and the archived older versions (ID@vN) of
# revised ones; a few rows per revised or retired workflow, so read on every table page.
_LIFECYCLE = (
    _HEAD
    + """SELECT ?id ?status ?archived WHERE {
  GRAPH ?g {
    ?record a wf:LifecycleRecord ; wf:scope ?scope ; dcterms:identifier ?id .
    OPTIONAL { ?record wf:status ?status }
    OPTIONAL { ?record wf:archivedVersion ?archived }
  }
}"""
)
RETIRED_CHOICES: tuple[str, ...] = ("show", "hide", "only")
"""What the workflow table does with retired workflows: list them (badged), hide them, or
list only them."""
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
    versions: int = 1
    """How many saved versions it has (older ones are stored as ``ID@vN``)."""
    retired: bool = False
    """Whether it is retired (kept as provenance, out of retrieval and suggestions)."""


@dataclass(frozen=True)
class Lifecycle:
    """A scope's workflow lifecycle state, as the table needs it."""

    retired: frozenset[str] = frozenset()
    """Ids of the retired workflows."""
    archived: frozenset[str] = frozenset()
    """Ids of the older versions (``ID@vN``): workflows in the store, not rows of the table."""
    versions: dict[str, int] = field(default_factory=dict)
    """Version count of each revised workflow."""


@dataclass(frozen=True)
class WorkflowFilter:
    """What narrows the workflow table (every field optional)."""

    text: str = ""
    tool: str = ""
    agent: str = ""
    outcome: str = ""
    since: date | None = None
    until: date | None = None
    retired: str = "show"

    def active(self) -> bool:
        """Whether anything narrows the table (the retired choice aside)."""
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
        self._tables: dict[str, WorkflowTable] = {}
        self._lock = threading.Lock()

    # -- scopes ------------------------------------------------------------------------------

    def scopes(self) -> list[ScopeSummary]:
        """Return every scope with its workflow, step and distinct-tool counts."""
        found: list[ScopeSummary] = self._cached(("scopes",), self._scopes)
        return found

    def _scopes(self) -> list[ScopeSummary]:
        # From the workflow tables (warmed at startup): a whole-store aggregate per column
        # would scan every workflow graph again (minutes at 100k workflows).
        summaries = []
        for scope in self.store.scopes():
            archived = self.lifecycle(scope).archived
            rows = [r for r in self.table(scope).rows().values() if r.id not in archived]
            created = [r.created for r in rows if r.created and r.day is not None]
            summaries.append(
                ScopeSummary(
                    scope=scope,
                    workflows=len(rows),
                    steps=sum(r.steps for r in rows),
                    tools=len(set().union(*(r.tools for r in rows))),
                    latest=max(created, key=instant) if created else None,
                )
            )
        return summaries

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
        """Return one page of a scope's workflows, filtered and sorted.

        The scope's :class:`~integrations.panel.table.WorkflowTable` answers (built from SPARQL
        aggregates, caught up through the store's change log); rows with no value for the
        sort column come last.

        Args:
            scope: The scope.
            where: What narrows the table.
            sort: One of :data:`SORT_KEYS`.
            descending: Sort direction.
            offset: Rows to skip.
            limit: Rows to return.

        Returns:
            The page and the number of workflows that match.

        Older versions (``ID@vN``) are never rows: a row is a workflow's current version, with
        its version count; retired workflows are listed, hidden or listed alone as
        ``where.retired`` says.

        Raises:
            ValueError: For an unknown sort key, outcome or retired choice (the message lists
                the valid ones).
        """
        if sort not in SORT_KEYS:
            raise ValueError(f"unknown sort {sort!r}; choose one of {', '.join(SORT_KEYS)}")
        where = where or WorkflowFilter()
        if where.outcome and where.outcome not in OUTCOME_CHOICES:
            raise ValueError(
                f"unknown outcome {where.outcome!r}; choose one of {', '.join(OUTCOME_CHOICES)}"
            )
        if where.retired not in RETIRED_CHOICES:
            raise ValueError(
                f"unknown retired choice {where.retired!r}; "
                f"choose one of {', '.join(RETIRED_CHOICES)}"
            )
        table = self.table(scope)
        if where.active():
            ordered = table.matching(sort, descending, where, _matcher(where))
        else:
            ordered = table.ordered(sort, descending)
        # Applied after the cached orders: a retirement writes only a lifecycle graph, which
        # does not move the scope's workflow change log the table follows.
        state = self.lifecycle(scope)
        if state.archived or state.retired:
            hidden = state.archived
            if where.retired == "hide":
                hidden = hidden | state.retired
            if where.retired == "only":
                ordered = [r for r in ordered if r.id in state.retired]
            elif hidden:
                ordered = [r for r in ordered if r.id not in hidden]
        elif where.retired == "only":
            ordered = []
        page = [_row(r, state) for r in ordered[offset : offset + limit]]
        return WorkflowPage(rows=page, total=len(ordered), offset=offset, limit=limit)

    def lifecycle(self, scope: str) -> Lifecycle:
        """Return a scope's retired workflows and older versions (read from the store now)."""
        retired: set[str] = set()
        archived: set[str] = set()
        versions: dict[str, int] = {}
        for r in self._select(_LIFECYCLE, scope=scope):
            workflow_id = str(r["id"])
            if r.get("status") is not None and str(r["status"]) == "retired":
                retired.add(workflow_id)
            if r.get("archived") is not None:
                archived.add(str(r["archived"]))
        for version in archived:
            base, _, _ = version.rpartition("@v")
            versions[base] = versions.get(base, 1) + 1
        return Lifecycle(frozenset(retired), frozenset(archived), versions)

    def table(self, scope: str) -> WorkflowTable:
        """Return the scope's workflow table (made on first use)."""
        with self._lock:
            found = self._tables.get(scope)
            if found is None:
                found = self._tables[scope] = WorkflowTable(self.store, scope)
            return found

    # -- tools -------------------------------------------------------------------------------

    def tools(self, scope: str) -> list[ToolSummary]:
        """Return a scope's tools, most called first, with failures and neighbours.

        ``before``/``after`` are the tools called directly before/after it (consecutive call
        leaves, ``wf:nextCall``), with how often, most frequent first.
        """
        found: list[ToolSummary] = self._cached(("tools", scope), lambda: self._tools(scope))
        return found

    def _tools(self, scope: str) -> list[ToolSummary]:
        pairs = sorted(
            (
                (str(r["tool"]), str(r["next"]), _int(r.get("count")))
                for r in self._select(_TOOL_PAIRS, scope=scope)
            ),
            key=lambda p: (-p[2], p[0], p[1]),
        )
        before: dict[str, list[tuple[str, int]]] = {}
        after: dict[str, list[tuple[str, int]]] = {}
        for tool, following, count in pairs:
            after.setdefault(tool, []).append((following, count))
            before.setdefault(following, []).append((tool, count))
        calls: Counter[str] = Counter()
        failures: Counter[str] = Counter()
        workflows: Counter[str] = Counter()
        for r in self._select(_TOOL_CALLS, scope=scope):
            calls[str(r["tool"])] += _int(r.get("calls"))
            workflows[str(r["tool"])] = max(workflows[str(r["tool"])], _int(r.get("workflows")))
        for r in self._select(_TOOL_FAILED, scope=scope):
            # A failed call is a call too (it is not in the plan the first query counts).
            calls[str(r["tool"])] += _int(r.get("failures"))
            failures[str(r["tool"])] += _int(r.get("failures"))
            workflows[str(r["tool"])] = max(workflows[str(r["tool"])], _int(r.get("workflows")))
        for r in self._select(_TOOL_FAILED_OUTCOMES, scope=scope):
            failures[str(r["tool"])] += _int(r.get("failures"))
        ranked = sorted(calls, key=lambda tool: (-calls[tool], tool))
        return [
            ToolSummary(
                tool=tool,
                calls=calls[tool],
                failures=failures[tool],
                workflows=workflows[tool],
                before=before.get(tool, []),
                after=after.get(tool, []),
            )
            for tool in ranked
        ]

    # -- suggestion records ------------------------------------------------------------------

    def suggestion_records(self, workflow_id: str, scope: str) -> list[dict[str, Any]]:
        """Return the recorded suggestions that this workflow shaped, newest first (at most 200).

        Each is ``{session, time, rank, text, tool, score}``.
        """
        rows = self._select(_RECORDS, scope=scope, memory=workflow_iri(workflow_id))
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

    # -- versions ----------------------------------------------------------------------------

    def versions(self, workflow: Workflow) -> list[WorkflowVersion]:
        """Return a workflow's saved versions, oldest first, read from its lifecycle record.

        The same list as :meth:`Lifecycle.history <em_plugin.lifecycle.Lifecycle.history>`
        (an ``ID@vN`` version gives its workflow's history), without a memory: one read of the
        record graph by its name, so neither the embedder nor the step index is touched.

        Args:
            workflow: The workflow shown (as loaded from the store).
        """
        scope = workflow.scope
        base = workflow.id
        parsed = version_of(workflow.id)
        names = [workflow_record_iri(workflow.id, scope)]
        if parsed is not None:
            names.insert(0, workflow_record_iri(parsed[0], scope))
        found = self.store.read_records(names)
        if parsed is not None and found.get(names[0]):
            base = parsed[0]
        record = read_workflow_record(found.get(workflow_record_iri(base, scope), []), base, scope)
        if not record.versions:
            # Never revised: the workflow is its only version (it has no record of versions).
            leaves = len(workflow.leaves())
            return [
                WorkflowVersion(
                    base, 1, workflow.created, None, record.retired, record.reason, leaves
                )
            ]
        out = []
        last = len(record.versions) - 1
        for i, item in enumerate(record.versions):
            following = None
            if i < last:
                nxt = record.versions[i + 1]
                following = base if i + 1 == last else version_id(base, nxt.version)
            out.append(
                WorkflowVersion(
                    base if i == last else version_id(base, item.version),
                    item.version,
                    item.saved,
                    following,
                    record.retired and i == last,
                    record.reason if i == last else None,
                    item.leaves,
                )
            )
        return out

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


def _matcher(where: WorkflowFilter) -> Callable[[TableRow], bool]:
    text = where.text.strip().lower()
    tool = where.tool.strip()
    agent = where.agent.strip()
    outcome = None if where.outcome in ("", "unknown") else where.outcome

    def keep(row: TableRow) -> bool:
        if text and text not in row.text:
            return False
        if tool and tool not in row.tools:
            return False
        if agent and agent not in row.agent_names:
            return False
        if where.outcome and row.outcome != outcome:
            return False
        if where.since is not None and (row.day is None or row.day < where.since):
            return False
        return where.until is None or (row.day is not None and row.day <= where.until)

    return keep


def _row(row: TableRow, state: Lifecycle) -> WorkflowRow:
    return WorkflowRow(
        id=row.id,
        title=row.title,
        created=row.created,
        outcome=row.outcome,
        steps=row.steps,
        calls=row.calls,
        agents=row.agents,
        versions=state.versions.get(row.id, 1),
        retired=row.id in state.retired,
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int:
    return 0 if value is None else int(float(str(value)))


def _float(value: Any) -> float | None:
    return None if value is None else float(str(value))
