"""A read-only disk store reads its own links to the store's files (provenance/stores/_pinned.py).

A writer's compaction deletes files that a read-only RocksDB open has listed but not yet opened;
a read meeting one fails, and in pyoxigraph 0.5 a GROUP BY or hash join over that failure
collects it without end (gigabytes within seconds). These tests delete files the way a
compaction does and read only with streaming queries, which fail at once if the fix regresses.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyoxigraph as ox
import pytest

import provenance.stores.embedded as embedded
from provenance.errors import StoreError
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from provenance.stores._pinned import PIN_DIRECTORY, Incomplete
from provenance.stores._table_watch import TableWatch
from provenance.stores.embedded import OxigraphStore

_ALL = "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }"
_STEPS = """PREFIX p-plan: <http://purl.org/net/p-plan#>
SELECT ?g ?step WHERE { GRAPH ?g { ?step p-plan:isStepOfPlan ?plan } }"""


def _store_of_many_files(path: Path, count: int = 20) -> None:
    """Write one workflow graph per flush: more files than RocksDB opens with the store."""
    with open_store(path) as store:
        store.save(Workflow(id="w0", steps=(InstructionStep("task", (CallStep("tool"),)),)))
    writer = ox.Store(str(path))
    step = ox.NamedNode("http://purl.org/net/p-plan#isStepOfPlan")
    for number in range(1, count):
        graph = ox.NamedNode(f"urn:test:g{number}")
        plan = ox.NamedNode(f"urn:test:plan{number}")
        for k in range(3):
            writer.add(ox.Quad(ox.NamedNode(f"urn:test:s{number}-{k}"), step, plan, graph))
        writer.flush()
    del writer


def _tables(path: Path) -> list[Path]:
    return sorted(path.glob("*.sst"))


def _pins(path: Path) -> list[str]:
    return sorted(os.listdir(path / PIN_DIRECTORY))


def test_a_reader_keeps_reading_files_the_writer_deleted_after_its_open(tmp_path: Path) -> None:
    path = tmp_path / "store"
    _store_of_many_files(path)
    assert len(_tables(path)) > 16  # RocksDB opens at most 16 when the store is opened
    reader = OxigraphStore(path, read_only=True)
    for table in _tables(path):
        table.unlink()  # what the writer's compaction does once it has merged them
    graphs = [str(row[0]) for row in reader.query(_ALL).rows]  # type: ignore[union-attr]
    assert sum(g.startswith("urn:test:") for g in graphs) == 3 * 19
    assert any(not g.startswith("urn:test:") for g in graphs)  # the saved workflow
    assert len({str(r[0]) for r in reader.query(_STEPS).rows}) == 20  # type: ignore[union-attr]
    reader.close()


def test_pins_live_as_long_as_the_reader_and_a_few_refreshes(tmp_path: Path) -> None:
    path = tmp_path / "store"
    _store_of_many_files(path, count=2)
    reader = OxigraphStore(path, read_only=True)
    assert len(_pins(path)) == 1
    for _ in range(5):
        reader.refresh()
    assert len(_pins(path)) == embedded._PINS_KEPT
    reader.close()
    assert _pins(path) == []


def test_pins_of_readers_that_died_are_swept(tmp_path: Path) -> None:
    path = tmp_path / "store"
    _store_of_many_files(path, count=2)
    left = path / PIN_DIRECTORY / "999999999-0"  # above Linux's pid_max: no such process
    left.mkdir(parents=True)
    (left / "000001.sst").write_bytes(b"")
    with open_store(path, read_only=True) as reader:
        assert reader.ids() == ["w0"]
        assert not left.exists()


def test_a_pin_that_raced_a_deletion_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store"
    _store_of_many_files(path, count=2)
    real_pin = embedded.pin
    calls: list[int] = []

    def racing(store: Path) -> Path:
        calls.append(1)
        if len(calls) < 3:
            raise Incomplete("the writer deleted 000042.sst meanwhile")
        return real_pin(store)

    monkeypatch.setattr(embedded, "pin", racing)
    with open_store(path, read_only=True) as reader:
        assert reader.ids() == ["w0"]
    assert len(calls) == 3


def test_a_writer_deleting_during_every_pin_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store"
    _store_of_many_files(path, count=1)

    def always(store: Path) -> Path:
        raise Incomplete("the writer deleted 000042.sst meanwhile")

    monkeypatch.setattr(embedded, "pin", always)
    monkeypatch.setattr(embedded, "_OPEN_PAUSE_S", (0.0, 0.0))
    with pytest.raises(StoreError, match="deleted files during each of"):
        OxigraphStore(path, read_only=True)


def test_a_store_that_cannot_be_pinned_is_read_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store"
    _store_of_many_files(path, count=1)

    def refused(store: Path) -> Path:
        raise PermissionError(13, "Permission denied", str(store / PIN_DIRECTORY))

    monkeypatch.setattr(embedded, "pin", refused)
    with open_store(path, read_only=True) as reader:
        assert reader.ids() == ["w0"]


@pytest.mark.parametrize("listen", [True, False], ids=["inotify", "listing"])
def test_the_watch_tells_deletions_of_the_files_a_reader_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listen: bool
) -> None:
    import provenance.stores._table_watch as table_watch

    if not listen:
        monkeypatch.setattr(table_watch, "_listen", lambda directory: None)
    for name in ("000007.sst", "000008.log", "MANIFEST-000005", "LOG.old.1", "bulk-1.sst"):
        (tmp_path / name).write_bytes(b"")
    quiet = TableWatch(tmp_path)
    (tmp_path / "000009.sst").write_bytes(b"")  # a new file is no deletion
    (tmp_path / "LOG.old.1").unlink()  # nor are RocksDB's diagnostics or a bulk load's input
    (tmp_path / "bulk-1.sst").unlink()
    assert not quiet.deleted()
    for name in ("000007.sst", "000008.log", "MANIFEST-000005"):
        watch = TableWatch(tmp_path)
        (tmp_path / name).unlink()
        assert watch.deleted(), name
    if listen:  # only inotify hears a file that came and went within the window
        watch = TableWatch(tmp_path)
        (tmp_path / "000010.sst").write_bytes(b"")
        (tmp_path / "000010.sst").unlink()
        assert watch.deleted()
    # A file the reader already holds (linked or copied) loses nothing when deleted...
    (tmp_path / "000011.sst").write_bytes(b"")
    (tmp_path / "000012.log").write_bytes(b"")
    watch = TableWatch(tmp_path)
    (tmp_path / "000011.sst").unlink()
    assert not watch.deleted(held=["000011.sst"])
    watch = TableWatch(tmp_path)
    (tmp_path / "000012.log").unlink()
    assert watch.deleted(held=["000011.sst"])  # ...another one does
    if listen:  # a held log moved away is being recycled: rewritten under the reader
        (tmp_path / "000013.log").write_bytes(b"")
        watch = TableWatch(tmp_path)
        (tmp_path / "000013.log").rename(tmp_path / "000014.log")
        assert watch.deleted(held=["000013.log"])
