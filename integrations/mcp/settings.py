"""How one MCP server over the memory runs: its store, scope, writes and tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from em_plugin.access import TokenTable

__all__ = ["MCPSettings"]


@dataclass(frozen=True)
class MCPSettings:
    """The settings of a :class:`~integrations.mcp.server.MemoryServer`.

    Args:
        store: A store spec (directory, ``memory:``, SPARQL endpoint URL).
        update_url: The SPARQL Update endpoint of a remote store, when it differs.
        scope: Serve this scope only (``None``: each call names its scope, or the caller's
            only visible scope is used).
        allow_write: Offer ``save_workflow`` (refused without it); a disk store is opened
            read-only otherwise, so the server runs beside a crew that writes it.
        tokens: Per-scope bearer tokens (HTTP only), as ``em-plugin serve --token-file`` reads
            them; ``None`` lets every caller see every scope.
        embedder: The embedder setting, as :func:`~em_plugin.embedding.resolve_embedder` takes
            it (``None``: the default model).
        host: The address the HTTP transport binds (the DNS-rebinding guard follows it).
    """

    store: str
    update_url: str | None = None
    scope: str | None = None
    allow_write: bool = False
    tokens: TokenTable | None = None
    embedder: Any = None
    host: str = "127.0.0.1"
