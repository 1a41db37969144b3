"""The persisted embedding cache stays close to the size of the vectors it holds."""

from __future__ import annotations

import sqlite3

import numpy as np

from em_plugin.embedding import FakeEmbedder
from em_plugin.embedding.cache import CachedEmbedder


def test_a_new_cache_file_keeps_384_d_rows_inline(tmp_path) -> None:
    path = tmp_path / "embeddings.sqlite"
    cache = CachedEmbedder(FakeEmbedder(384), path)
    texts = [f"instruction number {i}" for i in range(600)]
    vectors = cache.embed(texts)
    cache.close()
    data = 600 * (384 * 4 + 32)  # float32 vectors and SHA-256 keys
    # 4 KB pages kept only ~1 KB of each 1.6 KB row inline: 3x the data on disk (measured).
    assert path.stat().st_size < 1.4 * data
    reopened = CachedEmbedder(FakeEmbedder(384), path)
    assert np.array_equal(reopened.embed(texts), vectors)
    assert (reopened.hits, reopened.misses) == (600, 0)
    reopened.close()


def test_an_existing_cache_file_keeps_its_page_size(tmp_path) -> None:
    path = tmp_path / "embeddings.sqlite"
    old = sqlite3.connect(path)
    old.execute("PRAGMA page_size = 4096")
    old.execute(
        "CREATE TABLE embeddings (key BLOB PRIMARY KEY, model TEXT NOT NULL, "
        "dimension INTEGER NOT NULL, vector BLOB NOT NULL) WITHOUT ROWID"
    )
    old.commit()
    old.close()
    cache = CachedEmbedder(FakeEmbedder(8), path)
    first = cache.embed(["a", "b"])
    cache.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA page_size").fetchone()[0] == 4096
    again = CachedEmbedder(FakeEmbedder(8), path)
    assert np.array_equal(again.embed(["a", "b"]), first) and again.misses == 0
    again.close()
