"""``MemoryServer``: the MCP server over one store, on stdio or streamable HTTP.

It is the SDK's ``FastMCP`` with the memory's tools (:mod:`integrations.mcp.tools`) and
resources (:mod:`integrations.mcp.resources`). Over HTTP it answers stateless requests with
plain JSON (no session to keep, any number of workers), behind the bearer-token gate of
:mod:`integrations.mcp.http` when tokens are configured.
"""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import FastMCP

from integrations.mcp.access import ScopeGate
from integrations.mcp.calls import CallRunner
from integrations.mcp.resources import register_resources
from integrations.mcp.settings import MCPSettings
from integrations.mcp.state import MemoryState
from integrations.mcp.tools import register_tools
from provenance.stores import WorkflowStore, open_store

__all__ = ["INSTRUCTIONS", "MemoryServer"]

INSTRUCTIONS = (
    "Episodic memory of past agent workflows (W3C PROV). Before a task, recall_workflows finds "
    "similar past workflows; during it, suggest_next_steps proposes the next tool calls with the "
    "past workflows they rest on; after it, save_workflow stores the run (when the server allows "
    "writes). list_scopes, list_workflows and run_query (named SPARQL queries, see list_queries) "
    "inspect the memory; each workflow's PROV is a resource."
)
"""What the server tells clients at initialization."""


class MemoryServer:
    """An MCP server over one store.

    Args:
        settings: How it runs.
        store: An already open store to use instead of opening ``settings.store``; the server
            owns it either way (:meth:`close` closes it).
        tracer_provider: A tracer provider for the request spans (default: the global one).

    Raises:
        StoreError: The store cannot be opened.
    """

    def __init__(
        self,
        settings: MCPSettings,
        *,
        store: WorkflowStore | None = None,
        tracer_provider: Any = None,
    ) -> None:
        self.settings = settings
        if store is None:
            store = open_store(
                settings.store,
                update_url=settings.update_url,
                read_only=not settings.allow_write and _is_disk(settings.store),
            )
        self.state = MemoryState(store, embedder=settings.embedder)
        gate = ScopeGate(
            scope=settings.scope, tokens=settings.tokens, allow_write=settings.allow_write
        )
        calls = CallRunner(self.state, gate, tracer_provider=tracer_provider)
        self.mcp: FastMCP[Any] = FastMCP(
            "em-plugin",
            instructions=INSTRUCTIONS,
            host=settings.host,
            stateless_http=True,
            json_response=True,
            log_level="WARNING",
        )
        register_tools(self.mcp, calls)
        register_resources(self.mcp, calls)

    async def run_stdio(self) -> None:
        """Serve one client over stdin/stdout until it closes them."""
        await self.mcp.run_stdio_async()

    def close(self) -> None:
        """Close the memory and the store."""
        self.state.close()

    def __enter__(self) -> MemoryServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_disk(spec: str) -> bool:
    text = spec.strip()
    return not (text in ("memory:", "memory://", ":memory:") or "://" in text)
