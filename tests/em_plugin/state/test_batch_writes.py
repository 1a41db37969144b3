"""Pipelined ``save_many`` (em_plugin/state/batch_writes.py): the store writes batch k while
batch k+1 is staged, with the outcome of writing the batches one after another."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from em_plugin.state.step_index import StepIndex
from provenance.errors import StoreError
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores.embedded import OxigraphStore
from provenance.stores.workflow_store import WorkflowStore

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ("search", "extract", "classify", "report", "book", "cancel")


def wf(number: int, *, text: str | None = None) -> Workflow:
    tools = [TOOLS[(number + i) % len(TOOLS)] for i in range(2 + number % 3)]
    calls = tuple(CallStep(t, {"n": number}) for t in tools)
    instruction = text or f"task {number % 7}: {tools[0]} then {tools[-1]}"
    return Workflow(id=f"w{number}", steps=(InstructionStep(instruction, calls),))


def consistent(memory: EpisodicMemory) -> list[str]:
    """The stored ids, after checking that the index holds exactly them, each as stored."""
    stored = sorted(memory.store.ids(memory.scope))
    assert sorted(memory.index.ids(memory.scope)) == stored
    for workflow_id in stored:
        tools = tuple(c.name for c in memory.store.load(workflow_id, scope=memory.scope).leaves())
        assert memory.index.leaves(workflow_id, memory.scope).tools == tools
    assert memory.store.position(memory.scope) == memory.index.markers[memory.scope]
    return stored


def ids(*numbers: int) -> list[str]:
    return sorted(f"w{n}" for n in numbers)


def test_pipelined_batches_store_and_index_what_one_batch_at_a_time_does(tmp_path: Path) -> None:
    workflows = [wf(n) for n in range(40)]
    with EpisodicMemory(str(tmp_path / "piped"), embedder="fake:32") as piped:
        seen: list[int] = []
        saved = piped.save_many(iter(workflows), batch_size=7, progress=seen.append)
        assert [w.id for w in saved] == [w.id for w in workflows]
        assert seen == [7, 14, 21, 28, 35, 40]
        assert consistent(piped) == ids(*range(40))
        piped_suggestions = piped.suggest(wf(3), limit=3)
    with EpisodicMemory(str(tmp_path / "serial"), embedder="fake:32") as serial:
        for start in range(0, 40, 7):
            serial.save_many(workflows[start : start + 7], batch_size=7)
        assert serial.suggest(wf(3), limit=3) == piped_suggestions
        assert serial.store.marker(serial.scope).sequence == 6  # one log entry per batch
    with EpisodicMemory(str(tmp_path / "piped"), embedder="fake:32") as reopened:
        assert consistent(reopened) == ids(*range(40))
        assert reopened.store.marker(reopened.scope).sequence == 6


def test_the_store_writes_a_batch_while_the_next_one_is_staged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged_twice = threading.Event()
    writers: list[str] = []
    overlapped: list[bool] = []
    stage, commit = WorkflowStore.stage, WorkflowStore.commit_staged

    def staging(self: WorkflowStore, **kwargs: Any) -> Any:
        result = stage(self, **kwargs)
        if kwargs.get("saves") and any(w.id == "w5" for w in kwargs["saves"]):
            staged_twice.set()
        return result

    def committing(self: WorkflowStore, staged: Any) -> Any:
        writers.append(threading.current_thread().name)
        if not overlapped:
            # The first write waits for the second batch to be staged: with no overlap this
            # would time out instead.
            overlapped.append(staged_twice.wait(timeout=60))
        return commit(self, staged)

    monkeypatch.setattr(WorkflowStore, "stage", staging)
    monkeypatch.setattr(WorkflowStore, "commit_staged", committing)
    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32") as memory:
        memory.save_many([wf(n) for n in range(10)], batch_size=5)
        assert consistent(memory) == ids(*range(10))
    assert overlapped == [True]
    assert writers[:2] == ["em-plugin-writer_0", "em-plugin-writer_0"]


def test_one_batch_is_written_on_the_calling_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writers: list[str] = []
    commit = WorkflowStore.commit_staged

    def committing(self: WorkflowStore, staged: Any) -> Any:
        writers.append(threading.current_thread().name)
        return commit(self, staged)

    monkeypatch.setattr(WorkflowStore, "commit_staged", committing)
    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32") as memory:
        memory.save(wf(1))
        memory.save_many([wf(2), wf(3)], batch_size=5)
    assert writers == [threading.current_thread().name] * 2


def test_a_bad_workflow_keeps_the_batches_before_it_and_stores_nothing_after(
    tmp_path: Path,
) -> None:
    items: list[Any] = [wf(n) for n in range(20)]
    items[12] = {"id": "not a workflow"}
    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32") as memory:
        with pytest.raises(ConfigurationError, match="needs a provenance.model.Workflow"):
            memory.save_many(iter(items), batch_size=5)
        assert consistent(memory) == ids(*range(10))
        memory.save_many(items[13:], batch_size=5)  # still usable
        assert consistent(memory) == ids(*range(10), *range(13, 20))


def test_a_failed_write_keeps_the_batches_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replace = OxigraphStore.replace_graphs
    loads: list[int] = []

    def failing(self: OxigraphStore, graphs: Any) -> None:
        if len(graphs) > 2:  # a batch, not the embedder record
            loads.append(len(graphs))
            if len(loads) == 3:
                raise StoreError("disk full (test)")
        replace(self, graphs)

    monkeypatch.setattr(OxigraphStore, "replace_graphs", failing)
    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32") as memory:
        with pytest.raises(StoreError, match="disk full"):
            memory.save_many([wf(n) for n in range(25)], batch_size=5)
        assert len(loads) == 3  # nothing written after the failed batch
        assert consistent(memory) == ids(*range(10))
        monkeypatch.setattr(OxigraphStore, "replace_graphs", replace)
        memory.save_many([wf(n) for n in range(10, 25)], batch_size=5)
        assert consistent(memory) == ids(*range(25))


def test_an_indexing_failure_takes_back_its_batch_and_the_one_written_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_many = StepIndex.add_many
    calls: list[int] = []

    def failing(self: StepIndex, workflows: Any, **kwargs: Any) -> None:
        calls.append(len(workflows))
        if len(calls) == 2:
            raise RuntimeError("index broke (test)")
        add_many(self, workflows, **kwargs)

    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32") as memory:
        memory.save(wf(100))
        monkeypatch.setattr(StepIndex, "add_many", failing)
        with pytest.raises(RuntimeError, match="index broke"):
            memory.save_many([wf(n) for n in range(20)], batch_size=5)
        monkeypatch.setattr(StepIndex, "add_many", add_many)
        # Batch 1 stands; batch 2 failed to index; batch 3 was written meanwhile: both go.
        assert consistent(memory) == ids(100, *range(5))
    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32") as reopened:
        assert consistent(reopened) == ids(100, *range(5))


def test_a_batch_repeating_an_id_of_the_batch_being_written_makes_a_version(
    tmp_path: Path,
) -> None:
    first = [wf(1), wf(2)]
    again = [wf(1, text="a new text for w1"), wf(3)]
    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32") as memory:
        memory.save_many([*first, *again, wf(4), wf(5)], batch_size=2)
        assert memory.load("w1").steps[0].text == "a new text for w1"
        assert memory.load("w1@v1").steps[0].text == first[0].steps[0].text
        assert sorted(memory.index.ids(memory.scope)) == ids(1, 2, 3, 4, 5)


_KILLED = """
import os, sys
from em_plugin.memory import EpisodicMemory
from em_plugin.state.step_index import StepIndex
from provenance.model import CallStep, InstructionStep, Workflow

