"""The embedding cache: keyed by model and text hash, batched misses, persisted in SQLite."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from em_plugin.embedding import CallableEmbedder, FakeEmbedder
from em_plugin.embedding import cache as cache_module
from em_plugin.embedding.cache import WRITE_BATCH, CachedEmbedder
from em_plugin.errors import EmbedderError


class Counting:
    """A fake embedder that records every batch it is asked to embed."""

    def __init__(self, dimension: int = 16, name: str = "counting") -> None:
        self.inner = FakeEmbedder(dimension)
        self.name = name
        self.dimension = dimension
        self.batches: list[list[str]] = []

    def embed(self, texts):
        self.batches.append(list(texts))
        return self.inner.embed(texts)


def test_misses_are_embedded_once_in_one_batch():
    inner = Counting()
    cache = CachedEmbedder(inner)
    first = cache.embed(["a b", "c d", "a b"])
    assert inner.batches == [["a b", "c d"]]
    second = cache.embed(["c d", "e f", "a b"])
    assert inner.batches[1:] == [["e f"]]
    assert np.array_equal(second[0], first[1]) and np.array_equal(second[2], first[0])
    assert np.array_equal(second, FakeEmbedder(16).embed(["c d", "e f", "a b"]))
    assert (cache.hits, cache.misses, len(cache)) == (2, 3, 3)
    assert cache.embed([]).shape == (0, 16)


def test_persistent_cache_survives_reopening_and_separates_models(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = CachedEmbedder(Counting(), path)
    vectors = cache.embed(["alpha", "beta"])
    cache.close()
    again_inner = Counting()
    again = CachedEmbedder(again_inner, path, memory_entries=1)
    assert np.array_equal(again.embed(["beta", "alpha", "beta"]), vectors[[1, 0, 1]])
    assert again_inner.batches == []
    other = Counting(name="another-model")
    CachedEmbedder(other, path).embed(["alpha"])
    assert other.batches == [["alpha"]]
    assert len(again) == 2


def test_discard_forgets_vectors(tmp_path):
    inner = Counting()
    cache = CachedEmbedder(inner, tmp_path / "c.sqlite")
    cache.embed(["x", "y"])
    assert cache.discard(["x", "nope"]) == 1
    assert len(cache) == 1
    cache.embed(["x", "y"])
    assert inner.batches[-1] == ["x"]


def test_wrapping_a_cache_reuses_its_embedder():
    inner = Counting()
    cache = CachedEmbedder(CachedEmbedder(inner))
    assert cache.inner is inner and cache.name == "counting" and cache.dimension == 16


def test_cached_vectors_of_another_dimension_are_refused(tmp_path):
    path = tmp_path / "c.sqlite"
    narrow = CachedEmbedder(CallableEmbedder(lambda t: np.ones((len(t), 4)), name="m"), path)
    narrow.embed(["x"])
    narrow.close()
    wider = CachedEmbedder(CallableEmbedder(lambda t: np.ones((len(t), 8)), name="m"), path)
    with pytest.raises(EmbedderError, match="dimension 4"):
        wider.embed(["x"])


def test_unopenable_cache_file_is_a_clear_error(tmp_path):
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(EmbedderError, match="cannot open embedding cache"):
        CachedEmbedder(FakeEmbedder(8), tmp_path / "dir.sqlite")


def _rows(path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])


def test_new_vectors_reach_the_file_in_batches_and_at_close(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = CachedEmbedder(FakeEmbedder(8), path)
    first = cache.embed(["q1", "q2"])
    assert _rows(path) == 0  # a query's misses wait for a batch: no commit each
    assert np.array_equal(cache.embed(["q2", "q1"]), first[[1, 0]])  # still answered
    cache.embed([f"text {i}" for i in range(WRITE_BATCH - 2)])
    assert _rows(path) == WRITE_BATCH  # the batch is full: written in one transaction
    cache.embed(["late"])
    cache.close()
    assert _rows(path) == WRITE_BATCH + 1
    inner = Counting(8, name=FakeEmbedder(8).name)
    again = CachedEmbedder(inner, path)
    assert np.array_equal(again.embed(["q1", "late"])[0], first[0]) and inner.batches == []
    again.close()


def test_a_waiting_vector_is_written_by_the_next_call_after_its_time(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    cache = CachedEmbedder(FakeEmbedder(8), path)
    cache.embed(["waits"])
    assert _rows(path) == 0
    monkeypatch.setattr(cache_module, "WRITE_AFTER_SECONDS", 0.0)
    cache.embed(["waits"])  # a hit: it writes what has waited long enough
    assert _rows(path) == 1
    cache.close()


def test_discarding_an_unwritten_vector_never_writes_it(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = CachedEmbedder(FakeEmbedder(8), path)
    cache.embed(["secret", "kept"])
    assert cache.discard(["secret"]) == 1
    cache.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == 1
    assert len(CachedEmbedder(FakeEmbedder(8), path)) == 1
