"""The continuation model's values: its parameters, the current state, a ranked candidate.

See :mod:`em_plugin.suggest.continuation` (the model) and docs/tuning.md (the defaults). The
current state (:class:`~em_plugin.state.scope_models.Query`) is the state layer's: the scope
builds it for every model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from em_plugin.errors import ConfigurationError
from em_plugin.state.scope_models import Query
from em_plugin.types import Evidence

__all__ = ["Candidate", "ContinuationConfig", "Query"]


@dataclass(frozen=True)
class ContinuationConfig:
    """Parameters of the continuation model (see the module doc)."""

    max_order: int = 3
    """Longest agreement of recent leaves that is counted."""
    context_weight: float = 3.0
    """``beta`` in ``exp(beta * z)``; 0 ignores instruction text."""
    z_cap: float = 3.0
    """Bound on ``|z|``."""
    next_request_weight: float = 0.5
    """Exponent of the state's text factor for a vote whose call answered a later request."""
    include_current: bool = True
    """Let the current workflow's own steps vote."""
    evidence: int = 3
    """Workflows cited per candidate."""
    detail: int = 10
    """Candidates (best first) that get evidence, typical args and instruction text."""
    approximate_from: int | None = None
    """Distinct instructions (contexts) from which level 0's text weights are approximated
    by clusters (docs/suggestions.md, "Large scopes"); ``None`` (the default): always exact.
    Measured at 300,000 workflows, it kept the exact top tool but did not make ranking faster."""
    probes: int = 16
    """Clusters nearest the current instruction whose contexts are weighed exactly."""

    def __post_init__(self) -> None:
        if self.max_order < 1:
            raise ConfigurationError(f"max_order must be >= 1, got {self.max_order}")
        if self.context_weight < 0 or self.z_cap <= 0:
            raise ConfigurationError(
                f"context_weight must be >= 0 and z_cap > 0, got {self.context_weight} "
                f"and {self.z_cap}"
            )
        if not 0.0 <= self.next_request_weight <= 1.0:
            raise ConfigurationError(
                f"next_request_weight must be in [0, 1], got {self.next_request_weight}"
            )
        if self.evidence < 0 or self.detail < 0:
            raise ConfigurationError("evidence and detail must be >= 0")
        if self.approximate_from is not None and self.approximate_from < 2:
            raise ConfigurationError(
                f"approximate_from must be None (always exact) or >= 2, got {self.approximate_from}"
            )
        if self.probes < 1:
            raise ConfigurationError(f"probes must be >= 1, got {self.probes}")


@dataclass(frozen=True)
class Candidate:
    """A ranked next tool."""

    tool: str
    """The tool."""
    probability: float
    """Interpolated probability that it comes next."""
    order: int
    """Longest agreement (recent leaves) among the positions voting for it; 0: frequency only."""
    from_current: bool = False
    """Whether the current workflow's own steps voted for it (at agreement >= 1)."""
    evidence: tuple[Evidence, ...] = ()
    """Stored workflows and the position of the tool in them, best first."""
    args: dict[str, Any] | None = None
    """The most common args among the best-agreeing positions, when any."""
    instruction: str | None = None
    """The instruction the best position's call opened, when it opened one."""
