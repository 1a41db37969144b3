"""The step index: sync with saves and deletes, scopes, persistence, staleness, rebuild."""

from __future__ import annotations

import json

import numpy as np
import pytest

from em_plugin.embedding import CallableEmbedder, FakeEmbedder
from em_plugin.embedding.cache import CachedEmbedder
from em_plugin.errors import ConfigurationError, IndexStaleError
from em_plugin.retrieval.reference import MatchConfig, leaf_texts
from em_plugin.state.step_index import StepIndex, fingerprint
from provenance.model import CallStep, InstructionStep, Workflow


def _wf(workflow_id: str, text: str, *tools: str, scope: str = "default") -> Workflow:
    """An instruction leaf, then calls nested under a follow-up instruction, then a report."""
    calls = (InstructionStep("go on", tuple(CallStep(t) for t in tools)),) if tools else ()
    return Workflow(workflow_id, (InstructionStep(text), *calls, CallStep("report")), scope=scope)


MEMORY = [
    _wf("a", "extract the pfas content of the product", "search", "extract"),
    _wf("b", "extract pfas content from this product", "search", "extract", "classify"),
    _wf("c", "book a flight to paris", "find_flight", "book"),
    _wf("d", "check the supplier list", "lookup", scope="tenant-2"),
]
QUERY = Workflow(
    "q", (InstructionStep("extract the pfas content of a product"), CallStep("search"))
)


@pytest.fixture
def index() -> StepIndex:
    built = StepIndex(FakeEmbedder(32))
    built.add_many(MEMORY)
    return built


def _results(index: StepIndex, query: Workflow = QUERY, **config) -> list[tuple[str, tuple]]:
    cfg = MatchConfig(threshold=0.3, **config)
    fast = index.match(query, config=cfg)
    assert fast == index.match(query, config=cfg, method="reference")
    return [(m.workflow_id, m.alignment) for m in fast]


def test_index_holds_leaf_sequences_per_scope(index):
    assert len(index) == 4 and "a" in index and "zzz" not in index
    assert index.ids() == ["a", "b", "c"] and index.ids("tenant-2") == ["d"]
    assert index.scopes() == ["default", "tenant-2"]
    leaves = index.leaves("b")
    assert (leaves.tools, leaves.texts) == leaf_texts(MEMORY[1])
    expected = FakeEmbedder(32).embed(["extract pfas content from this product"])[0]
    assert np.array_equal(leaves.vectors[0], expected)
    assert not leaves.vectors[1:].any()
    assert index.stats()["default"] == {"workflows": 3, "leaf_steps": 13, "texts": 3, "tools": 6}


def test_retrieval_finds_similar_workflows_best_first(index):
    assert _results(index) == [("a", (0, 1)), ("b", (0, 1))]


def test_add_replaces_and_remove_deletes(index):
    index.add(_wf("a", "book a flight to rome", "find_flight"))
    assert [wid for wid, _ in _results(index)] == ["b"]
    assert index.leaves("a").tools == (None, "find_flight", "report")
    assert index.remove("b") is True
    assert index.remove("b") is False
    assert _results(index) == [] and index.ids() == ["a", "c"]
    with pytest.raises(KeyError):
        index.leaves("b")


def test_retrieval_never_crosses_scopes(index):
    twin = QUERY.replace(scope="tenant-2")
    index.add(_wf("e", "extract the pfas content of the product", "search", "x", scope="tenant-2"))
    assert [wid for wid, _ in _results(index, twin)] == ["e"]
    assert [wid for wid, _ in _results(index)] == ["a", "b"]
    assert index.match(QUERY, scope="nobody") == []
    # Ids are per scope: the same id in another scope is another workflow.
    index.add(_wf("a", "extract the pfas content of the product", "search", scope="tenant-2"))
    assert index.scopes_of("a") == ["default", "tenant-2"]
    assert ("tenant-2", "a") in index and ("default", "a") in index
    assert [wid for wid, _ in _results(index)] == ["a", "b"]
    assert [wid for wid, _ in _results(index, twin)] == ["a", "e"]
    with pytest.raises(ConfigurationError, match="several scopes"):
        index.scope_of("a")
    assert index.remove("a", "tenant-2") and index.scope_of("a") == "default"