add_many, calls = StepIndex.add_many, []
def killed(self, workflows, **kwargs):  # batches 1-2 indexed; 3 (and maybe 4) committed only
    workflows = list(workflows)
    calls.extend(workflows[:1])  # (opening an empty store indexes nothing)
    if len(calls) == 3:
        os._exit(17)
    add_many(self, workflows, **kwargs)
StepIndex.add_many = killed
memory = EpisodicMemory(sys.argv[1], embedder="fake:32")
memory.save_many(
    (Workflow(id=f"w{n}", steps=(InstructionStep(f"task {n}", (CallStep("a"), CallStep("b"))),))
     for n in range(40)),
    batch_size=5,
)
"""


def test_a_process_killed_mid_save_many_reopens_with_the_index_matching_the_store(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "store")
    done = subprocess.run(
        [sys.executable, "-c", _KILLED, path],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 17, done.stderr.decode()
    with EpisodicMemory(path, embedder="fake:32") as memory:
        stored = consistent(memory)
        # Whole batches only, in order: at least the three whose indexing began.
        assert len(stored) % 5 == 0 and 15 <= len(stored) < 40
        assert stored == ids(*range(len(stored)))


def test_a_pipelined_call_starts_with_smaller_batches(tmp_path: Path) -> None:
    with EpisodicMemory(str(tmp_path / "store"), embedder="fake:32") as memory:
        seen: list[int] = []
        memory.save_many(iter([wf(n) for n in range(500)]), batch_size=128, progress=seen.append)
        assert seen == [16, 48, 112, 240, 368, 496, 500]  # 16, 32, 64, then 128 at a time
        assert consistent(memory) == ids(*range(500))
        seen.clear()
        memory.save_many([wf(n) for n in range(500, 600)], batch_size=128, progress=seen.append)
        assert seen == [100]  # one batch: no pipeline, no smaller batches
