"""The Chemist crew of the paper's demo (Figure 2): a coordinator and one expert per tool.

:data:`CREW_DESCRIPTION` is plain data: the adapters in ``integrations/`` turn it into agents and
prompts, and the suggestion fallback (no similar workflow in memory) turns it into next steps.
:data:`TOOLS` maps each tool name to its framework-neutral function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .hazard import hazard_assessment
from .markdown import markdown_table
from .pfas import pfas_classifier
from .sds import product_extractor

TOOLS: dict[str, Callable[..., dict[str, Any]]] = {
    "product_extractor": product_extractor,
    "pfas_classifier": pfas_classifier,
    "hazard_assessment": hazard_assessment,
    "markdown_table": markdown_table,
}


@dataclass(frozen=True)
class AgentDescription:
    """One agent of a crew."""

    name: str
    """Identifier, used as the ``agent`` of the calls it makes (``"product_extractor_agent"``)."""
    title: str
    """Display name (``"Product Extractor Agent"``)."""
    role: str
    """One line: what the agent is."""
    description: str
    """What it does and when the coordinator should delegate to it."""
    tools: tuple[str, ...] = ()
    """Names of the tools (keys of :data:`TOOLS`) it may call."""

    def to_dict(self) -> dict[str, Any]:
        """Return the description as JSON-ready data."""
        return {
            "name": self.name,
            "title": self.title,
            "role": self.role,
            "description": self.description,
            "tools": list(self.tools),
        }


@dataclass(frozen=True)
class CrewDescription:
    """A coordinator and the sub-agents it delegates to."""

    name: str
    """Identifier of the crew."""
    description: str
    """What the crew is for."""
    coordinator: AgentDescription
    """The agent that receives user instructions and delegates."""
    agents: tuple[AgentDescription, ...]
    """The sub-agents, one per tool."""

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Every tool of the crew, in sub-agent order."""
        return tuple(tool for agent in self.agents for tool in agent.tools)

    def agent_for_tool(self, tool: str) -> str:
        """Return the name of the sub-agent that owns ``tool``.

        Raises:
            KeyError: No sub-agent has that tool; the message lists the crew's tools.
        """
        for agent in self.agents:
            if tool in agent.tools:
                return agent.name
        raise KeyError(
            f"No agent of crew {self.name!r} has tool {tool!r}; tools: {', '.join(self.tool_names)}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the description as JSON-ready data."""
        return {
            "name": self.name,
            "description": self.description,
            "coordinator": self.coordinator.to_dict(),
            "agents": [agent.to_dict() for agent in self.agents],
        }


def _tool_summary(tool: str) -> str:
    # The first docstring line of each tool is written to double as its short description.
    doc = TOOLS[tool].__doc__ or ""
    return doc.strip().splitlines()[0]


CREW_DESCRIPTION = CrewDescription(
    name="chemist-crew",
    description=(
        "Hazard assessment in materials science: find PFAS (per- and polyfluoroalkyl "
        "substances) in products described by Safety Data Sheets and Full Material "
        "Declarations, and assess their persistence, bioaccumulation and toxicity (PBT)."
    ),
    coordinator=AgentDescription(
        name="chemist",
        title="Chemist Agent",
        role="Coordinator of the chemist crew",
        description=(
            "Decomposes the user's task into sub-tasks, delegates each to the expert sub-agent "
            "that has the right tool, and combines their outputs into the final answer. Answers "
            "general chemistry questions from its own knowledge when no tool applies."
        ),
    ),
    agents=(
        AgentDescription(
            name="product_extractor_agent",
            title="Product Extractor Agent",
            role="Reads product documents",
            description=_tool_summary("product_extractor")
            + " Use it first when the user names an SDS (.txt/.pdf) or IPC-1752A (.xml) file.",
            tools=("product_extractor",),
        ),
        AgentDescription(
            name="pfas_classifier_agent",
            title="PFAS Classifier Agent",
            role="Decides which molecules are PFAS",
            description=_tool_summary("pfas_classifier")
            + " Works on SMILES, CAS numbers, names or an extracted ingredient list.",
            tools=("pfas_classifier",),
        ),
        AgentDescription(
            name="hazard_assessor_agent",
            title="Hazard Assessment Agent",
            role="Screens substances for PBT/vPvB properties",
            description=_tool_summary("hazard_assessment")
            + " Reports missing data instead of guessing.",
            tools=("hazard_assessment",),
        ),
        AgentDescription(
            name="markdown_formatter_agent",
            title="Report Formatter Agent",
            role="Formats results for the user",
            description=_tool_summary("markdown_table")
            + " Use it when the user asks for a table or a report.",
            tools=("markdown_table",),
        ),
    ),
)
