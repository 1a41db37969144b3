"""The settings objects of :class:`~em_plugin.memory.EpisodicMemory`: small, frozen, validated.

- :class:`RetrievalSettings`: which past workflows are retrieved (the paper's rule: threshold
  ``T``, at most ``max_workflows``, an optional window on long sessions; docs/retrieval.md);
- :class:`RankingSettings`: how the suggestion models rank next steps (the continuation model,
  the H-EPM graph's ``c`` and edge similarity; docs/suggestions.md).

Example:
    >>> from em_plugin import EpisodicMemory, RetrievalSettings
    >>> settings = RetrievalSettings(threshold=0.5)
    >>> memory = EpisodicMemory("memory:", embedder="fake", retrieval=settings)
    >>> memory.retrieval.threshold
    0.5
    >>> memory.close()
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from em_plugin.errors import ConfigurationError
from em_plugin.retrieval.reference import DEFAULT_MAX_WORKFLOWS, DEFAULT_THRESHOLD, MatchConfig
from em_plugin.state.scope_models import ScopeModelSpec
from em_plugin.suggest.continuation import ContinuationConfig
from em_plugin.suggest.models import ContinuationModel, ProceduralModel
from em_plugin.suggest.procedural_graph import DEFAULT_C, DEFAULT_SIMILARITY

__all__ = ["RankingSettings", "RetrievalSettings"]


@dataclass(frozen=True)
class RetrievalSettings:
    """Which past workflows a query retrieves (docs/retrieval.md).

    Raises:
        ConfigurationError: When ``threshold`` is outside [-1, 1], ``max_workflows`` is below 1 or
            ``window`` is neither ``None`` nor at least 1.
    """

    threshold: float = DEFAULT_THRESHOLD
    """``T``: a workflow is retrieved when its mean step similarity is strictly above it."""
    max_workflows: int = DEFAULT_MAX_WORKFLOWS
    """At most this many retrieved workflows, best first."""
    window: int | None = None
    """Match only the last ``window`` leaves of a long session (``None``: all)."""

    def __post_init__(self) -> None:
        self.match_config()  # validates, with the messages of the retrieval layer

    def match_config(self) -> MatchConfig:
        """Return the retrieval layer's parameters for these settings."""
        return MatchConfig(
            threshold=self.threshold, max_workflows=self.max_workflows, window=self.window
        )


@dataclass(frozen=True)
class RankingSettings:
    """How the suggestion models rank the next steps (docs/suggestions.md).

    Raises:
        ConfigurationError: When ``c`` is negative or ``edge_similarity`` is outside [-1, 1].
    """

    continuation: ContinuationConfig = field(default_factory=ContinuationConfig)
    """Parameters of the continuation model."""
    c: float = DEFAULT_C
    """H-EPM efficiency weight of the procedural graph."""
    edge_similarity: float = DEFAULT_SIMILARITY
    """Context cosine from which a procedural-graph edge ranks by similarity."""

    def __post_init__(self) -> None:
        if not isinstance(self.continuation, ContinuationConfig):
            raise ConfigurationError(
                "continuation must be an em_plugin.suggest.continuation.ContinuationConfig, "
                f"not {type(self.continuation).__name__}"
            )
        if self.c < 0:
            raise ConfigurationError(f"c must be >= 0, got {self.c}")
        if not -1.0 <= self.edge_similarity <= 1.0:
            raise ConfigurationError(
                f"edge_similarity must be in [-1, 1], got {self.edge_similarity}"
            )

    def built_in_models(self) -> list[ScopeModelSpec]:
        """Return the continuation and procedural models with these settings applied."""
        return self.configure([ContinuationModel(), ProceduralModel()])

    def configure(self, models: Sequence[ScopeModelSpec]) -> list[ScopeModelSpec]:
        """Return the declared per-scope models with these settings applied.

        The continuation and procedural models (:mod:`em_plugin.suggest.models`) take their
        parameters from here; any other model is kept as its suggester declared it.
        """
        configured: list[ScopeModelSpec] = []
        for spec in models:
            if isinstance(spec, ContinuationModel):
                spec = ContinuationModel(self.continuation)
            elif isinstance(spec, ProceduralModel):
                spec = ProceduralModel(c=self.c, similarity_threshold=self.edge_similarity)
            configured.append(spec)
        return configured
