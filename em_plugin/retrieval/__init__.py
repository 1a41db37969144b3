"""Retrieval by the paper's rule (``docs/retrieval.md``): the reference matcher and the fast one.

:mod:`~em_plugin.retrieval.reference` is the brute-force definition;
:mod:`~em_plugin.retrieval.fast` prunes with an index and returns the same workflows and scores;
:mod:`~em_plugin.retrieval.alignment` is the vectorised dynamic programme
that both follow, tie rules included.
"""

from __future__ import annotations

from em_plugin.retrieval.reference import (
    DEFAULT_MAX_WORKFLOWS,
    DEFAULT_THRESHOLD,
    Match,
    MatchConfig,
    reference_match,
)

__all__ = ["DEFAULT_MAX_WORKFLOWS", "DEFAULT_THRESHOLD", "Match", "MatchConfig", "reference_match"]
