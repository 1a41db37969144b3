"""em-plugin: episodic memory for agent crews.

It records each workflow a crew carries out as W3C PROV provenance in RDF, indexes its steps, and
after each instruction suggests the next tasks from similar past workflows (IBM, "Episodic Memory
in Agentic Frameworks: Suggesting Next Tasks").

Example:
    >>> from em_plugin import CallStep, EpisodicMemory, FakeEmbedder, InstructionStep, Workflow
    >>> memory = EpisodicMemory(store="memory:", embedder=FakeEmbedder())

Names are imported on first use, so ``import em_plugin`` stays fast and never imports torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from em_plugin.capture.trajectory import Trajectory
    from em_plugin.embedding.embedders import Embedder, FakeEmbedder
    from em_plugin.errors import EpisodicMemoryError
    from em_plugin.lifecycle.types import Procedure, WorkflowVersion
    from em_plugin.memory import EpisodicMemory
    from em_plugin.retrieval.reference import Match
    from em_plugin.suggest.crew import CrewDescription
    from em_plugin.suggest.types import Suggestion, format_suggestions
    from provenance.model import CallStep, InstructionStep, Workflow
    from provenance.stores import open_store

__all__ = [
    "CallStep",
    "CrewDescription",
    "Embedder",
    "EpisodicMemory",
    "EpisodicMemoryError",
    "FakeEmbedder",
    "InstructionStep",
    "Match",
    "Procedure",
    "Suggestion",
    "Trajectory",
    "Workflow",
    "WorkflowVersion",
    "format_suggestions",
    "open_store",
]

_WHERE = {
    "CallStep": "provenance.model",
    "CrewDescription": "em_plugin.suggest.crew",
    "Embedder": "em_plugin.embedding",
    "EpisodicMemory": "em_plugin.memory",
    "EpisodicMemoryError": "em_plugin.errors",
    "FakeEmbedder": "em_plugin.embedding",
    "InstructionStep": "provenance.model",
    "Match": "em_plugin.retrieval.reference",
    "Procedure": "em_plugin.lifecycle.types",
    "Suggestion": "em_plugin.suggest.types",
    "Trajectory": "em_plugin.capture.trajectory",
    "Workflow": "provenance.model",
    "WorkflowVersion": "em_plugin.lifecycle.types",
    "format_suggestions": "em_plugin.suggest.types",
    "open_store": "provenance.stores",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'em_plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
