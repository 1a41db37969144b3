"""Issue 11 (cold open on a remote store): a memory on a SPARQL endpoint keeps its index in a
slot of the local cache, so reopening it loads the index instead of reading every workflow over
HTTP, and it still catches up with what other clients wrote meanwhile. The slot also keeps copies
of the indexed workflows, so that suggestions read none from the store."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import pytest

from em_plugin.memory import EpisodicMemory
from em_plugin.state.workflow_copies import FILE_NAME
from provenance.errors import WorkflowNotFound
from provenance.stores import WorkflowStore, open_store
from provenance.stores._cache_dir import CACHE_DIR_ENV, claim_slot, store_dir
from provenance.workflow_json import dumps_workflow
from tests.small_workflows import current, flow


@pytest.fixture
def remote(remote_store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return remote_store_url


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each bulk read of workflows from the store (what a cold open must avoid)."""
    calls: list[str] = []
    iter_workflows, load_many = WorkflowStore.iter_workflows, WorkflowStore.load_many

    def counted_iter(self, *args, **kwargs):
        calls.append("iter_workflows")
        return iter_workflows(self, *args, **kwargs)

    def counted_load(self, scope, ids, *args, **kwargs):
        ids = list(ids)
        calls.extend(f"load {i}" for i in ids)
        return load_many(self, scope, ids, *args, **kwargs)

    monkeypatch.setattr(WorkflowStore, "iter_workflows", counted_iter)
    monkeypatch.setattr(WorkflowStore, "load_many", counted_load)
    return calls


def test_a_reopened_remote_memory_loads_its_cached_index(remote: str, reads: list[str]) -> None:
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        memory.save_many([flow(f"w{i}", "extract", "classify") for i in range(20)])
        before = memory.suggest(current("extract"))
        directory = memory._engine.store.derived_dir
    assert directory is not None and (directory / "steps" / "meta.json").exists()
    reads.clear()
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        assert memory._engine.store.derived_dir == directory  # the slot was free again
        assert memory.ids() == sorted(f"w{i}" for i in range(20))
        opening = list(reads)
        after = memory.suggest(current("extract"))  # reads only the workflows it cites
    assert "iter_workflows" not in opening and not [r for r in opening if r.startswith("load")]
    assert [(s.tool, round(s.score, 6)) for s in after] == [
        (s.tool, round(s.score, 6)) for s in before
    ]


def test_a_cached_index_catches_up_with_other_clients_writes(remote: str, reads: list[str]) -> None:
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        memory.save_many([flow("w1", "extract", "classify"), flow("w2", "extract", "classify")])
    store = open_store(remote)
    try:  # another client writes while no memory is open: a replace and a new workflow
        store.save(flow("w2", "search", "report").replace(scope="crew"))
        store.save(flow("w3", "search", "report").replace(scope="crew"))
    finally:
        store.close()
    reads.clear()
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        assert memory.ids() == ["w1", "w2", "w3"]
        opening = list(reads)
        assert [s.tool for s in memory.suggest(current("search"))][:1] == ["report"]
    assert sorted(r for r in opening if r.startswith("load")) == ["load w2", "load w3"]
    assert "iter_workflows" not in opening


def test_a_wiped_server_leaves_no_stale_workflow_in_the_cached_index(
    remote: str, oxigraph_server
) -> None:
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        memory.save_many([flow("old1", "extract", "classify"), flow("old2", "a", "b")])
    oxigraph_server.wipe()  # another store now answers at the same address
    store = open_store(remote)
    try:
        store.save(flow("new", "search", "report").replace(scope="crew"))
    finally:
        store.close()
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        assert memory.ids() == ["new"]
        assert not {"classify", "b"} & {s.tool for s in memory.suggest(current("extract"))}


def test_concurrent_memories_take_separate_slots_and_a_closed_one_frees_its_slot(
    remote: str,
) -> None:
    first = EpisodicMemory(remote, embedder="fake:32", scope="crew")
    second = EpisodicMemory(remote, embedder="fake:32", scope="crew")
    try:
        a, b = first._engine.store.derived_dir, second._engine.store.derived_dir
        assert a is not None and b is not None and a != b and a.parent == b.parent
        first.save(flow("w1", "extract", "classify"))
    finally:
        first.close()
        second.close()
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as third:
        assert third._engine.store.derived_dir == a


def test_forget_erases_the_cached_indexes_no_process_holds(remote: str) -> None:
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        memory.save(flow("w1", "extract", "classify"))
        held = memory._engine.store.derived_dir
    parked = claim_slot(open_store(remote).backend.cache_key or "")
    assert parked is not None and parked.path == held  # a free slot with an index in it
    parked.release()
    assert held is not None and any(held.rglob("*.json"))
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        slot = memory._engine.store.derived_dir
        memory.forget()
    assert slot is not None
    texts = [p.read_bytes() for p in slot.rglob("*") if p.is_file()]
    assert not any(b"work on w1" in t for t in texts)


def test_the_cache_can_be_turned_off(remote: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, "none")
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        memory.save(flow("w1", "extract", "classify"))
        assert memory._engine.store.derived_dir is None
    assert store_dir("anything") is None


