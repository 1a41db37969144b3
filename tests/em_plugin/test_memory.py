"""EpisodicMemory: save/retrieve/suggest, scopes, redaction, rollback, deletion, persistence."""

from __future__ import annotations

import asyncio

import pytest

from em_plugin.errors import ConfigurationError
from em_plugin.memory import EpisodicMemory
from em_plugin.settings import RetrievalSettings
from provenance.errors import WorkflowNotFound
from provenance.model import CallStep, InstructionStep, Workflow
from provenance.stores import open_store
from provenance.suggestion_record import suggestion_graph_iri


def sds(wid: str, file: str = "acme.pdf", **kw) -> Workflow:
    return Workflow(
        id=wid,
        steps=(
            InstructionStep(
                f"extract the ingredients of {file}",
                (CallStep("product_extractor", {"file": file}),),
            ),
            InstructionStep("which of them are PFAS", (CallStep("pfas_classifier"),)),
            InstructionStep("assess their hazards", (CallStep("hazard_assessment"),)),
        ),
        **kw,
    )


CURRENT = Workflow(
    id="current",
    steps=(
        InstructionStep("extract the ingredients of new.pdf", (CallStep("product_extractor"),)),
    ),
)


@pytest.fixture
def memory():
    with EpisodicMemory("memory:", embedder="fake:64", scope="team-a") as opened:
        yield opened


def test_save_scopes_redacts_and_indexes(memory: EpisodicMemory) -> None:
    secret = Workflow(
        id="s",
        steps=(CallStep("fetch", {"api_key": "sk-123", "url": "x", "auth": {"password": "p"}}),),
    )
    saved = memory.save(secret)
    assert saved.scope == "team-a"
    stored = memory.load("s")
    assert stored.steps[0].args == {"api_key": "[REDACTED]", "url": "x", "auth": "[REDACTED]"}
    assert "s" in memory and memory.ids() == ["s"]
    assert memory.save(sds("other", scope="team-b")).scope == "team-b"  # its own scope is kept
    assert memory.ids() == ["s"] and memory.with_scope("team-b").ids() == ["other"]
    with pytest.raises(ConfigurationError, match="Workflow"):
        memory.save({"id": "x"})  # type: ignore[arg-type]


def test_retrieve_and_suggest(memory: EpisodicMemory) -> None:
    memory.save_many([sds("w1"), sds("w2", "beta.pdf")])
    matches = memory.retrieve(CURRENT)
    assert {m.workflow_id for m in matches} == {"w1", "w2"}
    assert all(m.score > 0.65 and m.alignment == (0,) for m in matches)
    found = memory.suggest(CURRENT)
    assert found[0].tool == "pfas_classifier" and found[0].source == "episodic"
    assert found[0].text == "which of them are PFAS"
    assert {e.workflow_id for e in found[0].evidence} == {"w1", "w2"}
    assert [s.tool for s in memory.suggest(CURRENT, limit=None)][:2] == [
        "pfas_classifier",
        "hazard_assessment",
    ]
    memory.threshold = 1.0  # a score must exceed T
    assert memory.retrieve(CURRENT) == []
    assert memory.suggest(CURRENT)[0].tool == "pfas_classifier"  # continuation still works


def test_retrieval_and_suggestions_never_cross_scopes(memory: EpisodicMemory) -> None:
    other = memory.with_scope("team-b")
    other.save(sds("b1"))
    assert memory.retrieve(CURRENT) == []
    assert memory.suggest(CURRENT) == []  # nothing in team-a, no crew
    assert other.retrieve(CURRENT.replace(scope="team-a"))[0].workflow_id == "b1"
    assert memory.delete("b1") is False  # not this memory's scope
    assert other.load("b1").id == "b1"
    with pytest.raises(WorkflowNotFound):
        memory.load("b1")


def test_delete_removes_graph_index_and_suggestion_state(memory: EpisodicMemory) -> None:
    memory.save_many([sds("w1"), sds("w2", "beta.pdf")])
    assert memory.delete("w1") is True and memory.delete("w1") is False
    assert "w1" not in memory.store and "w1" not in memory.index
    state = memory.scope_memory()
    assert "w1" not in state and "w1" not in state.model("procedural")
    assert all(e.workflow_id == "w2" for s in memory.suggest(CURRENT) for e in s.evidence)


