"""The recall tool (agents look past workflows up deliberately) and crew descriptions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolRuntime

from em_plugin.session import (
    RECALL_DESCRIPTION,
    FaultIsolation,
    MemoryPort,
    memory_for_scope,
)
from em_plugin.session.recall import recall_answer
from integrations.langgraph._context import logger, scope_of


def recall_workflows_tool(
    memory: MemoryPort,
    *,
    name: str = "recall_workflows",
    description: str = RECALL_DESCRIPTION,
    limit: int = 3,
    strict: bool = False,
) -> BaseTool:
    """Build a tool the agent calls with a query to look past workflows up.

    The scope comes from the run's context or config (``scope``), as for the node.

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        name: The tool's name.
        description: What the model is told about it.
        limit: How many workflows to describe.
        strict: Raise memory failures instead of answering that memory is unavailable.

    Returns:
        A LangChain tool taking ``query: str``.
    """
    isolation = FaultIsolation(strict, logger)

    def recall(query: str, runtime: ToolRuntime) -> str:
        scope = scope_of(runtime.config, runtime.context, memory)
        view = memory_for_scope(memory, scope)
        return recall_answer(view, query, limit=limit, isolation=isolation)

    recall.__doc__ = description
    return StructuredTool.from_function(recall, name=name, description=description)


def tools_of(graph: Any) -> list[BaseTool]:
    """Collect the tools of a compiled graph's ``ToolNode``s (subgraphs included).

    Args:
        graph: A compiled LangGraph graph (``create_agent`` or hand-built).

    Returns:
        The tools, each once, in node order.
    """
    found: dict[str, BaseTool] = {}
    for node in getattr(graph, "nodes", {}).values():
        for candidate in (getattr(node, "bound", None), node):
            tools_by_name = getattr(candidate, "tools_by_name", None)
            if isinstance(tools_by_name, dict):
                for tool_name, tool in tools_by_name.items():
                    found.setdefault(tool_name, tool)
            elif hasattr(candidate, "nodes") and candidate is not graph:
                for tool in tools_of(candidate):
                    found.setdefault(tool.name, tool)
    return list(found.values())


def describe_tools(tools: Iterable[BaseTool]) -> list[tuple[str, str]]:
    """Return ``(name, description)`` for each tool, for a crew description."""
    return [(tool.name, (tool.description or "").strip()) for tool in tools]


def crew_description(
    tools_or_graph: Any,
    *,
    name: str = "crew",
    description: str = "",
    agent: str = "agent",
    role: str = "",
) -> Any:
    """Build an :class:`em_plugin.suggest.crew.CrewDescription` from a graph's (or a list of) tools.

    The memory's fallback suggester uses it when nothing similar is in memory.

    Args:
        tools_or_graph: A compiled graph or a sequence of tools.
        name: The crew's name.
        description: What the crew does.
        agent: The agent that owns the tools.
        role: The agent's role.

    Returns:
        The crew description.
    """
    from em_plugin.suggest.crew import AgentDescription, CrewDescription, ToolDescription

    tools = (
        list(tools_or_graph) if isinstance(tools_or_graph, Sequence) else tools_of(tools_or_graph)
    )
    return CrewDescription(
        name=name,
        description=description,
        agents=(
            AgentDescription(
                name=agent,
                role=role,
                tools=tuple(
                    ToolDescription(name=n, description=d) for n, d in describe_tools(tools)
                ),
            ),
        ),
    )
