"""The streamable HTTP transport: the SDK's ASGI app behind a bearer-token gate, on uvicorn.

With tokens (``--token-file``, the file ``em-plugin serve`` reads) a request without a known
bearer token is answered 401 before the MCP app sees it; a known token's scopes are then
checked call by call (:mod:`integrations.mcp.access`). Without tokens the server must listen on
loopback (:func:`check_bind`), and the SDK's DNS-rebinding guard refuses other ``Host`` names.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from em_plugin.access import AccessDenied, TokenTable, is_loopback
from integrations.mcp.server import MemoryServer

__all__ = ["MCP_PATH", "BearerGate", "check_bind", "http_app", "listen", "serve_http"]

MCP_PATH = "/mcp"
"""The path of the MCP endpoint."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def check_bind(host: str, tokens: TokenTable | None) -> None:
    """Refuse a non-loopback address without tokens.

    Raises:
        ValueError: ``host`` is not loopback and ``tokens`` is ``None`` (the message says why).
    """
    if tokens is None and not is_loopback(host):
        raise ValueError(
            f"refusing to serve on {host} without --token-file: the server answers with the "
            "whole memory; bind to 127.0.0.1 (the default) or give --token-file"
        )


class BearerGate:
    """ASGI middleware: every HTTP request must carry a bearer token of the table.

    Args:
        app: The wrapped ASGI app.
        tokens: The token table.
    """

    def __init__(self, app: ASGIApp, tokens: TokenTable) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 401 to a request without a known token; pass the rest on."""
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            authorization = headers.get(b"authorization", b"").decode("latin-1") or None
            try:
                self.tokens.authenticate(authorization)
            except AccessDenied as exc:
                await _refuse(send, exc.status, str(exc))
                return
        await self.app(scope, receive, send)


def http_app(server: MemoryServer) -> ASGIApp:
    """Return the ASGI app of a server's streamable HTTP endpoint (:data:`MCP_PATH`)."""
    app: ASGIApp = server.mcp.streamable_http_app()
    tokens = server.settings.tokens
    return app if tokens is None else BearerGate(app, tokens)


def listen(host: str, port: int) -> socket.socket:
    """Bind a listening socket (port 0: a free one), so its port is known before serving.

    Raises:
        OSError: The address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def serve_http(
    server: MemoryServer, sock: socket.socket, *, ready: Callable[[], None] | None = None
) -> None:
    """Serve the MCP endpoint on a bound socket until interrupted (uvicorn).

    Args:
        server: The server.
        sock: From :func:`listen`.
        ready: Called once the endpoint answers.
    """
    import uvicorn

    # No websockets: MCP needs none, and uvicorn would import a deprecated websockets API.
    config = uvicorn.Config(http_app(server), log_level="warning", ws="none", lifespan="on")
    asyncio.run(_serve(uvicorn.Server(config), sock, ready))


async def _serve(server: Any, sock: socket.socket, ready: Callable[[], None] | None) -> None:
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started and not task.done():
        await asyncio.sleep(0.02)
    if server.started and ready is not None:
        ready()
    await task


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="em-plugin"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
