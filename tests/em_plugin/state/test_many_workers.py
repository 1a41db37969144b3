"""Issue 11.2: many workers on one store. A writer process saves; another process's memory sees
the save at its next read once ``poll_interval`` has passed (one cheap change-marker read, never
a rescan), on a remote ``oxigraph serve`` store and on the default disk store."""

from __future__ import annotations

import time
from pathlib import Path

from em_plugin.memory import EpisodicMemory
from provenance.stores import open_store
from tests.processes import ScriptWorker
from tests.small_workflows import current

POLL = 0.5  # the default poll interval: a save is visible within it (goal: within 1 s)

# A writer worker: saves one workflow per line it reads ("<id> <tool> <tool>"), answers "saved".
_WRITER = """
import sys
from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep, Workflow

memory = EpisodicMemory(sys.argv[1], embedder="fake:32", scope="crew")
print("ready", flush=True)
for line in sys.stdin:
    wid, *tools = line.split()
    steps = (InstructionStep(f"work on {wid}", tuple(CallStep(t) for t in tools)),)
    memory.save(Workflow(id=wid, steps=steps))
    print("saved", flush=True)
memory.close()
"""


class Writer(ScriptWorker):
    """A writer process on a store."""

    def __init__(self, spec: str) -> None:
        super().__init__(_WRITER, spec)

    def save(self, workflow_id: str, *tools: str) -> None:
        self.send(f"{workflow_id} {' '.join(tools)}", answer="saved")


def _sees_within_poll(reader: EpisodicMemory, writer: Writer) -> None:
    assert reader.ids() == []
    writer.save("w1", "extract", "classify")
    time.sleep(POLL)  # a later read is due to check the marker
    assert [s.tool for s in reader.suggest(current("extract"))][:1] == ["classify"]
    writer.save("w2", "extract", "summarise")
    writer.save("w1", "search", "report")  # a replace: the reader reloads w1 alone
    time.sleep(POLL)
    assert reader.ids() == ["w1", "w2"]
    assert [s.tool for s in reader.suggest(current("extract"))][:1] == ["summarise"]
    assert [s.tool for s in reader.suggest(current("search"))][:1] == ["report"]


def test_two_processes_on_one_remote_store(remote_store_url: str) -> None:
    writer = Writer(remote_store_url)
    try:
        with EpisodicMemory(
            remote_store_url, embedder="fake:32", scope="crew", poll_interval=POLL
        ) as reader:
            _sees_within_poll(reader, writer)
    finally:
        writer.close()


def test_one_writer_and_one_reader_process_on_one_disk_store(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    writer = Writer(path)
    try:
        store = open_store(path, read_only=True)
        try:
            with EpisodicMemory(
                store, embedder="fake:32", scope="crew", poll_interval=POLL
            ) as reader:
                _sees_within_poll(reader, writer)
        finally:
            store.close()
    finally:
        writer.close()