def test_forget_removes_vectors_graphs_and_records(memory: EpisodicMemory) -> None:
    memory.save(sds("w1"))
    memory.with_scope("keep").save(sds("k1", "keep.pdf"))
    found = memory.suggest(CURRENT)
    memory.record_suggestions("session-1", found)
    cache = memory.embedder

    def cached(text: str) -> bool:  # embedding a cached text is not a miss
        misses = cache.misses
        cache.embed([text])
        return cache.misses == misses

    assert cached("extract the ingredients of acme.pdf")
    assert memory.forget() == ["w1"]
    assert memory.ids() == [] and memory.scope_memory().ids() == []
    assert not cached("extract the ingredients of acme.pdf")  # its vector went with the scope
    assert cached("extract the ingredients of keep.pdf")
    assert not memory.store.backend.has_graph(suggestion_graph_iri("session-1"))
    assert memory.with_scope("keep").ids() == ["k1"]


def test_record_suggestions_appends_rounds(memory: EpisodicMemory) -> None:
    memory.save(sds("w1"))
    found = memory.suggest(CURRENT)
    first = memory.record_suggestions("s1", found)
    second = memory.record_suggestions("s1", found[:1])
    assert first != second and memory.record_suggestions("s1", []) is None
    rows = memory.store.query("suggestion-sources", {"session": "s1"})
    assert {str(r["workflow"]) for r in rows.dicts()} == {"w1"}
    assert len({str(r["time"]) for r in rows.dicts()}) == 2


def test_index_failure_rolls_back_the_store(memory: EpisodicMemory, monkeypatch) -> None:
    memory.save(sds("w1"))

    def broken(*args, **kwargs):
        raise RuntimeError("index down")

    monkeypatch.setattr(memory.index, "add_many", broken)
    with pytest.raises(RuntimeError, match="index down"):
        memory.save_many([sds("new"), sds("w1", "changed.pdf")])
    monkeypatch.undo()
    assert "new" not in memory.store and "new" not in memory.scope_memory()
    assert memory.load("w1").steps[0].steps[0].args == {"file": "acme.pdf"}
    assert memory.suggest(CURRENT)[0].tool == "pfas_classifier"


def test_validate_with_shapes(memory: EpisodicMemory) -> None:
    assert memory.save(sds("ok"), validate=True).id == "ok"


def test_async_twins(memory: EpisodicMemory) -> None:
    async def run() -> tuple:
        await memory.asave(sds("w1"))
        return await memory.aretrieve(CURRENT), await memory.asuggest(CURRENT)

    matches, found = asyncio.run(run())
    assert matches[0].workflow_id == "w1" and found[0].tool == "pfas_classifier"


def test_disk_store_persists_index_beside_it(tmp_path) -> None:
    path = tmp_path / "store"
    with EpisodicMemory(str(path), embedder="fake:64") as memory:
        memory.save_many([sds("w1"), sds("w2", "b.pdf")])
    directory = open_store(str(tmp_path / "probe")).derived_dir
    assert directory is not None and directory.name == "probe.em-index"
    assert (tmp_path / "store.em-index" / "steps").is_dir()
    assert (tmp_path / "store.em-index" / "embeddings.sqlite").is_file()
    with EpisodicMemory(str(path), embedder="fake:64") as reopened:
        assert reopened.ids() == ["w1", "w2"]
        assert reopened.suggest(CURRENT)[0].tool == "pfas_classifier"
    with open_store(str(path)) as store:  # the index goes stale behind its back
        store.delete("w2")
    with EpisodicMemory(str(path), embedder="fake:64") as rebuilt:
        assert rebuilt.ids() == ["w1"]


def test_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="scope"):
        EpisodicMemory("memory:", embedder="fake", scope="")
    with pytest.raises(ConfigurationError, match="threshold"):
        EpisodicMemory("memory:", embedder="fake", retrieval=RetrievalSettings(threshold=3))
    with pytest.raises(ConfigurationError, match="llm"):
        EpisodicMemory("memory:", embedder="fake", llm=42)


@pytest.mark.integration
def test_real_embedder_matches_paraphrases() -> None:
    def two(wid: str, question: str, task: str, tool: str) -> Workflow:
        # The crew answered the question without tools (an instruction leaf), then used a tool.
        return Workflow(
            id=wid,
            steps=(InstructionStep(question), InstructionStep(task, (CallStep(tool),))),
        )

    with EpisodicMemory("memory:", embedder=None, scope="it") as memory:
        memory.save(two("w1", "tell me what PFAS are", "extract the ingredients of acme.pdf",
                        "product_extractor"))  # fmt: skip
        memory.save(two("w2", "which mail server do we use", "send the report by mail", "mailer"))
        asked = Workflow(id="q1", steps=(InstructionStep("explain PFAS substances to me"),))
        assert [m.workflow_id for m in memory.retrieve(asked)] == ["w1"]
        assert memory.suggest(asked)[0].tool == "product_extractor"
        task = Workflow(id="q2", steps=(InstructionStep("email the summary to my boss"),))
        assert memory.suggest(task)[0].tool == "mailer"
