"""The Chemist crew of the paper's demo (Figure 2): a coordinator and one expert per tool.

:data:`CREW_DESCRIPTION` is an :class:`em_plugin.suggest.crew.CrewDescription` (the one crew-
description type of the project): the coordinator first, with no tools of its own, then one sub-
agent per tool. The adapters in ``integrations/`` turn it into agents and prompts, and the
suggestion fallback (no similar workflow in memory) turns it into next steps. :data:`TOOLS` maps
each tool name to its framework-neutral function; :data:`TITLES` gives each agent's display name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from em_plugin.suggest.crew import AgentDescription, CrewDescription, ToolDescription

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


def _tool_summary(tool: str) -> str:
    # The first docstring line of each tool is written to double as its short description.
    doc = TOOLS[tool].__doc__ or ""
    return doc.strip().splitlines()[0]


def _agent(name: str, role: str, description: str, tool: str | None = None) -> AgentDescription:
    tools = (ToolDescription(tool, _tool_summary(tool)),) if tool else ()
    return AgentDescription(name=name, role=role, description=description, tools=tools)


CREW_DESCRIPTION = CrewDescription(
    name="chemist-crew",
    description=(
        "Hazard assessment in materials science: find PFAS (per- and polyfluoroalkyl "
        "substances) in products described by Safety Data Sheets and Full Material "
        "Declarations, and assess their persistence, bioaccumulation and toxicity (PBT)."
    ),
    agents=(
        _agent(
            "chemist",
            "Coordinator of the chemist crew",
            "Decomposes the user's task into sub-tasks, delegates each to the expert sub-agent "
            "that has the right tool, and combines their outputs into the final answer. Answers "
            "general chemistry questions from its own knowledge when no tool applies.",
        ),
        _agent(
            "product_extractor_agent",
            "Reads product documents",
            _tool_summary("product_extractor")
            + " Use it first when the user names an SDS (.txt/.pdf) or IPC-1752A (.xml) file.",
            "product_extractor",
        ),
        _agent(
            "pfas_classifier_agent",
            "Decides which molecules are PFAS",
            _tool_summary("pfas_classifier")
            + " Works on SMILES, CAS numbers, names or an extracted ingredient list.",
            "pfas_classifier",
        ),
        _agent(
            "hazard_assessor_agent",
            "Screens substances for PBT/vPvB properties",
            _tool_summary("hazard_assessment") + " Reports missing data instead of guessing.",
            "hazard_assessment",
        ),
        _agent(
            "markdown_formatter_agent",
            "Formats results for the user",
            _tool_summary("markdown_table") + " Use it when the user asks for a table or a report.",
            "markdown_table",
        ),
    ),
)
"""The crew: ``agents[0]`` is the coordinator, the others are its sub-agents."""

COORDINATOR: AgentDescription = CREW_DESCRIPTION.agents[0]
"""The Chemist Agent: receives user instructions and delegates."""

SUB_AGENTS: tuple[AgentDescription, ...] = CREW_DESCRIPTION.agents[1:]
"""The expert sub-agents, one per tool."""

TITLES: dict[str, str] = {
    "chemist": "Chemist Agent",
    "product_extractor_agent": "Product Extractor Agent",
    "pfas_classifier_agent": "PFAS Classifier Agent",
    "hazard_assessor_agent": "Hazard Assessment Agent",
    "markdown_formatter_agent": "Report Formatter Agent",
}
"""Display names of the agents, by agent name."""


def agent_for_tool(tool: str) -> str:
    """Return the name of the sub-agent that owns ``tool``.

    Raises:
        KeyError: No sub-agent has that tool; the message lists the crew's tools.
    """
    for agent in SUB_AGENTS:
        if any(t.name == tool for t in agent.tools):
            return agent.name
    raise KeyError(
        f"No agent of crew {CREW_DESCRIPTION.name!r} has tool {tool!r}; "
        f"tools: {', '.join(CREW_DESCRIPTION.tool_names)}"
    )
