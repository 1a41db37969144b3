"""How every tool call and resource read runs: caller, trace span, worker thread, errors.

The caller comes from the HTTP request's bearer token (no token on stdio: the process that
started the server is its only client). The work runs in a worker thread, inside a server span
that continues the caller's trace (:mod:`integrations.mcp.tracing`). The library's errors come
back as :class:`~integrations.mcp.errors.MemoryToolError` with their message, so the agent reads
what was wrong; nothing a call does can stop the server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.fastmcp import Context

from em_plugin.errors import EpisodicMemoryError
from integrations.mcp.access import Caller, ScopeGate
from integrations.mcp.errors import MemoryToolError
from integrations.mcp.state import MemoryState
from integrations.mcp.tracing import request_span, trace_carrier
from provenance.errors import ProvenanceError

__all__ = ["CallRunner"]

T = TypeVar("T")
log = logging.getLogger("integrations.mcp")


class CallRunner:
    """Run the work of MCP requests against one server's memory.

    Args:
        state: The server's store and memory.
        gate: The scope rules.
        tracer_provider: A tracer provider for the request spans (default: the global one).
    """

    def __init__(self, state: MemoryState, gate: ScopeGate, *, tracer_provider: Any = None) -> None:
        self.state = state
        self.gate = gate
        self.tracer_provider = tracer_provider

    async def tool(self, ctx: Context[Any, Any, Any], name: str, work: Callable[[Caller], T]) -> T:
        """Run a tool's work as ``tools/call NAME``."""
        attributes = {"gen_ai.tool.name": name, "gen_ai.operation.name": "execute_tool"}
        return await self._run(ctx, "tools/call", name, attributes, work)

    async def resource(
        self, ctx: Context[Any, Any, Any], uri: str, work: Callable[[Caller], T]
    ) -> T:
        """Run a resource read as ``resources/read URI``."""
        return await self._run(ctx, "resources/read", uri, {"mcp.resource.uri": uri}, work)

    async def _run(
        self,
        ctx: Context[Any, Any, Any],
        method: str,
        target: str,
        attributes: dict[str, Any],
        work: Callable[[Caller], T],
    ) -> T:
        request = ctx.request_context.request
        headers = getattr(request, "headers", None)
        attributes = {
            **attributes,
            "jsonrpc.request.id": str(ctx.request_id),
            "network.transport": "pipe" if headers is None else "tcp",
        }
        carrier = trace_carrier(ctx.request_context.meta, headers)
        with request_span(
            method,
            target,
            carrier=carrier,
            attributes=attributes,
            tracer_provider=self.tracer_provider,
        ):
            caller = self.gate.caller(headers.get("authorization") if headers else None)
            return await self.state.run(lambda: self._guarded(work, caller))

    def _guarded(self, work: Callable[[Caller], T], caller: Caller) -> T:
        try:
            self.state.refresh()
            return work(caller)
        except MemoryToolError:
            raise
        except (ProvenanceError, EpisodicMemoryError) as exc:
            raise MemoryToolError(" ".join(str(exc).split()) or type(exc).__name__) from exc
        except Exception as exc:  # the server boundary: log it, answer the agent, keep serving
            log.exception("an MCP call failed")
            raise MemoryToolError(f"the memory failed: {type(exc).__name__}: {exc}") from exc
