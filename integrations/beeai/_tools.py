"""The BeeAI recall tool (agents look past workflows up deliberately) and crew descriptions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, Self

from beeai_framework.agents import BaseAgent
from beeai_framework.context import RunContext
from beeai_framework.emitter import Emitter
from beeai_framework.tools import StringToolOutput, Tool, ToolRunOptions
from beeai_framework.tools.handoff import HandoffTool
from pydantic import BaseModel, Field

from em_plugin.errors import ConfigurationError
from em_plugin.session import RECALL_DESCRIPTION, FaultIsolation, MemoryPort, memory_for_scope
from em_plugin.session.recall import recall_answer
from integrations.beeai._capture import NOT_CALLS
from integrations.beeai._context import logger, scope_of


class RecallInput(BaseModel):
    """The recall tool's input."""

    query: str = Field(description="A short description of the task you are about to do.")


class RecallWorkflowsTool(Tool[RecallInput, ToolRunOptions, StringToolOutput]):
    """A BeeAI tool that returns the past workflows most similar to a query.

    Its own calls are not workflow steps: the memory's recorders skip them, as they skip
    ``think``. The scope is ``scope`` in the run's context (inherited from the coordinator's run),
    else the memory's own.

    Example:
        >>> coordinator = RequirementAgent(llm=llm, tools=[RecallWorkflowsTool(memory), ...])

    Args:
        memory: The :class:`~em_plugin.memory.EpisodicMemory`.
        name: The tool's name.
        description: What the model is told about the tool.
        limit: How many workflows to describe.
        strict: Raise memory failures (the agent sees a tool error) instead of answering that
            memory is unavailable.

    Raises:
        ConfigurationError: On an empty name or a limit below 1.
    """

    def __init__(
        self,
        memory: MemoryPort,
        *,
        name: str = "recall_workflows",
        description: str = RECALL_DESCRIPTION,
        limit: int = 3,
        strict: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError("the recall tool needs a non-empty name")
        if not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"limit must be an integer >= 1, got {limit!r}")
        super().__init__()
        self.memory = memory
        self._name = name
        self._description = description
        self.limit = limit
        self.strict = strict

    @property
    def name(self) -> str:
        """The tool's name."""
        return self._name

    @property
    def description(self) -> str:
        """What the model is told about the tool."""
        return self._description

    @property
    def input_schema(self) -> type[RecallInput]:
        """The input model: ``{"query": str}``."""
        return RecallInput

    def _create_emitter(self) -> Emitter:
        return Emitter.root().child(namespace=["tool", "episodic_memory", "recall"], creator=self)

    async def _run(
        self, input: RecallInput, options: ToolRunOptions | None, context: RunContext
    ) -> StringToolOutput:
        memory = memory_for_scope(self.memory, scope_of(context, None, self.memory))
        # The memory's retrieval is synchronous (FAISS, the store): keep the loop free.
        text = await asyncio.to_thread(
            recall_answer,
            memory,
            input.query,
            limit=self.limit,
            isolation=FaultIsolation(self.strict, logger),
        )
        return StringToolOutput(text)

    async def clone(self) -> Self:
        """Return a copy sharing the memory (agents clone their tools on handoff)."""
        tool = self.__class__(
            self.memory,
            name=self._name,
            description=self._description,
            limit=self.limit,
            strict=self.strict,
        )
        tool.middlewares.extend(self.middlewares)
        return tool


def recall_workflows_tool(memory: MemoryPort, **options: Any) -> RecallWorkflowsTool:
    """Build the recall tool (same options as :class:`RecallWorkflowsTool`).

    Args:
        memory: The episodic memory.
        **options: ``name``, ``description``, ``limit``, ``strict``.

    Returns:
        The tool.
    """
    return RecallWorkflowsTool(memory, **options)


def crew_description(coordinator: Any, *, name: str | None = None, description: str = "") -> Any:
    """Describe a BeeAI crew: the coordinator and every agent reachable through a handoff.

    The memory's fallback suggester uses it when nothing similar is in memory.

    Args:
        coordinator: The coordinating agent (e.g. a ``RequirementAgent``).
        name: The crew's name (default: the coordinator's).
        description: What the crew does (default: the coordinator's description).

    Returns:
        An :class:`em_plugin.suggest.crew.CrewDescription`; each agent lists its tools (a handoff
        is a tool named after its sub-agent).

    Raises:
        ConfigurationError: When ``coordinator`` is not a BeeAI agent.
    """
    from em_plugin.suggest.crew import AgentDescription, CrewDescription, ToolDescription

    if not isinstance(coordinator, BaseAgent):
        raise ConfigurationError(
            f"crew_description needs a BeeAI agent, not {type(coordinator).__name__}"
        )
    agents = []
    for agent in _agents(coordinator):
        tools = tuple(
            ToolDescription(name=tool.name, description=(tool.description or "").strip())
            for tool in agent.meta.tools
            if not isinstance(tool, NOT_CALLS + (RecallWorkflowsTool,))
        )
        agents.append(
            AgentDescription(name=_name(agent), role=(agent.meta.description or ""), tools=tools)
        )
    meta = coordinator.meta
    return CrewDescription(
        name=name or _name(coordinator),
        description=description or (meta.description or ""),
        agents=tuple(agents),
    )


def _agents(coordinator: BaseAgent[Any]) -> Iterator[BaseAgent[Any]]:
    """Yield the coordinator, then the handoff targets depth-first, each agent once."""
    seen: set[int] = set()
    stack: list[BaseAgent[Any]] = [coordinator]
    while stack:
        agent = stack.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        yield agent
        targets = [
            getattr(tool, "_target", None)  # HandoffTool keeps its sub-agent here (0.1.85)
            for tool in agent.meta.tools
            if isinstance(tool, HandoffTool)
        ]
        stack.extend(reversed([t for t in targets if isinstance(t, BaseAgent)]))


def _name(agent: BaseAgent[Any]) -> str:
    return agent.meta.name or type(agent).__name__
