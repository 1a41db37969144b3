"""Issue 13 items 1-7: scopes never touch each other, erasure reaches every derived file, crashes
never leave a stale index, read-only memories never write, and a write whose answer was lost
is settled against the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from em_plugin.memory import EpisodicMemory
from em_plugin.state.persistence import fingerprint
from em_plugin.suggest.types import Evidence, Suggestion
from provenance.errors import StoreOutcomeUnknown, WorkflowNotFound
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from provenance.suggestion_record import suggestion_graph_iri
from provenance.workflow_json import dumps_workflow
from tests.sparql_proxy import SparqlProxy

ROOT = Path(__file__).resolve().parents[3]


def wf(wid: str, text: str, *tools: str, scope: str = "default") -> Workflow:
    calls = tuple(CallStep(t, {"n": i}) for i, t in enumerate(tools))
    return Workflow(id=wid, steps=(InstructionStep(text, calls),), scope=scope)


def files_under(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


# ---------------------------------------------------------------------------- 13.1 - 13.3


def test_same_id_in_two_scopes_is_two_workflows() -> None:
    with EpisodicMemory("memory:", embedder="fake:32", scope="A") as a:
        b = a.with_scope("B")
        a.save(wf("shared/1", "alpha text of tenant A", "a_tool", "a_next"))
        b.save(wf("shared/1", "beta text of tenant B", "b_tool"))
        assert a.load("shared/1").steps[0].text == "alpha text of tenant A"
        assert b.load("shared/1").steps[0].text == "beta text of tenant B"
        assert a.ids() == ["shared/1"] and b.ids() == ["shared/1"]
        assert a.store.scopes_of("shared/1") == ["A", "B"]
        # Deleting B's copy leaves A's.
        assert b.delete("shared/1") and not b.delete("shared/1")
        assert a.load("shared/1").steps[0].steps[0].name == "a_tool"  # type: ignore[attr-defined]
        with pytest.raises(WorkflowNotFound):
            b.load("shared/1")
        assert [m.workflow_id for m in a.retrieve(wf("now", "alpha text of tenant A", "a_tool"))]


def test_same_thread_id_in_two_scopes() -> None:
    # A LangGraph thread saves as "session/<thread_id>"; two tenants may reuse a thread id.
    with EpisodicMemory("memory:", embedder="fake:32", scope="A") as a:
        b = a.with_scope("B")
        a.save(wf("session/t-1", "book a flight", "find_flight", "book"))
        b.save(wf("session/t-1", "file a claim", "open_claim"))
        b.save(wf("session/t-1", "file a claim again", "open_claim", "submit"))
        calls = a.load("session/t-1").steps[0].steps
        assert [c.name for c in calls] == ["find_flight", "book"]  # type: ignore[attr-defined]
        assert b.load("session/t-1").steps[0].text == "file a claim again"


def test_forget_keeps_other_scopes_suggestion_records() -> None:
    with EpisodicMemory("memory:", embedder="fake:32", scope="A") as a:
        b = a.with_scope("B")
        shown = [Suggestion("next", tool="t", evidence=(Evidence("w", 0, 1.0),))]
        a.record_suggestions("session-1", shown)
        b.record_suggestions("session-1", shown)
        graph_a, graph_b = (
            suggestion_graph_iri("session-1", "A"),
            suggestion_graph_iri("session-1", "B"),
        )
        assert graph_a != graph_b
        assert a.store.backend.has_graph(graph_a) and a.store.backend.has_graph(graph_b)
        a.forget("B")
        assert a.store.backend.has_graph(graph_a)
        assert not a.store.backend.has_graph(graph_b)


# ---------------------------------------------------------------------------- 13.4 erasure

SECRET_TEXTS = ("zebra quartz nebula protocol", "xylophone marmalade cipher")


def test_forget_erases_every_derived_file(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    with EpisodicMemory(path, embedder="fake:32", scope="A") as a:
        a.save(wf("a1", "ordinary text of tenant A", "a_tool"))
        b = a.with_scope("B")
        b.save(wf("tenant-b-only-id", SECRET_TEXTS[0], "b_tool", "b_tool2"))
        b.save(wf("b2", SECRET_TEXTS[1], "b_tool"))
        b.suggest(wf("now", SECRET_TEXTS[0], "b_tool"))  # builds B's suggestion state
        cached_a = len(a.embedder)
    directory = open_store("memory:").derived_dir  # None: only disk stores have one
    assert directory is None
    # A later session forgets B (its suggestion state was never built in this process).
    with EpisodicMemory(path, embedder="fake:32", scope="B") as b:
        assert b.ids() == ["b2", "tenant-b-only-id"]
        assert b.forget() == ["b2", "tenant-b-only-id"]
        derived = b.store.derived_dir
        assert derived is not None
        remaining = len(b.embedder)
        _assert_no_trace(derived)
    assert remaining < cached_a
    _assert_no_trace(derived)
    with EpisodicMemory(
        path, embedder="fake:32", scope="A"
    ) as a:  # reopen: still nothing, A intact
        assert a.ids() == ["a1"] and a.with_scope("B").ids() == []
        a.suggest(wf("now", "ordinary text of tenant A", "a_tool"))
    _assert_no_trace(derived)


def _assert_no_trace(directory: Path) -> None:
    contents = files_under(directory)
    assert contents, "the derived-data directory holds the index and cache"
    for name, data in contents.items():
        for text in SECRET_TEXTS:
            for token in (text, *text.split()):
                assert token.encode() not in data, f"{token!r} remains in {name}"
        assert b"tenant-b-only-id" not in data, f"B's id remains in {name}"
    # The cache holds no vector of B's texts (keys are text hashes).
    import sqlite3

    from em_plugin.embedding.cache import CachedEmbedder
    from em_plugin.embedding.embedders import resolve_embedder

    probe = CachedEmbedder(resolve_embedder("fake:32"))
    keys = [probe.key(t) for t in SECRET_TEXTS]
    with sqlite3.connect(directory / "embeddings.sqlite") as db:
        rows = db.execute(
            f"SELECT COUNT(*) FROM embeddings WHERE key IN ({','.join('?' * len(keys))})", keys
        ).fetchone()
    assert rows == (0,)


# ---------------------------------------------------------------------------- 13.5 crash

_CRASH = """
import os, sys
from em_plugin.memory import EpisodicMemory
from em_plugin.state.persistence import fingerprint
from em_plugin.state.step_index import StepIndex
from provenance.workflow_json import loads_workflow