def test_remove_scope_drops_workflows_but_leaves_the_cache_to_its_owner(index):
    cache = index.embedder
    before = len(cache)
    assert index.remove_scope("tenant-2") == ["d"]
    assert index.remove_scope("tenant-2") == []
    assert "d" not in index and index.ids("tenant-2") == []
    assert len(cache) == before  # the engine evicts (tests/em_plugin/state/test_tenants...)


def test_many_removals_compact_the_scope_and_keep_results():
    index = StepIndex(FakeEmbedder(16))
    index.add_many(_wf(f"w{i}", f"text number {i % 7}", "search", f"t{i % 5}") for i in range(2100))
    for i in range(2100):
        if i % 3:
            index.remove(f"w{i}")
    scope = index._scopes["default"]
    assert scope.dead < 1100
    query = Workflow("q", (InstructionStep("text number 3"),))
    fast = index.match(query, config=MatchConfig(max_workflows=3))
    assert fast == index.match(query, config=MatchConfig(max_workflows=3), method="reference")
    expected = sorted(f"w{i}" for i in range(2100) if i % 3 == 0 and i % 7 == 3)[:3]
    assert [m.workflow_id for m in fast] == expected
    assert [m.score for m in fast] == pytest.approx([1.0, 1.0, 1.0])


def test_persistence_round_trip_with_journal(tmp_path):
    path = tmp_path / "index"
    index = StepIndex(FakeEmbedder(32), path=path)
    index.add_many(MEMORY)
    index.remove("c")
    index.save()
    index.add(_wf("e", "extract pfas of the product now", "search", "extract"))
    index.remove("a")
    index.remove_scope("tenant-2")
    index.close()
    journal = (path / "journal.jsonl").read_text().splitlines()
    assert [json.loads(line)["op"] for line in journal] == ["add", "remove", "remove_scope"]
    # A torn last line (a crash while appending) is skipped.
    with (path / "journal.jsonl").open("a") as handle:
        handle.write('{"op": "add", "id": "tor')
    loaded = StepIndex.load(path, FakeEmbedder(32), expected_fingerprint=index.fingerprint())
    assert loaded.ids() == ["b", "e"] and loaded.scopes() == ["default"]
    assert _results(loaded) == _results(index)
    for wid in ("b", "e"):
        assert np.array_equal(loaded.leaves(wid).vectors, index.leaves(wid).vectors)
    loaded.add(_wf("f", "extract the pfas content of products", "search", "extract"))
    loaded.close()
    again = StepIndex.load(path, FakeEmbedder(32))
    assert again.ids() == ["b", "e", "f"]


def test_save_to_another_path_and_load(tmp_path, index):
    index.save(tmp_path / "copy")
    loaded = StepIndex.load(tmp_path / "copy", FakeEmbedder(32))
    assert loaded.fingerprint() == index.fingerprint()
    assert _results(loaded) == _results(index)
    with pytest.raises(ConfigurationError, match="needs a path"):
        index.save()


@pytest.mark.parametrize(
    ("embedder", "message"),
    [
        (FakeEmbedder(16), "built with embedder 'fake-32' \\(dimension 32\\)"),
        (CallableEmbedder(lambda texts: np.ones((len(texts), 32)), name="other"), "callable:other"),
    ],
)
def test_load_refuses_another_embedder(tmp_path, index, embedder, message):
    index.save(tmp_path / "ix")
    with pytest.raises(IndexStaleError, match=message) as caught:
        StepIndex.load(tmp_path / "ix", embedder)
    assert "em-plugin reindex" in str(caught.value)


def test_load_detects_a_changed_store(tmp_path, index):
    index.save(tmp_path / "ix")
    store = [(w.scope, w.id) for w in MEMORY] + [("default", "new")]
    with pytest.raises(IndexStaleError, match="holds 4 workflows .* the store 5 .*reindex"):
        StepIndex.load(tmp_path / "ix", FakeEmbedder(32), expected_fingerprint=fingerprint(store))
    same = fingerprint((w.scope, w.id) for w in MEMORY)
    assert StepIndex.load(tmp_path / "ix", FakeEmbedder(32), expected_fingerprint=same)


def test_load_reports_missing_or_corrupt_index(tmp_path, index):
    with pytest.raises(IndexStaleError, match="no step index"):
        StepIndex.load(tmp_path / "nothing", FakeEmbedder(32))
    index.save(tmp_path / "ix")
    (tmp_path / "ix" / "meta.json").write_text("{")
    with pytest.raises(IndexStaleError, match="unreadable.*reindex"):
        StepIndex.load(tmp_path / "ix", FakeEmbedder(32))


