"""An MCP server over the episodic memory (``em-plugin mcp``): for assistants and agent crews.

Tools recall similar workflows, suggest next steps with evidence, save workflows (when allowed),
list scopes and workflows, and run the named SPARQL queries; each stored workflow's PROV
(Turtle, PROV-JSON) is a resource. Built on the official ``mcp`` SDK (stdio and stateless
streamable HTTP); it needs the ``[mcp]`` extra. See docs/mcp.md.

Example::

    from integrations.mcp import MCPSettings, MemoryServer
    server = MemoryServer(MCPSettings(store="~/.em-plugin/store"))
    server.mcp.run("stdio")  # or mount server.mcp.streamable_http_app() in any ASGI server
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from integrations.mcp.server import MemoryServer
    from integrations.mcp.settings import MCPSettings

__all__ = ["MCPSettings", "MemoryServer"]


def __getattr__(name: str) -> Any:
    # Lazy: `em-plugin mcp --help` and the command's checks work without the [mcp] extra.
    if name == "MemoryServer":
        from integrations.mcp.server import MemoryServer

        return MemoryServer
    if name == "MCPSettings":
        from integrations.mcp.settings import MCPSettings

        return MCPSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