memory = EpisodicMemory(sys.argv[1], embedder="fake:32", scope="team")
def killed(*args, **kwargs):  # the store has committed; the index never hears of it
    os._exit(17)
StepIndex.add_many = killed
memory.save(loads_workflow(sys.argv[2]))
"""


def test_crash_after_store_commit_never_leaves_a_stale_index(tmp_path: Path) -> None:
    path = str(tmp_path / "store")
    with EpisodicMemory(path, embedder="fake:32", scope="team") as memory:
        memory.save(wf("w1", "book a flight to rome", "find_flight", "book"))
        memory.save(wf("w2", "cancel the hotel", "find_booking", "cancel"))
    new = wf("w1", "classify the safety data sheet", "extract", "classify", scope="team")
    done = subprocess.run(
        [sys.executable, "-c", _CRASH, path, dumps_workflow(new)],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 17, done.stderr.decode()
    with EpisodicMemory(path, embedder="fake:32", scope="team") as memory:
        assert memory.load("w1").steps[0].text == "classify the safety data sheet"
        found = memory.retrieve(wf("now", "classify the safety data sheet", "extract"))
        assert [m.workflow_id for m in found] == ["w1"]
        assert memory.index.leaves("w1", "team").tools == ("extract", "classify")


# ---------------------------------------------------------------------------- 13.6 read-only


def test_read_only_memory_never_writes_index_files_and_sees_new_saves(tmp_path: Path) -> None:
    path = tmp_path / "store"
    writer = EpisodicMemory(str(path), embedder="fake:32", scope="team")
    try:
        for i in range(3):
            writer.save(wf(f"w{i}", f"instruction number {i}", "search", "report"))
        derived = writer.store.derived_dir
        assert derived is not None
        before = files_under(derived)
        store = open_store(str(path), read_only=True)
        reader = EpisodicMemory(store, embedder="fake:32", scope="team", poll_interval=0.0)
        try:
            assert reader.ids() == ["w0", "w1", "w2"]
            reader.suggest(wf("now", "instruction number 1", "search"))
            assert files_under(derived) == before  # nothing written while reading
            # The writer goes on; the reader sees its saves and deletes.
            writer.save(wf("w3", "a brand new instruction", "lookup", "report"))
            writer.delete("w0")
            writer.save(wf("w1", "instruction number one, revised", "search", "export"))
            assert reader.ids() == ["w1", "w2", "w3"]
            found = reader.retrieve(wf("now", "a brand new instruction", "lookup"))
            assert [m.workflow_id for m in found] == ["w3"]
            assert reader.index.leaves("w1", "team").tools == ("search", "export")
        finally:
            reader.close()
            store.close()
        # The writer's journal is still the one it writes to: its later changes persist.
        writer.save(wf("w4", "after the reader left", "search"))
        writer.delete("w2")
    finally:
        writer.close()
    with EpisodicMemory(str(path), embedder="fake:32", scope="team") as again:
        assert again.ids() == ["w1", "w3", "w4"]
        # w1 was saved again: its first version stays stored as w1@v1, never indexed.
        assert again.store.ids("team") == ["w1", "w1@v1", "w3", "w4"]
        pairs = [("team", i) for i in again.store.ids("team") if i != "w1@v1"]
        assert again.index.fingerprint() == fingerprint(pairs)
        assert again.index.markers["team"] == again.store.marker("team").position


# ---------------------------------------------------------------------------- 13.7 remote


class _Proxy(SparqlProxy):
    """Forwards to a real server; can play a server that dies mid-request."""

    mode = "up"  # "up" | "commit-then-die" | "commit-then-drop" | "down"

    def refuses(self) -> bool:
        return self.mode == "down"

    def loses_answer(self, path: str, update: str) -> bool:
        if not (self.mode.startswith("commit-then") and path.endswith("/update")):
            return False
        # The server committed, then the connection died before the answer.
        self.mode = "down" if self.mode == "commit-then-die" else "up"
        return True


@pytest.fixture
def proxy(oxigraph_server) -> Iterator[_Proxy]:
    oxigraph_server.wipe()
    try:
        with _Proxy(oxigraph_server.base_url).serving() as server:
            yield server
    finally:
        oxigraph_server.wipe()


def test_remote_write_whose_answer_is_lost_is_settled(proxy: _Proxy) -> None:
    with EpisodicMemory(proxy.query_url, embedder="fake:32", scope="team") as memory:
        memory.save(wf("w0", "first instruction", "search"))
        # The server commits and the answer is lost: the marker shows the write, save succeeds.
        proxy.mode = "commit-then-drop"
        memory.save_many([wf(f"w{i}", f"instruction {i}", "search") for i in range(1, 4)])
        assert memory.ids() == ["w0", "w1", "w2", "w3"]
        # The server commits and dies: nobody can tell, so the error says so.
        proxy.mode = "commit-then-die"
        batch = [wf(f"v{i}", f"another instruction {i}", "lookup", "report") for i in range(5)]
        with pytest.raises(StoreOutcomeUnknown, match="cannot be read"):
            memory.save_many(batch)
        proxy.mode = "up"  # back again: the memory reconciles before its next read
        assert memory.ids() == sorted(["w0", "w1", "w2", "w3", *(w.id for w in batch)])
        found = memory.retrieve(wf("now", "another instruction 3", "lookup"))
        assert "v3" in [m.workflow_id for m in found]


def test_change_marker_advances_with_each_write() -> None:
    with open_store("memory:") as store:
        assert store.marker("team").sequence == 0
        store.save(wf("w1", "x", "t", scope="team"))
        first = store.marker("team")
        store.save(wf("w2", "y", "t", scope="team"))
        store.delete("w1", "team")
        marker = store.marker("team")
        assert marker.sequence == first.sequence + 2
        assert marker.since(*first.position) == {"w1", "w2"}
        assert marker.since(*marker.position) == frozenset()
        assert marker.since(99, "nope") is None
        store.delete_scope("team")
        erased = store.marker("team")
        assert erased.since(*marker.position) is None  # whole scope: rebuild
        assert [(e.everything, e.ids) for e in erased.entries] == [(True, frozenset())]
        assert json.dumps(sorted(store.markers())) == '["team"]'
