"""The PFAS hazard-assessment crew of the paper's demo, as framework-neutral Python.

Four tools, each a plain function taking JSON-able arguments and returning a JSON-able dict:

* :func:`product_extractor` reads ingredients from an SDS (.txt/.pdf) or IPC-1752A (.xml) file;
* :func:`pfas_classifier` applies the OECD 2021 PFAS definition with RDKit;
* :func:`hazard_assessment` screens for PBT/vPvB properties against REACH Annex XIII;
* :func:`markdown_table` renders results as a Markdown table.

:data:`TOOLS` maps tool names to the functions and :data:`CREW_DESCRIPTION` (an
:class:`em_plugin.suggest.crew.CrewDescription`) describes the Chemist crew (coordinator and
sub-agents). :mod:`integrations.demo.pfas.bootstrap` generates the synthetic workflows that seed the
episodic memory. Bundled data: ``integrations/demo/pfas/data/``.
No agent framework is imported here; the adapters live in ``integrations/``.
"""

from __future__ import annotations

from em_plugin.suggest.crew import AgentDescription, CrewDescription

from .crew import COORDINATOR, CREW_DESCRIPTION, SUB_AGENTS, TITLES, TOOLS, agent_for_tool
from .hazard import hazard_assessment
from .markdown import markdown_table
from .pfas import pfas_classifier
from .sds import product_extractor
from .tables import sample_names

__all__ = [
    "COORDINATOR",
    "CREW_DESCRIPTION",
    "SUB_AGENTS",
    "TITLES",
    "TOOLS",
    "AgentDescription",
    "CrewDescription",
    "agent_for_tool",
    "hazard_assessment",
    "markdown_table",
    "pfas_classifier",
    "product_extractor",
    "sample_names",
]
