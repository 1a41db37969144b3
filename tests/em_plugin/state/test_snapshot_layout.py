"""Snapshots write only the scopes that changed, commit by one rename and survive a crash."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from em_plugin.embedding import FakeEmbedder
from em_plugin.state import persistence
from em_plugin.state.episodes import episode_of
from em_plugin.state.step_index import StepIndex
from provenance.model import CallStep, InstructionStep, Workflow


def _wf(workflow_id: str, text: str, scope: str) -> Workflow:
    return Workflow(workflow_id, (InstructionStep(text, (CallStep("search"),)),), scope=scope)


def _tenants(count: int, *, prefix: str = "w") -> list[Workflow]:
    return [_wf(f"{prefix}{i}", f"task {i} of tenant {i}", f"t{i}") for i in range(count)]


def _scope_files(path: Path) -> dict[str, int]:
    """Scope file name -> inode, for the files the snapshot refers to and any other."""
    return {p.name: p.stat().st_ino for p in path.iterdir() if p.name.startswith("scope-")}


def _state(index: StepIndex) -> dict[str, list[tuple[str, tuple[str | None, ...]]]]:
    return {
        scope: [(wid, index.leaves(wid, scope).texts) for wid in index.ids(scope)]
        for scope in index.scopes()
    }


def test_a_snapshot_writes_only_the_changed_scopes_and_deletes_the_replaced_files(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ix"
    index = StepIndex(FakeEmbedder(16), path=path)
    index.add_many(_tenants(5))
    index.save()
    before = _scope_files(path)
    assert len(before) == 10  # two files a scope
    index.add(_wf("extra", "another task", "t1"))
    index.remove_scope("t3")
    index.save()
    after = _scope_files(path)
    meta = json.loads((path / "meta.json").read_text())
    listed = {entry["scope"]: entry["file"] for entry in meta["scopes"]}
    assert sorted(listed) == ["t0", "t1", "t2", "t4"]
    # Unchanged scopes keep their very files; t1 has new ones; t3's and t1's old ones are gone.
    for scope in ("t0", "t2", "t4"):
        for suffix in (".json", ".npz"):
            name = listed[scope] + suffix
            assert after[name] == before[name]
    assert listed["t1"] + ".json" not in before
    assert set(after) == {listed[s] + suffix for s in listed for suffix in (".json", ".npz")}
    assert (path / "journal.jsonl").read_text() == ""
    assert sorted(p.name for p in path.iterdir() if not p.name.startswith("scope-")) == [
        "journal.jsonl",
        "meta.json",
    ]
    expected = _state(index)
    index.close()
    assert _state(StepIndex.load(path, FakeEmbedder(16))) == expected


def _crash_at_commit(monkeypatch: pytest.MonkeyPatch, copy: Path, *, after: bool) -> None:
    """Copy the directory as a crash right before (or after) the snapshot's commit leaves it."""
    replace = os.replace

    def crashing(source: str | Path, target: str | Path) -> None:
        if Path(target).name == "meta.json" and not copy.exists():
            if after:
                replace(source, target)
                shutil.copytree(Path(target).parent, copy)
                return
            shutil.copytree(Path(target).parent, copy)
        replace(source, target)

    monkeypatch.setattr(persistence.os, "replace", crashing)


@pytest.mark.parametrize("after", [False, True], ids=["before-commit", "after-commit"])
def test_a_crash_mid_snapshot_leaves_the_old_or_the_new_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: bool
) -> None:
    path, crashed = tmp_path / "ix", tmp_path / "crashed"
    index = StepIndex(FakeEmbedder(16), path=path)
    index.add_many(_tenants(4))
    index.save()
    index.add(_wf("late", "a task saved after the snapshot", "t2"))
    index.remove("w0", "t0")
    expected = _state(index)
    generation = json.loads((path / "meta.json").read_text())["generation"] + 1
    _crash_at_commit(monkeypatch, crashed, after=after)
    index.save()
    monkeypatch.undo()
    index.close()
    # Before the commit: the old meta.json, its journal taken over and a new one. After: the
    # new snapshot, its taken-over journal not yet deleted (and not replayed again).
    assert (crashed / f"journal.{generation}.jsonl").exists()
    recovered = StepIndex.load(crashed, FakeEmbedder(16))
    assert _state(recovered) == expected
    # The recovered index goes on: saves, a snapshot, a reload.
    recovered.add(_wf("next", "one more task", "t3"))
    expected = _state(recovered)
    recovered.save()
    recovered.close()
    assert not list(crashed.glob("journal.*.jsonl"))
    files = {entry["file"] for entry in json.loads((crashed / "meta.json").read_text())["scopes"]}
    assert set(_scope_files(crashed)) == {f + s for f in files for s in (".json", ".npz")}
    assert _state(StepIndex.load(crashed, FakeEmbedder(16))) == expected


def test_a_failed_snapshot_keeps_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ix"
    index = StepIndex(FakeEmbedder(16), path=path)
    index.add_many(_tenants(3))
    index.save()
    index.add(_wf("late", "a task saved after the snapshot", "t1"))
    replace = os.replace

    def failing(source: str | Path, target: str | Path) -> None:
        if Path(target).name == "meta.json":
            raise OSError(28, "No space left on device")
        replace(source, target)

    monkeypatch.setattr(persistence.os, "replace", failing)
    with pytest.raises(OSError, match="No space"):
        index.save()
    monkeypatch.undo()
    index.add(_wf("later", "a task saved after the failure", "t2"))
    expected = _state(index)
    index.close()
    assert sorted(p.name for p in path.iterdir() if not p.name.startswith("scope-")) == [
        "journal.jsonl",
        "meta.json",
    ]
    assert len(_scope_files(path)) == 6  # the failed snapshot's files are gone
    assert _state(StepIndex.load(path, FakeEmbedder(16))) == expected


def test_a_snapshot_of_the_earlier_layout_is_read_and_written_on(tmp_path: Path) -> None:
    path = tmp_path / "ix"
    index = StepIndex(FakeEmbedder(16))
    index.add_many(_tenants(3))
    index.save(path)
    # The earlier layout: files numbered from 0, no generation, no next file number.
    meta = json.loads((path / "meta.json").read_text())
    del meta["generation"], meta["next_file"]
    meta["fingerprint"] = "3:0"
    (path / "meta.json").write_text(json.dumps(meta, indent=1))
    assert set(_scope_files(path)) == {f"scope-{i}{s}" for i in range(3) for s in (".json", ".npz")}
    (path / "journal.jsonl").write_text(
        json.dumps(persistence.add_entry("t0", episode_of(_wf("w9", "a journaled task", "t0"))))
        + "\n"
    )
    loaded = StepIndex.load(path, FakeEmbedder(16))
    assert loaded.ids("t0") == ["w0", "w9"]
    loaded.add(_wf("w10", "a task of a new tenant", "t7"))
    expected = _state(loaded)
    loaded.save()
    loaded.close()
    listed = {e["scope"]: e["file"] for e in json.loads((path / "meta.json").read_text())["scopes"]}
    assert listed["t1"] == "scope-1" and listed["t2"] == "scope-2"  # kept
    assert listed["t0"] not in {"scope-0", "scope-1", "scope-2"}  # rewritten, never reused
    assert not (path / "scope-0.json").exists()
    assert _state(StepIndex.load(path, FakeEmbedder(16))) == expected
