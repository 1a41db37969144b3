"""restore_to_memory: a backup written into a memory's store, and the memory brought up to date."""

from __future__ import annotations

from pathlib import Path

import pytest

from em_plugin.embedding.record import read_record
from em_plugin.errors import EmbedderMismatchError
from em_plugin.memory import EpisodicMemory
from em_plugin.state.backup import Restored, restore_to_memory
from provenance.stores import open_store
from provenance.stores.backup import backup_text
from tests.small_workflows import current, flow


@pytest.fixture
def backup(tmp_path: Path) -> Path:
    path = tmp_path / "backup.nq"
    with EpisodicMemory("memory:", embedder="fake:16") as memory:
        memory.save_many([flow(f"w{i}", "extract", "classify") for i in range(3)])
        memory.save(flow("w0", "extract", "classify", "report"))  # w0@v1 and a version record
        path.write_text(backup_text(memory.store), encoding="utf-8")
    return path


def test_the_restored_workflows_are_suggested_from_at_once(backup: Path, tmp_path: Path) -> None:
    with EpisodicMemory(tmp_path / "store", embedder="fake:16", poll_interval=3600) as memory:
        restored = restore_to_memory(memory, backup)
        # The store holds w0..w2 and w0@v1; the index only the live ones, without a poll.
        assert restored.workflows == 4 and restored.graphs >= 2
        assert memory.ids() == ["w0", "w1", "w2"]
        assert [s.tool for s in memory.suggest(current("extract"))][:1] == ["classify"]
        assert read_record(memory.store) is not None


def test_into_a_scope_the_workflows_are_saved_there(backup: Path) -> None:
    with EpisodicMemory("memory:", embedder="fake:16", scope="team") as memory:
        restored = restore_to_memory(memory, backup, scope="team")
        assert restored.workflows == 4
        assert memory.store.ids(scope="team") == ["w0", "w0@v1", "w1", "w2"]
        assert memory.store.ids(scope="default") == []


def test_another_embedders_backup_writes_nothing(backup: Path) -> None:
    with EpisodicMemory("memory:", embedder="fake:8") as memory:
        with pytest.raises(EmbedderMismatchError, match="fake-16"):
            restore_to_memory(memory, backup)
        assert len(memory.store) == 0 and read_record(memory.store) is None


def test_an_empty_backup_restores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.nq"
    path.write_text("", encoding="utf-8")
    with EpisodicMemory("memory:", embedder="fake:8") as memory:
        assert restore_to_memory(memory, path) == Restored(workflows=0, graphs=0)


def test_sync_reads_another_writers_saves_before_the_poll_interval() -> None:
    with open_store("memory:") as store:
        writer = EpisodicMemory(store, embedder="fake:16")
        reader = EpisodicMemory(store, embedder="fake:16", poll_interval=3600)
        writer.save(flow("w1", "extract"))
        reader.sync()
        assert reader.ids() == ["w1"]
        writer.save(flow("w2", "extract"))
        assert reader.ids() == ["w1"]  # not polled yet
        reader.sync()
        assert reader.ids() == ["w1", "w2"]
        reader.close()
        writer.close()
