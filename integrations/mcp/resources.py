"""The server's resources: each stored workflow's PROV (Turtle, PROV-JSON) and Workflow JSON.

URIs name the scope and the workflow id, each percent-encoded (ids often hold ``/``)::

    em-plugin://workflows/{scope}/{workflow_id}/prov.ttl       text/turtle
    em-plugin://workflows/{scope}/{workflow_id}/prov.json      application/json (PROV-JSON)
    em-plugin://workflows/{scope}/{workflow_id}/workflow.json  application/json (Workflow JSON)

The tools give each workflow's URIs (``list_workflows``, ``recall_workflows``). A read is scoped
like a tool call: a token sees only its scopes' workflows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from mcp.server.fastmcp import Context, FastMCP

from integrations.mcp.access import Caller
from integrations.mcp.errors import MemoryToolError
from provenance.export import export
from provenance.workflow_json import dumps_workflow

if TYPE_CHECKING:
    from integrations.mcp.calls import CallRunner

__all__ = ["RESOURCE_FORMATS", "register_resources", "workflow_uri", "workflow_uris"]

_BASE = "em-plugin://workflows"

RESOURCE_FORMATS: dict[str, tuple[str, str, str]] = {
    "prov.ttl": ("prov_turtle", "text/turtle", "The workflow's W3C PROV graph in Turtle."),
    "prov.json": ("prov_json", "application/json", "The workflow's PROV-JSON document."),
    "workflow.json": ("workflow_json", "application/json", "The workflow as Workflow JSON."),
}
"""Resource file name -> (key in :func:`workflow_uris`, MIME type, description)."""


def workflow_uri(scope: str, workflow_id: str, name: str) -> str:
    """Return the URI of one resource of a stored workflow (``name``: ``prov.ttl``...)."""
    return f"{_BASE}/{quote(scope, safe='')}/{quote(workflow_id, safe='')}/{name}"


def workflow_uris(scope: str, workflow_id: str) -> dict[str, str]:
    """Return the URIs of a stored workflow's resources, by kind."""
    return {key: workflow_uri(scope, workflow_id, n) for n, (key, _, _) in RESOURCE_FORMATS.items()}


def register_resources(server: FastMCP[Any], calls: CallRunner) -> None:
    """Add the workflow resource templates to ``server``."""
    for name, (key, mime_type, description) in RESOURCE_FORMATS.items():
        server.resource(
            f"{_BASE}/{{scope}}/{{workflow_id}}/{name}",
            name=key,
            description=description,
            mime_type=mime_type,
        )(_reader(calls, name))


def _reader(calls: CallRunner, name: str) -> Any:
    # A bare Context: the SDK validates a resource function's arguments, and against a
    # parametrized Context it would rebuild the object without its request.
    async def read(scope: str, workflow_id: str, ctx: Context) -> str:
        scope, workflow_id = unquote(scope), unquote(workflow_id)
        uri = workflow_uri(scope, workflow_id, name)
        return await calls.resource(
            ctx, uri, lambda caller: _text(calls, caller, scope, workflow_id, name)
        )

    return read


def _text(calls: CallRunner, caller: Caller, scope: str, workflow_id: str, name: str) -> str:
    store = calls.state.store
    scope = calls.gate.read_scope(caller, scope, store.scopes())
    if (scope, workflow_id) not in store:
        raise MemoryToolError(f"no workflow {workflow_id!r} in scope {scope!r}")
    workflow = store.load(workflow_id, scope)
    if name == "workflow.json":
        return dumps_workflow(workflow)
    return export(workflow, "ttl" if name == "prov.ttl" else "provjson")
