"""The per-scope models of the built-in suggesters, as they declare them.

* :class:`ContinuationModel`: the continuation index (:mod:`em_plugin.suggest.continuation`),
  read by the episodic suggester;
* :class:`ProceduralModel`: H-EPM's tool-transition graph
  (:mod:`em_plugin.suggest.procedural_graph`), read by the procedural and fallback suggesters.

Each is a :class:`~em_plugin.state.scope_models.ScopeModelSpec`: the scope's state builds it
over the scope's arrays and keeps it up to date; a suggester reads it as
``request.view.model(name)``. A memory configures both from its
:class:`~em_plugin.settings.RankingSettings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from em_plugin.errors import ConfigurationError
from em_plugin.state.scope_models import ModelScope
from em_plugin.suggest.continuation import ContinuationIndex
from em_plugin.suggest.continuation_types import ContinuationConfig
from em_plugin.suggest.procedural_graph import DEFAULT_C, DEFAULT_SIMILARITY, ProceduralGraph

__all__ = ["CONTINUATION", "PROCEDURAL", "ContinuationModel", "ProceduralModel"]

#: The names the built-in models are read by.
CONTINUATION = "continuation"
PROCEDURAL = "procedural"


@dataclass(frozen=True)
class ContinuationModel:
    """The continuation index of a scope (the episodic suggester's model).

    Args:
        config: The model's parameters.
    """

    config: ContinuationConfig = field(default_factory=ContinuationConfig)
    name = CONTINUATION

    def build(self, scope: ModelScope) -> ContinuationIndex:
        """Index the scope's live workflows."""
        return ContinuationIndex(scope.arrays, scope.contexts, self.config, textless=scope.textless)


@dataclass(frozen=True)
class ProceduralModel:
    """H-EPM's tool-transition graph of a scope (the procedural and fallback suggesters' model).

    Args:
        c: Weight of the efficiency term.
        similarity_threshold: Context cosine from which an edge ranks by similarity.

    Raises:
        ConfigurationError: When ``c`` is negative or the threshold is outside [-1, 1].
    """

    c: float = DEFAULT_C
    similarity_threshold: float = DEFAULT_SIMILARITY
    name = PROCEDURAL

    def __post_init__(self) -> None:
        if self.c < 0:
            raise ConfigurationError(f"c must be >= 0, got {self.c}")
        if not -1.0 <= self.similarity_threshold <= 1.0:
            raise ConfigurationError(
                f"similarity_threshold must be in [-1, 1], got {self.similarity_threshold}"
            )

    def build(self, scope: ModelScope) -> ProceduralGraph:
        """Index the scope's live workflows."""
        return ProceduralGraph(
            scope.arrays,
            scope.contexts,
            c=self.c,
            similarity_threshold=self.similarity_threshold,
            textless=scope.textless,
        )
