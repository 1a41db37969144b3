"""Issue 35 item 3: many tenants through one memory, with a bounded cache of loaded scopes.

Loaded scopes stay within ``$EM_PLUGIN_SCOPE_CACHE``; an unloaded scope is read back from its
snapshot files (never embedded again) and suggests exactly what it did before; a scope in use
is never unloaded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from em_plugin.embedding.cache import CachedEmbedder
from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from provenance.model import CallStep, InstructionStep, Workflow

SCOPES = [f"tenant-{i}" for i in range(8)]


def wf(wid: str, text: str, *tools: str, scope: str) -> Workflow:
    calls = tuple(CallStep(t, {"n": i}) for i, t in enumerate(tools))
    return Workflow(id=wid, steps=(InstructionStep(text, calls),), scope=scope)


def stored(scope: str) -> list[Workflow]:
    """Two workflows of a scope, with texts and tools of its own."""
    return [
        wf("a", f"collect the records of {scope}", "fetch", f"parse_{scope}", "store", scope=scope),
        wf("b", f"collect the files of {scope}", "fetch", f"parse_{scope}", "index", scope=scope),
    ]


def query(scope: str) -> Workflow:
    return wf("now", f"collect the records of {scope}", "fetch", scope=scope)


def answers(memory: EpisodicMemory, scope: str) -> list[dict[str, object]]:
    return [s.to_json() for s in memory.with_scope(scope).suggest(query(scope))]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "store"
    with EpisodicMemory(path, embedder="fake:32") as memory:
        for scope in SCOPES:
            memory.with_scope(scope).save_many(stored(scope))
    yield path


def test_loaded_scopes_stay_within_the_bound(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EM_PLUGIN_SCOPE_CACHE", "3")
    with EpisodicMemory(store, embedder="fake:32") as memory:
        index = memory.index
        assert index.loaded() <= 3  # the journal replayed, then unloaded to the bound
        for _ in range(2):
            for scope in SCOPES:
                assert answers(memory, scope)
                assert index.loaded() <= 3
        assert index.evictions >= 2 * len(SCOPES) - 3
        assert index.reloads >= len(SCOPES) - 3
        assert memory.with_scope("tenant-0").ids() == ["a", "b"]


def test_an_unloaded_scope_reloads_without_embedding_and_suggests_the_same(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EpisodicMemory(store, embedder="fake:32") as memory:  # every scope kept
        before = {scope: answers(memory, scope) for scope in SCOPES}
    monkeypatch.setenv("EM_PLUGIN_SCOPE_CACHE", "2")
    with EpisodicMemory(store, embedder="fake:32") as memory:
        cached = memory.embedder
        embedded: list[str] = []
        model_calls: list[int] = []
        real_embed, real_inner = CachedEmbedder.embed, cached.inner.embed

        def counting_embed(self: CachedEmbedder, texts: Sequence[str]) -> np.ndarray:
            embedded.extend(texts)
            return real_embed(self, texts)

        def counting_inner(texts: Sequence[str]) -> np.ndarray:
            model_calls.append(len(texts))
            return real_inner(texts)

        monkeypatch.setattr(CachedEmbedder, "embed", counting_embed)
        monkeypatch.setattr(cached.inner, "embed", counting_inner)
        for _ in range(3):  # every visit but the first two of each round reloads a scope
            for scope in SCOPES:
                assert answers(memory, scope) == before[scope]
        assert memory.index.reloads >= 2 * len(SCOPES)
        # No stored text was asked for (the vectors came from the snapshot files), and the
        # model was never called.
        texts = {
            step.text
            for scope in SCOPES
            for workflow in stored(scope)
            for _, step in workflow.walk()
            if isinstance(step, InstructionStep)
        }
        assert not texts & set(embedded)
        assert model_calls == []


def test_writes_to_many_scopes_stay_within_the_bound_and_survive_a_reopen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A changed scope cannot be unloaded before a snapshot holds it: the index writes one.
    monkeypatch.setenv("EM_PLUGIN_SCOPE_CACHE", "2")
    path = tmp_path / "store"
    with EpisodicMemory(path, embedder="fake:32") as memory:
        for scope in SCOPES:
            memory.with_scope(scope).save_many(stored(scope))
            assert memory.index.loaded() <= 2
        memory.with_scope("tenant-1").delete("a")  # an unloaded scope, changed
        assert memory.index.loaded() <= 2
        during = {scope: answers(memory, scope) for scope in SCOPES}
    monkeypatch.delenv("EM_PLUGIN_SCOPE_CACHE")
    with EpisodicMemory(path, embedder="fake:32") as memory:
        assert {scope: answers(memory, scope) for scope in SCOPES} == during
        assert memory.with_scope("tenant-1").ids() == ["b"]
        assert memory.index.evictions == 0


def test_a_scope_in_use_is_never_unloaded(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EM_PLUGIN_SCOPE_CACHE", "1")
    with EpisodicMemory(store, embedder="fake:32") as memory:
        engine = memory._engine
        with engine.using("tenant-0"):
            state = engine.scope_memory("tenant-0")
            for scope in SCOPES[1:]:
                answers(memory, scope)
            # Still the loaded state: the models built for it are the ones in the index.
            assert engine.index.scope_index("tenant-0") is state.arrays
        for scope in SCOPES[1:]:
            answers(memory, scope)
        assert engine.index.loaded() == 1


def test_a_damaged_scope_file_is_reloaded_from_the_store(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EpisodicMemory(store, embedder="fake:32") as memory:
        before = answers(memory, "tenant-3")
    steps = Path(f"{store}.em-index") / "steps"
    for file in steps.glob("scope-*.json"):
        if '"tenant-3"' in file.read_text():
            file.with_suffix(".npz").write_bytes(b"damaged")
    with EpisodicMemory(store, embedder="fake:32") as memory:
        view = memory.with_scope("tenant-3")
        view.suggest(query("tenant-3"))  # finds the file damaged
        assert answers(memory, "tenant-3") == before
        assert view.ids() == ["a", "b"]


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_a_bad_bound_fails_at_construction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("EM_PLUGIN_SCOPE_CACHE", value)
    with pytest.raises(ConfigurationError, match="EM_PLUGIN_SCOPE_CACHE.*'none'"):
        EpisodicMemory(tmp_path / "store", embedder="fake:32")


def _counting(
    memory: EpisodicMemory, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[int]]:
    """Record every text the memory's cache is asked for and every call of its model."""
    cached = memory.embedder
    embedded: list[str] = []
    model_calls: list[int] = []
    real_embed, real_inner = CachedEmbedder.embed, cached.inner.embed

    def counting_embed(self: CachedEmbedder, texts: Sequence[str]) -> np.ndarray:
        embedded.extend(texts)
        return real_embed(self, texts)

    def counting_inner(texts: Sequence[str]) -> np.ndarray:
        model_calls.append(len(texts))
        return real_inner(texts)

    monkeypatch.setattr(CachedEmbedder, "embed", counting_embed)
    monkeypatch.setattr(cached.inner, "embed", counting_inner)
    return embedded, model_calls


