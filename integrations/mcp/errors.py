"""The one error the MCP server answers a tool call with (an ``isError`` result, never a crash)."""

from __future__ import annotations

from mcp.server.fastmcp.exceptions import ToolError

from em_plugin.errors import EpisodicMemoryError

__all__ = ["MemoryToolError"]


class MemoryToolError(EpisodicMemoryError, ToolError):
    """A call the server refuses or cannot serve; the message says what to change.

    The SDK turns it into a tool result with ``isError: true`` whose text is the message, so the
    calling agent reads why and can correct its input.
    """