def test_a_live_memory_rewrites_its_slot_when_another_process_erases_the_scope(
    remote: str,
) -> None:
    with EpisodicMemory(remote, embedder="fake:32", scope="crew", poll_interval=0) as live:
        live.save_many([flow(f"w{i}", "extract", "classify") for i in range(3)])
        live.close()  # a snapshot and a journal that name the scope's texts
    with EpisodicMemory(remote, embedder="fake:32", scope="crew", poll_interval=0) as live:
        slot = live._engine.store.derived_dir
        assert slot is not None
        with EpisodicMemory(remote, embedder="fake:32", scope="crew") as other:
            other.forget()
        assert live.ids() == []  # the next read catches up with the erasure
        files = [p.read_bytes() for p in slot.rglob("*") if p.is_file()]
        assert files and not any(b"work on w" in f for f in files)


# -- copies of the indexed workflows (em_plugin/state/workflow_copies.py) --------------------


def _suggested(memory: EpisodicMemory) -> list[tuple[Any, ...]]:
    return [
        (s.tool, s.text, s.args, s.example_args, round(s.score, 6))
        for s in memory.suggest(current("extract"))
    ]


def test_suggestions_on_a_remote_store_read_no_workflow_from_it(
    remote: str, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        memory.save_many([flow(f"w{i}", "extract", "classify") for i in range(20)])
        reads.clear()
        first = _suggested(memory)
        assert first and reads == []  # cited workflows came from the copies
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        reads.clear()
        assert _suggested(memory) == first
        assert reads == []
    monkeypatch.setenv(CACHE_DIR_ENV, "none")  # no slot, no copies: the store is read
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        assert memory._engine.copies is None
        reads.clear()
        assert _suggested(memory) == first
        assert any(r.startswith("load") for r in reads)


def test_copies_follow_what_other_clients_write(remote: str) -> None:
    with EpisodicMemory(remote, embedder="fake:32", scope="crew", poll_interval=0) as memory:
        memory.save_many([flow("w1", "extract", "classify"), flow("w2", "extract", "a")])
        store = open_store(remote)
        try:
            store.save(flow("w1", "search", "report").replace(scope="crew"))
            store.delete("w2", scope="crew")
            stored = store.load("w1", scope="crew")
        finally:
            store.close()
        assert memory.ids() == ["w1"]  # catches up
        copies = memory._engine.copies
        assert copies is not None
        assert copies.get_many("crew", ["w1", "w2"]) == [stored]
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        assert memory._engine.load("w1", "crew") == stored


def test_copies_fill_as_they_are_read_when_the_file_is_new(remote: str, reads: list[str]) -> None:
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        memory.save_many([flow(f"w{i}", "extract", "classify") for i in range(5)])
        slot = memory._engine.store.derived_dir
    assert slot is not None
    (slot / FILE_NAME).unlink()  # a slot made before copies existed
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        reads.clear()
        first = _suggested(memory)
        assert any(r.startswith("load") for r in reads)
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        reads.clear()
        assert _suggested(memory) == first and reads == []


def test_forget_overwrites_the_copies_of_the_scope(remote: str) -> None:
    workflow = flow("w1", "extract", "classify").replace(scope="crew")
    blob = zlib.compress(dumps_workflow(workflow).encode(), 1)
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        memory.save(workflow)
        path = memory._engine.store.derived_dir / FILE_NAME  # type: ignore[operator]
        assert blob[8:40] in path.read_bytes()
        memory.forget()
        assert blob[8:40] not in path.read_bytes()  # secure_delete: freed pages are zeroed


def test_a_disk_store_keeps_copies_beside_its_index_and_a_reader_none(
    tmp_path: Path, reads: list[str]
) -> None:
    path = str(tmp_path / "store")
    with EpisodicMemory(path, embedder="fake:32") as writer:
        writer.save_many([flow(f"w{i}", "extract", "classify") for i in range(5)])
        assert writer._engine.copies is not None
        assert (tmp_path / "store.em-index" / FILE_NAME).exists()
        with (
            open_store(path, read_only=True) as store,
            EpisodicMemory(store, embedder="fake:32") as reader,
        ):
            assert reader._engine.copies is None  # a reader never writes derived files
            reads.clear()
            from_store = _suggested(reader)
            assert any(r.startswith("load") for r in reads)
        reads.clear()
        assert _suggested(writer) == from_store and reads == []


def test_reindex_starts_the_slot_without_copies(remote: str, reads: list[str]) -> None:
    from em_plugin.state.reindex import reindex_store

    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        memory.save_many([flow(f"w{i}", "extract", "classify") for i in range(3)])
        slot = memory._engine.store.derived_dir
    assert slot is not None and (slot / FILE_NAME).exists()
    with open_store(remote) as store:
        assert reindex_store(store, embedder="fake:32").workflows == 3
    assert not (slot / FILE_NAME).exists()
    with EpisodicMemory(remote, embedder="fake:32", scope="crew") as memory:
        assert memory._engine.store.derived_dir == slot
        reads.clear()
        assert _suggested(memory)  # from the store, refilling the copies
        assert any(r.startswith("load") for r in reads)


def test_load_does_not_serve_a_copy_that_another_client_deleted(remote: str) -> None:
    with EpisodicMemory(remote, embedder="fake:32", scope="crew", poll_interval=0) as memory:
        memory.save(flow("w1", "extract"))
        assert memory.load("w1").id == "w1"  # now held in memory and in the copies
        with open_store(remote) as store:
            store.delete("w1", scope="crew")
        with pytest.raises(WorkflowNotFound):
            memory.load("w1")
