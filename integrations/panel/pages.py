"""The panel's page handlers: one async function per route, store work in the thread pool.

Every handler reads its parameters, checks them (a bad one is a :class:`PanelError`, 400),
asks the catalog, the store or the memory, and renders a template. Writes (retire, restore,
delete, procedure actions) need ``--allow-write``; the destructive ones are a GET that shows
what will go and a POST with ``confirm=yes`` that does it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import date
from typing import Any, TypeVar
from urllib.parse import urlencode

from rdflib import Graph
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from em_plugin.lifecycle import PROCEDURE_STATUSES, WorkflowVersion
from integrations.panel.catalog import OUTCOME_CHOICES, RETIRED_CHOICES, SORT_KEYS, WorkflowFilter
from integrations.panel.provgraph import prov_drawing
from integrations.panel.state import PanelState
from integrations.panel.web import PanelError, ScopeChoice, panel_state, render
from provenance.errors import WorkflowFormatError
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import QueryResult

__all__ = [
    "procedure_action",
    "procedures_page",
    "scopes_page",
    "sparql_csv",
    "sparql_page",
    "suggest_page",
    "suggestion_feedback",
    "tools_page",
    "workflow_action",
    "workflow_download",
    "workflow_page",
    "workflows_page",
]

_T = TypeVar("_T")
_MAX_SHOWN_ROWS = 500
_MAX_VALUE_CHARS = 2000
_DOWNLOADS = {
    "json": ("application/json", "json"),
    "ttl": ("text/turtle", "ttl"),
    "provjson": ("application/json", "prov.json"),
}


async def _run(function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    return await run_in_threadpool(function, *args, **kwargs)


def _param(request: Request, name: str, default: str = "") -> str:
    return request.query_params.get(name, default).strip()


def _scope(request: Request, state: PanelState, value: str | None = None) -> str:
    """The page's scope: given, else the store's only one; several or none: the chooser."""
    scope = value if value is not None else _param(request, "scope")
    if scope and not state.warmed.is_set():
        return scope  # the scope list waits for the warm-up's tables: no chooser meanwhile
    found = [s.scope for s in state.catalog.scopes()]
    request.state.scope_names = found  # for the header's chooser
    if scope:
        return scope
    if len(found) == 1:
        return found[0]
    raise ScopeChoice(found)


def _known_scope(request: Request, state: PanelState) -> str:
    """The scope a read page shows: one that holds workflows, else 404 naming those there are."""
    scope = _scope(request, state)
    found = [s.scope for s in state.catalog.scopes()]
    if scope in found:
        return scope
    existing = ", ".join(repr(s) for s in found) if found else "none: the store is empty"
    raise PanelError(f"scope {scope!r} has no workflows; existing scopes: {existing}", 404)


def _int_param(request: Request, name: str, default: int, minimum: int = 0) -> int:
    raw = _param(request, name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise PanelError(f"{name} must be a whole number, got {raw!r}") from None
    if value < minimum:
        raise PanelError(f"{name} must be at least {minimum}, got {value}")
    return value


def _date_param(request: Request, name: str) -> date | None:
    raw = _param(request, name)
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise PanelError(f"{name} must be a date such as 2026-01-31, got {raw!r}") from None


def _require_write(state: PanelState) -> None:
    if not state.settings.allow_write:
        raise PanelError(
            "this panel is read-only: start it with em-plugin ui --allow-write to change memory",
            403,
        )


# ------------------------------------------------------------------------------------ scopes


async def scopes_page(request: Request) -> Response:
    """The scopes with their workflow, step and tool counts and latest activity."""
    state = panel_state(request)
    await _run(state.refresh)
    scopes = await _run(state.catalog.scopes)
    return render(request, "scopes.html", {"scopes": scopes, "page": "scopes"})


# ------------------------------------------------------------------------------------ workflows


async def workflows_page(request: Request) -> Response:
    """A page of a scope's workflows: filtered, sorted and paged in the store."""
    state = panel_state(request)
    await _run(state.refresh)
    scope = await _run(_known_scope, request, state)
    where = WorkflowFilter(
        text=_param(request, "q"),
        tool=_param(request, "tool"),
        agent=_param(request, "agent"),
        outcome=_param(request, "outcome"),
        since=_date_param(request, "since"),
        until=_date_param(request, "until"),
        retired=_param(request, "retired", "show"),
    )
    if where.retired not in RETIRED_CHOICES:
        raise PanelError(
            f"unknown retired choice {where.retired!r}; choose one of {', '.join(RETIRED_CHOICES)}"
        )
    sort = _param(request, "sort", "created")
    if sort not in SORT_KEYS:
        raise PanelError(f"unknown sort {sort!r}; choose one of {', '.join(SORT_KEYS)}")
    descending = _param(request, "dir", "desc") != "asc"
    size = state.settings.page_size
    number = _int_param(request, "page", 1, minimum=1)
    found = await _run(
        state.catalog.workflows,
        scope,
        where=where,
        sort=sort,
        descending=descending,
        offset=(number - 1) * size,
        limit=size,
    )
    pages = max(1, -(-found.total // size))
    query = {k: v for k, v in request.query_params.items() if k not in ("page", "token")}
    return render(
        request,
        "workflows.html",
        {
            "page": "workflows",
            "scope": scope,
            "found": found,
            "where": where,
            "sort": sort,
            "descending": descending,
            "number": number,
            "pages": pages,
            "outcomes": OUTCOME_CHOICES,
            "retired_choices": RETIRED_CHOICES,
            "sort_keys": SORT_KEYS,
            "query": query,
            "link": lambda **changes: "/workflows?" + urlencode({**query, **changes}),
        },
    )


# ------------------------------------------------------------------------------------ one workflow


def _tree(workflow: Workflow) -> list[dict[str, Any]]:
    """The steps as nested dicts for the template, failed calls under the step they were in."""
    failed: dict[str, list[dict[str, Any]]] = {}
    for number, item in enumerate(workflow.failed):
        failed.setdefault(item.parent or "", []).append(
            {"call": item.call, "error": item.error, "number": number, "args": _values(item.call)}
        )
    leaf_numbers = {path: i for i, path in enumerate(workflow.leaf_paths())}
    top: list[dict[str, Any]] = []
    children: dict[str, list[dict[str, Any]]] = {"": top}  # path -> its node's children
    for path, step in workflow.walk():
        node: dict[str, Any] = {
            "path": path,
            "step": step,
            "kind": step.kind,
            "leaf": leaf_numbers.get(path),
            "fields": _values(step) if isinstance(step, CallStep) else {},
            "failure": getattr(step, "outcome", None) == "failure",
            "children": [],
            "failed": failed.get(path, []),
        }
        children[path.rpartition(".")[0]].append(node)
        children[path] = node["children"]
    if failed.get(""):
        top.append({"path": "", "kind": "failed-only", "children": [], "failed": failed[""]})
    return top


def _values(call: CallStep) -> dict[str, str]:
    values = {name: _json_text(value) for name, value in call.args.items()}
    if call.output is not None:
        values["→ output"] = _json_text(call.output)
    return values


def _json_text(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"


async def workflow_page(request: Request) -> Response:
    """One workflow: steps tree, PROV drawing, versions, suggestion records, downloads."""
    state = panel_state(request)
    await _run(state.refresh)
    scope = await _run(_scope, request, state)
    workflow_id = _param(request, "id")
    if not workflow_id:
        raise PanelError("which workflow? pass id=")
    workflow, versions, records = await _run(_one_workflow, state, workflow_id, scope)
    drawing = await _run(prov_drawing, workflow)
    counts = {
        "steps": sum(1 for _ in workflow.walk()),
        "calls": sum(1 for _, s in workflow.walk() if isinstance(s, CallStep)),
        "leaves": len(workflow.leaves()),
        "failed": len(workflow.failed),
    }
    return render(
        request,
        "workflow.html",
        {
            "page": "workflows",
            "scope": scope,
            "workflow": workflow,
            "tree": _tree(workflow),
            "counts": counts,
            "drawing": drawing,
            "records": records,
            "versions": versions,
            "retired": bool(versions) and versions[-1].retired,
            "reason": versions[-1].reason if versions else None,
            "ids": urlencode({"scope": scope, "id": workflow_id}),
        },
    )


def _one_workflow(
    state: PanelState, workflow_id: str, scope: str
) -> tuple[Workflow, list[WorkflowVersion], list[dict[str, Any]]]:
    # Three reads by name (its graph, its lifecycle record, the records citing it): no memory,
    # so the embedding model is not loaded and the step index is not synced for a look.
    workflow = state.store.load(workflow_id, scope)
    versions = state.catalog.versions(workflow)
    records = state.catalog.suggestion_records(workflow_id, scope)
    return workflow, versions, records


async def workflow_download(request: Request) -> Response:
    """The workflow as Workflow JSON, Turtle or PROV-JSON (``format=json|ttl|provjson``)."""
    state = panel_state(request)
    scope = await _run(_scope, request, state)
    workflow_id = _param(request, "id")
    kind = _param(request, "format", "json")
    if kind not in _DOWNLOADS:
        raise PanelError(f"unknown format {kind!r}; choose one of {', '.join(_DOWNLOADS)}")
    workflow = await _run(state.store.load, workflow_id, scope)
    text = await _run(_serialize, workflow, kind)
    media, suffix = _DOWNLOADS[kind]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in workflow_id)
    return Response(
        text,
        media_type=media,
        headers={"content-disposition": f'attachment; filename="{name}.{suffix}"'},
    )


def _serialize(workflow: Workflow, kind: str) -> str:
    if kind == "json":
        from provenance.workflow_json import workflow_to_json

        return json.dumps(workflow_to_json(workflow), ensure_ascii=False, indent=2)
    from provenance.export import export

    return export([workflow], kind)


async def workflow_action(request: Request) -> Response:
    """Retire, restore or delete a workflow: GET shows what will go, POST (confirmed) does it."""
    state = panel_state(request)
    action = request.path_params["action"]
    if action not in ("retire", "restore", "delete"):
        raise PanelError(f"unknown action {action!r}; choose retire, restore or delete", 404)
    _require_write(state)
    form = await request.form() if request.method == "POST" else {}
    scope = await _run(_scope, request, state, str(form.get("scope", "")) or None)
    workflow_id = str(form.get("id", "")) or _param(request, "id")
    workflow = await _run(state.store.load, workflow_id, scope)
    if request.method == "GET" or form.get("confirm") != "yes":
        records = await _run(state.catalog.suggestion_records, workflow_id, scope)
        return render(
            request,
            "confirm.html",
            {
                "page": "workflows",
                "action": action,
                "scope": scope,
                "workflow": workflow,
                "leaves": len(workflow.leaves()),
                "records": len(records),
            },
        )
    reason = str(form.get("reason", "")).strip()
    if action == "retire" and not reason:
        raise PanelError("retiring needs a reason (it is recorded with the retirement)")
    memory = await _run(state.memory, scope)
    if action == "retire":
        await _run(memory.lifecycle.retire, workflow_id, reason=reason)
    elif action == "restore":
        await _run(memory.lifecycle.restore, workflow_id)
    else:
        await _run(memory.delete, workflow_id)
    target = "/workflows?" if action == "delete" else "/workflow?"
    params = {"scope": scope} if action == "delete" else {"scope": scope, "id": workflow_id}
    return RedirectResponse(target + urlencode({**params, "done": action}), status_code=303)


# ------------------------------------------------------------------------------------ suggest


async def suggest_page(request: Request) -> Response:
    """Suggestions for a stored workflow cut at a step, or for pasted Workflow JSON."""
    state = panel_state(request)
    form = await request.form() if request.method == "POST" else {}
    pasted = str(form.get("workflow_json", "")).strip()
    scope = await _run(_scope, request, state, str(form.get("scope", "")) or None)
    workflow_id = _param(request, "id")
    step = _int_param(request, "step", 0, minimum=0)
    context: dict[str, Any] = {
        "page": "suggest",
        "scope": scope,
        "workflow_id": workflow_id,
        "step": step,
        "pasted": pasted,
        "leaves": [],
        "current": None,
        "suggestions": None,
    }
    current: Workflow | None = None
    if pasted:
        current = _parse_pasted(pasted)
    elif workflow_id:
        stored = await _run(state.store.load, workflow_id, scope)
        leaves = stored.leaves()
        context["leaves"] = [_leaf_label(leaf) for leaf in leaves]
        cut = step or max(1, len(leaves) - 1)
        if cut > len(leaves):
            raise PanelError(f"step must be between 1 and {len(leaves)}, got {cut}")
        context["step"] = cut
        current = stored.prefix(cut)
    if current is not None:
        memory = await _run(state.memory, scope)
        context["current"] = current
        context["suggestions"] = await _run(memory.suggest, current, 5)
    context.update(await _run(_feedback_context, state, scope))
    context["done"] = _param(request, "done")
    return render(request, "suggest.html", context)


def _feedback_context(state: PanelState, scope: str) -> dict[str, Any]:
    """The scope's online hit rate and its latest shown suggestions (docs/suggestions.md)."""
    from em_plugin.suggest.acceptance import acceptance_rates, recent_suggestions

    return {
        "acceptance": acceptance_rates(state.store).get(scope),
        "recent": recent_suggestions(state.store, scope),
        "can_write": state.settings.allow_write,
    }


async def suggestion_feedback(request: Request) -> Response:
    """Accept or dismiss a shown suggestion by its id (POST), then back to the suggest page."""
    state = panel_state(request)
    _require_write(state)
    form = await request.form()
    verdict = str(form.get("verdict", ""))
    if verdict not in ("accept", "dismiss"):
        raise PanelError(f"verdict must be accept or dismiss, got {verdict!r}")
    scope = await _run(_scope, request, state, str(form.get("scope", "")) or None)
    memory = await _run(state.memory, scope)
    said = memory.accept_suggestion if verdict == "accept" else memory.dismiss_suggestion
    await _run(said, str(form.get("id", "")))
    done = "accepted" if verdict == "accept" else "dismissed"
    return RedirectResponse("/suggest?" + urlencode({"scope": scope, "done": done}), 303)


def _parse_pasted(text: str) -> Workflow:
    from provenance.workflow_json import workflow_from_json

    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PanelError(f"the pasted text is not JSON: {exc.msg} at line {exc.lineno}") from None
    try:
        return workflow_from_json(obj)
    except WorkflowFormatError as exc:
        raise PanelError(f"the pasted JSON is not a workflow: {exc}") from None


def _leaf_label(step: Any) -> str:
    if isinstance(step, InstructionStep):
        return f"instruction: {step.text[:80]}"
    return f"call {step.name}" + (f" ({step.agent})" if step.agent else "")


# ------------------------------------------------------------------------------------ procedures


async def procedures_page(request: Request) -> Response:
    """Candidate, active and retired procedures with support, success rate and sources."""
    state = panel_state(request)
    scope = await _run(_known_scope, request, state)
    status = _param(request, "status") or None
    context: dict[str, Any] = {"page": "procedures", "scope": scope, "status": status}
    if status is not None and status not in PROCEDURE_STATUSES:
        raise PanelError(
            f"unknown procedure status {status!r}; choose one of {', '.join(PROCEDURE_STATUSES)}"
        )
    memory = await _run(state.memory, scope)
    context["procedures"] = await _run(memory.lifecycle.procedures, status=status)
    return render(request, "procedures.html", context)


async def procedure_action(request: Request) -> Response:
    """Accept (and name) or retire a procedure."""
    state = panel_state(request)
    action = request.path_params["action"]
    if action not in ("accept", "retire"):
        raise PanelError(f"unknown action {action!r}; choose accept or retire", 404)
    _require_write(state)
    form = await request.form()
    scope = await _run(_scope, request, state, str(form.get("scope", "")) or None)
    procedure_id = str(form.get("id", "")).strip()
    if not procedure_id:
        raise PanelError("which procedure? the form carries no id")
    memory = await _run(state.memory, scope)
    if action == "accept":
        name = str(form.get("name", "")).strip()
        if not name:
            raise PanelError("accepting a procedure needs a name")
        await _run(memory.lifecycle.accept_procedure, procedure_id, name=name)
    else:
        reason = str(form.get("reason", "")).strip()
        if not reason:
            raise PanelError("retiring a procedure needs a reason")
        await _run(memory.lifecycle.retire_procedure, procedure_id, reason=reason)
    return RedirectResponse("/procedures?" + urlencode({"scope": scope}), status_code=303)


# ------------------------------------------------------------------------------------ SPARQL


async def _sparql_input(request: Request) -> tuple[str, str, str]:
    form = await request.form() if request.method == "POST" else {}
    text = str(form.get("query", "")) or _param(request, "query")
    name = str(form.get("name", "")) or _param(request, "name")
    scope = str(form.get("scope", "")) or _param(request, "scope")
    return text.strip(), name, scope


async def sparql_page(request: Request) -> Response:
    """A query box: named queries one click away, prefixes predeclared, union default graph."""
    from provenance.queries import list_queries

    state = panel_state(request)
    await _run(state.refresh)
    text, name, scope = await _sparql_input(request)
    named = list_queries()
    if name:
        known = {q.name: q for q in named}
        if name not in known:
            raise PanelError(f"no named query {name!r}; choose one of {', '.join(known)}")
        text = known[name].text
    result = None
    if text:
        result = await _run(_run_query, state, text, scope or None)
    return render(
        request,
        "sparql.html",
        {
            "page": "sparql",
            "named": named,
            "text": text,
            "name": name,
            "scope": scope,
            "result": result,
            "max_rows": _MAX_SHOWN_ROWS,
            "prefixes": _prefixes(),
        },
    )


async def sparql_csv(request: Request) -> Response:
    """The query's results as CSV (every row)."""
    state = panel_state(request)
    text, name, scope = await _sparql_input(request)
    if name:
        from provenance.queries import query_text

        text = query_text(name)
    if not text:
        raise PanelError("no query to run")
    result = await _run(_run_query, state, text, scope or None)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(result["columns"])
    writer.writerows(result["rows"])
    return Response(
        out.getvalue(),
        media_type="text/csv",
        headers={"content-disposition": 'attachment; filename="results.csv"'},
    )


def _run_query(state: PanelState, text: str, scope: str | None) -> dict[str, Any]:
    # The text (typed, or a named query's) runs over the store's query dataset, as every door
    # answers it (docs/sparql.md).
    answer = state.store.query(text, None, scope=scope)
    if isinstance(answer, bool):
        return {"columns": ["answer"], "rows": [["true" if answer else "false"]], "kind": "ASK"}
    if isinstance(answer, Graph):
        rows = sorted([str(s), str(p), str(o)] for s, p, o in answer)
        return {"columns": ["subject", "predicate", "object"], "rows": rows, "kind": "graph"}
    assert isinstance(answer, QueryResult)
    rows = [["" if v is None else str(v) for v in row] for row in answer.rows]
    return {"columns": list(answer.columns), "rows": rows, "kind": "SELECT"}


def _prefixes() -> str:
    from provenance.vocab import PREFIXES

    return "\n".join(f"PREFIX {name}: <{iri}>" for name, iri in PREFIXES.items())


# ------------------------------------------------------------------------------------ tools


async def tools_page(request: Request) -> Response:
    """Each tool's calls, failure rate, and the tools called before and after it."""
    state = panel_state(request)
    await _run(state.refresh)
    scope = await _run(_known_scope, request, state)
    tools = await _run(state.catalog.tools, scope)
    return render(request, "tools.html", {"page": "tools", "scope": scope, "tools": tools})
