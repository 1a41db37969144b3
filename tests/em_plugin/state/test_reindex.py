"""reindex_store: the step index rebuilt from the store alone, for the embedder it records."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from em_plugin.embedding.record import read_record
from em_plugin.errors import EmbedderMismatchError
from em_plugin.memory import EpisodicMemory
from em_plugin.state.reindex import Reindexed, reindex_store
from provenance.stores import open_store
from tests.small_workflows import current, flow


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "store"
    with EpisodicMemory(str(directory), embedder="fake:16", scope="crew") as memory:
        memory.save_many([flow(f"w{i}", "extract", "classify") for i in range(4)])
    return directory


def test_a_lost_index_is_rebuilt_beside_the_store(store_dir: Path) -> None:
    index_dir = Path(f"{store_dir}.em-index")
    shutil.rmtree(index_dir)
    with open_store(str(store_dir)) as store:
        done = reindex_store(store, embedder="fake:16")
    assert done == Reindexed(workflows=4, path=index_dir / "steps")
    with EpisodicMemory(str(store_dir), embedder="fake:16", scope="crew") as memory:
        assert [s.tool for s in memory.suggest(current("extract"))][:1] == ["classify"]


def test_progress_counts_every_workflow(store_dir: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    with open_store(str(store_dir)) as store:
        reindex_store(store, embedder="fake:16", progress=lambda *a: seen.append(a))
    assert seen == [("", i, 4) for i in range(1, 5)]


def test_another_embedder_is_refused_unless_forced(store_dir: Path) -> None:
    with open_store(str(store_dir)) as store:
        with pytest.raises(EmbedderMismatchError, match="fake:16"):
            reindex_store(store, embedder="fake:8")
        assert reindex_store(store, embedder="fake:8", force=True).workflows == 4
        record = read_record(store)
    assert record is not None and record.dimension == 8
    with EpisodicMemory(str(store_dir), embedder="fake:8", scope="crew") as memory:
        assert len(memory.ids()) == 4


def test_a_store_without_a_persisted_index_reports_no_path() -> None:
    with open_store("memory:") as store:
        store.save(flow("w1", "extract"))
        assert reindex_store(store, embedder="fake:8") == Reindexed(workflows=1, path=None)
