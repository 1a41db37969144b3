"""em-plugin: episodic memory for agent crews.

It records each workflow a crew carries out as W3C PROV provenance in RDF, indexes its steps, and
after each instruction suggests the next tasks from similar past workflows (IBM, "Episodic Memory
in Agentic Frameworks: Suggesting Next Tasks").

Example:
    >>> from em_plugin import CallStep, EpisodicMemory, FakeEmbedder, InstructionStep, Workflow
    >>> memory = EpisodicMemory(store="memory:", embedder=FakeEmbedder())

The integrations (``integrations.langgraph``, ``integrations.beeai``) take their session settings
as one ``policy=SessionPolicy(...)``, imported from here beside ``EpisodicMemory``. The errors a
user catches import from here too (the roots ``EpisodicMemoryError`` and ``ProvenanceError``,
``ConfigurationError``, ``StoreError``, ``WorkflowNotFound``); :mod:`em_plugin.errors` draws the
whole tree and serves every one of them.

Names are imported on first use, so ``import em_plugin`` stays fast and never imports torch.
``Trajectory`` and ``format_suggestions`` left ``__all__`` in this release: importing them from
here still works and warns (docs/api.md).
"""

from __future__ import annotations

import typing

from em_plugin._deprecation import lazy_names as _lazy_names

if typing.TYPE_CHECKING:
    from em_plugin.embedding.embedders import Embedder, FakeEmbedder
    from em_plugin.errors import ConfigurationError, EpisodicMemoryError
    from em_plugin.lifecycle.types import Procedure, WorkflowVersion
    from em_plugin.memory import EpisodicMemory
    from em_plugin.retrieval.reference import Match
    from em_plugin.session.policy import SessionPolicy
    from em_plugin.settings import RankingSettings, RetrievalSettings
    from em_plugin.suggest.crew import CrewDescription
    from em_plugin.suggest.types import Suggestion
    from provenance.errors import ProvenanceError, StoreError, WorkflowNotFound
    from provenance.model import CallStep, InstructionStep, Workflow
    from provenance.stores import open_store

__all__ = [
    "CallStep",
    "ConfigurationError",
    "CrewDescription",
    "Embedder",
    "EpisodicMemory",
    "EpisodicMemoryError",
    "FakeEmbedder",
    "InstructionStep",
    "Match",
    "Procedure",
    "ProvenanceError",
    "RankingSettings",
    "RetrievalSettings",
    "SessionPolicy",
    "StoreError",
    "Suggestion",
    "Workflow",
    "WorkflowNotFound",
    "WorkflowVersion",
    "open_store",
]

_WHERE = {
    "CallStep": "provenance.model",
    "ConfigurationError": "em_plugin.errors",
    "CrewDescription": "em_plugin.suggest.crew",
    "Embedder": "em_plugin.embedding",
    "EpisodicMemory": "em_plugin.memory",
    "EpisodicMemoryError": "em_plugin.errors",
    "FakeEmbedder": "em_plugin.embedding",
    "InstructionStep": "provenance.model",
    "Match": "em_plugin.retrieval.reference",
    "Procedure": "em_plugin.lifecycle.types",
    "ProvenanceError": "em_plugin.errors",
    "RankingSettings": "em_plugin.settings",
    "RetrievalSettings": "em_plugin.settings",
    "SessionPolicy": "em_plugin.session.policy",
    "StoreError": "em_plugin.errors",
    "Suggestion": "em_plugin.suggest.types",
    "Workflow": "provenance.model",
    "WorkflowNotFound": "em_plugin.errors",
    "WorkflowVersion": "em_plugin.lifecycle.types",
    "open_store": "provenance.stores",
}

# The names of _WHERE import on first use; the moved ones left __all__ in this release and still
# import from here, with a DeprecationWarning.
_load = _lazy_names(
    globals(),
    _WHERE,
    package="em_plugin",
    moved={
        "Trajectory": "em_plugin.capture.trajectory",
        "format_suggestions": "em_plugin.suggest.types",
    },
)


def __getattr__(name: str) -> typing.Any:
    return _load(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
