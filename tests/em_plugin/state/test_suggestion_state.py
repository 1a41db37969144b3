"""The per-scope suggestion state is loaded from the index snapshot + journal, never rebuilt from
the store or from episodes, and suggests after a reopen exactly what it suggested before:
after saves and deletes replayed from the journal, after compaction, and after a format upgrade."""

from __future__ import annotations

import json
import logging
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from em_plugin.embedding import FakeEmbedder
from em_plugin.embedding.cache import CachedEmbedder
from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
from em_plugin.memory import EpisodicMemory
from em_plugin.state.scope_memory import ScopeMemory
from em_plugin.state.step_index import StepIndex
from em_plugin.suggest.models import ContinuationModel, ProceduralModel
from em_plugin.suggest.types import Suggestion
from provenance.model import Workflow
from provenance.stores.workflow_store import WorkflowStore

MODELS = (ContinuationModel(), ProceduralModel())

DATA = SyntheticMemory(3)
QUERIES = list(DATA.queries(12))


def _memory(path: Path) -> EpisodicMemory:
    return EpisodicMemory(str(path / "store"), embedder=FakeEmbedder(32), scope=SCOPE)


def _suggestions(memory: EpisodicMemory) -> list[list[Suggestion]]:
    return [memory.suggest(q, limit=None) for q in QUERIES]


def _same(before: list[list[Suggestion]], after: list[list[Suggestion]]) -> None:
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        assert [(s.tool, s.text, s.source) for s in old] == [
            (s.tool, s.text, s.source) for s in new
        ]
        assert [s.evidence for s in old] == [s.evidence for s in new]
        assert np.allclose([s.score for s in old], [s.score for s in new], atol=1e-6, rtol=0)
    assert any(before)  # the comparison is about real suggestions


