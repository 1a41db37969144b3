"""The disk store across processes: a read-only reader beside a writer, and crashes mid-save."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from provenance.errors import StoreError
from provenance.model import CallStep, Workflow
from provenance.stores import open_store

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
import sys
from provenance.model import CallStep, Workflow
from provenance.stores import open_store

def batch(version):
    return [
        Workflow(id=f"w{i}", title=version, steps=tuple(CallStep(name=f"t{j}") for j in range(4)))
        for i in range(int(sys.argv[2]))
    ]

store = open_store(sys.argv[1])
store.save_many(batch("v1"))
print("v1", flush=True)
store.save_many(batch("v2"))  # the parent kills the process somewhere in here
print("v2", flush=True)
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
@pytest.mark.parametrize("delay", [0.0, 0.15, 0.35])
def test_crash_mid_save_is_all_or_nothing(tmp_path: Path, delay: float) -> None:
    path = str(tmp_path / "store")
    count = 1500
    crasher = _spawn(_CRASHER, path, str(count))
    try:
        _expect_line(crasher, "v1")
        time.sleep(delay)
        crasher.kill()  # SIGKILL: no cleanup, no flush, like a power cut for the process
        crasher.wait(timeout=30)
    finally:
        if crasher.poll() is None:
            crasher.kill()
            crasher.wait()
    with open_store(path) as store:
        assert len(store) == count
        titles = {w.title for w in store.iter_workflows()}
    assert titles in ({"v1"}, {"v2"}), f"a crash left a mix of versions: {sorted(titles)}"
