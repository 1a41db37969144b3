"""What the benchmark scripts' tiny runs share: a small store made as the ladder makes its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from em_plugin.embedding.embedders import FakeEmbedder
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory


@pytest.fixture
def ladder_store(tmp_path: Path) -> Path:
    """A disk store of 40 synthetic workflows with distinct texts (the ladder's generator)."""
    store = tmp_path / "store-40"
    with EpisodicMemory(store, embedder=FakeEmbedder(384), scope=SCOPE) as memory:
        memory.save_many(SyntheticMemory(0, distinct_texts=True).workflows(40))
    return store
