"""Retrieval over the per-scope state: the current workflow's leaves, the two matchers.

:func:`match_scope` runs the fast exact matcher (:mod:`em_plugin.retrieval.fast`) over a scope's
arrays, or the reference matcher over its decoded leaf sequences; both return the same matches
(docs/retrieval.md).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from em_plugin.embedding.cache import CachedEmbedder
from em_plugin.errors import ConfigurationError
from em_plugin.retrieval.fast import fast_match
from em_plugin.retrieval.reference import LeafSequence, Match, MatchConfig, reference_match
from em_plugin.state.episodes import episode_of
from em_plugin.state.scope_index import ScopeIndex, leaf_texts
from provenance.model import Workflow

__all__ = ["METHODS", "Method", "check_method", "match_scope", "query_leaves"]

Method = Literal["fast", "reference"]
METHODS = ("fast", "reference")


def check_method(method: str) -> None:
    """Refuse an unknown matcher.

    Raises:
        ConfigurationError: When ``method`` is not one of :data:`METHODS`.
    """
    if method not in METHODS:
        raise ConfigurationError(f"method must be one of {METHODS}, got {method!r}")


def query_leaves(embedder: CachedEmbedder, workflow: Workflow) -> LeafSequence:
    """Return a current workflow's leaf sequence, embedding its instructions (cached)."""
    episode = episode_of(workflow)
    tools, texts = episode.tools, leaf_texts(episode)
    vectors = np.zeros((len(tools), embedder.dimension), dtype=np.float32)
    rows = [i for i, t in enumerate(texts) if t is not None]
    if rows:
        distinct = list(dict.fromkeys(texts[i] for i in rows))
        embedded = embedder.embed(distinct)  # type: ignore[arg-type]
        position = {t: i for i, t in enumerate(distinct)}
        vectors[rows] = embedded[[position[texts[i]] for i in rows]]
    return LeafSequence(tools, texts, vectors)


def match_scope(
    leaves: LeafSequence, scope: ScopeIndex | None, config: MatchConfig, method: Method
) -> list[Match]:
    """Retrieve a scope's workflows matching a leaf sequence (``None``: an empty scope)."""
    if method == "fast":
        return fast_match(leaves, scope, config)
    memory = (
        ((wid, scope.leaves(slot)) for wid, slot in scope.id_slots.items())
        if scope is not None
        else ()
    )
    return reference_match(leaves, memory, config)
