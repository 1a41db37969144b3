"""The server's tools: list scopes and workflows, recall, suggest, save, named queries.

Each tool takes an optional ``scope`` (the server's ``--scope`` fixes it) and answers a JSON
object. Reads never change the store; ``save_workflow`` is refused unless the server was started
with ``--allow-write`` (and, over HTTP with tokens, the token has read-write access).
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations
from pydantic import Field

from integrations.mcp.access import Caller
from integrations.mcp.calls import CallRunner
from integrations.mcp.errors import MemoryToolError
from integrations.mcp.records import parse_workflow, recall, step_label, workflow_summary
from integrations.mcp.resources import workflow_uris
from provenance.queries import list_queries, load_query
from provenance.stores import QueryResult

__all__ = ["TOOL_NAMES", "register_tools"]

TOOL_NAMES = (
    "list_queries",
    "list_scopes",
    "list_workflows",
    "recall_workflows",
    "run_query",
    "save_workflow",
    "suggest_next_steps",
)
"""The tools every server offers (``save_workflow`` refuses on a read-only server)."""

_READ = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
_SAVE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
_MAX_ROWS = 500

Scope = Annotated[
    str | None,
    Field(description="The memory scope (team, user...); leave out to use your only one."),
]
WorkflowArg = Annotated[
    dict[str, Any] | str,
    Field(
        description="Workflow JSON: {'steps': [{'kind': 'instruction', 'text': ..., 'steps': "
        "[{'kind': 'call', 'name': TOOL, 'args': {...}}]}, ...]} (docs/workflow-json.md)."
    ),
]


def register_tools(server: FastMCP[Any], calls: CallRunner) -> None:
    """Add the memory tools to ``server``."""
    tools = _Tools(calls)
    for name in TOOL_NAMES:
        method = getattr(tools, name)
        server.tool(name=name, annotations=_SAVE if name == "save_workflow" else _READ)(method)


class _Tools:
    """The tool functions, bound to one server's calls."""

    def __init__(self, calls: CallRunner) -> None:
        self.calls = calls
        self.state = calls.state
        self.gate = calls.gate

    async def list_scopes(self, ctx: Context[Any, Any, Any]) -> dict[str, Any]:
        """List the memory scopes you can use, with how many workflows each holds."""

        def work(caller: Caller) -> dict[str, Any]:
            store = self.state.store
            scopes = self.gate.visible(caller, store.scopes())
            return {
                "scopes": [
                    {
                        "scope": s,
                        "workflows": len(store.ids(s)),
                        "writable": self.gate.allow_write and caller.can_write(s),
                    }
                    for s in scopes
                ],
                "read_only": not self.gate.allow_write,
            }

        return await self.calls.tool(ctx, "list_scopes", work)

    async def list_workflows(
        self,
        ctx: Context[Any, Any, Any],
        scope: Scope = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> dict[str, Any]:
        """List a scope's stored workflows in id order: id, title, steps, outcome, resource URIs."""

        def work(caller: Caller) -> dict[str, Any]:
            store = self.state.store
            chosen = self.gate.read_scope(caller, scope, store.scopes())
            ids = store.ids(chosen)
            page = ids[offset : offset + limit]
            listed = [workflow_summary(w) for w in store.load_many(chosen, page)]
            return {"scope": chosen, "total": len(ids), "offset": offset, "workflows": listed}

        return await self.calls.tool(ctx, "list_workflows", work)

    async def recall_workflows(
        self,
        ctx: Context[Any, Any, Any],
        query: Annotated[
            str | None, Field(description="The task in words, e.g. 'classify the SDS ingredients'.")
        ] = None,
        workflow: Annotated[
            dict[str, Any] | str | None,
            Field(description="Or the workflow so far, as Workflow JSON."),
        ] = None,
        scope: Scope = None,
        limit: Annotated[int, Field(ge=1, le=20)] = 3,
    ) -> dict[str, Any]:
        """Find past workflows similar to a task (in words) or to a workflow so far, best first."""

        def work(caller: Caller) -> dict[str, Any]:
            current = None if workflow is None else parse_workflow(workflow)[0]
            chosen = self.gate.read_scope(caller, scope, self.state.store.scopes())
            memory = self.state.memory(chosen)
            found = recall(memory, query=query, workflow=current, limit=limit)
            return {"scope": chosen, "workflows": found}

        return await self.calls.tool(ctx, "recall_workflows", work)

    async def suggest_next_steps(
        self,
        ctx: Context[Any, Any, Any],
        workflow: WorkflowArg,
        scope: Scope = None,
        limit: Annotated[int, Field(ge=1, le=20)] = 3,
    ) -> dict[str, Any]:
        """Suggest the next steps of a workflow so far, each with the past workflows it rests on.

        Each suggestion has the tool to call (when known), its arguments bound to the workflow's
        outputs (or an example from the past), a score, and evidence: the memory workflows and
        positions it came from.
        """

        def work(caller: Caller) -> dict[str, Any]:
            current = parse_workflow(workflow)[0]
            chosen = self.gate.read_scope(caller, scope, self.state.store.scopes())
            memory = self.state.memory(chosen)
            suggestions = memory.suggest(current.replace(scope=chosen), limit=limit)
            return {
                "scope": chosen,
                "workflow_so_far": [step_label(s) for s in current.leaves()],
                "suggestions": [s.to_json() for s in suggestions],
            }

        return await self.calls.tool(ctx, "suggest_next_steps", work)

    async def save_workflow(
        self, ctx: Context[Any, Any, Any], workflow: WorkflowArg, scope: Scope = None
    ) -> dict[str, Any]:
        """Save a finished workflow to memory (needs a server started with --allow-write).

        Saving an id that the scope holds makes a new version of that workflow.
        """

        def work(caller: Caller) -> dict[str, Any]:
            parsed, named = parse_workflow(workflow)
            if scope is not None and named is not None and named != scope:
                raise MemoryToolError(
                    f"the workflow's scope {named!r} differs from scope={scope!r}; drop one"
                )
            chosen = self.gate.write_scope(caller, scope or named, self.state.store.scopes())
            saved = self.state.memory(chosen).save(parsed.replace(scope=chosen))
            return {
                "saved": saved.id,
                "scope": chosen,
                "steps": len(saved.leaves()),
                "resources": workflow_uris(chosen, saved.id),
            }

        return await self.calls.tool(ctx, "save_workflow", work)

    async def list_queries(self, ctx: Context[Any, Any, Any]) -> dict[str, Any]:
        """List the named SPARQL queries run_query runs: what each answers, its parameters."""

        def work(caller: Caller) -> dict[str, Any]:
            return {
                "queries": [
                    {
                        "name": q.name,
                        "description": q.description,
                        "parameters": {p.name: f"({p.kind}) {p.description}" for p in q.parameters},
                        "columns": list(q.columns),
                    }
                    for q in list_queries()
                ]
            }

        return await self.calls.tool(ctx, "list_queries", work)

    async def run_query(
        self,
        ctx: Context[Any, Any, Any],
        name: Annotated[str, Field(description="A named query (list_queries), e.g. 'tool-pairs'.")],
        bindings: Annotated[
            dict[str, str] | None,
            Field(description="Parameter values by name, e.g. {'tool': 'pfas_classifier'}."),
        ] = None,
        scope: Scope = None,
        limit: Annotated[int, Field(ge=1, le=_MAX_ROWS)] = 100,
    ) -> dict[str, Any]:
        """Run a named SPARQL query over one scope's workflows; rows come as objects by column."""

        def work(caller: Caller) -> dict[str, Any]:
            known = {q.name for q in list_queries()}
            if name not in known:
                valid = ", ".join(sorted(known))
                raise MemoryToolError(f"no named query {name!r}; valid: {valid}")
            terms = load_query(name).bindings(**(bindings or {}))
            chosen = self.gate.read_scope(caller, scope, self.state.store.scopes())
            result = self.state.store.query(name, terms, scope=chosen)
            if not isinstance(result, QueryResult):  # the named queries are all SELECT
                raise MemoryToolError(f"query {name!r} is not a SELECT query")
            rows = [
                {c: None if v is None else str(v) for c, v in zip(result.columns, row, strict=True)}
                for row in result.rows[:limit]
            ]
            return {
                "scope": chosen,
                "query": name,
                "columns": list(result.columns),
                "rows": rows,
                "truncated": len(result.rows) > limit,
            }

        return await self.calls.tool(ctx, "run_query", work)
