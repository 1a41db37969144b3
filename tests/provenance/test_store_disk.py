"""The disk store across processes: a read-only reader beside a writer, and crashes mid-save."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from provenance.errors import StoreError
from provenance.model import CallStep, Workflow
from provenance.stores import open_store
from tests.processes import close_pipes

ROOT = Path(__file__).resolve().parents[2]

_WRITER = """
import sys
from provenance.model import CallStep, Workflow
from provenance.stores import open_store

store = open_store(sys.argv[1])
for name in ("first", "second"):
    store.save(Workflow(id=name, steps=(CallStep(name="A1"),)))
    print("saved", flush=True)
    sys.stdin.readline()
store.close()
"""

_CRASHER = """
import os, sys, threading
from provenance.model import CallStep, Workflow
from provenance.stores import open_store

path, count, phase = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def batch(version):
    return [
        Workflow(id=f"w{i}", title=version, steps=tuple(CallStep(name=f"t{j}") for j in range(4)))
        for i in range(count)
    ]

class DiesMidCall:
    # Wraps the pyoxigraph store: each write starts a timer that ends the process abruptly
    # while the (GIL-releasing) Rust call is still running its transaction.
    def __init__(self, real):
        self.real = real
    def __getattr__(self, name):
        return getattr(self.real, name)
    def _dying(self, method, *args, **kwargs):
        threading.Timer(0.005, os._exit, args=(17,)).start()
        method(*args, **kwargs)
        print("committed", flush=True)
        threading.Event().wait(30)
    def load(self, *args, **kwargs):
        self._dying(self.real.load, *args, **kwargs)
    def update(self, *args, **kwargs):
        self._dying(self.real.update, *args, **kwargs)
    def bulk_load(self, *args, **kwargs):
        self._dying(self.real.bulk_load, *args, **kwargs)

store = open_store(path)
if phase == "replace":
    store.save_many(batch("v1"))
store.backend._store = DiesMidCall(store.backend._store)
print("saving", flush=True)
store.save_many(batch("v2"))
"""


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _expect_line(process: subprocess.Popen[str], expected: str) -> None:
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if line != expected:
        error = process.stderr.read() if process.stderr else ""
        pytest.fail(f"child said {line!r}, not {expected!r}: {error}")


def test_read_only_reader_beside_a_writer(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    writer = _spawn(_WRITER, path)
    try:
        _expect_line(writer, "saved")
        with pytest.raises(StoreError, match="open for writing in another process"):
            open_store(path)
        reader = open_store(path, read_only=True)
        assert reader.ids() == ["first"]
        assert reader.load("first").steps[0].name == "A1"
        with pytest.raises(StoreError, match="read-only"):
            reader.save(Workflow(id="x", steps=(CallStep(name="A1"),)))
        with pytest.raises(StoreError, match="read-only"):
            reader.delete("first")

        assert writer.stdin is not None
        writer.stdin.write("\n")
        writer.stdin.flush()
        _expect_line(writer, "saved")
        assert reader.ids() == ["first"]  # a read-only store is a snapshot taken when opened
        reader.close()
        with open_store(path, read_only=True) as fresh:
            assert fresh.ids() == ["first", "second"]
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.wait(timeout=30) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        close_pipes(writer)
    with open_store(path) as store:  # the lock is released with the writer
        assert store.ids() == ["first", "second"]


def test_read_only_needs_an_existing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no Oxigraph store"):
        open_store(tmp_path / "missing", read_only=True)


def test_closing_releases_the_lock(tmp_path: Path) -> None:
    first = open_store(tmp_path / "store")
    first.save(Workflow(id="w", steps=(CallStep(name="A1"),)))
    first.close()
    with open_store(tmp_path / "store") as second:
        assert second.ids() == ["w"]


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["insert", "replace"])
def test_crash_inside_the_transaction_is_all_or_nothing(tmp_path: Path, phase: str) -> None:
    path, count = str(tmp_path / "store"), 150
    crasher = _spawn(_CRASHER, path, str(count), phase)
    try:
        out, err = crasher.communicate(timeout=60)
    finally:
        if crasher.poll() is None:
            crasher.kill()
            crasher.wait()
        close_pipes(crasher)
    assert crasher.returncode == 17, err
    assert out.split() == ["saving"], "the write finished before the simulated crash"
    with open_store(path) as store:
        titles = [w.title for w in store.iter_workflows()]
    # Killed inside the transaction: the new batch left no trace, the old one is intact.
    assert titles == ([] if phase == "insert" else ["v1"] * count)


class _CompactedAway:
    """Stands in for a read-only Oxigraph handle whose files the writer just compacted away."""

    def query(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("Corruption: IO error: No such file or directory: 000042.sst")


def test_read_only_store_reopens_after_the_writer_compacts(tmp_path: Path) -> None:
    from provenance.stores.embedded import OxigraphStore

    with open_store(tmp_path / "s") as writer:
        writer.save(Workflow(id="w", steps=(CallStep("t"),)))
    reader = OxigraphStore(tmp_path / "s", read_only=True)
    reader._store = _CompactedAway()  # type: ignore[assignment]
    result = reader.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert int(result.rows[0][0]) > 0  # type: ignore[union-attr]
    reader.close()


def test_a_store_that_keeps_failing_is_a_store_error(tmp_path: Path) -> None:
    from provenance.stores.embedded import OxigraphStore

    with open_store(tmp_path / "s") as writer:
        writer.save(Workflow(id="w", steps=(CallStep("t"),)))
    reader = OxigraphStore(tmp_path / "s", read_only=True)
    reader._open = lambda: _CompactedAway()  # type: ignore[method-assign,assignment]
    reader._store = _CompactedAway()  # type: ignore[assignment]
    with pytest.raises(StoreError, match="No such file"):
        reader.query("SELECT * WHERE { ?s ?p ?o }")