def _no_rebuild(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Make every rebuild path fail, and record what gets embedded."""

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the suggestion state was rebuilt")

    monkeypatch.setattr(ScopeMemory, "add_episodes", refuse)
    monkeypatch.setattr(StepIndex, "episodes", refuse)
    monkeypatch.setattr(StepIndex, "rebuild", refuse)
    monkeypatch.setattr(WorkflowStore, "iter_workflows", refuse)
    embedded: list[list[str]] = []
    original = FakeEmbedder.embed

    def counting(self: FakeEmbedder, texts: list[str]) -> np.ndarray:
        embedded.append(list(texts))
        return original(self, texts)

    monkeypatch.setattr(FakeEmbedder, "embed", counting)  # the model behind the cache
    return embedded


def test_reopened_state_is_loaded_not_rebuilt_and_suggests_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _memory(tmp_path) as memory:
        memory.save_many(DATA.workflows(300))
        before = _suggestions(memory)
    embedded = _no_rebuild(monkeypatch)
    with _memory(tmp_path) as memory:
        after = _suggestions(memory)
    _same(before, after)
    # The model embeds only the current workflows' own texts: no stored context is embedded
    # again (the journal's replay finds its texts in the embedding cache).
    asked = {t for call in embedded for t in call}
    current = {s.text for q in QUERIES for _, s in q.walk() if hasattr(s, "text")}
    assert asked <= current


def test_saves_and_deletes_replayed_from_the_journal_keep_the_state_in_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _memory(tmp_path) as memory:
        memory.save_many(DATA.workflows(200))
        _suggestions(memory)  # the state is built; the changes below update it in place
        memory.save_many(DATA.workflows(60, start=200, prefix="late"))
        memory.save_many(DATA.workflows(30, start=0))  # replaces: same ids, other content
        for number in range(40, 70):
            assert memory.delete(f"wf-{number:07d}")
        journal = (tmp_path / "store.em-index" / "steps" / "journal.jsonl").read_text()
        assert '"op": "remove"' in journal and '"op": "add"' in journal  # not in the snapshot
        before = _suggestions(memory)
    _no_rebuild(monkeypatch)
    with _memory(tmp_path) as memory:
        _same(before, _suggestions(memory))


def test_compaction_keeps_the_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _memory(tmp_path) as memory:
        memory.save_many(DATA.workflows(200))
        for number in range(0, 150):
            memory.delete(f"wf-{number:07d}")
        memory.save_many(DATA.workflows(20, start=500))
        before = _suggestions(memory)
        memory._engine.index.save()  # a compacted snapshot: slots and string tables renumbered
        assert (tmp_path / "store.em-index" / "steps" / "journal.jsonl").read_text() == ""
        _same(before, _suggestions(memory))
    _no_rebuild(monkeypatch)
    with _memory(tmp_path) as memory:
        _same(before, _suggestions(memory))


def test_a_format_2_snapshot_is_upgraded_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _memory(tmp_path) as memory:
        memory.save_many(DATA.workflows(150))
        memory._engine.index.save()
        before = _suggestions(memory)
    steps = tmp_path / "store.em-index" / "steps"
    meta = json.loads((steps / "meta.json").read_text())
    meta["format"] = 2
    (steps / "meta.json").write_text(json.dumps(meta))
    for npz in steps.glob("scope-*.npz"):  # format 2 had no context vectors
        with np.load(npz) as arrays:
            kept = {k: arrays[k] for k in arrays.files if k != "context_vectors"}
        np.savez(npz, **kept)
    with caplog.at_level(logging.WARNING, logger="em_plugin.memory"), _memory(tmp_path) as memory:
        _same(before, _suggestions(memory))
    assert "format upgraded" in caplog.text
    assert json.loads((steps / "meta.json").read_text())["format"] == 3
    for npz in steps.glob("scope-*.npz"):
        assert "context_vectors.npy" in zipfile.ZipFile(npz).namelist()


def test_bulk_state_equals_the_state_built_one_workflow_at_a_time() -> None:
    embedder = CachedEmbedder(FakeEmbedder(32))
    index = StepIndex(embedder)
    workflows: list[Workflow] = list(DATA.workflows(250))
    index.add_many(workflows)
    for workflow in workflows[:40]:
        index.remove(workflow.id, SCOPE)
    bulk = ScopeMemory(32, embedder.embed, models=MODELS)
    bulk.load_index(index.scope_index(SCOPE))  # type: ignore[arg-type]
    single = ScopeMemory(32, embedder.embed, models=MODELS)
    tools = index.scope_index(SCOPE).tools  # type: ignore[union-attr]
    single.arrays.encode(tools, [None] * len(tools))  # the same tool ids (first seen first)
    for episode in index.episodes(SCOPE):
        single.add_episodes([episode])
    assert bulk.ids() == single.ids()
    for query in QUERIES:
        a, b = bulk.query(query), single.query(query)
        ranked_a, ranked_b = (
            bulk.model("continuation").rank(a),
            single.model("continuation").rank(b),
        )
        assert [_exact(c) for c in ranked_a] == [_exact(c) for c in ranked_b]
        # Evidence scores are rounded to 6 decimals: a last-bit difference in a cosine (another
        # context-id layout) may move one by a unit of the 6th decimal.
        assert np.allclose(_scores(ranked_a), _scores(ranked_b), atol=2e-6, rtol=0)
        last = next((t for t in reversed(a.tools) if t is not None), None)
        steps_a = bulk.model("procedural").next_tools(last, a.context, k=5)
        steps_b = single.model("procedural").next_tools(last, b.context, k=5)
        assert [_exact(t) for t in steps_a] == [_exact(t) for t in steps_b]
        assert np.allclose(_scores(steps_a), _scores(steps_b), atol=2e-6, rtol=0)
    assert bulk.model("procedural").tool_scores() == pytest.approx(
        single.model("procedural").tool_scores()
    )


def _exact(found: Any) -> tuple[Any, ...]:
    """What must be equal: names, ids and positions (scores compared within 1e-6)."""
    evidence = tuple((e.workflow_id, e.position) for e in found.evidence)
    rest = tuple(getattr(found, name, None) for name in ("order", "args", "instruction", "mode"))
    return (found.tool, evidence, *rest)


def _scores(found: list[Any]) -> list[float]:
    out: list[float] = []
    for item in found:
        out.append(getattr(item, "probability", None) or getattr(item, "weight", 0.0))
        out.append(getattr(item, "similarity", None) or 0.0)
        out.extend(e.score for e in item.evidence)
    return out


def _handoff(wid: str, inner: str) -> Workflow:
    """A coordinator hands over to a sub-agent, whose call ``inner`` nests under the handoff."""
    from provenance.model import CallStep, InstructionStep

    handoff = CallStep("transfer_to_mailer", steps=(CallStep(inner, {"to": "a@x.org"}),))
    return Workflow(
        id=wid,
        steps=(InstructionStep("mail the report", (CallStep("search"), handoff)),),
        scope=SCOPE,
    )


def test_handoff_routes_come_from_the_index_without_parsing_cited_workflows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provenance.model import CallStep, InstructionStep

    with _memory(tmp_path) as memory:
        memory.save_many([_handoff(f"h{i}", "send_email") for i in range(3)])
        memory.save(_handoff("h3", "send_fax"))  # journaled after the snapshot
        memory.delete("h0")
        state = memory.scope_memory()
        assert state.routes("h1") == {"send_email": "transfer_to_mailer"}
    current = Workflow(
        id="now", steps=(InstructionStep("mail the report", (CallStep("search"),)),), scope=SCOPE
    )
    loaded: list[str] = []
    original = WorkflowStore.load

    def counting(self: WorkflowStore, workflow_id: str, scope: str | None = None) -> Workflow:
        loaded.append(workflow_id)
        return original(self, workflow_id, scope)

    with _memory(tmp_path) as memory:
        state = memory.scope_memory()
        assert state.routes("h3") == {"send_fax": "transfer_to_mailer"}  # from the journal
        assert state.routes("h0") is None  # deleted
        monkeypatch.setattr(WorkflowStore, "load", counting)
        learned: dict[str, str] = {}
        found = memory.chain.suggesters[0].suggest(memory.request(current), None)
        memory.chain._learn_routes(memory.request(current), found, learned)
        assert learned == {"send_email": "transfer_to_mailer", "send_fax": "transfer_to_mailer"}
        assert loaded == []  # routes known from the index: no cited workflow was parsed
        # The user-level suggestion is still the handoff (lifting reads the cited leaf).
        assert [s.tool for s in memory.suggest(current)][:1] == ["transfer_to_mailer"]


def test_routes_unknown_in_an_older_index_fall_back_to_the_stored_workflow(
    tmp_path: Path,
) -> None:
    with _memory(tmp_path) as memory:
        memory.save_many([_handoff(f"h{i}", "send_email") for i in range(3)])
        memory._engine.index.save()
    steps = tmp_path / "store.em-index" / "steps"
    for npz in steps.glob("scope-*.npz"):  # as written before routes were kept
        with np.load(npz) as arrays:
            kept = {k: arrays[k] for k in arrays.files if k != "route_codes"}
        np.savez(npz, **kept)
    with _memory(tmp_path) as memory:
        assert memory.scope_memory().routes("h1") is None
        current = _handoff("now", "send_email").prefix(1)
        assert [s.tool for s in memory.suggest(current)][:1] == ["transfer_to_mailer"]


def test_a_resaved_workflow_is_parsed_again_for_its_citations(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        memory.save(_handoff("h1", "send_email"))
        state = memory.scope_memory()
        first = state.version("h1")
        assert first is not None and state.version("h1") == first
        memory.save(_handoff("h1", "send_fax"))
        assert state.version("h1") != first and state.version("nope") is None


def test_closing_folds_a_long_journal_into_a_snapshot(tmp_path: Path) -> None:
    journal = tmp_path / "store.em-index" / "steps" / "journal.jsonl"
    with _memory(tmp_path) as memory:
        memory.save_many(DATA.workflows(20))
    assert journal.read_text() != ""  # a short journal stays: closing stays cheap
    with _memory(tmp_path) as memory:
        memory.save_many(DATA.workflows(1000, start=20))
        before = _suggestions(memory)
    assert journal.read_text() == ""  # the next open replays nothing
    with _memory(tmp_path) as memory:
        assert len(memory) == 1020
        _same(before, _suggestions(memory))


def test_kept_context_cosines_follow_the_table() -> None:
    from em_plugin.state.episodes import ContextTable

    embed = FakeEmbedder(16).embed
    table = ContextTable(16)
    ids = table.acquire(["a b", "c d"], embed)
    query = np.asarray(embed(["a b"])[0], dtype=np.float32)
    first = table.similarities(query)
    assert table.similarities(query) is first  # kept for the turn
    assert not first.flags.writeable
    table.release([ids[1]])
    assert np.isnan(table.similarities(query)[ids[1]])  # a released id is no context any more
    table.acquire(["e f"], embed)
    assert not np.isnan(table.similarities(query)[ids[1]])  # its id was reused
    assert table.similarities(query)[ids[0]] == pytest.approx(1.0, abs=1e-5)


def test_cosines_of_a_few_contexts_are_the_whole_tables_bit_for_bit() -> None:
    from em_plugin.state.episodes import ContextTable

    embed = FakeEmbedder(32).embed
    table = ContextTable(32)
    ids = table.acquire([f"instruction {i}" for i in range(400)], embed)
    table.release(ids[10:20])
    queries = np.asarray(embed(["instruction 3", "something else"]), dtype=np.float32)
    wanted = np.array([5, 15, 5, 399, 0, 17])  # repeated and released ids too
    # Asked first, the few rows alone are multiplied; after the whole table, its kept answer.
    few = [table.similarities_of(q, wanted) for q in queries]
    whole = [table.similarities(q)[wanted] for q in queries]
    for a, b in zip(few, whole, strict=True):
        assert np.array_equal(a, b, equal_nan=True)
        assert np.isnan(a[1]) and np.isnan(a[5]) and not np.isnan(a[0])
    assert np.array_equal(table.similarities_of(queries[1], wanted), whole[1], equal_nan=True)


def test_the_models_share_the_scopes_context_vectors(tmp_path: Path) -> None:
    """One copy of the context vectors in memory (a million of them take 1.5 GB), kept in step."""
    data = SyntheticMemory(0, distinct_texts=True)
    with EpisodicMemory(tmp_path / "store", embedder="fake:32", scope=SCOPE) as memory:
        memory.save_many(data.workflows(30))
        state = memory.scope_memory()
        arrays = memory.index.scope_index(SCOPE)
        assert arrays is not None
        assert np.shares_memory(state.contexts._table(), arrays.context_vectors.view())
        memory.save_many(data.workflows(90, start=30))  # the rows grow: still one copy
        rows = arrays.context_vectors.view()
        assert np.shares_memory(state.contexts._table(), rows)
        assert state.contexts.capacity == len(arrays.contexts) == len(rows)
        query = rows[-1]
        sims = state.contexts.similarities(query)
        assert sims[len(rows) - 1] == pytest.approx(1.0, abs=1e-5)
        # What it suggests equals a state built afresh from the same scope.
        fresh = ScopeMemory(32, memory.embedder.embed, arrays=arrays.compacted())
        assert np.allclose(fresh.contexts.similarities(query), sims, equal_nan=True)


def test_grow_rows_keep_their_rows_and_live_views() -> None:
    from em_plugin.state.arrays import GrowRows

    rows = GrowRows(8)
    for i in range(300):
        rows.extend(np.full((3, 8), i, dtype=np.float32))
    view = rows.view()
    rows.extend(np.full((1000, 8), -1, dtype=np.float32))  # grows while a view is alive
    assert (view[::3, 0] == np.arange(300)).all()  # the old view still reads the old rows
    assert (rows.view()[:900:3, 0] == np.arange(300)).all() and rows.size == 1900
    loaded = GrowRows.of(np.ones((5, 8), dtype=np.float32))
    loaded.extend(np.zeros((2, 8), dtype=np.float32))
    assert loaded.view().sum() == 40 and loaded.size == 7


def test_a_table_built_at_once_answers_lookups_before_and_after_its_dict_exists() -> None:
    from em_plugin.state.episodes import ContextTable

    texts = [f"context {i}" for i in range(12)]
    vectors = np.eye(12, 16, dtype=np.float32)
    refs = np.array([1, 0, 2, 1, 0, 1, 1, 1, 0, 1, 1, 1])
    held = [t for t, r in zip(texts, refs.tolist(), strict=True) if r]

    def built() -> ContextTable:
        return ContextTable.from_arrays(texts, vectors, refs)

    lazy = built()
    assert len(lazy) == len(held)
    asked = [*texts, "never stored", *texts]  # more lookups than the scans before the dict
    answers = [lazy.id_of(t) for t in asked]
    assert answers == [texts.index(t) if t in held else -1 for t in asked]
    assert [t in lazy for t in asked] == [t in held for t in asked]
    assert lazy.texts() == held and len(lazy) == len(held)

    # A revived text goes last, whether or not a lookup built the dict first.
    revived, fresh = built(), built()
    assert revived.id_of(texts[3]) == 3  # a scan: the dict is not built yet
    for table in (revived, fresh):
        table.hold([4, 1], texts)
        table.release([0])
    assert revived.texts() == fresh.texts() == [*held[1:], texts[4], texts[1]]
    assert revived.id_of(texts[0]) == -1 and revived.id_of(texts[4]) == 4


def test_gather_index_of_adjacent_and_scattered_runs() -> None:
    from em_plugin.state.arrays import gather_index

    def reference(offsets: list[int], lengths: list[int]) -> list[int]:
        return [o + j for o, n in zip(offsets, lengths, strict=True) for j in range(n)]

    for offsets, lengths in [
        ([5, 8, 8, 12], [3, 0, 4, 2]),  # runs that follow one another
        ([0, 10, 3], [2, 1, 4]),  # scattered
        ([7], [0]),
    ]:
        got = gather_index(np.array(offsets), np.array(lengths))
        assert got.dtype == np.int64 and got.tolist() == reference(offsets, lengths)


def test_a_snapshots_context_vectors_are_read_with_room_to_grow(tmp_path: Path) -> None:
    """The contexts a journal replay adds at open go into spare rows: no row is moved."""
    from em_plugin.state.persistence import _read_rows

    data = SyntheticMemory(0, distinct_texts=True)
    with EpisodicMemory(tmp_path / "store", embedder="fake:32", scope=SCOPE) as memory:
        memory.save_many(data.workflows(20))
        memory.index.save()  # a snapshot, then a journal to replay at the next open
        memory.save_many(data.workflows(2, start=20))
        expected = memory.index.scope_index(SCOPE).context_vectors.view().copy()
    np.savez(tmp_path / "empty.npz", context_vectors=np.zeros((0, 32), np.float32))
    files = sorted(tmp_path.glob("store.em-index/**/*.npz"))
    assert len(files) == 1
    with np.load(files[0], allow_pickle=False) as arrays:
        snapshot = len(arrays["context_vectors"])
    assert 0 < snapshot < len(expected) <= snapshot + snapshot // 4
    for file in [*files, tmp_path / "empty.npz"]:
        with np.load(file, allow_pickle=False) as arrays:
            stored, rows = arrays["context_vectors"], _read_rows(arrays, "context_vectors")
            assert rows.view().dtype == stored.dtype and np.array_equal(rows.view(), stored)
            assert len(rows._data) == len(stored) + len(stored) // 4
    with EpisodicMemory(tmp_path / "store", embedder="fake:32", scope=SCOPE) as memory:
        assert len(memory) == 22
        replayed = memory.index.scope_index(SCOPE).context_vectors
        assert np.array_equal(replayed.view(), expected)
        # The replay's contexts went into the spare rows: the rows read were never moved.
        assert len(replayed._data) == snapshot + snapshot // 4
