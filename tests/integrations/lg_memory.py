"""Memory for the LangGraph tests: the real EpisodicMemory over an in-memory store."""

from __future__ import annotations

from typing import Any

from em_plugin.embedding import FakeEmbedder
from em_plugin.memory import EpisodicMemory


def make_memory(**kwargs: Any) -> EpisodicMemory:
    """An ``EpisodicMemory`` with an in-memory store and the fast FakeEmbedder."""
    kwargs.setdefault("store", "memory:")
    kwargs.setdefault("embedder", FakeEmbedder(64))
    return EpisodicMemory(**kwargs)