def test_one_save_many_across_scopes_reopens_from_snapshots_and_suggests_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One call, batches spanning several scopes (the tenants build of docs/performance.md):
    # each batch reads only its own scopes' change logs, and every scope's marker advances.
    monkeypatch.setenv("EM_PLUGIN_SCOPE_CACHE", "2")
    path = tmp_path / "store"
    every = [w for scope in SCOPES for w in stored(scope)]
    with EpisodicMemory(path, embedder="fake:32") as memory:
        memory.save_many(every, batch_size=3)
        assert {s: memory.index.markers[s] for s in SCOPES} == {
            s: memory.store.position(s) for s in SCOPES
        }
        during = {scope: answers(memory, scope) for scope in SCOPES}
    with EpisodicMemory(path, embedder="fake:32") as memory:
        embedded, model_calls = _counting(memory, monkeypatch)
        for _ in range(2):
            assert {scope: answers(memory, scope) for scope in SCOPES} == during
        assert memory.index.reloads >= len(SCOPES) - 2  # the second pass reads files again
        texts = {s.text for w in every for _, s in w.walk() if isinstance(s, InstructionStep)}
        assert not texts & set(embedded)
        assert model_calls == []
    assert all(during.values())


def test_a_batch_across_scopes_keeps_each_scopes_retired_workflows_hidden(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    with EpisodicMemory(path, embedder="fake:32") as memory:
        memory.save_many([w for scope in SCOPES for w in stored(scope)])
        assert memory.with_scope("tenant-3").lifecycle.retire("a", reason="wrong")
    # A new memory reads the hidden ids of a batch's scopes at once, before planning it.
    with EpisodicMemory(path, embedder="fake:32") as memory:
        again = [w.replace(id="c") for scope in SCOPES for w in stored(scope)[:1]]
        changed = stored("tenant-3")[0].replace(steps=stored("tenant-4")[0].steps)
        memory.save_many([*again, changed], batch_size=len(SCOPES) + 1)
        assert ("tenant-3", "a") not in memory.index
        assert ("tenant-3", "c") in memory.index and ("tenant-5", "a") in memory.index
        assert memory.with_scope("tenant-3").ids() == ["b", "c"]