def test_a_damaged_scope_file_drops_the_scope_for_a_reload(tmp_path, index, caplog):
    # Scopes are read on first use: a damaged file is found then, and the scope is dropped with
    # its store position (the engine reloads it from the store at its next check).
    index.save(tmp_path / "ix")
    (tmp_path / "ix" / "scope-0.npz").write_bytes(b"garbage")
    loaded = StepIndex.load(tmp_path / "ix", FakeEmbedder(32))
    assert loaded.scope_index("default") is None
    assert loaded.lost == {"default"}
    assert "unreadable" in caplog.text


def test_rebuild_from_the_store_alone(tmp_path, index):
    path = tmp_path / "ix"
    fresh = StepIndex(FakeEmbedder(32), path=path)
    fresh.add(_wf("stale", "something else", "x"))
    seen: list[int] = []
    assert fresh.rebuild(MEMORY, batch_size=2, progress=seen.append) == 4
    assert seen == [2, 4]
    assert fresh.fingerprint() == index.fingerprint()
    assert _results(fresh) == _results(index)
    assert (path / "journal.jsonl").read_text() == ""
    loaded = StepIndex.load(path, FakeEmbedder(32), expected_fingerprint=index.fingerprint())
    assert loaded.ids() == ["a", "b", "c"]


def test_add_many_embeds_new_texts_once_per_batch():
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return FakeEmbedder(16).embed(texts)

    index = StepIndex(CallableEmbedder(embed, name="counting"))
    assert index.dimension == 16  # embeds a probe text
    calls.clear()
    index.add_many(MEMORY + [_wf("e", "extract the pfas content of the product", "x")])
    # One call: the 4 distinct leaf texts and the one context that is no leaf ("go on" holds
    # calls), each once; the suggestion state takes its context vectors from the index.
    assert len(calls) == 1 and len(calls[0]) == len(set(calls[0])) == 5
    index.match(QUERY)
    index.match(QUERY)
    assert calls[1:] == [["extract the pfas content of a product"]]


def test_unknown_method_is_refused(index):
    with pytest.raises(ConfigurationError, match="'fast', 'reference'"):
        index.match(QUERY, method="magic")  # type: ignore[arg-type]


def test_index_accepts_a_shared_cache(tmp_path):
    cache = CachedEmbedder(FakeEmbedder(16), tmp_path / "cache.sqlite")
    index = StepIndex(cache)
    index.add_many(MEMORY)
    assert index.embedder is cache and len(cache) == 5  # 4 leaf texts and the "go on" context


def test_open_creates_an_index_or_loads_the_saved_one(tmp_path):
    path = tmp_path / "ix"
    empty = fingerprint([])
    created = StepIndex.open(path, FakeEmbedder(32), expected_fingerprint=empty)
    created.add_many(MEMORY)
    created.close()
    store = fingerprint((w.scope, w.id) for w in MEMORY)
    reopened = StepIndex.open(path, FakeEmbedder(32), expected_fingerprint=store)
    assert len(reopened) == 4
    with pytest.raises(IndexStaleError, match="holds 0 workflows .* the store 4"):
        StepIndex.open(tmp_path / "new", FakeEmbedder(32), expected_fingerprint=store)


def test_the_index_keeps_the_episodes_the_suggestion_state_is_built_from(tmp_path):
    from em_plugin.evaluation.synthetic import SCOPE, SyntheticMemory
    from em_plugin.state.episodes import episode_of

    workflows = list(SyntheticMemory(seed=3).workflows(200))
    gone = workflows[3].id
    index = StepIndex(FakeEmbedder(16), path=tmp_path / "steps")
    index.add_many(workflows[:150])
    index.save()  # a snapshot, then a journal on top of it
    assert index.remove(gone, SCOPE)
    index.add_many(workflows[150:])
    expected = [episode_of(w) for w in workflows if w.id != gone]  # save order
    assert index.episodes(SCOPE) == expected
    # One reduction: the matcher's leaves are the episode's.
    assert index.leaves(workflows[7].id, SCOPE).texts == leaf_texts(workflows[7])[1]
    index.close()
    reopened = StepIndex.load(tmp_path / "steps", FakeEmbedder(16))
    assert reopened.episodes(SCOPE) == expected
    reopened.save(tmp_path / "copy")  # compaction rebuilds the context and args tables
    assert StepIndex.load(tmp_path / "copy", FakeEmbedder(16)).episodes(SCOPE) == expected
