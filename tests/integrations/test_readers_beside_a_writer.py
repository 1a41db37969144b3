"""Readers open a disk store that a writer process is saving into, every time.

A writer that never pauses compacts the store's files away under readers opening it (RocksDB's
read-only open lists files that a finishing compaction then deletes, and opens most of them only
when a read first needs them) and piles up write-ahead log that every read-only open replays.
Each round below waits for a fresh commit of the writer, then opens the store read-only the
three ways users do: a memory over a read-only store, the CLI's read commands, and the panel,
whose scope summary runs GROUP BY queries (over a file deleted before its first read, one such
query grew the process by tens of gigabytes; provenance/stores/_pinned.py explains why).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox
import pytest
from click.testing import CliRunner

from em_plugin.cli import cli
from em_plugin.memory import EpisodicMemory
from integrations.panel.state import PanelSettings, PanelState
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from tests.processes import close_pipes

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 50

# Saves without pause until stdin closes: batches of new workflows (bulk loads), each followed
# by deleting the batch saved three before (updates), so the store's files churn while it holds
# thirteen to seventeen workflows.
_WRITER = """
import sys, threading
from em_plugin.memory import EpisodicMemory
from integrations.panel.state import PanelSettings, PanelState
from provenance.model import CallStep, InstructionStep, Workflow

def workflow(number):
    calls = tuple(CallStep(f"tool_{t}", args={"text": "x" * 200}) for t in range(number % 5 + 1))
    return Workflow(id=f"w{number}", steps=(InstructionStep(f"task {number}", calls),))

stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
saves = 0
with EpisodicMemory(sys.argv[1], embedder="fake:16") as memory:
    memory.save(Workflow(id="kept", steps=(InstructionStep("keep", (CallStep("tool_0"),)),)))
    while not stop.is_set():
        memory.save_many([workflow(saves * 4 + k) for k in range(4)])
        for k in range(4 * saves - 12, 4 * saves - 8):
            memory.delete(f"w{k}")
        saves += 1
        print("saved", flush=True)
print("stopped", saves, flush=True)
"""


def _now(*tools: str) -> Workflow:
    return Workflow(id="now", steps=(InstructionStep("task", tuple(CallStep(t) for t in tools)),))


def test_readers_open_beside_a_writer_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store"
    opens = {"opened": 0, "failed and tried again": 0}
    real_open = ox.Store.read_only

    def counted(location: str) -> ox.Store:
        try:
            store = real_open(location)
        except BaseException:
            opens["failed and tried again"] += 1
            raise
        opens["opened"] += 1
        return store

    monkeypatch.setattr(ox.Store, "read_only", counted)
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stdin is not None
    failures: list[str] = []
    seen: set[int] = set()
    cli_reads = (["stats", "--format", "json"], ["list", "--format", "json"], ["show", "kept"])
    try:
        for round_ in range(ROUNDS):
            line = writer.stdout.readline()  # one more commit since the last round
            assert line == "saved\n", line + (writer.stderr.read() if writer.stderr else "")
            try:
                with open_store(path, read_only=True) as store:
                    with EpisodicMemory(store, embedder="fake:16") as memory:
                        assert "kept" in memory.ids()
                        memory.suggest(_now("tool_0"))
                    seen.add(len(store.query("SELECT * WHERE { ?s ?p ?o }").rows))  # type: ignore[union-attr]
            except Exception as exc:  # noqa: BLE001 - each failure is counted and shown
                failures.append(f"memory: {exc}")
            args = [*cli_reads[round_ % len(cli_reads)], "--store", str(path)]
            done = CliRunner().invoke(cli, args)
            if done.exit_code != 0:
                failures.append(f"em-plugin {' '.join(args)}: {done.output}")
            elif args[0] == "stats":
                assert json.loads(done.stdout)["workflows"] >= 1
            try:
                state = PanelState(PanelSettings(store=str(path), warm=False))
                try:
                    assert [s.scope for s in state.catalog.scopes()] == ["default"]
                finally:
                    state.close()
            except Exception as exc:  # noqa: BLE001 - each failure is counted and shown
                failures.append(f"panel: {exc}")
    finally:
        writer.stdin.close()
        stopped = writer.stdout.read().splitlines()[-1:]
        writer.wait(timeout=60)
        close_pipes(writer)
    print(f"{ROUNDS} rounds, {len(failures)} failures; {opens}")
    assert failures == []
    assert stopped and stopped[0].startswith("stopped ")
    assert int(stopped[0].split()[1]) >= ROUNDS
    assert len(seen) > 1  # the readers saw the writer's store change between rounds
    assert list((path / ".readers").iterdir()) == []  # each reader removed its links on close
