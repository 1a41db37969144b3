"""Crew descriptions: the agents, their roles and their tools (docs/suggestions.md).

The fallback suggesters use a crew description when memory holds nothing similar: the
deterministic one ranks the crew's tools, the LLM one puts :meth:`CrewDescription.to_text` in its
prompt. The integrations build descriptions from LangGraph tools or BeeAI agents; a plain mapping
(e.g. JSON, or the demo crew's ``to_dict()``) works too, through
:meth:`CrewDescription.from_mapping`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from em_plugin.errors import ConfigurationError

__all__ = ["AgentDescription", "CrewDescription", "ToolDescription", "coerce_crew"]


def _text(value: Any, what: str, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ConfigurationError(f"{what} must be a string, not {type(value).__name__}")
    if required and not value.strip():
        raise ConfigurationError(f"{what} must not be empty")
    return value


@dataclass(frozen=True)
class ToolDescription:
    """One tool an agent may call."""

    name: str
    """The tool name, as it appears in call steps."""
    description: str = ""
    """What the tool does (first sentence is enough)."""

    def __post_init__(self) -> None:
        _text(self.name, "tool name", required=True)
        _text(self.description, f"tool {self.name!r} description")


@dataclass(frozen=True)
class AgentDescription:
    """One agent of a crew and its tools (a handoff is a tool named after its sub-agent)."""

    name: str
    """The agent's identifier."""
    role: str = ""
    """One line: what the agent is for."""
    tools: tuple[ToolDescription, ...] = ()
    """The tools it may call."""
    description: str = ""
    """Longer description, when there is one."""

    def __post_init__(self) -> None:
        _text(self.name, "agent name", required=True)
        _text(self.role, f"agent {self.name!r} role")
        _text(self.description, f"agent {self.name!r} description")
        if isinstance(self.tools, list):
            object.__setattr__(self, "tools", tuple(self.tools))
        if not all(isinstance(t, ToolDescription) for t in self.tools):
            raise ConfigurationError(f"agent {self.name!r} tools must be ToolDescription objects")


@dataclass(frozen=True)
class CrewDescription:
    """A crew: its name, what it does and its agents with their tools."""

    name: str
    """The crew's identifier (recorded on workflows as ``crew``)."""
    description: str = ""
    """What the crew is for."""
    agents: tuple[AgentDescription, ...] = ()
    """The agents, coordinator first when there is one."""

    def __post_init__(self) -> None:
        _text(self.name, "crew name", required=True)
        _text(self.description, f"crew {self.name!r} description")
        if isinstance(self.agents, list):
            object.__setattr__(self, "agents", tuple(self.agents))
        if not all(isinstance(a, AgentDescription) for a in self.agents):
            raise ConfigurationError(f"crew {self.name!r} agents must be AgentDescription objects")

    def tools(self) -> Iterator[tuple[AgentDescription, ToolDescription]]:
        """Yield ``(agent, tool)`` for every tool, in agent order, each tool name once."""
        seen: set[str] = set()
        for agent in self.agents:
            for tool in agent.tools:
                if tool.name not in seen:
                    seen.add(tool.name)
                    yield agent, tool

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Every tool name once, in agent order."""
        return tuple(tool.name for _, tool in self.tools())

    def tool(self, name: str) -> ToolDescription | None:
        """Return the description of a tool, or ``None`` when the crew has no such tool."""
        return next((tool for _, tool in self.tools() if tool.name == name), None)

    def to_text(self) -> str:
        """Render the crew for a prompt: name, description, then each agent with its tools."""
        lines = [f"Crew: {self.name}"]
        if self.description.strip():
            lines.append(f"Purpose: {' '.join(self.description.split())}")
        for agent in self.agents:
            role = f" - {' '.join(agent.role.split())}" if agent.role.strip() else ""
            lines.append(f"Agent {agent.name}{role}")
            if agent.description.strip() and agent.description.strip() != agent.role.strip():
                lines.append(f"  {' '.join(agent.description.split())}")
            for tool in agent.tools:
                about = f": {' '.join(tool.description.split())}" if tool.description else ""
                lines.append(f"  - tool {tool.name}{about}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Return JSON-ready data that :meth:`from_mapping` reads back."""
        return {
            "name": self.name,
            "description": self.description,
            "agents": [
                {
                    "name": a.name,
                    "role": a.role,
                    "description": a.description,
                    "tools": [{"name": t.name, "description": t.description} for t in a.tools],
                }
                for a in self.agents
            ],
        }

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> CrewDescription:
        """Build a description from a mapping.

        Tools may be names or ``{"name", "description"}`` mappings; an optional ``coordinator``
        mapping becomes the first agent (the demo crew's ``to_dict()`` reads as is).

        Args:
            data: ``{"name", "description"?, "coordinator"?, "agents"?: [...]}``.

        Returns:
            The crew description.

        Raises:
            ConfigurationError: When a field has the wrong type or a name is missing.
        """
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"a crew must be a mapping, not {type(data).__name__}")
        agents_data = list(_sequence(data.get("agents", ()), "crew agents"))
        if data.get("coordinator") is not None:
            agents_data.insert(0, data["coordinator"])
        return cls(
            name=_text(data.get("name"), "crew name", required=True),
            description=_text(data.get("description"), "crew description"),
            agents=tuple(_agent(a) for a in agents_data),
        )


def _sequence(value: Any, what: str) -> Sequence[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ConfigurationError(f"{what} must be a list, not {type(value).__name__}")
    return value


def _agent(data: Any) -> AgentDescription:
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"a crew agent must be a mapping, not {type(data).__name__}")
    tools = []
    for tool in _sequence(data.get("tools", ()), f"agent {data.get('name')!r} tools"):
        if isinstance(tool, str):
            tools.append(ToolDescription(name=tool))
        elif isinstance(tool, Mapping):
            tools.append(
                ToolDescription(
                    name=_text(tool.get("name"), "tool name", required=True),
                    description=tool.get("description") or "",
                )
            )
        else:
            raise ConfigurationError(
                f"a tool must be a name or a mapping, not {type(tool).__name__}"
            )
    return AgentDescription(
        name=_text(data.get("name"), "agent name", required=True),
        role=_text(data.get("role"), "agent role"),
        description=_text(data.get("description"), "agent description"),
        tools=tuple(tools),
    )


def coerce_crew(value: Any) -> CrewDescription | None:
    """Accept a crew description in any supported form.

    Args:
        value: ``None``, a :class:`CrewDescription`, a mapping, or an object with ``to_dict()``
            (such as the demo crew).

    Returns:
        The description, or ``None`` for ``None``.

    Raises:
        ConfigurationError: For anything else.
    """
    if value is None or isinstance(value, CrewDescription):
        return value
    if isinstance(value, Mapping):
        return CrewDescription.from_mapping(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return CrewDescription.from_mapping(to_dict())
    raise ConfigurationError(
        f"crew must be None, a CrewDescription, a mapping or an object with to_dict(); "
        f"got {type(value).__name__}"
    )
